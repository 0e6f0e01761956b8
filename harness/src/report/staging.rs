//! Outputs that appear all at once or not at all.
//!
//! A command that writes results works on copies of the directories it writes (under
//! `target/lab/stage/`): it reads and rewrites them there (merging rows, the report, the charts,
//! the metadata) and only when all of it has succeeded does [`Staging::commit`] move the files
//! that changed into place, each by a rename. A command that fails (a bad row, a refused
//! module, a panic) leaves the real directories as they were.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// Copies of the directories a command writes.
pub struct Staging {
    root: PathBuf,
    /// (real directory, its working copy)
    dirs: Vec<(PathBuf, PathBuf)>,
}

impl Staging {
    /// Copies each of `dirs` (a missing one starts empty) under `workspace/target/lab/stage/`.
    pub fn begin(workspace: &Path, dirs: &[&Path]) -> Result<Staging> {
        let root = workspace
            .join("target/lab/stage")
            .join(std::process::id().to_string());
        if root.exists() {
            std::fs::remove_dir_all(&root)
                .with_context(|| format!("cannot clear {}", root.display()))?;
        }
        let mut staging = Staging {
            root,
            dirs: Vec::new(),
        };
        for (i, real) in dirs.iter().enumerate() {
            let copy = staging.root.join(i.to_string());
            std::fs::create_dir_all(&copy)
                .with_context(|| format!("cannot create {}", copy.display()))?;
            if real.is_dir() {
                copy_tree(real, &copy)?;
            }
            staging.dirs.push((real.to_path_buf(), copy));
        }
        Ok(staging)
    }

    /// The working copy of `real` (one of the directories given to [`Staging::begin`]).
    pub fn dir(&self, real: &Path) -> &Path {
        self.dirs
            .iter()
            .find(|(r, _)| r == real)
            .map(|(_, c)| c.as_path())
            .unwrap_or_else(|| panic!("{} is not staged", real.display()))
    }

    /// Moves every file that differs from the real one into place, removes real files the
    /// command removed, and returns how many files changed.
    pub fn commit(self) -> Result<usize> {
        let mut changed = 0;
        for (real, copy) in &self.dirs {
            let staged = files(copy)?;
            for rel in &staged {
                let (from, to) = (copy.join(rel), real.join(rel));
                let bytes = std::fs::read(&from)
                    .with_context(|| format!("cannot read {}", from.display()))?;
                if std::fs::read(&to).is_ok_and(|old| old == bytes) {
                    continue;
                }
                if let Some(parent) = to.parent() {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("cannot create {}", parent.display()))?;
                }
                crate::results::write_file(&to, &bytes)?;
                changed += 1;
            }
            if real.is_dir() {
                for rel in files(real)? {
                    if !staged.contains(&rel) {
                        let gone = real.join(&rel);
                        std::fs::remove_file(&gone)
                            .with_context(|| format!("cannot remove {}", gone.display()))?;
                        changed += 1;
                    }
                }
            }
        }
        Ok(changed)
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Committed or not, the copies are of no further use.
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Every file under `dir`, as paths relative to it, sorted.
pub fn files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in
            std::fs::read_dir(&d).with_context(|| format!("cannot list {}", d.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    out.sort();
    Ok(out)
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for rel in files(from)? {
        let (src, dst) = (from.join(&rel), to.join(&rel));
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::copy(&src, &dst).with_context(|| format!("cannot copy {}", src.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_reaches_the_real_directory_until_commit() {
        let ws = tempfile::tempdir().unwrap();
        let real = ws.path().join("results");
        std::fs::create_dir_all(real.join("gtest")).unwrap();
        std::fs::write(real.join("gtest/totals.csv"), "old").unwrap();
        std::fs::write(real.join("same.csv"), "same").unwrap();
        std::fs::write(real.join("gone.csv"), "x").unwrap();

        let s = Staging::begin(ws.path(), &[&real]).unwrap();
        let copy = s.dir(&real).to_path_buf();
        assert_eq!(
            std::fs::read(copy.join("gtest/totals.csv")).unwrap(),
            b"old"
        );
        std::fs::write(copy.join("gtest/totals.csv"), "new").unwrap();
        std::fs::write(copy.join("added.csv"), "a").unwrap();
        std::fs::remove_file(copy.join("gone.csv")).unwrap();
        drop(s); // a failed command: never committed
        assert_eq!(
            std::fs::read(real.join("gtest/totals.csv")).unwrap(),
            b"old"
        );
        assert!(!real.join("added.csv").exists() && real.join("gone.csv").exists());
        assert!(!copy.exists(), "the copy is cleared");

        let s = Staging::begin(ws.path(), &[&real]).unwrap();
        let copy = s.dir(&real).to_path_buf();
        std::fs::write(copy.join("gtest/totals.csv"), "new").unwrap();
        std::fs::write(copy.join("added.csv"), "a").unwrap();
        std::fs::remove_file(copy.join("gone.csv")).unwrap();
        assert_eq!(
            s.commit().unwrap(),
            3,
            "changed, added, removed; `same` untouched"
        );
        assert_eq!(
            std::fs::read(real.join("gtest/totals.csv")).unwrap(),
            b"new"
        );
        assert_eq!(std::fs::read(real.join("added.csv")).unwrap(), b"a");
        assert!(!real.join("gone.csv").exists());
    }
}
