//! The results store: a results directory read whole and written all or nothing, under a
//! lock, with every file's hash recorded and checked.
//!
//! - [`destination`]: where results may be written, and what may name a case, checked first.
//! - [`lock`]: one writer per results directory; readers wait for it.
//! - [`staging`]: a command's outputs reach the real directories all together or not at all.
//! - [`metadata`]: `metadata.json` written, and every file held to its recorded hash.
//! - [`publish`]: a result set's metadata, charts and report written from its rows, staged.

pub mod destination;
pub mod lock;
pub mod metadata;
pub mod publish;
pub mod staging;

/// A shared lock on the results in `dir`, once every results file there has been checked
/// against the hashes recorded when it was written.
pub fn checked(
    ws: &crate::build::workspace::Workspace,
    dir: &std::path::Path,
) -> anyhow::Result<crate::store::lock::Lock> {
    use anyhow::Context;
    let abs =
        std::path::absolute(dir).with_context(|| format!("{}: cannot resolve", dir.display()))?;
    let lock = crate::store::lock::Lock::read(ws.root(), &abs)?;
    crate::store::metadata::verify(dir)?;
    Ok(lock)
}
