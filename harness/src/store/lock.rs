//! One writer per results directory.
//!
//! Every command that writes a results directory (and its charts) holds an exclusive advisory
//! lock on each of them from the moment it copies them until its files are in place; every
//! command that only reads one holds a shared lock while it reads. Two `lab measure` runs into
//! one `--out` used to each merge their rows into their own copy of the directory and the last
//! to finish replaced the other's: now the second waits, saying for whom, and merges into what
//! the first wrote.
//!
//! The locks are files under `target/lab/locks/` (one per directory, named by a hash of its
//! absolute path), locked with `flock` through [`std::fs::File::lock`]: the kernel releases
//! them when the holder exits, however it exits, so a killed run never leaves a directory
//! locked. The holder writes its command line into the file for the next one to name.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Locks held on some directories; released when dropped.
pub struct Lock {
    files: Vec<File>,
    exclusive: bool,
}

impl Drop for Lock {
    fn drop(&mut self) {
        if self.exclusive {
            // No holder to name any more (the kernel releases the lock as the file closes).
            for f in &self.files {
                let _ = f.set_len(0);
            }
        }
    }
}

impl Lock {
    /// The locks themselves, waiting for any holder; nothing else ([`Lock::write`] and
    /// [`Lock::read`], which also complete a killed writer's commit, are the staging's).
    pub(crate) fn take(root: &Path, dirs: &[&Path], exclusive: bool) -> Result<Lock> {
        let locks = root.join("target/lab/locks");
        std::fs::create_dir_all(&locks)
            .with_context(|| format!("cannot create {}", locks.display()))?;
        let mut sorted: Vec<&Path> = dirs.to_vec();
        sorted.sort();
        sorted.dedup();
        let mut files = Vec::new();
        for dir in sorted {
            let path = file_of(root, dir);
            let mut file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&path)
                .with_context(|| format!("cannot open the lock {}", path.display()))?;
            let free = if exclusive {
                file.try_lock()
            } else {
                file.try_lock_shared()
            };
            match free {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    // An exclusive holder names itself; readers do not.
                    eprintln!(
                        "waiting: {} is being {} by {}; this command goes on once that is done",
                        dir.display(),
                        if holder.is_empty() { "read" } else { "written" },
                        if holder.is_empty() {
                            "another lab command"
                        } else {
                            holder
                        }
                    );
                    if exclusive {
                        file.lock()
                    } else {
                        file.lock_shared()
                    }
                    .with_context(|| format!("cannot lock {}", path.display()))?;
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(e).with_context(|| format!("cannot lock {}", path.display()))
                }
            }
            if exclusive {
                // Who holds it, for a command that has to wait (readers leave it as it is).
                let me = format!(
                    "`{}` (pid {})",
                    std::env::args().collect::<Vec<_>>().join(" "),
                    std::process::id()
                );
                file.set_len(0)
                    .and_then(|()| file.rewind())
                    .and_then(|()| file.write_all(me.as_bytes()))
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            files.push(file);
        }
        Ok(Lock { files, exclusive })
    }
}

/// The lock file of `dir`.
fn file_of(root: &Path, dir: &Path) -> PathBuf {
    root.join("target/lab/locks")
        .join(format!("{}.lock", &key(dir)[..16]))
}

/// A name for `dir` that fits in one path component, the same however the directory is
/// reached (`results`, `harness/../results`, a symbolic link): its canonical path, or, for a
/// directory not made yet, its parent's canonical path and its name.
pub(crate) fn key(dir: &Path) -> String {
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| {
        let parent = dir.parent().and_then(|p| std::fs::canonicalize(p).ok());
        match (parent, dir.file_name()) {
            (Some(p), Some(name)) => p.join(name),
            _ => std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
        }
    });
    crate::results::hex(&Sha256::digest(canonical.to_string_lossy().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer excludes another writer and readers; readers share.
    #[test]
    fn writers_exclude_readers_share() {
        let ws = tempfile::tempdir().unwrap();
        let dir = ws.path().join("results");
        let w = Lock::write(ws.path(), &[&dir]).unwrap();
        let lock_file = file_of(ws.path(), &dir);
        let other = File::open(&lock_file).unwrap();
        assert!(matches!(
            other.try_lock_shared(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        assert!(std::fs::read_to_string(&lock_file)
            .unwrap()
            .contains(&format!("(pid {})", std::process::id())));
        drop(w);
        let r1 = Lock::read(ws.path(), &dir).unwrap();
        let r2 = Lock::read(ws.path(), &dir).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop((r1, r2));
        other.try_lock().unwrap();
    }

    /// One directory, one lock, however its path is written.
    #[test]
    fn a_directory_has_one_key_however_it_is_reached() {
        let ws = tempfile::tempdir().unwrap();
        let dir = ws.path().join("results");
        let before = key(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(key(&dir), before, "a directory not made yet keeps its key");
        assert_eq!(key(&dir), key(&ws.path().join("results/../results")));
        std::os::unix::fs::symlink(&dir, ws.path().join("link")).unwrap();
        assert_eq!(key(&dir), key(&ws.path().join("link")));
        assert_ne!(key(&dir), key(&ws.path().join("other")));
    }
}
