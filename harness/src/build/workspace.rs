//! Locations inside the lab's workspace.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The lab's workspace on disk.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// The workspace containing `start` (searching upwards for the lab's root manifest).
    pub fn find(start: &Path) -> Result<Self> {
        let start = start
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", start.display()))?;
        match crate::results::metadata::lab_root(&start) {
            Some(root) => Ok(Workspace { root }),
            None => bail!(
                "{} is not inside the galloc lab workspace (no allocator/ and variants/ above it); \
                 run from the repository or pass --workspace",
                start.display()
            ),
        }
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where committed results live.
    pub fn results_dir(&self) -> PathBuf {
        self.root.join("results")
    }

    /// Cargo's target directory named `name` under `target/variants/`: a program outside the
    /// workspace (`external/<package>`), `lab replay`'s native replayer per variant.
    pub fn target_dir(&self, name: &str) -> PathBuf {
        self.root.join("target/variants").join(name)
    }

    /// Cargo's target directory for every Wasm program build, shared by all configurations
    /// (see [`crate::build::artifact`] for why that is sound).
    pub fn wasm_target_dir(&self) -> PathBuf {
        self.root.join("target/variants/wasm")
    }

    /// Where finished artifacts are collected under predictable names.
    pub fn artifacts_dir(&self) -> PathBuf {
        self.root.join("target/artifacts")
    }
}

/// What cargo's workspace wrapper leaves behind in the environment: the wrapper itself and
/// clippy's arguments. `just ready` sets both so that clippy lints the lab's own crates while
/// `just test` builds them (one build of the gtest and wasmtime trees instead of a build and a
/// clippy check). A build the lab starts must not inherit them: clippy compiles with MIR
/// optimisations off, so a program built through it would not be the bytes Gear deploys, and
/// a timed replayer would be timed unoptimised.
const LINT_WRAPPER_ENV: [&str; 2] = ["RUSTC_WORKSPACE_WRAPPER", "CLIPPY_ARGS"];

/// `cargo` as the lab runs it for every build, its own and an author's: the pinned toolchain's
/// ([`crate::build::toolchain::command`]), whichever cargo runs the lab and whatever toolchain
/// the crate's directory names, without the lint wrapper's environment ([`LINT_WRAPPER_ENV`]).
pub fn cargo_command() -> std::process::Command {
    let mut cmd = crate::build::toolchain::command("cargo");
    for var in LINT_WRAPPER_ENV {
        cmd.env_remove(var);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lab_s_own_builds_do_not_inherit_the_lint_wrapper() {
        let cmd = cargo_command();
        let removed: Vec<_> = cmd
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(key, _)| key.to_str().expect("ASCII"))
            .collect();
        assert_eq!(removed, ["CLIPPY_ARGS", "RUSTC", "RUSTC_WORKSPACE_WRAPPER"]);
        let toolchain = cmd
            .get_envs()
            .find(|(key, _)| *key == "RUSTUP_TOOLCHAIN")
            .and_then(|(_, value)| value);
        assert_eq!(
            toolchain.and_then(|v| v.to_str()),
            Some(crate::build::toolchain::pinned())
        );
    }
}
