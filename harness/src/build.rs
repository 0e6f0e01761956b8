//! Builds a Wasm package once per allocator variant, as Gear programs are built.
//!
//! Each (variant, probe) pair gets its own cargo target directory, so editing one variant
//! rebuilds only that variant and cargo's own freshness check skips what is up to date. Paths
//! are remapped so the bytes do not depend on where the repository or cargo's registry is
//! checked out: sizes and hashes are comparable across machines.

use crate::workspace::Workspace;
use anyhow::{bail, Context, Result};
use galloc_variants::Variant;
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::process::Command;

/// The target Gear programs are built for.
pub const TARGET: &str = "wasm32v1-none";

/// What to build.
#[derive(Clone, Copy, Debug)]
pub struct BuildRequest<'a> {
    /// Cargo package name.
    pub package: &'a str,
    /// The allocator variant to link.
    pub variant: &'static Variant,
    /// Whether to wrap the allocator in the gas probe.
    pub probe: bool,
}

impl BuildRequest<'_> {
    /// `variant` or `variant+probe`: names target dirs, artifacts and result rows.
    pub fn config(&self) -> String {
        if self.probe {
            format!("{}+probe", self.variant.id)
        } else {
            self.variant.id.to_owned()
        }
    }
}

/// A built Wasm file.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// Collected copy under `target/artifacts/`.
    pub path: PathBuf,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Hex SHA-256 of `bytes`.
    pub sha256: String,
}

/// Builds `req` in release mode for [`TARGET`] and collects the `.wasm`.
pub fn build(ws: &Workspace, req: BuildRequest<'_>) -> Result<Artifact> {
    let config = req.config();
    let target_dir = ws.target_dir(&config);
    let mut features = format!("galloc/{}", req.variant.feature);
    if req.probe {
        features.push_str(",galloc/probe");
    }
    let cargo_home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    // Gear imports memory from the runtime; paths are remapped for reproducible bytes.
    let rustflags = [
        "-C link-arg=--import-memory".to_owned(),
        format!("--remap-path-prefix={}=/lab", ws.root().display()),
        format!("--remap-path-prefix={}=/cargo", cargo_home.display()),
    ]
    .join(" ");
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(ws.root())
        .args(["build", "--release", "--quiet", "--locked", "--lib"])
        .args([
            "--package",
            req.package,
            "--target",
            TARGET,
            "--features",
            &features,
        ])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("RUSTFLAGS", rustflags)
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    let out = cmd
        .output()
        .with_context(|| format!("cannot run cargo to build {} ({config})", req.package))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let hint = if stderr.contains("target may not be installed")
            || stderr.contains("can't find crate for `core`")
        {
            format!("\nhint: the {TARGET} target is missing; run `just setup`")
        } else {
            String::new()
        };
        bail!(
            "building {} for variant `{config}` failed:\n{}{hint}",
            req.package,
            stderr.trim_end()
        );
    }
    let file = format!("{}.wasm", req.package.replace('-', "_"));
    let built = target_dir.join(TARGET).join("release").join(&file);
    let bytes = std::fs::read(&built)
        .with_context(|| format!("cargo succeeded but {} is missing", built.display()))?;
    let dir = ws.artifacts_dir().join(req.package);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("{config}.wasm"));
    std::fs::write(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))?;
    let sha256 = hex(&Sha256::digest(&bytes));
    Ok(Artifact {
        path,
        bytes,
        sha256,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
