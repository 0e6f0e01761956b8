//! The result files: CSV written atomically, zstd-compressed where large (`*.zst`, at a fixed
//! level so the same rows give the same bytes), merged with the rows already there, and read
//! back with errors that say how to get a damaged file back.

use anyhow::{Context, Result};
use serde::{de::DeserializeOwned, Serialize};
use std::path::Path;

/// zstd level of `.csv.zst` results: they are committed, and the same rows must give the same
/// bytes.
pub const ZSTD_LEVEL: i32 = 19;

/// Whether `path` names a zstd-compressed CSV (`*.zst`): large per-message results are kept so.
fn compressed(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "zst")
}

/// Writes `rows` as CSV with a header (zstd-compressed when `path` ends in `.zst`).
pub fn write_csv<T: Serialize>(path: &Path, rows: &[T]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row)?;
    }
    let mut bytes = writer.into_inner().context("encoding CSV")?;
    if compressed(path) {
        // Level 19 is slow (most of a warm `just compare` went here): a file that already
        // holds these rows is left as it is, which is also the bytes compressing would give.
        let old = std::fs::read(path).ok();
        if old.is_some_and(|old| zstd::decode_all(&old[..]).is_ok_and(|rows| rows == bytes)) {
            return Ok(());
        }
        bytes = compress(&bytes)?;
    }
    write_file(path, &bytes)
}

/// Where compressed results are kept by the SHA-256 of their uncompressed bytes, once set
/// ([`keep_compressed_in`]).
static COMPRESSED: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Keeps every compressed result under `dir` (in `target/`), so rows compressed once are not
/// compressed again: a whole run writes its files into an emptied staging copy, where no
/// earlier file is there to compare with, and level 19 over every trace is slow.
pub fn keep_compressed_in(dir: std::path::PathBuf) {
    let _ = COMPRESSED.set(dir);
}

/// `bytes` at [`ZSTD_LEVEL`], from the kept copy when it decompresses to exactly `bytes`
/// (zstd is deterministic: the kept copy is what compressing would give).
fn compress(bytes: &[u8]) -> Result<Vec<u8>> {
    use sha2::{Digest, Sha256};
    let kept = COMPRESSED.get().map(|dir| {
        let key = hex(&Sha256::digest(bytes));
        dir.join(format!("{key}.zst"))
    });
    if let Some(old) = kept.as_ref().and_then(|k| std::fs::read(k).ok()) {
        if zstd::decode_all(&old[..]).is_ok_and(|rows| rows == bytes) {
            return Ok(old);
        }
    }
    let packed = zstd::encode_all(bytes, ZSTD_LEVEL).context("compressing CSV")?;
    if let Some(kept) = kept {
        // Only a speed-up: a copy that cannot be kept is compressed again next time.
        if let Some(dir) = kept.parent() {
            if std::fs::create_dir_all(dir).is_ok() {
                let _ = write_file(&kept, &packed);
            }
        }
    }
    Ok(packed)
}

/// Writes `bytes` to `path` all at once: into a temporary file beside it, then renamed over it,
/// so a reader (or a command that fails half-way) never leaves a half-written file.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_of(path, &std::process::id().to_string())?;
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// The temporary file beside `path` that a write tagged `tag` goes through: `.NAME.TAG.tmp`
/// (hidden, and named for the file it becomes, so that [`remove_temps_of`] finds it).
pub fn temp_of(path: &Path, tag: &str) -> Result<std::path::PathBuf> {
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{tag}.tmp"));
    Ok(path.with_file_name(tmp_name))
}

/// Removes every temporary file beside `path` that a write of it left (`.NAME.*.tmp`, as
/// [`temp_of`] names them): a process killed between writing one and renaming it leaves it
/// for good otherwise. Only for a caller holding the directory's write lock, so that no other
/// writer's temporary is in flight.
pub fn remove_temps_of(path: &Path) -> Result<()> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(());
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let file = entry.file_name();
        let file = file.to_string_lossy();
        if file.starts_with(&prefix) && file.ends_with(".tmp") && file.len() > prefix.len() + 4 {
            let stale = entry.path();
            match std::fs::remove_file(&stale) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("cannot remove {}", stale.display()))
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// The rows of `path` with those whose key is in `fresh` replaced by `fresh`, sorted by key:
/// re-running a subset updates only its rows. A file that cannot be read is an error (naming
/// the file and line), never a reason to drop the rows it holds.
pub fn merge<T: DeserializeOwned, K: Ord>(
    path: &Path,
    fresh: Vec<T>,
    key: impl Fn(&T) -> K,
) -> Result<Vec<T>> {
    let mut all: Vec<T> = if path.exists() {
        read_csv(path)
            .with_context(|| format!("its rows are kept, not replaced; {}", restore_hint(path)))?
    } else {
        Vec::new()
    };
    let replaced: std::collections::BTreeSet<K> = fresh.iter().map(&key).collect();
    all.retain(|old| !replaced.contains(&key(old)));
    all.extend(fresh);
    all.sort_by_cached_key(|r| key(r));
    Ok(all)
}

/// Reads CSV rows written by [`write_csv`].
pub fn read_csv<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let mut bytes = std::fs::read(path)
        .with_context(|| format!("cannot read {}; {}", path.display(), restore_hint(path)))?;
    if compressed(path) {
        bytes = zstd::decode_all(&bytes[..]).with_context(|| {
            format!(
                "{} is truncated or corrupt (not a whole zstd stream); {}",
                path.display(),
                restore_hint(path)
            )
        })?;
    }
    let mut reader = csv::Reader::from_reader(&bytes[..]);
    let mut rows = Vec::new();
    for row in reader.deserialize() {
        rows.push(row.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            // A column this lab's format has is missing: the file was edited, or another
            // version of the lab wrote it. Either way a partial run cannot add to it, and
            // what writes it afresh is what writes its directory (not always `just compare`).
            if e.to_string().contains("missing field") {
                return anyhow::anyhow!(
                    "{}:{line}: lacks a column this lab's format has ({e}): it was edited, or \
                     written by another version of the lab, and a partial run cannot add to \
                     it; {}",
                    path.display(),
                    restore_hint(path)
                );
            }
            anyhow::anyhow!(
                "{}:{line}: not a row of this file's format ({e}); {}",
                path.display(),
                restore_hint(path)
            )
        })?);
    }
    Ok(rows)
}

/// How to get `path` (a results file or directory) back as the lab wrote it, in words that
/// are true for that path: a directory that holds no lab results says so; a file git tracks
/// gets the `git -C <repository> checkout -- <file>` that restores exactly it from wherever
/// the user stands; and the results are regenerated by what writes that directory (`just
/// compare` for the lab's `results/`, `just corpus` for `results/corpus/`, else the `lab
/// measure … --out` that wrote it).
pub fn restore_hint(path: &Path) -> String {
    if path.is_dir() {
        restore_files_hint(path, &[])
    } else {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
        let dir = dir.unwrap_or(Path::new("."));
        restore_files_hint(dir, &[path.strip_prefix(dir).unwrap_or(path)])
    }
}

/// Records, beside `copy` (a command's working copy of the results directory `real`, made
/// before it writes them), which directory it stands for: a hint made from the copy's files
/// is about the real directory, whose name the command's error is given back under.
pub fn mark_working_copy(copy: &Path, real: &Path) -> Result<()> {
    let mark = working_copy_mark(copy);
    std::fs::write(&mark, real.as_os_str().as_encoded_bytes())
        .with_context(|| format!("cannot write {}", mark.display()))
}

/// Where [`mark_working_copy`] writes: `<copy>.from`, beside the copy (inside it, it would be
/// taken for one of its files).
fn working_copy_mark(copy: &Path) -> std::path::PathBuf {
    let mut name = copy.file_name().unwrap_or_default().to_os_string();
    name.push(".from");
    copy.with_file_name(name)
}

/// The real path `path` stands for when it lies in a command's working copy.
fn real_of(path: &Path) -> Option<std::path::PathBuf> {
    path.ancestors().find_map(|copy| {
        let real = std::fs::read(working_copy_mark(copy)).ok()?;
        let real = std::path::PathBuf::from(String::from_utf8(real).ok()?);
        Some(real.join(path.strip_prefix(copy).ok()?))
    })
}

/// [`restore_hint`] for the files `rels` (relative to `dir`, a directory of results or inside
/// one); none: the directory as a whole.
pub fn restore_files_hint(dir: &Path, rels: &[&Path]) -> String {
    let abs = dir
        .canonicalize()
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_path_buf());
    // A working copy's files are the real directory's, as far as the way back to them goes.
    if let Some(real) = real_of(&abs).filter(|r| r.is_dir()) {
        return restore_files_hint(&real, rels);
    }
    let Some(root) = results_root(&abs) else {
        return format!(
            "{} holds no lab results (no {} or {}): it is not a directory `lab measure` wrote; \
             give one it wrote, or measure into a new or empty directory with `lab measure --out`",
            abs.display(),
            super::MANIFEST,
            crate::results::metadata::FILE
        );
    };
    let regenerate = regenerate_command(&root);
    let git = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(&abs)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim_end().to_owned())
    };
    let top =
        git(&["rev-parse".as_ref(), "--show-toplevel".as_ref()]).map(std::path::PathBuf::from);
    let targets: Vec<std::path::PathBuf> = if rels.is_empty() {
        vec![abs.clone()]
    } else {
        rels.iter().map(|r| abs.join(r)).collect()
    };
    let in_repo: Option<Vec<String>> = top.as_ref().and_then(|top| {
        targets
            .iter()
            .map(|t| {
                let rel = t.strip_prefix(top).ok()?.to_string_lossy().into_owned();
                Some(if rel.is_empty() { ".".to_owned() } else { rel })
            })
            .collect()
    });
    // Every file asked about must be one git has (a file git never had cannot be checked out;
    // a file added by hand is removed, not restored).
    let tracked = match (&top, &in_repo) {
        (Some(top), Some(rels)) => rels.iter().all(|rel| {
            std::process::Command::new("git")
                .arg("-C")
                .arg(top)
                .args(["ls-files", "--error-unmatch", "--"])
                .arg(rel)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        }),
        _ => false,
    };
    match (top, in_repo) {
        (Some(top), Some(rels)) if tracked => format!(
            "restore {} with `git -C {} checkout -- {}`, or regenerate {} with {regenerate}",
            if targets.len() == 1 && !targets[0].is_dir() {
                "it"
            } else {
                "them"
            },
            top.display(),
            rels.join(" "),
            root.display()
        ),
        _ => format!(
            "git does not track {}: regenerate {} with {regenerate}",
            targets
                .iter()
                .map(|t| t.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            root.display()
        ),
    }
}

/// The results directory `dir` is or lies in: the nearest of it and its two parents that
/// holds a manifest or the metadata (`results/gtest/` lies in `results/`).
fn results_root(dir: &Path) -> Option<std::path::PathBuf> {
    dir.ancestors()
        .take(3)
        .find(|d| {
            d.join(super::MANIFEST).is_file() || d.join(crate::results::metadata::FILE).is_file()
        })
        .map(Path::to_path_buf)
}

/// What regenerates the results in `root`, as a hint: [`crate::results::metadata::regenerated_by`],
/// else the `lab measure` that wrote it.
fn regenerate_command(root: &Path) -> String {
    let lab = crate::results::metadata::lab_root(root);
    let recorded = crate::results::metadata::read(root).map(|m| m.regenerate_with);
    match crate::results::metadata::regenerated_by(lab.as_deref(), root, recorded.as_deref()) {
        Some(command) => format!("`{command}`"),
        // A copy of one of the lab's result sets: its recipe writes the lab's own directory.
        None if recorded.as_deref().is_some_and(|r| r.starts_with("just ")) => format!(
            "`{}` in the lab, which writes the lab's own directory (this one is a copy of it: \
             copy it again)",
            recorded.unwrap_or_default()
        ),
        // A copy of an outside program's results: the command recorded writes the original.
        None if recorded
            .as_deref()
            .is_some_and(|r| r.starts_with("lab measure")) =>
        {
            format!(
                "`{}`, which writes the original this directory is a copy of (copy it again, or \
             run that command with this directory as its `--out`)",
                recorded.unwrap_or_default()
            )
        }
        // No command recorded (no readable metadata): nothing says the lab wrote it, so no
        // command of the lab's is named as the one that would write it again.
        None => format!(
            "no command the lab records ({} names none; the lab may not have written it): \
             measure into a new or empty directory with `lab measure --out`",
            root.join(crate::results::metadata::FILE).display()
        ),
    }
}

/// Lower-case hex of `bytes`: how the lab names anything by its hash.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
