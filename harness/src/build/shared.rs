//! What every outside program's build shares: cargo's build directory and the `galloc` shim,
//! and the claims that keep two crates of one name in it apart.
//!
//! Why shared: each outside program used to build in a cargo target directory of its own, so a
//! second program, or a copy of the first elsewhere, built gstd, sails-rs and a Sails build
//! script's host crates from nothing again (2 to 3 minutes each here). Now every outside build
//! puts its intermediate units in one `build.build-dir` ([`dir`]) and only what cargo copies
//! out under the program's own name (its `.wasm`, its dep-info) in the program's own target
//! directory ([`super::external::Program::target_dir`]), where two crates of one name cannot
//! overwrite each other's.
//!
//! Why that is sound: cargo names every unit in a build directory by a hash of what makes it
//! (its package's id, features, profile, target, flags and dependencies), as the lab's own
//! contracts share one directory across every configuration ([`super::artifact`]); a program's
//! cdylib too, as the lab builds it (`__CARGO_DEFAULT_LIB_METADATA`). One part of that id is
//! not unique: a package inside its workspace is named by its path *relative to the workspace
//! root*, so a copy of a crate elsewhere, or a fork, gets the very names of the original's
//! units, and cargo, finding them newer than the copy's files, would take one for the other
//! (tried before this design: the suite measured a copy's `state` export on the example). So
//! the directory keeps a claim per such package (`name@version` → the workspace root that last
//! built it, [`claim`], [`Members`]), and a build from another root first removes those
//! packages' units with `cargo clean`, then builds them afresh; the shared dependencies stay.

use super::toolchain::{PROFILE, TARGET};
use crate::build::workspace::Workspace;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory every outside program's build shares: cargo's build directory (`build/`), the
/// `galloc` shim (`galloc/`, [`galloc_shim`]) and the claims
/// (`claims.json`), under one lock ([`super::files::build_lock`]) that a build holds, after its
/// program's own, from writing the shim until it has read what cargo made.
pub fn dir(ws: &Workspace) -> PathBuf {
    ws.target_dir("external-shared")
}

/// Cargo's build directory in [`dir`] `shared`, as the `--config` value that sets it.
pub fn build_dir_config(shared: &Path) -> String {
    format!(
        "build.build-dir={:?}",
        shared.join("build").display().to_string()
    )
}

/// Cargo's options (after its subcommand) for any cargo command on `program` as the lab builds
/// it into `target_dir`: run in the crate's directory, on its manifest, with the lab's `galloc`
/// shim patched in, the lab's profile, the build directory every outside program shares
/// ([`dir`]) and the program's private lock file ([`super::external::lock_args`]).
///
/// The author's `build.rs` may call gear-wasm-builder (directly or through
/// `sails_rs::build_wasm`), which would start a nested build of its own with the author's
/// profile; the builder skips it when `__GEAR_WASM_BUILDER_NO_BUILD` is set, and writes only the
/// empty `wasm_binary.rs` that host builds include.
pub fn outside_options(
    cmd: &mut std::process::Command,
    ws: &Workspace,
    program: &super::external::Program,
    target_dir: &Path,
) -> Result<()> {
    let shared = dir(ws);
    let dir = program.manifest.parent().unwrap_or(ws.root());
    cmd.current_dir(dir)
        .env("__GEAR_WASM_BUILDER_NO_BUILD", "1")
        .arg("--manifest-path")
        .arg(&program.manifest)
        .arg("--config")
        .arg(format!(
            "patch.crates-io.galloc.path={:?}",
            shared.join("galloc").display().to_string()
        ))
        .args(super::external::profile_config(ws, PROFILE)?)
        .arg("--config")
        .arg(build_dir_config(&shared));
    super::external::lock_args(cmd, target_dir)
}

/// The packages of a crate's build whose units cargo names by their path relative to the
/// workspace root: every path package inside the root (the workspace's members, and any other
/// crate there the build uses, a patched-in copy of a dependency say), each as
/// `name@version`. Path packages outside the root are named by their whole path, and registry
/// and git packages by their source, so those never collide.
#[derive(Debug, PartialEq, Eq)]
pub struct Members {
    pub root: String,
    pub members: Vec<String>,
}

/// The [`Members`] of the build `metadata` describes: a `cargo metadata --format-version 1`
/// given the build's own options ([`outside_options`]), so that it resolves
/// the graph the build will (the private lock file, the patch).
pub fn members(metadata: &mut Command, manifest: &Path) -> Result<Members> {
    let out = super::process::output(metadata).context("cannot run cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata cannot read {}:\n{}",
            manifest.display(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    parse_members(&out.stdout).with_context(|| {
        format!(
            "cargo metadata for {} said what the lab cannot read",
            manifest.display()
        )
    })
}

/// `cargo metadata` for a build, before [`outside_options`] adds its options.
pub fn metadata_command() -> Command {
    let mut cmd = super::workspace::cargo_command();
    cmd.args(["metadata", "--format-version", "1"]);
    cmd
}

fn parse_members(json: &[u8]) -> Result<Members> {
    let meta: serde_json::Value = serde_json::from_slice(json)?;
    let root = meta["workspace_root"]
        .as_str()
        .context("no workspace_root")?
        .to_owned();
    let mut members = Vec::new();
    for package in meta["packages"].as_array().context("no packages")? {
        if !package["source"].is_null() {
            continue;
        }
        let manifest = package["manifest_path"]
            .as_str()
            .context("a package without a manifest_path")?;
        if !Path::new(manifest).starts_with(&root) {
            continue;
        }
        let name = package["name"]
            .as_str()
            .context("a package without a name")?;
        let version = package["version"]
            .as_str()
            .context("a package without a version")?;
        members.push(format!("{name}@{version}"));
    }
    members.sort();
    members.dedup();
    Ok(Members { root, members })
}

/// Which workspace root last built each member in the shared build directory.
type Claims = BTreeMap<String, String>;

fn claims_file(shared: &Path) -> PathBuf {
    shared.join("claims.json")
}

fn read_claims(shared: &Path) -> Result<Claims> {
    let path = claims_file(shared);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).with_context(|| {
            format!(
                "{} is not the lab's claims file; remove {} and build again",
                path.display(),
                shared.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Claims::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Whether a build of `ours` must first remove its workspace's units: some member was last
/// built from another workspace root (a copy, a fork), whose units have the same names.
pub fn must_clean(claims: &BTreeMap<String, String>, ours: &Members) -> bool {
    ours.members
        .iter()
        .any(|m| claims.get(m).is_some_and(|root| *root != ours.root))
}

/// Makes the shared build directory [`dir`] `shared` hold no unit of another crate in place of
/// one of `ours`' members (under the shared lock, before the build): when [`must_clean`], runs
/// `clean`, a `cargo clean` of them with the build's own options ([`clean_command`]); then
/// records `ours` as the claimant of every member. The claims are written after the clean, so
/// a run stopped between the two cleans again next time.
pub fn claim(shared: &Path, ours: &Members, clean: &mut Command) -> Result<()> {
    let mut claims = read_claims(shared)?;
    if must_clean(&claims, ours) {
        let out = super::process::output(clean).context("cannot run cargo clean")?;
        if !out.status.success() {
            bail!(
                "cannot remove the units of another crate named like {} from {} (cargo clean \
                 failed):\n{}",
                ours.root,
                shared.display(),
                String::from_utf8_lossy(&out.stderr).trim_end()
            );
        }
    }
    let before = claims.clone();
    for member in &ours.members {
        claims.insert(member.clone(), ours.root.clone());
    }
    if claims != before {
        let text = serde_json::to_vec_pretty(&claims).context("cannot write the claims")?;
        crate::results::write_file(&claims_file(shared), &text)?;
    }
    Ok(())
}

/// `cargo clean` of every unit a build of the lab's profile for its target made of `ours`'
/// members (on the host and on Wasm: a build script, a proc-macro, the program), before
/// [`outside_options`] adds the build's own options (the manifest, the patch,
/// the profile, the build directory, the lock file). Units that depend on one are rebuilt with
/// it: cargo's fingerprint of a unit holds its dependencies'.
pub fn clean_command(target_dir: &Path, ours: &Members) -> Command {
    let mut cmd = super::workspace::cargo_command();
    cmd.args(["clean", "--quiet", "--profile", PROFILE])
        .args(["--target", TARGET])
        .arg("--target-dir")
        .arg(target_dir);
    for member in &ours.members {
        cmd.args(["--package", member]);
    }
    cmd
}

/// Writes (when it changed) the `galloc` that an outside program's build is patched with: a
/// shim in `dir` that is the variant's allocator (`variant`, from [`galloc_manifest`]) on Wasm
/// and an empty crate on the host.
///
/// Why: a Sails crate's `build.rs` depends on `sails-rs` (for its Wasm builder), which pulls in
/// gstd and so galloc on the host too. Patched with the variant's galloc directly, every
/// configuration gave the host's galloc other features, so cargo rebuilt the host's galloc,
/// gstd, sails-rs and the crate's build script once per configuration (18 MB a build script for
/// `polls`). The host never allocates with galloc; the shim at one path for every outside
/// program ([`dir`]), the same on the host for every configuration, lets cargo build the
/// host side once, and a configuration's gstd once for every program. gstd only links galloc
/// (`extern crate galloc;`), so the shim only has to link the variant.
pub fn galloc_shim(dir: &Path, variant: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let manifest = format!(
        "# Written by `lab` before each build of this program: the variant's galloc on Wasm,\n\
         # nothing on the host. Not edited by hand.\n\
         [package]\nname = \"galloc\"\nversion = \"2.0.0\"\nedition = \"2021\"\n\
         license = \"GPL-3.0-or-later\"\npublish = false\n\n\
         [lib]\npath = \"lib.rs\"\n\n\
         [features]\ndebug = [\"variant/debug\"]\n\n\
         [target.'cfg(target_arch = \"wasm32\")'.dependencies]\n\
         variant = {{ package = \"{}\", path = {} }}\n\n\
         [workspace]\n",
        super::external::VARIANT_PACKAGE,
        super::external::path_value(variant)?
    );
    let lib = "//! Written by `lab`: the variant's galloc on Wasm, nothing on the host.\n\
               #![no_std]\n\
               #[cfg(target_arch = \"wasm32\")]\n\
               pub extern crate variant;\n\
               #[cfg(target_arch = \"wasm32\")]\n\
               pub use variant::*;\n";
    for (name, text) in [("Cargo.toml", manifest.as_str()), ("lib.rs", lib)] {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(root: &str, names: &[&str]) -> Members {
        Members {
            root: root.to_owned(),
            members: names.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    /// A member built from another root is cleaned first; the same root, or names nobody
    /// claimed, are not.
    #[test]
    fn a_member_last_built_from_another_root_is_cleaned_first() {
        let claims: Claims = [
            (
                "guestbook@0.1.0".to_owned(),
                "/repo/examples/guestbook".to_owned(),
            ),
            ("io@1.0.0".to_owned(), "/dapps".to_owned()),
        ]
        .into();
        assert!(!must_clean(
            &claims,
            &members("/repo/examples/guestbook", &["guestbook@0.1.0"])
        ));
        assert!(must_clean(
            &claims,
            &members("/tmp/copy", &["guestbook@0.1.0"])
        ));
        assert!(!must_clean(
            &claims,
            &members("/tmp/copy", &["guestbook@0.2.0"])
        ));
        assert!(must_clean(
            &claims,
            &members("/fork", &["dex@0.1.0", "io@1.0.0"])
        ));
        assert!(!must_clean(
            &claims,
            &members("/dapps", &["dex@0.1.0", "io@1.0.0"])
        ));
        assert!(!must_clean(
            &Claims::new(),
            &members("/tmp/copy", &["guestbook@0.1.0"])
        ));
    }

    /// Path packages inside the root, members or not; not those outside it, nor the
    /// registry's.
    #[test]
    fn members_are_the_path_packages_inside_the_root() {
        let json = br#"{"workspace_root":"/w","packages":[
            {"name":"b","version":"0.2.0","source":null,"manifest_path":"/w/b/Cargo.toml"},
            {"name":"a","version":"1.0.0","source":null,"manifest_path":"/w/Cargo.toml"},
            {"name":"gstd","version":"2.0.0","source":null,"manifest_path":"/w/vendor/gstd/Cargo.toml"},
            {"name":"lib","version":"0.1.0","source":null,"manifest_path":"/elsewhere/lib/Cargo.toml"},
            {"name":"galloc","version":"2.0.0","source":null,"manifest_path":"/w2/galloc/Cargo.toml"},
            {"name":"serde","version":"1.0.0",
             "source":"registry+https://github.com/rust-lang/crates.io-index",
             "manifest_path":"/w/.cargo/registry/serde/Cargo.toml"}]}"#;
        assert_eq!(
            parse_members(json).unwrap(),
            members("/w", &["a@1.0.0", "b@0.2.0", "gstd@2.0.0"])
        );
    }
}
