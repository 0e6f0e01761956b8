//! Outputs that appear all at once or not at all.
//!
//! A command that writes results works on copies of the directories it writes (under
//! `target/lab/stage/`): it reads and rewrites them there (merging rows, the report, the charts,
//! the metadata) and only when all of it has succeeded does [`Staging::commit`] move the files
//! that changed into place, each by a rename. A command that fails (a bad row, a refused
//! module, a panic) leaves the real directories as they were.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
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

/// What a command last wrote into some directories, and the digest of everything it made them
/// from (`target/lab/written/`, one record per set of directories). A run whose digest is the
/// recorded one, finding every file there exactly as written (none added, removed or changed),
/// would write the very same bytes: it can say so and stop. That is a warm `just compare`
/// with nothing changed: re-reading a million result rows and redrawing 30 charts to rewrite
/// identical files took ~8 s of it.
pub struct Written {
    path: PathBuf,
    dirs: Vec<PathBuf>,
}

impl Written {
    /// The record for `dirs` (absolute paths) under `workspace`.
    pub fn of(workspace: &Path, dirs: &[&Path]) -> Written {
        let mut h = Sha256::new();
        for d in dirs {
            h.update(d.to_string_lossy().as_bytes());
            h.update(b"\0");
        }
        Written {
            path: workspace
                .join("target/lab/written")
                .join(crate::build::hex(&h.finalize())),
            dirs: dirs.iter().map(|d| d.to_path_buf()).collect(),
        }
    }

    /// Whether the last record is for `digest` and the files are still exactly what it lists.
    pub fn unchanged(&self, digest: &str) -> bool {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return false;
        };
        let mut lines = text.lines();
        if lines.next() != Some(digest) {
            return false;
        }
        self.listing().is_ok_and(|now| lines.eq(now.lines()))
    }

    /// Records `digest` and the files as they are now (after a commit).
    pub fn record(&self, digest: &str) -> Result<()> {
        let text = format!("{digest}\n{}", self.listing()?);
        let dir = self.path.parent().expect("a record has a directory");
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        crate::results::write_file(&self.path, text.as_bytes())
    }

    /// Forgets the record: the files are about to change.
    pub fn forget(&self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", self.path.display()))
            }
            _ => Ok(()),
        }
    }

    /// One line per file: directory index, SHA-256, path relative to the directory.
    fn listing(&self) -> Result<String> {
        let mut out = String::new();
        for (i, dir) in self.dirs.iter().enumerate() {
            if !dir.is_dir() {
                continue;
            }
            for rel in files(dir)? {
                let path = dir.join(&rel);
                let bytes = std::fs::read(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                let sha = crate::build::hex(&Sha256::digest(&bytes));
                out.push_str(&format!("{i} {sha} {}\n", rel.display()));
            }
        }
        Ok(out)
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

    /// A record vouches only for its own digest and for the files exactly as they were.
    #[test]
    fn written_files_are_unchanged_only_as_recorded() {
        let ws = tempfile::tempdir().unwrap();
        let (results, images) = (ws.path().join("results"), ws.path().join("images"));
        std::fs::create_dir_all(results.join("gtest")).unwrap();
        std::fs::create_dir_all(&images).unwrap();
        std::fs::write(results.join("gtest/totals.csv"), "t").unwrap();
        std::fs::write(images.join("a.png"), "png").unwrap();
        let w = Written::of(ws.path(), &[&results, &images]);
        assert!(!w.unchanged("d"), "nothing recorded yet");
        w.record("d").unwrap();
        assert!(w.unchanged("d"));
        assert!(!w.unchanged("e"), "another digest");

        std::fs::write(images.join("a.png"), "PNG").unwrap();
        assert!(!w.unchanged("d"), "a file changed");
        std::fs::write(images.join("a.png"), "png").unwrap();
        assert!(w.unchanged("d"), "put back byte for byte");
        std::fs::write(results.join("extra.csv"), "x").unwrap();
        assert!(!w.unchanged("d"), "a file added");
        std::fs::remove_file(results.join("extra.csv")).unwrap();
        std::fs::remove_file(results.join("gtest/totals.csv")).unwrap();
        assert!(!w.unchanged("d"), "a file removed");
        std::fs::write(results.join("gtest/totals.csv"), "t").unwrap();
        assert!(w.unchanged("d"));
        w.forget().unwrap();
        assert!(!w.unchanged("d"), "forgotten");
        w.forget().unwrap();
        assert!(
            !Written::of(ws.path(), &[&results]).unchanged("d"),
            "other directories"
        );
    }
}
