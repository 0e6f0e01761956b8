//! Outputs that appear all at once or not at all.
//!
//! A command that writes results works on copies of the directories it writes (under
//! `target/lab/stage/`), holding the lock on each ([`crate::store::lock::Lock::write`]): it reads
//! and rewrites them there (merging rows, the report, the charts, the metadata). Only when all
//! of it has succeeded does [`Staging::commit`] move what changed into place, as a redo
//! journal: it writes the list of files to put and to remove (`journal`, made visible by one
//! rename: the commit point), applies it, and deletes it. A command that fails (a bad row, a
//! refused module, a panic) leaves the real directories as they were; one killed before the
//! commit point leaves them as they were too, and one killed after it leaves a journal that
//! the next command to lock any of those directories, reading or writing, applies again
//! ([`recover`]) before it looks at them. Either way no command ever sees half a run.

use crate::store::lock::Lock;
use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Copies of the directories a command writes, and the lock on them.
pub struct Staging {
    root: PathBuf,
    /// (real directory, its working copy)
    dirs: Vec<(PathBuf, PathBuf)>,
    /// Dropped after the copies are cleared.
    _lock: Lock,
}

/// The journal's first line: its format.
const JOURNAL_FORMAT: &str = "galloc-lab journal 1";

/// Where the copies of the directory set whose first directory is `first` are staged: one
/// place per set, owned by whoever holds its lock.
fn stage_of(workspace: &Path, first: &Path) -> PathBuf {
    workspace
        .join("target/lab/stage")
        .join(&crate::store::lock::key(first)[..16])
}

/// Where the journal of a commit into the directory set whose first directory is `first`
/// (absolute) lies while the commit is applied (and after, if it was stopped).
pub fn journal_of(workspace: &Path, first: &Path) -> PathBuf {
    stage_of(workspace, first).join("journal")
}

/// Milliseconds to pause before each file a commit puts in place, and again between writing
/// its temporary and renaming it, from `LAB_COMMIT_PAUSE_MS`: fault injection, so the kill
/// test (`tests/suite/survival.rs`) can stop a run in the middle of its commit, which
/// otherwise takes a few milliseconds. Unset, there is no pause.
fn commit_pause() -> Option<std::time::Duration> {
    std::env::var("LAB_COMMIT_PAUSE_MS")
        .ok()?
        .parse()
        .ok()
        .map(std::time::Duration::from_millis)
}

impl Staging {
    /// Locks each of `dirs` (absolute; waiting for another writer or readers, with a line
    /// saying so) and copies it (a missing one starts empty) under `workspace/target/lab/stage/`.
    pub fn begin(workspace: &Path, dirs: &[&Path]) -> Result<Staging> {
        let lock = crate::store::lock::Lock::write(workspace, dirs)?;
        let root = stage_of(workspace, dirs[0]);
        if root.exists() {
            // A killed run's copies (never committed: `Lock::write` applied any journal).
            std::fs::remove_dir_all(&root)
                .with_context(|| format!("cannot clear {}", root.display()))?;
        }
        let mut staging = Staging {
            root,
            dirs: Vec::new(),
            _lock: lock,
        };
        for (i, real) in dirs.iter().enumerate() {
            let copy = staging.root.join(i.to_string());
            std::fs::create_dir_all(&copy)
                .with_context(|| format!("cannot create {}", copy.display()))?;
            if real.is_dir() {
                copy_tree(real, &copy)?;
            }
            crate::results::mark_working_copy(&copy, real)?;
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

    /// Moves every file that differs from the real one into place and removes real files the
    /// command removed, all or nothing (see the module's comment); returns how many changed.
    pub fn commit(self) -> Result<usize> {
        let (journal, changed) = self.write_journal()?;
        if changed == 0 {
            return Ok(0);
        }
        apply(&self.root).with_context(|| {
            format!(
                "the results were staged but could not all be put in place; the next lab \
                 command on these directories finishes it from {}",
                journal.display()
            )
        })?;
        Ok(changed)
    }

    /// Writes the journal of what [`Staging::commit`] changes, and makes it visible (the
    /// commit point) unless nothing changes; returns its path and how many files change.
    fn write_journal(&self) -> Result<(PathBuf, usize)> {
        let mut text = format!("{JOURNAL_FORMAT}\n");
        for (real, _) in &self.dirs {
            text.push_str(&format!("dir\t{}\n", path_text(real)?));
        }
        let mut changed = 0;
        for (i, (real, copy)) in self.dirs.iter().enumerate() {
            let staged = files(copy)?;
            for rel in &staged {
                let bytes = std::fs::read(copy.join(rel))
                    .with_context(|| format!("cannot read {}", copy.join(rel).display()))?;
                if std::fs::read(real.join(rel)).is_ok_and(|old| old == bytes) {
                    continue;
                }
                text.push_str(&format!("put\t{i}\t{}\n", path_text(rel)?));
                changed += 1;
            }
            if real.is_dir() {
                for rel in files(real)? {
                    if !staged.contains(&rel) {
                        text.push_str(&format!("del\t{i}\t{}\n", path_text(&rel)?));
                        changed += 1;
                    }
                }
            }
        }
        let (journal, tmp) = (self.root.join("journal"), self.root.join("journal.tmp"));
        if changed > 0 {
            std::fs::write(&tmp, &text)
                .with_context(|| format!("cannot write {}", tmp.display()))?;
            // The commit point: from here on the run's files are what the directories hold,
            // now or once the next command has applied the journal.
            std::fs::rename(&tmp, &journal)
                .with_context(|| format!("cannot write {}", journal.display()))?;
        }
        Ok((journal, changed))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Not committed (a failure): the copies are of no further use. A journal that could
        // not be applied stays for the next command to finish.
        if !self.root.join("journal").exists() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

/// What [`recover`] did.
pub enum Recovered {
    /// Nothing was pending, or it has been applied.
    Done,
    /// A journal is pending that also writes these directories, not all locked by the caller.
    NeedsAlso(Vec<PathBuf>),
}

/// Applies every journal a killed writer left for a directory set starting with one of
/// `dirs`; the caller holds the exclusive lock on every one of `dirs`.
pub fn recover(workspace: &Path, dirs: &[&Path]) -> Result<Recovered> {
    let mut involved: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if let Some(pending) = pending(workspace, d)? {
            involved.extend(pending);
        }
    }
    if !involved.iter().all(|d| dirs.contains(&d.as_path())) {
        return Ok(Recovered::NeedsAlso(involved));
    }
    for d in dirs {
        let stage = stage_of(workspace, d);
        if stage.join("journal").exists() {
            eprintln!(
                "finishing a run that was stopped while it put its files into {} (its journal: {})",
                d.display(),
                stage.join("journal").display()
            );
            apply(&stage)?;
        }
    }
    Ok(Recovered::Done)
}

/// The directories a commit left unfinished in `dir` would write (all of them, `dir` first
/// among them or not), or `None` when nothing is pending there.
pub fn pending(workspace: &Path, dir: &Path) -> Result<Option<Vec<PathBuf>>> {
    let journal = stage_of(workspace, dir).join("journal");
    if !journal.exists() {
        return Ok(None);
    }
    let (dirs, _) = read_journal(&journal)?;
    Ok(Some(dirs))
}

/// Applies the journal in `stage` (idempotent: a run killed while applying it is finished by
/// applying it again), then removes it and the copies.
fn apply(stage: &Path) -> Result<()> {
    let journal = stage.join("journal");
    let (dirs, ops) = read_journal(&journal)?;
    let pause = commit_pause();
    for (put, i, rel) in ops {
        if let Some(pause) = pause {
            std::thread::sleep(pause);
        }
        let to = dirs[i].join(&rel);
        if put {
            let from = stage.join(i.to_string()).join(&rel);
            let bytes =
                std::fs::read(&from).with_context(|| format!("cannot read {}", from.display()))?;
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create {}", parent.display()))?;
            }
            // A fixed temporary name, not the writer's pid: applying the journal again (after
            // a kill between this write and the rename) writes and renames the very same file,
            // and then clears any temporary an older writer left beside it.
            let tmp = crate::results::temp_of(&to, "journal")?;
            std::fs::write(&tmp, &bytes)
                .with_context(|| format!("cannot write {}", tmp.display()))?;
            if let Some(pause) = pause {
                std::thread::sleep(pause);
            }
            std::fs::rename(&tmp, &to).with_context(|| format!("cannot write {}", to.display()))?;
            crate::results::remove_temps_of(&to)?;
        } else {
            match std::fs::remove_file(&to) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("cannot remove {}", to.display()))
                }
                _ => {}
            }
            crate::results::remove_temps_of(&to)?;
        }
    }
    // The journal goes first: copies without a journal are only ever cleared.
    std::fs::remove_file(&journal)
        .with_context(|| format!("cannot remove {}", journal.display()))?;
    let _ = std::fs::remove_dir_all(stage);
    Ok(())
}

/// (the real directories, every operation as (put, directory index, relative path)).
type Journal = (Vec<PathBuf>, Vec<(bool, usize, PathBuf)>);

fn read_journal(path: &Path) -> Result<Journal> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut lines = text.lines();
    if lines.next() != Some(JOURNAL_FORMAT) {
        bail!(
            "{} is not a journal this lab wrote; delete it (the results it was for may be \
             half written: restore them from git or regenerate them)",
            path.display()
        );
    }
    let (mut dirs, mut ops) = (Vec::new(), Vec::new());
    for line in lines {
        let parts: Vec<&str> = line.splitn(3, '\t').collect();
        match parts[..] {
            ["dir", d] => dirs.push(PathBuf::from(d)),
            [op @ ("put" | "del"), i, rel] => {
                let i: usize = i
                    .parse()
                    .ok()
                    .filter(|i| *i < dirs.len())
                    .with_context(|| format!("{}: `{line}` names no directory", path.display()))?;
                ops.push((op == "put", i, PathBuf::from(rel)));
            }
            _ => bail!("{}: `{line}` is not a journal line", path.display()),
        }
    }
    Ok((dirs, ops))
}

/// A path as journal text (one line, no tabs).
fn path_text(p: &Path) -> Result<&str> {
    p.to_str()
        .filter(|s| !s.contains(['\n', '\t']))
        .with_context(|| format!("{}: not a path the journal can hold", p.display()))
}

/// What a command last wrote into some directories, and the digest of everything it made them
/// from (`target/lab/written/`, one record per set of directories). A run whose digest is the
/// recorded one, finding every file there exactly as written (none added, removed or changed),
/// would write the very same bytes: it can say so and stop. That is a warm `just compare`
/// with nothing changed, which would otherwise re-read a million result rows and redraw every
/// chart to rewrite identical files.
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
                .join(crate::results::hex(&h.finalize())),
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
                let sha = crate::results::hex(&Sha256::digest(&bytes));
                out.push_str(&format!("{i} {sha} {}\n", rel.display()));
            }
        }
        Ok(out)
    }
}

/// Every file under `dir`, as paths relative to it, sorted; not those of a result set nested
/// in it (a directory with its own manifest, as `results/corpus/`), which its own commands
/// write under their own lock and hashes.
pub fn files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in
            std::fs::read_dir(&d).with_context(|| format!("cannot list {}", d.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                if !path.join(crate::results::MANIFEST).exists() {
                    stack.push(path);
                }
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

/// Taking a results directory's lock completes whatever a killed writer left of its commit:
/// the lock is [`crate::store::lock`]'s, the commit this module's, so these live here.
impl Lock {
    /// An exclusive lock on every directory of `dirs` (absolute), taken in a fixed order so
    /// that two commands never wait for each other. Once it holds them it completes (or
    /// discards) whatever a killed writer left of its commit ([`recover`]).
    pub fn write(root: &Path, dirs: &[&Path]) -> Result<Lock> {
        loop {
            let lock = Self::take(root, dirs, true)?;
            match recover(root, dirs)? {
                Recovered::Done => return Ok(lock),
                // The pending commit also wrote directories this lock does not hold: finish it
                // under a lock on all of them, then take this one again.
                Recovered::NeedsAlso(others) => {
                    drop(lock);
                    let others: Vec<&Path> = others.iter().map(PathBuf::as_path).collect();
                    drop(Self::write(root, &others)?);
                }
            }
        }
    }

    /// A shared lock on `dir` (absolute) for a command that reads it: writers wait until it is
    /// released, other readers do not. A commit a killed writer left half done is completed
    /// first, so what is read is one whole result set.
    pub fn read(root: &Path, dir: &Path) -> Result<Lock> {
        loop {
            let lock = Self::take(root, &[dir], false)?;
            match pending(root, dir)? {
                None => return Ok(lock),
                Some(dirs) => {
                    drop(lock);
                    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
                    drop(Self::write(root, &dirs)?);
                }
            }
        }
    }
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

    /// A run stopped right after its commit point leaves the real directory as it was and a
    /// journal; the next command to lock the directory, even one that only reads it, applies
    /// it first (adding, replacing and removing files), and a second application changes
    /// nothing.
    #[test]
    fn a_stopped_commit_is_finished_by_the_next_command() {
        let ws = tempfile::tempdir().unwrap();
        let (real, images) = (ws.path().join("results"), ws.path().join("images"));
        std::fs::create_dir_all(&real).unwrap();
        std::fs::write(real.join("totals.csv"), "old").unwrap();
        std::fs::write(real.join("gone.csv"), "x").unwrap();
        let s = Staging::begin(ws.path(), &[&real, &images]).unwrap();
        let copy = s.dir(&real).to_path_buf();
        std::fs::write(copy.join("totals.csv"), "new").unwrap();
        std::fs::remove_file(copy.join("gone.csv")).unwrap();
        std::fs::write(s.dir(&images).join("a.png"), "png").unwrap();
        let (journal, changed) = s.write_journal().unwrap();
        assert_eq!(changed, 3);
        assert_eq!(journal, journal_of(ws.path(), &real));
        drop(s); // killed here: nothing applied yet
        assert_eq!(std::fs::read(real.join("totals.csv")).unwrap(), b"old");
        assert!(journal.exists() && !images.exists());
        // What a kill between a temporary's write and its rename leaves: this lab's fixed name
        // and an older writer's pid-named one, beside a file put and a file removed.
        let temps = [
            ".totals.csv.journal.tmp",
            ".totals.csv.12889.tmp",
            ".gone.csv.4242.tmp",
        ];
        for t in temps {
            std::fs::write(real.join(t), "half").unwrap();
        }
        std::fs::write(
            real.join(".kept.tmp"),
            "not a temporary of a journal's file",
        )
        .unwrap();

        let _reading = crate::store::lock::Lock::read(ws.path(), &real).unwrap();
        assert_eq!(std::fs::read(real.join("totals.csv")).unwrap(), b"new");
        assert!(!real.join("gone.csv").exists());
        for t in temps {
            assert!(!real.join(t).exists(), "{t} left behind");
        }
        assert!(
            real.join(".kept.tmp").exists(),
            "a file the journal does not name"
        );
        assert_eq!(std::fs::read(images.join("a.png")).unwrap(), b"png");
        assert!(!journal.exists() && !journal.parent().unwrap().exists());
        drop(_reading);

        // A commit that changes nothing writes no journal.
        let s = Staging::begin(ws.path(), &[&real, &images]).unwrap();
        assert_eq!(s.commit().unwrap(), 0);
        assert!(!journal.exists());
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
