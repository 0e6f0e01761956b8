//! Results you can trust: `report` and `check` refuse result sets that are incomplete or
//! damaged, naming what is wrong and the fix, and a command that fails leaves the directory it
//! was given byte for byte as it was. Every case works on a copy of the committed `results/`
//! (no builds, no runs), and the committed one is checked untouched too.

use crate::cli::lab;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn results() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results")
}

/// A copy of the committed results, in a fresh temporary directory.
pub fn copy_of_results() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for rel in files(&results()) {
        let to = dir.path().join(&rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(results().join(&rel), to).unwrap();
    }
    dir
}

fn files(dir: &Path) -> Vec<PathBuf> {
    galloc_lab::staging::files(dir).unwrap()
}

/// Every file's name and bytes under `dir`, hashed.
fn tree_hash(dir: &Path) -> String {
    let mut h = Sha256::new();
    for rel in files(dir) {
        h.update(rel.to_string_lossy().as_bytes());
        h.update(std::fs::read(dir.join(&rel)).unwrap());
    }
    format!("{:x}", h.finalize())
}

/// Removes the lines of `file` (under `dir`) for which `drop` holds; returns how many.
fn drop_lines(dir: &Path, file: &str, mut drop: impl FnMut(usize, &str) -> bool) -> usize {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let (kept, gone): (Vec<_>, Vec<_>) = text
        .lines()
        .enumerate()
        .partition(|(i, l)| *i == 0 || !drop(*i, l));
    let kept: Vec<&str> = kept.into_iter().map(|(_, l)| l).collect();
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    gone.len()
}

/// Runs `lab report` on a damaged copy: it must fail with every one of `expect` in its message
/// and leave the copy (and the committed results) as they were.
fn report_refuses(damage: impl Fn(&Path), expect: &[&str]) {
    let copy = copy_of_results();
    damage(copy.path());
    let (before, committed) = (tree_hash(copy.path()), tree_hash(&results()));
    let (ok, err) = lab(&["report", "--results", copy.path().to_str().unwrap()]);
    assert!(!ok, "report passed on a damaged copy");
    for e in expect {
        assert!(err.contains(e), "`{e}` not in: {err}");
    }
    assert_eq!(
        tree_hash(copy.path()),
        before,
        "the failed report wrote files"
    );
    assert_eq!(tree_hash(&results()), committed);
}

/// Runs `lab check` with a damaged copy as the baseline (or as the run judged): it must fail.
fn check_refuses(damage: impl Fn(&Path), as_baseline: bool, expect: &[&str]) {
    let copy = copy_of_results();
    damage(copy.path());
    let before = tree_hash(copy.path());
    let (c, r) = (copy.path().to_str().unwrap(), results());
    let r = r.to_str().unwrap();
    let (baseline, current) = if as_baseline { (c, r) } else { (r, c) };
    let (ok, err) = lab(&["check", "--baseline", baseline, "--current", current]);
    assert!(!ok, "the gate passed");
    for e in expect {
        assert!(err.contains(e), "`{e}` not in: {err}");
    }
    assert_eq!(tree_hash(copy.path()), before);
}

#[test]
fn the_committed_results_are_complete_and_render_unchanged() {
    let copy = copy_of_results();
    let (ok, err) = lab(&["report", "--results", copy.path().to_str().unwrap()]);
    assert!(ok, "{err}");
    // Its own charts go to the copy's images/; the results files themselves are as committed.
    for rel in files(&results()) {
        if rel.starts_with("images") {
            continue;
        }
        let name = rel.to_string_lossy();
        if name == "README.md" {
            continue; // links its charts differently (images/ against ../images/)
        }
        assert_eq!(
            std::fs::read(copy.path().join(&rel)).unwrap(),
            std::fs::read(results().join(&rel)).unwrap(),
            "{name} changed"
        );
    }
    let (ok, err) = lab(&[
        "check",
        "--baseline",
        copy.path().to_str().unwrap(),
        "--current",
        results().to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
}

#[test]
fn report_refuses_missing_files_and_rows() {
    report_refuses(
        |d| std::fs::remove_file(d.join("gtest/totals.csv")).unwrap(),
        &[
            "is incomplete",
            "gtest/nft/shipping: 0 rows in totals.csv",
            "just compare",
        ],
    );
    report_refuses(
        |d| assert_eq!(drop_lines(d, "gtest/totals.csv", |i, _| i <= 12), 12),
        &["is incomplete", "0 rows in totals.csv (want 1)"],
    );
    report_refuses(
        |d| std::fs::remove_file(d.join("measured.csv")).unwrap(),
        &["measured.csv is missing", "just compare"],
    );
    report_refuses(
        |d| std::fs::remove_file(d.join("traces/nft-lab.csv.zst")).unwrap(),
        &["traces/nft-lab.csv.zst: missing"],
    );
}

#[test]
fn report_refuses_damaged_files_naming_file_and_line() {
    report_refuses(
        |d| {
            let p = d.join("wasmtime/messages.csv.zst");
            let bytes = std::fs::read(&p).unwrap();
            std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        },
        &["messages.csv.zst is truncated or corrupt"],
    );
    report_refuses(
        |d| {
            let p = d.join("gtest/ops.csv");
            let mut text = std::fs::read_to_string(&p).unwrap();
            text.push_str("gtest,nft,shipping,gas,malloc,not-a-number\n");
            std::fs::write(&p, text).unwrap();
        },
        &["gtest/ops.csv:", "not a row of this file's format"],
    );
}

#[test]
fn the_gate_refuses_an_incomplete_baseline_or_run() {
    check_refuses(
        |d| std::fs::remove_file(d.join("gtest/totals.csv")).unwrap(),
        true,
        &["the baseline cannot be used", "is incomplete"],
    );
    check_refuses(
        |d| std::fs::write(d.join("wasmtime/totals.csv"), "").unwrap(),
        true,
        &["the baseline cannot be used"],
    );
    check_refuses(
        |d| assert_eq!(drop_lines(d, "gtest/totals.csv", |i, _| i <= 12), 12),
        true,
        &["the baseline cannot be used", "0 rows in totals.csv"],
    );
    // Rows gone from the baseline *and* its manifest: still not a whole result set.
    check_refuses(
        |d| {
            drop_lines(d, "gtest/totals.csv", |_, l| l.contains(",nft,bump,"));
            drop_lines(d, "measured.csv", |_, l| l == "gtest,nft,bump");
        },
        true,
        &["gtest/nft/bump: not measured"],
    );
    // The run judged, with 103 of its rows missing.
    check_refuses(
        |d| {
            let mut n = 0;
            drop_lines(d, "gtest/totals.csv", |_, _| {
                n += 1;
                n <= 103
            });
        },
        false,
        &["the run to judge cannot be used", "is incomplete"],
    );
}

#[test]
fn empty_lists_are_errors_that_name_the_choices() {
    let (ok, err) = lab(&["measure", "--variants", ""]);
    assert!(
        !ok && err.contains("no variant given (an empty list); pass `all` or some of: shipping,"),
        "{err}"
    );
    let (ok, err) = lab(&["measure", "--cases", " "]);
    assert!(
        !ok && err
            .contains("no case given (an empty list); pass `default`, `all` or some of: nft,"),
        "{err}"
    );
    let (ok, err) = lab(&["measure", "--backends", ""]);
    assert!(!ok && err.contains("no backend given"), "{err}");
}
