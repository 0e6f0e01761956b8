//! The toolchain every build uses: the target Gear programs are built for, and the `rustc`
//! that builds them, which is always the one the lab pins.
//!
//! Why pinned, always: cargo and rustc reached through rustup's proxies take the toolchain of
//! the directory they run in (its `rust-toolchain.toml`, else rustup's default), and an
//! author's crate is built in its own directory. A crate pinned to nightly was built by
//! nightly (or failed with "can't find crate for `core`") while the results recorded the lab's
//! compiler. Every cargo and rustc the lab starts gets `RUSTUP_TOOLCHAIN` set to the lab's own
//! channel ([`command`]), and every program built is checked to name that compiler in its
//! `producers` section ([`check_built_by`]), so a build the override did not reach is an error,
//! not a mislabelled result.

use anyhow::{bail, Context, Result};
use std::process::Command;

/// The target Gear programs are built for.
pub const TARGET: &str = "wasm32v1-none";

/// The cargo profile programs are built with (see the workspace `Cargo.toml`).
pub const PROFILE: &str = "wasm";

/// The lab's `rust-toolchain.toml`, as this binary was built with it.
const PINNED_FILE: &str = include_str!("../../../rust-toolchain.toml");

/// The channel the lab pins (`rust-toolchain.toml`'s `toolchain.channel`, e.g. `1.95.0`).
pub fn pinned() -> &'static str {
    static CHANNEL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CHANNEL.get_or_init(|| {
        PINNED_FILE
            .parse::<toml::Table>()
            .ok()
            .and_then(|t| {
                t.get("toolchain")?
                    .get("channel")?
                    .as_str()
                    .map(str::to_owned)
            })
            .expect("rust-toolchain.toml names toolchain.channel (checked by a unit test)")
    })
}

/// `program` (`cargo` or `rustc`) as the lab runs it: rustup's proxy told to use the pinned
/// toolchain whatever directory it runs in, and no `RUSTC` override of the user's.
pub fn command(program: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.env("RUSTUP_TOOLCHAIN", pinned()).env_remove("RUSTC");
    cmd
}

/// `rustc -vV` of the pinned toolchain, asked once per process: a run builds ~140
/// configurations and each call through rustup's proxy costs tens of milliseconds. Its first
/// line is `rustc --version`.
pub(crate) fn rustc_version() -> Result<&'static str> {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(version) = VERSION.get() {
        return Ok(version);
    }
    let out = command("rustc")
        .arg("-vV")
        .output()
        .context("cannot run rustc")?;
    if !out.status.success() {
        bail!(
            "the lab's toolchain {} does not run ({}): install it with `rustup toolchain install \
             {} --target {TARGET}`",
            pinned(),
            String::from_utf8_lossy(&out.stderr).trim(),
            pinned()
        );
    }
    let version = String::from_utf8_lossy(&out.stdout).into_owned();
    Ok(VERSION.get_or_init(|| version))
}

/// `rustc --version` of the pinned toolchain (`rustc 1.95.0 (hash date)`): the compiler every
/// artifact is built by, as the metadata records it.
pub fn rustc() -> Result<&'static str> {
    Ok(rustc_version()?.lines().next().unwrap_or_default().trim())
}

/// Checks that the module `bytes` (as rustc linked it, before post-processing strips custom
/// sections) was built by the pinned rustc, from its `producers` section; `what` names it in
/// the error.
pub fn check_built_by(bytes: &[u8], what: &str) -> Result<()> {
    let expected = rustc()?;
    let Some(built_by) = crate::build::wasm::producers_rustc(bytes)? else {
        // A module with no producers section (stripped by a build script's own linking) cannot
        // be checked; the override above still applied to it.
        return Ok(());
    };
    let expected_version = expected.strip_prefix("rustc ").unwrap_or(expected);
    if built_by != expected_version {
        bail!(
            "{what} was built by rustc {built_by}, not the lab's {expected_version} (toolchain {}): \
             the results would record a compiler that did not build it. Nothing was measured; \
             check that nothing overrides RUSTUP_TOOLCHAIN or RUSTC for cargo (a cargo config \
             `build.rustc` in the crate, a wrapper)",
            pinned()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_channel_is_read_from_the_lab_s_own_file() {
        let file = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../rust-toolchain.toml"
        ))
        .unwrap();
        assert!(
            file.contains(&format!("channel = \"{}\"", pinned())),
            "{file}"
        );
    }

    /// Run from a directory pinned to a toolchain that is not installed, the lab's cargo and
    /// rustc are still the lab's: without the override, rustup would fail there (it installs
    /// nothing here) or take that directory's toolchain.
    #[test]
    fn cargo_and_rustc_ignore_the_directory_s_toolchain() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rust-toolchain.toml"),
            "[toolchain]\nchannel = \"1.70.0\"\n",
        )
        .unwrap();
        for program in ["cargo", "rustc"] {
            let out = command(program)
                .arg("--version")
                .current_dir(dir.path())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && text.starts_with(&format!("{program} {}", pinned())),
                "{program}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
