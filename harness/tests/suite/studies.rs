//! The studies kept beside the committed results (the layout study, `results/layout-model/`,
//! and the scale cases, `results/scale/`) are read only as the lab wrote them: a command that
//! reads one checks its files against their hashes under its read lock first, as it does the
//! results themselves (issue 73, item 7).

use crate::cli::lab;
use crate::integrity::results;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Every file's name and bytes under `dir`, the nested result sets included, hashed.
fn tree_hash(dir: &Path) -> String {
    let mut h = Sha256::new();
    for (rel, bytes) in crate::authors_crate::files(dir) {
        h.update(rel.to_string_lossy().as_bytes());
        h.update(bytes);
    }
    format!("{:x}", h.finalize())
}

/// The studies kept beside the results (the layout study and the scale cases) are read by
/// `lab report` and `lab ship` only once their files hash as the lab wrote them, under their
/// read locks: a hand edit of `layout-model/second.csv` turned the rule's standing from
/// "misses the lab's bar" into "meets it", and one of `scale/messages.csv` the target's at-scale
/// cell, with nothing said.
#[test]
fn an_edited_study_is_named_not_judged() {
    // Every file of the committed results, the result sets nested in it (the corpus, the
    // studies) included: what `lab ship` and `lab report` read beside the rows.
    fn copy_tree(from: &Path, to: &Path) {
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            let dest = to.join(path.file_name().unwrap());
            if path.is_dir() {
                std::fs::create_dir_all(&dest).unwrap();
                copy_tree(&path, &dest);
            } else {
                std::fs::copy(&path, dest).unwrap();
            }
        }
    }
    for file in ["layout-model/second.csv", "scale/messages.csv"] {
        let copy = tempfile::tempdir().unwrap();
        copy_tree(&results(), copy.path());
        let path = copy.path().join(file);
        assert!(path.is_file(), "the copy lacks {file}");
        // One number changed: a digit of the first data line's last cell.
        let text = std::fs::read_to_string(&path).unwrap();
        let line = text.lines().nth(1).unwrap().to_owned();
        let last = line.chars().rev().find(char::is_ascii_digit).unwrap();
        let other = if last == '1' { '2' } else { '1' };
        let at = line.rfind(last).unwrap();
        let mut edited = line.clone();
        edited.replace_range(at..at + 1, &other.to_string());
        std::fs::write(&path, text.replacen(&line, &edited, 1)).unwrap();
        let before = tree_hash(copy.path());
        let says = format!("{file}: changed since the lab wrote it");
        for args in [
            vec!["ship", "--results", copy.path().to_str().unwrap()],
            vec!["report", "--results", copy.path().to_str().unwrap()],
        ] {
            let (ok, err) = lab(&args);
            assert!(!ok, "{args:?} judged an edited {file}");
            assert!(err.contains(&says), "{args:?}: {err}");
        }
        assert_eq!(tree_hash(copy.path()), before, "a refused command wrote");
    }
}
