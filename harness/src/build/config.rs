//! The cargo configuration a build reads in the directory it runs in: which config files apply,
//! and the rustflags cargo gives every crate it compiles for [`TARGET`].
//!
//! Why the lab reads them itself: every build it starts sets `CARGO_ENCODED_RUSTFLAGS` (the
//! remapped paths, [`super::artifact`]), and cargo then ignores `[target.*].rustflags` and
//! `[build].rustflags` altogether. An author's `.cargo/config.toml` with a stack size, target
//! features or the `--global-base` `lab layout` prints was measured as a build its author never
//! makes. So the flags cargo would take from the config are read here, exactly as cargo
//! resolves them, and put first in the variable ([`rustflags`]).
//!
//! Cargo's rule (`rustflags_from_target` in cargo's `target_info.rs`): the environment first
//! (the lab sets it, and removes `RUSTFLAGS`, as gear-wasm-builder does for its nested build);
//! else `target.<triple>.rustflags` followed by every `target.'cfg(..)'.rustflags` whose `cfg`
//! holds for the target, in key order; only when none of those is set, `build.rustflags`. The
//! merged values (arrays joined across files, nearer files later, `--config` and `CARGO_*`
//! variables included) come from cargo itself (`cargo config get`, a stable-toolchain cargo
//! told it may use it as the lab's lock-file setting is, [`super::external::lock_args`]); the
//! `cfg` expressions are evaluated by cargo's own parser (`cargo-platform`) against `rustc
//! --print cfg` for the target.

use super::toolchain::TARGET;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr as _;
use std::sync::{Mutex, OnceLock};

/// The cargo config files that apply to a cargo run in `dir`, in cargo's order of discovery
/// (each ancestor's `.cargo/config.toml` and `.cargo/config`, nearest first, then cargo's home),
/// those that exist. Part of every build's inputs: a file appearing or changing is another build.
pub fn files(dir: &Path, cargo_home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut seen_home = false;
    for ancestor in dir.ancestors() {
        let cargo = ancestor.join(".cargo");
        seen_home |= cargo == cargo_home;
        for name in ["config.toml", "config"] {
            let file = cargo.join(name);
            if file.is_file() {
                out.push(file);
            }
        }
    }
    if !seen_home {
        for name in ["config.toml", "config"] {
            let file = cargo_home.join(name);
            if file.is_file() {
                out.push(file);
            }
        }
    }
    out
}

/// Cargo's home (`CARGO_HOME`, else `~/.cargo`).
pub fn cargo_home() -> Result<PathBuf> {
    std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")
}

/// The rustflags a cargo build run in `dir` for [`TARGET`] takes from its configuration, by
/// cargo's rule (the module's comment); empty when none is set. Asked once per directory and
/// process (a `just compare` makes hundreds of builds in one directory), so a config edited
/// during a run reaches the next run.
pub fn rustflags(dir: &Path) -> Result<Vec<String>> {
    static SEEN: OnceLock<Mutex<BTreeMap<PathBuf, Vec<String>>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(flags) = seen.lock().expect("no panic holds it").get(dir) {
        return Ok(flags.clone());
    }
    let flags = resolve(&merged(dir)?, &target_cfg()?)?;
    seen.lock()
        .expect("no panic holds it")
        .insert(dir.to_path_buf(), flags.clone());
    Ok(flags)
}

/// The configuration cargo reads in `dir`, merged as cargo merges it, as JSON.
fn merged(dir: &Path) -> Result<serde_json::Value> {
    let out = crate::build::process::output(
        crate::build::workspace::cargo_command()
            .current_dir(dir)
            .env("__CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS", "nightly")
            .args(["-Zunstable-options", "config", "get", "--format", "json"]),
    )
    .context("cannot run cargo config get")?;
    if !out.status.success() {
        bail!(
            "cargo cannot read the configuration that applies in {}:\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "cargo config get in {} printed no JSON: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// `rustc --print cfg --target` [`TARGET`] of the pinned toolchain, parsed by cargo's parser.
fn target_cfg() -> Result<Vec<cargo_platform::Cfg>> {
    static CFG: OnceLock<String> = OnceLock::new();
    let text = match CFG.get() {
        Some(text) => text,
        None => {
            let out = crate::build::toolchain::command("rustc")
                .args(["--print", "cfg", "--target", TARGET])
                .output()
                .context("cannot run rustc --print cfg")?;
            if !out.status.success() {
                bail!(
                    "rustc --print cfg --target {TARGET} failed:\n{}\nhint: run `just setup`",
                    String::from_utf8_lossy(&out.stderr).trim_end()
                );
            }
            CFG.get_or_init(|| String::from_utf8_lossy(&out.stdout).into_owned())
        }
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            cargo_platform::Cfg::from_str(l)
                .with_context(|| format!("rustc printed a cfg cargo cannot read: {l}"))
        })
        .collect()
}

/// Cargo's rule over the merged configuration `config`, for a target whose cfg is `cfg`.
fn resolve(config: &serde_json::Value, cfg: &[cargo_platform::Cfg]) -> Result<Vec<String>> {
    let mut flags = Vec::new();
    let targets = config.get("target").and_then(|t| t.as_object());
    if let Some(triple) = targets.and_then(|t| t.get(TARGET)) {
        flags.extend(list(triple.get("rustflags"), &format!("target.{TARGET}"))?);
    }
    // In key order, as cargo's table of `cfg` targets is (a map sorted by key), whatever
    // order serde_json keeps.
    let mut cfgs: Vec<(&String, &serde_json::Value)> = targets
        .into_iter()
        .flatten()
        .filter(|(key, _)| key.starts_with("cfg("))
        .collect();
    cfgs.sort_by_key(|(key, _)| *key);
    for (key, table) in cfgs {
        let platform = cargo_platform::Platform::from_str(key)
            .with_context(|| format!("cargo config: `target.'{key}'` is not a cfg cargo reads"))?;
        if platform.matches(TARGET, cfg) {
            flags.extend(list(table.get("rustflags"), &format!("target.'{key}'"))?);
        }
    }
    if flags.is_empty() {
        flags = list(
            config.get("build").and_then(|b| b.get("rustflags")),
            "build",
        )?;
    }
    Ok(flags)
}

/// A config string list (an array of strings, or one string split on whitespace, as cargo's
/// `StringList` reads it); empty when unset.
fn list(value: Option<&serde_json::Value>, table: &str) -> Result<Vec<String>> {
    match value {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::String(s)) => Ok(s.split_whitespace().map(str::to_owned).collect()),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str().map(str::to_owned).with_context(|| {
                    format!("cargo config: {table}.rustflags holds {i}, not a string")
                })
            })
            .collect(),
        Some(other) => bail!("cargo config: {table}.rustflags is {other}, not a list of flags"),
    }
}

/// The `--global-base` address `flags` give the linker (the last one, as `wasm-ld` reads
/// them), if any: an author's own layout setting.
pub fn global_base(flags: &[String]) -> Option<u64> {
    let mut base = None;
    let mut link_arg_next = false;
    for flag in flags {
        let arg = if link_arg_next {
            link_arg_next = false;
            flag.strip_prefix("link-arg=")
        } else if flag == "-C" {
            link_arg_next = true;
            None
        } else {
            flag.strip_prefix("-Clink-arg=")
                .or_else(|| flag.strip_prefix("-C link-arg="))
        };
        if let Some(value) = arg.and_then(|a| a.strip_prefix("--global-base=")) {
            base = value.parse().ok().or(base);
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Vec<cargo_platform::Cfg> {
        [
            "target_arch=\"wasm32\"",
            "target_os=\"none\"",
            "panic=\"abort\"",
        ]
        .iter()
        .map(|c| cargo_platform::Cfg::from_str(c).unwrap())
        .collect()
    }

    /// Cargo's precedence: the triple's flags, then every matching `cfg` table's in key order;
    /// `[build]`'s only when neither sets any; a string is split on whitespace.
    #[test]
    fn the_flags_are_those_cargo_would_give_the_target() {
        let config = serde_json::json!({
            "build": {"rustflags": "-C  opt-level=1"},
            "target": {
                "wasm32v1-none": {"rustflags": ["-C", "link-arg=--global-base=1105152"]},
                "cfg(target_arch = \"wasm32\")": {"rustflags": ["-Ctarget-feature=+sign-ext"]},
                "cfg(all(target_arch = \"wasm32\", not(panic = \"abort\")))": {"rustflags": ["-Cno"]},
                "cfg(any(unix, target_os = \"none\"))": {"rustflags": "-Cyes"},
                "x86_64-unknown-linux-gnu": {"rustflags": ["-Chost"]},
            }
        });
        assert_eq!(
            resolve(&config, &cfg()).unwrap(),
            [
                "-C",
                "link-arg=--global-base=1105152",
                "-Cyes",
                "-Ctarget-feature=+sign-ext"
            ]
        );
        let build_only = serde_json::json!({"build": {"rustflags": "-C  opt-level=1"},
            "target": {"x86_64-unknown-linux-gnu": {"rustflags": ["-Chost"]}}});
        assert_eq!(resolve(&build_only, &cfg()).unwrap(), ["-C", "opt-level=1"]);
        assert!(resolve(&serde_json::json!({}), &cfg()).unwrap().is_empty());
        let bad = serde_json::json!({"build": {"rustflags": 3}});
        assert!(resolve(&bad, &cfg())
            .unwrap_err()
            .to_string()
            .contains("build.rustflags"));
    }

    #[test]
    fn an_author_s_global_base_is_read_in_each_spelling_and_the_last_wins() {
        let f = |v: &[&str]| global_base(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            f(&["-C", "link-arg=--global-base=1105152"]),
            Some(1_105_152)
        );
        assert_eq!(
            f(&[
                "-Clink-arg=--global-base=16",
                "-C",
                "link-arg=--global-base=32"
            ]),
            Some(32)
        );
        assert_eq!(f(&["-C", "link-arg=--import-memory"]), None);
        assert_eq!(f(&["link-arg=--global-base=16"]), None);
    }

    /// What cargo itself merges in a directory: a crate's own file and its parent's are both
    /// read, and an array in the nearer file comes later.
    #[test]
    fn cargo_s_own_merge_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("crate");
        for (d, flag) in [(dir.path(), "-Couter"), (inner.as_path(), "-Cinner")] {
            std::fs::create_dir_all(d.join(".cargo")).unwrap();
            std::fs::write(
                d.join(".cargo/config.toml"),
                format!("[target.{TARGET}]\nrustflags = [\"{flag}\"]\n"),
            )
            .unwrap();
        }
        assert_eq!(rustflags(&inner).unwrap(), ["-Couter", "-Cinner"]);
        let home = cargo_home().unwrap();
        let found = files(&inner, &home);
        assert_eq!(
            &found[..2],
            [
                inner.join(".cargo/config.toml"),
                dir.path().join(".cargo/config.toml")
            ]
        );
    }
}
