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

/// Shared locks on the studies kept beside the results in `results` (the layout study,
/// `layout-model/`, and the scale cases, `scale/`), once each one present has been checked
/// against its hashes: every command that reads a study (`lab layout`, `lab pick`, `lab
/// report`, `lab ship`) holds these while it reads, so a hand edit is named, not judged.
pub fn checked_studies(
    ws: &crate::build::workspace::Workspace,
    results: &std::path::Path,
) -> anyhow::Result<Vec<crate::store::lock::Lock>> {
    use anyhow::Context;
    let mut locks = Vec::new();
    for study in [crate::results::LAYOUT_MODEL_DIR, crate::results::SCALE_DIR] {
        let dir = results.join(study);
        if dir.join(crate::results::MANIFEST).exists() || dir.join(metadata::FILE).exists() {
            locks.push(
                checked(ws, &dir)
                    .with_context(|| format!("reading the study in {}", dir.display()))?,
            );
        }
    }
    Ok(locks)
}
