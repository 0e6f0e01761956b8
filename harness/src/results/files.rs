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
/// earlier file is there to compare with, and level 19 over every trace took ~20 s.
pub fn keep_compressed_in(dir: std::path::PathBuf) {
    let _ = COMPRESSED.set(dir);
}

/// `bytes` at [`ZSTD_LEVEL`], from the kept copy when it decompresses to exactly `bytes`
/// (zstd is deterministic: the kept copy is what compressing would give).
fn compress(bytes: &[u8]) -> Result<Vec<u8>> {
    use sha2::{Digest, Sha256};
    let kept = COMPRESSED.get().map(|dir| {
        let key: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
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
    let name = path
        .file_name()
        .with_context(|| format!("{} names no file", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
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
    let mut bytes = std::fs::read(path).with_context(|| {
        format!(
            "cannot read {}; regenerate it with its recipe (`just compare`)",
            path.display()
        )
    })?;
    if compressed(path) {
        bytes = zstd::decode_all(&bytes[..]).with_context(|| {
            format!(
                "{} is truncated or corrupt (not a whole zstd stream); regenerate it with \
                 `just compare`",
                path.display()
            )
        })?;
    }
    let mut reader = csv::Reader::from_reader(&bytes[..]);
    let mut rows = Vec::new();
    for row in reader.deserialize() {
        rows.push(row.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            if e.to_string().contains("missing field") {
                return anyhow::anyhow!(
                    "{}:{line}: written by another version of the lab ({e}): a run of every \
                     variant and default case on both embedded backends (`just compare`) \
                     writes every results file afresh; a partial run cannot add to it",
                    path.display()
                );
            }
            anyhow::anyhow!(
                "{}:{line}: not a row of this file's format ({e}); restore the file or \
                 regenerate it with `just compare`",
                path.display()
            )
        })?);
    }
    Ok(rows)
}

/// How to get `path` (a results file or directory) back as the lab wrote it: from git when
/// git tracks it (`results/` on a checkout), else by running again what wrote it (an `--out`
/// directory). The path is given as the user can type it: relative to the current directory
/// when under it.
pub fn restore_hint(path: &Path) -> String {
    let shown = std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            let abs = std::path::absolute(path).ok()?;
            abs.strip_prefix(&cwd).ok().map(Path::to_path_buf)
        })
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| path.to_path_buf());
    let (dir, name) = if path.is_dir() {
        (path, std::ffi::OsStr::new("."))
    } else {
        (
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
            path.file_name().unwrap_or_default(),
        )
    };
    // `ls-files --error-unmatch` fails for a path git does not track (or outside a repository).
    let tracked = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["ls-files", "--error-unmatch", "--"])
        .arg(name)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if tracked {
        format!(
            "restore it with `git checkout -- {}` or regenerate it with `just compare`",
            shown.display()
        )
    } else {
        format!(
            "git does not track {}: delete the directory and run again the `lab measure --out` \
             that wrote it",
            shown.display()
        )
    }
}
