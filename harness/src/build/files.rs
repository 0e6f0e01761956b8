//! Writing a build's files so that no reader sees half of one, and naming them by content.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// A fresh path next to `path`: concurrent builds of one configuration (parallel tests) each
/// write their own file, then [`publish`] renames it into place, so no reader ever sees a
/// half-written module.
pub(crate) fn temp_beside(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}-{n}.tmp", std::process::id()));
    path.with_file_name(name)
}

/// Atomically replaces `to` with `from`.
pub(crate) fn publish(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to)
        .with_context(|| format!("cannot move {} to {}", from.display(), to.display()))
}

pub use crate::results::hex;

/// The lock every build into cargo's `target_dir` holds from its cargo run until it has read
/// what cargo wrote (the unhashed copies cargo rewrites on every build: the `.wasm`, its
/// dep-info), taken and held until the returned file is dropped.
pub fn build_lock(target_dir: &Path) -> Result<std::fs::File> {
    let path = target_dir.join("lab-build.lock");
    let lock = std::fs::File::create(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    lock.lock()
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(lock)
}

/// Where cargo leaves `file` of a program build into `target_dir` ([`super::toolchain::TARGET`],
/// [`super::toolchain::PROFILE`]).
pub fn built(target_dir: &Path, file: &str) -> std::path::PathBuf {
    target_dir
        .join(super::toolchain::TARGET)
        .join(super::toolchain::PROFILE)
        .join(file)
}
