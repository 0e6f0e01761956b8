//! Where a command may write results, and what it may call a case: checked before anything is
//! built, since otherwise only the commit at the end of a run finds out (after every build and
//! run, past the point where its journal can no longer be applied).
//!
//! A results directory must be one the lab can create and write, outside its own state
//! (`target/lab/` itself, its staging, locks, caches and records, cargo's target directories),
//! at a path the commit's journal can hold. (What may name a case is the results model's:
//! [`crate::results::check_case`].)

use crate::build::workspace::Workspace;
use anyhow::{bail, Context, Result};
use std::path::{Component, Path, PathBuf};

/// The directories under `target/lab/` that are the lab's own machinery, never results.
const STATE: [&str; 11] = [
    "cache",
    "compressed",
    "fuzz",
    "galloc",
    "locks",
    "node",
    "skip",
    "stage",
    "stamps",
    "written",
    "bench",
];

/// Checks that results can be written to `out`: a path the journal can hold, not inside the
/// lab's own state, a directory (or none yet, under a directory the lab can create it in), not
/// a dangling symbolic link. `given`: the directory is the user's `--out` (the message names
/// the flag), not one the lab chose. Writes nothing: whether a directory can be made is tried
/// with a temporary one, removed at once.
pub fn check(ws: &Workspace, out: &Path, given: bool) -> Result<()> {
    let named = if given {
        format!("--out {}", out.display())
    } else {
        out.display().to_string()
    };
    let refuse = |why: String| -> Result<()> {
        bail!("{named}: {why}. Nothing was built: give another directory")
    };
    let text = out.to_str().filter(|s| !s.contains(['\n', '\t', '\r']));
    if text.is_none() {
        return refuse(
            "the path is not UTF-8 or holds a tab or a line break, which the commit's journal \
             cannot hold"
                .into(),
        );
    }
    let abs = resolved(out)?;
    if let Some(why) = too_long(&abs) {
        return refuse(why);
    }
    let lab = resolved(&ws.root().join("target/lab"))?;
    let target = resolved(&ws.root().join("target"))?;
    if lab.starts_with(&abs) {
        return refuse(format!(
            "it holds the lab's own state ({}: staging, locks, caches)",
            lab.display()
        ));
    }
    if let Ok(rel) = abs.strip_prefix(&lab) {
        if let Some(Component::Normal(first)) = rel.components().next() {
            if STATE.iter().any(|s| first == *s) {
                return refuse(format!(
                    "it is inside the lab's own state ({})",
                    lab.join(first).display()
                ));
            }
        }
    } else if abs.starts_with(&target) {
        return refuse(format!(
            "it is inside cargo's target directory ({}), which builds rewrite; under {} is fine",
            target.display(),
            lab.join("programs").display()
        ));
    }
    match std::fs::symlink_metadata(out) {
        Ok(meta) if meta.file_type().is_symlink() && !out.exists() => {
            return refuse(format!(
                "a symbolic link to {}, which does not exist",
                std::fs::read_link(out)
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| "nothing readable".into())
            ))
        }
        Ok(_) if out.is_dir() => return writable(&abs, &named),
        Ok(_) => {
            return refuse(
                "this is a file, not a directory; the lab writes a directory of results (CSVs, \
                 README.md, images/)"
                    .into(),
            )
        }
        Err(_) => {}
    }
    // Not there yet: the nearest ancestor that is must be a directory the lab can create the
    // rest in.
    let mut ancestor = abs.as_path();
    while !ancestor.exists() {
        ancestor = match ancestor.parent() {
            Some(p) => p,
            None => return refuse("no part of the path exists".into()),
        };
    }
    if !ancestor.is_dir() {
        return refuse(format!(
            "{} is a file, so no directory can be made under it",
            ancestor.display()
        ));
    }
    writable(ancestor, &named)
}

/// The longest path the lab writes inside a results directory, beyond the directory's own
/// (`traces/<case>-<variant>.csv.zst` and the temporary beside it, with a case name at its
/// longest, [`crate::results::check_case`]), with room to spare.
const LONGEST_INSIDE: usize = 2 * crate::results::case_name::MAX_CASE + 64;

/// Why `abs` cannot hold a results directory for its length, if it cannot: a name longer
/// than its file system takes (`NAME_MAX`, asked of the nearest existing ancestor), or a path
/// too long for the files the lab writes under it (`PATH_MAX`). Only the commit would find
/// out otherwise, after the whole run, leaving a journal that could never be applied.
fn too_long(abs: &Path) -> Option<String> {
    let ancestor = abs
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("/"));
    let limit = |name: libc::c_int, default: usize| -> usize {
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = std::ffi::CString::new(ancestor.as_os_str().as_bytes()) else {
            return default;
        };
        // SAFETY: `c` is a valid NUL-terminated path; pathconf only reads it.
        match unsafe { libc::pathconf(c.as_ptr(), name) } {
            n if n > 0 => n as usize,
            _ => default,
        }
    };
    let (name_max, path_max) = (
        limit(libc::_PC_NAME_MAX, 255),
        limit(libc::_PC_PATH_MAX, 4096),
    );
    for part in abs.components() {
        let len = part.as_os_str().len();
        if len > name_max {
            let shown: String = part
                .as_os_str()
                .to_string_lossy()
                .chars()
                .take(24)
                .collect();
            return Some(format!(
                "its part `{shown}…` is {len} bytes, and the file system takes names of at most \
                 {name_max}"
            ));
        }
    }
    let len = abs.as_os_str().len();
    (len + LONGEST_INSIDE > path_max).then(|| {
        format!(
            "the path is {len} bytes, and the files the lab writes under it would pass the \
             file system's limit of {path_max} for a path (keep it under {})",
            path_max - LONGEST_INSIDE
        )
    })
}

/// Whether a directory can be made in `dir` (the real test: permissions, a read-only or
/// virtual filesystem like `/proc`), by making one and removing it.
fn writable(dir: &Path, named: &str) -> Result<()> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let probe = dir.join(format!(".lab-probe-{}-{nanos}", std::process::id()));
    match std::fs::create_dir(&probe) {
        Ok(()) => std::fs::remove_dir(&probe)
            .with_context(|| format!("cannot remove the probe directory {}", probe.display())),
        Err(e) => bail!(
            "{named}: the lab cannot write in {} ({e}). Nothing was built: give a directory you \
             can write",
            dir.display()
        ),
    }
}

/// `path` absolute, with symbolic links of its existing part resolved and `..` taken away, so
/// that two spellings of one place compare equal.
fn resolved(path: &Path) -> Result<PathBuf> {
    let abs =
        std::path::absolute(path).with_context(|| format!("{}: cannot resolve", path.display()))?;
    let mut existing = abs.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                match *part {
                    p if p == ".." => {
                        out.pop();
                    }
                    p if p == "." => {}
                    p => out.push(p),
                }
            }
            return Ok(out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            (Some(parent), None) => {
                // Ends in `..`: keep it to apply once the prefix is resolved.
                rest.push(std::ffi::OsStr::new(".."));
                existing = parent;
            }
            (None, _) => return Ok(abs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> Workspace {
        Workspace::find(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap()
    }

    #[test]
    fn results_cannot_go_where_they_cannot_be_made_or_into_the_lab_s_state() {
        let ws = ws();
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let dangling = tmp.path().join("dangling");
        std::os::unix::fs::symlink(tmp.path().join("missing"), &dangling).unwrap();
        let cases: [(PathBuf, &str); 8] = [
            (
                file.join("out"),
                "is a file, so no directory can be made under it",
            ),
            (file.clone(), "this is a file, not a directory"),
            (dangling.clone(), "a symbolic link to"),
            (
                PathBuf::from("/proc/lab-results"),
                "the lab cannot write in /proc",
            ),
            (ws.root().join("target/lab"), "it holds the lab's own state"),
            (ws.root().join("target"), "it holds the lab's own state"),
            (
                ws.root().join("target/lab/stage/x"),
                "inside the lab's own state",
            ),
            (
                ws.root().join("target/variants/x"),
                "inside cargo's target directory",
            ),
        ];
        for (out, why) in cases {
            let err = format!("{:#}", check(&ws, &out, true).unwrap_err());
            assert!(err.contains(why), "{}: {err}", out.display());
            assert!(err.starts_with("--out "), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        // `..` that climbs into the lab's state is seen through.
        let sneaky = ws.root().join("target/lab/programs/../stage");
        assert!(check(&ws, &sneaky, true).is_err());
        // New directories, nested, and an existing empty one are fine; nothing is left behind.
        for ok in [
            tmp.path().join("new/deeper"),
            tmp.path().to_path_buf(),
            ws.root().join("target/lab/programs/x"),
        ] {
            check(&ws, &ok, true).unwrap();
        }
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
        let err = check(&ws, Path::new("/tmp/a\tb"), true).unwrap_err();
        assert!(err.to_string().contains("journal"), "{err}");
        // A name over 255 bytes, and a path whose files would pass 4,096: refused before any
        // build (they failed past the commit point).
        let long_name = tmp.path().join("n".repeat(256));
        let err = format!("{:#}", check(&ws, &long_name, true).unwrap_err());
        assert!(
            err.contains("is 256 bytes") && err.contains("at most 255"),
            "{err}"
        );
        let deep = (0..20).fold(tmp.path().to_path_buf(), |p, _| p.join("d".repeat(200)));
        let err = format!("{:#}", check(&ws, &deep, true).unwrap_err());
        assert!(err.contains("limit of 4096 for a path"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let fine = (0..10).fold(tmp.path().to_path_buf(), |p, _| p.join("d".repeat(200)));
        check(&ws, &fine, true).unwrap();
    }
}
