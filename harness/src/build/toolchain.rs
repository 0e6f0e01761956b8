//! The toolchain every build uses: the target Gear programs are built for, and the `rustc`
//! that builds them.

use anyhow::{Context, Result};
use std::process::Command;

/// The target Gear programs are built for.
pub const TARGET: &str = "wasm32v1-none";

/// `rustc -vV`, asked once per process: a run builds ~140 configurations and each call
/// through rustup's proxy costs tens of milliseconds. Its first line is `rustc --version`.
pub(crate) fn rustc_version() -> Result<&'static str> {
    static VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(version) = VERSION.get() {
        return Ok(version);
    }
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .context("cannot run rustc")?;
    let version = String::from_utf8_lossy(&out.stdout).into_owned();
    Ok(VERSION.get_or_init(|| version))
}
