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
        for dir in start.ancestors() {
            if dir.join("variants/Cargo.toml").is_file()
                && dir.join("allocator/Cargo.toml").is_file()
            {
                return Ok(Workspace {
                    root: dir.to_path_buf(),
                });
            }
        }
        bail!(
            "{} is not inside the galloc lab workspace (no allocator/ and variants/ above it); \
             run from the repository or pass --workspace",
            start.display()
        )
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
    /// (see [`crate::build`] for why that is sound).
    pub fn wasm_target_dir(&self) -> PathBuf {
        self.root.join("target/variants/wasm")
    }

    /// Where finished artifacts are collected under predictable names.
    pub fn artifacts_dir(&self) -> PathBuf {
        self.root.join("target/artifacts")
    }
}
