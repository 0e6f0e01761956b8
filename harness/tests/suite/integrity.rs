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
    galloc_lab::report::staging::files(dir).unwrap()
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

/// Records the files in `dir` as they now are in its `metadata.json`, as a lab that wrote
/// them so would: the damage below then reaches the completeness checks behind the hashes
/// (which a stray edit meets first: `stray_edits_are_named`).
pub fn reseal(dir: &Path) {
    let path = dir.join("metadata.json");
    let Ok(text) = std::fs::read(&path) else {
        return;
    };
    let mut meta: serde_json::Value = serde_json::from_slice(&text).unwrap();
    let (mut all, mut each) = (Sha256::new(), serde_json::Map::new());
    for rel in files(dir) {
        if !rel.extension().is_some_and(|e| e == "csv" || e == "zst") {
            continue;
        }
        let bytes = std::fs::read(dir.join(&rel)).unwrap();
        all.update(rel.to_string_lossy().as_bytes());
        all.update(&bytes);
        each.insert(
            rel.to_string_lossy().into_owned(),
            format!("{:x}", Sha256::digest(&bytes)).into(),
        );
    }
    meta["results_sha256"] = format!("{:x}", all.finalize()).into();
    meta["files"] = each.into();
    std::fs::write(&path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
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
    reseal(copy.path());
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
    reseal(copy.path());
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
        if name == "README.md" || rel.starts_with("cases") {
            continue; // the pages link their charts differently (images/ against ../images/)
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
            "lab measure --out",
        ],
    );
    report_refuses(
        |d| assert_eq!(drop_lines(d, "gtest/totals.csv", |i, _| i <= 12), 12),
        &["is incomplete", "0 rows in totals.csv (want 1)"],
    );
    report_refuses(
        |d| std::fs::remove_file(d.join("measured.csv")).unwrap(),
        &["measured.csv is missing", "lab measure --out"],
    );
    report_refuses(
        |d| std::fs::remove_file(d.join("traces/nft-lab.csv.zst")).unwrap(),
        &["traces/nft-lab.csv.zst: missing"],
    );
    // A layout of the sweep gone, and a sweep whose linker layout is not the committed total.
    report_refuses(
        |d| {
            drop_lines(d, "gtest/layouts.csv", |_, l| {
                l.starts_with("gtest,nft,talc,gas,12288,")
            });
        },
        &["gtest/nft/talc: layouts.csv has offsets [0, 4096, 8192, 17408"],
    );
    // A layout of a second workload gone, and one that names another workload.
    report_refuses(
        |d| {
            drop_lines(d, "gtest/second.csv", |_, l| {
                l.starts_with("gtest,nft,nft-history,talc,gas,17408,")
            });
        },
        &["gtest/nft/talc: second.csv has offsets [0, 34816, 52224], not [0, 17408, 34816, 52224]"],
    );
    report_refuses(
        |d| {
            let p = d.join("gtest/second.csv");
            let text = std::fs::read_to_string(&p).unwrap();
            std::fs::write(
                &p,
                text.replace("gtest,nft,nft-history,talc,", "gtest,nft,other,talc,"),
            )
            .unwrap();
        },
        &["gtest/nft/talc: second.csv has workload `other`, not the case's second workload"],
    );
    report_refuses(
        |d| {
            let p = d.join("wasmtime/layouts.csv");
            let text = std::fs::read_to_string(&p).unwrap();
            let line = text
                .lines()
                .find(|l| l.starts_with("wasmtime,nft,rlsf,fuel,0,"))
                .unwrap()
                .to_owned();
            let mut cells: Vec<String> = line.split(',').map(str::to_owned).collect();
            cells[6] = (cells[6].parse::<u64>().unwrap() + 1).to_string();
            std::fs::write(&p, text.replace(&line, &cells.join(","))).unwrap();
        },
        &[
            "wasmtime/nft/rlsf: layouts.csv has total",
            "at offset 0, totals.csv",
        ],
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

/// `lab measure --quiet --out COPY ARGS` on a copy of the results, damaged first by `damage`:
/// it must fail with every one of `expect` in its message, leaving the copy and the committed
/// results as they were.
fn measure_refuses(args: &[&str], damage: impl Fn(&Path), expect: &[&str]) {
    let copy = copy_of_results();
    damage(copy.path());
    reseal(copy.path());
    let (before, committed) = (tree_hash(copy.path()), tree_hash(&results()));
    let mut all = vec!["measure", "--quiet", "--out", copy.path().to_str().unwrap()];
    all.extend(args);
    let (ok, err) = lab(&all);
    assert!(!ok, "measure passed: {args:?}");
    for e in expect {
        assert!(err.contains(e), "`{e}` not in: {err}");
    }
    assert_eq!(
        tree_hash(copy.path()),
        before,
        "the failed measure wrote files"
    );
    assert_eq!(tree_hash(&results()), committed);
}

#[test]
fn empty_lists_are_errors_that_name_the_choices() {
    measure_refuses(
        &["--variants", ""],
        |_| {},
        &["no variant given (an empty list); pass `all` or some of: shipping,"],
    );
    measure_refuses(
        &["--cases", " "],
        |_| {},
        &["no case given (an empty list); pass `default`, `corpus`, `all` or some of: nft,"],
    );
    measure_refuses(&["--backends", ""], |_| {}, &["no backend given"]);
    measure_refuses(
        &["--backends", "node"],
        |_| {},
        &["no node given: pass --node ws://HOST:PORT"],
    );
    // The sweep places the heap base itself; a padding of one's own would move every layout.
    measure_refuses(
        &["--allocator-features", "layout-pad-1024"],
        |_| {},
        &["the heap layout is the lab's to vary", "--layouts"],
    );
}

/// The directory a run adds to is read before any build: a row that cannot be read, or rows
/// missing, stop it at once naming the file and line, and nothing is replaced.
/// One case, variant and backend: the smallest run a test can add to a copy of the results.
const ONE: [&str; 6] = [
    "--cases",
    "nft",
    "--variants",
    "no-buffer",
    "--backends",
    "wasmtime",
];

#[test]
fn measure_refuses_results_it_cannot_add_to() {
    let one = ONE;
    measure_refuses(
        &one,
        |d| {
            let p = d.join("wasmtime/ops.csv");
            let mut text = std::fs::read_to_string(&p).unwrap();
            text.push_str("garbage\n");
            std::fs::write(&p, text).unwrap();
        },
        &[
            "must be whole first",
            "wasmtime/ops.csv:",
            "not a row of this file's format",
        ],
    );
    measure_refuses(
        &one,
        |d| assert_eq!(drop_lines(d, "gtest/totals.csv", |i, _| i <= 3), 3),
        &["must be whole first", "is incomplete", "lab measure --out"],
    );
}

/// A scenario file Gear could not run, or that is not hex, is refused before any build,
/// naming the file, the message and (for size) Gear's limit.
#[test]
fn scenario_mistakes_name_the_file_and_message() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let program = root.join("contracts/examples/guestbook");
    let dir = tempfile::tempdir().unwrap();
    let refuse = |name: &str, json: String, expect: &[&str]| {
        let file = dir.path().join(name);
        std::fs::write(&file, json).unwrap();
        measure_refuses(
            &[
                "--program",
                program.to_str().unwrap(),
                "--scenario",
                file.to_str().unwrap(),
                "--variants",
                "no-buffer",
            ],
            |_| {},
            expect,
        );
    };
    // 9 MiB, over Gear's 8 MiB.
    let big = format!(
        r#"{{"messages": [{{"payload": "0x00"}}, {{"payload": "0x{}"}}]}}"#,
        "00".repeat(9 << 20)
    );
    refuse(
        "big.json",
        big,
        &[
            "big.json: message 2",
            "9437184 bytes",
            "over Gear's limit of 8388608 bytes (8 MiB)",
        ],
    );
    refuse(
        "odd.json",
        r#"{"messages": [{"payload": "0x00"}, {"payload": "0x0g"}]}"#.into(),
        &["odd.json: message 2: `0x0g` is not hex"],
    );
}

/// The lab's own workspace committed results, rerun in part (one case, one variant, one
/// backend) into a copy: every file is byte for byte as committed (the report's README links
/// its charts from another place). Then the run's probe build is changed on disk, in its data
/// and in its code: each time the lab notices, rebuilds it and measures the build, not the
/// changed file (the artifacts' SHA-256 and every figure stay as committed).
#[test]
fn a_partial_rerun_changes_nothing_and_a_changed_build_is_rebuilt() {
    let copy = copy_of_results();
    let mut args = vec!["measure", "--quiet", "--out", copy.path().to_str().unwrap()];
    args.extend(ONE);
    let rerun = || lab(&args);
    let same_as_committed = || {
        for rel in files(&results()) {
            let name = rel.to_string_lossy();
            if rel.starts_with("images") || rel.starts_with("cases") || name == "README.md" {
                continue;
            }
            assert_eq!(
                std::fs::read(copy.path().join(&rel)).unwrap(),
                std::fs::read(results().join(&rel)).unwrap(),
                "{name} changed"
            );
        }
    };
    let (ok, err) = rerun();
    assert!(ok, "{err}");
    same_as_committed();

    // Nothing ran and nothing changed: the files are already what the run makes, and it says
    // so instead of writing them. A file gone is not "as written": the next run writes again.
    let again = || {
        let (ok, out, err) = crate::cli::lab_printing(&args);
        assert!(ok, "{err}");
        out.contains("(up to date: no run or input changed since it was written)")
    };
    assert!(again(), "a second identical run rewrote the results");
    std::fs::remove_file(copy.path().join("README.md")).unwrap();
    assert!(
        !again(),
        "a results file was removed, yet the run wrote nothing"
    );
    assert!(
        copy.path().join("README.md").is_file(),
        "the report is back"
    );
    assert!(again());
    same_as_committed();

    // This probe build is measured by this test alone (the others use static-buffer's, or
    // plain builds), so no other test rebuilds it in between.
    let opt = results().join("../target/artifacts/lab-nft/no-buffer+probe.opt.wasm");
    let built = std::fs::read(&opt).unwrap();
    let (data, code) = sections(&built);
    for (what, range) in [
        ("data", data.end - 1..data.end),
        (
            "code",
            code.start + code.len() / 2..code.start + code.len() / 2 + 4,
        ),
    ] {
        let mut changed = built.clone();
        for b in &mut changed[range] {
            *b ^= 0x5a;
        }
        std::fs::write(&opt, &changed).unwrap();
        let (ok, err) = rerun();
        assert!(ok, "{what}: {err}");
        assert!(
            err.contains("is not the file the lab built"),
            "{what}: {err}"
        );
        assert_eq!(std::fs::read(&opt).unwrap(), built, "{what}: not rebuilt");
        same_as_committed();
    }
}

/// The byte ranges of a module's data and code sections.
fn sections(module: &[u8]) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    let (mut data, mut code) = (None, None);
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        match payload.unwrap() {
            wasmparser::Payload::DataSection(r) => data = Some(r.range()),
            wasmparser::Payload::CodeSectionStart { range, .. } => code = Some(range),
            _ => {}
        }
    }
    (data.expect("a data section"), code.expect("a code section"))
}

/// A results file edited, deleted or added since the lab wrote it (the hashes in
/// `metadata.json`) is named by every command that reads verdicts from it, with the fix, and
/// nothing is written. The first edit is the one that went unnoticed before: a total of the
/// sweep away from the linker's layout, which moves a verdict while every total stays right.
#[test]
fn stray_edits_are_named() {
    let halve_a_layout = |d: &Path| {
        let p = d.join("gtest/layouts.csv");
        let text = std::fs::read_to_string(&p).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("gtest,nft,lab,gas,17408,"))
            .unwrap()
            .to_owned();
        let mut cells: Vec<String> = line.split(',').map(str::to_owned).collect();
        cells[6] = (cells[6].parse::<u64>().unwrap() / 2).to_string();
        std::fs::write(&p, text.replace(&line, &cells.join(","))).unwrap();
    };
    let edited = "gtest/layouts.csv: changed since the lab wrote it";
    let untracked = "git does not track";
    for as_baseline in [true, false] {
        let copy = copy_of_results();
        halve_a_layout(copy.path());
        let before = tree_hash(copy.path());
        let (c, r) = (copy.path().to_str().unwrap(), results());
        let r = r.to_str().unwrap();
        let (baseline, current) = if as_baseline { (c, r) } else { (r, c) };
        let (ok, err) = lab(&["check", "--baseline", baseline, "--current", current]);
        assert!(
            !ok && err.contains(edited) && err.contains(untracked),
            "{err}"
        );
        let (ok, err) = lab(&["verdict", "lab,shipping", "--results", c]);
        assert!(!ok && err.contains(edited), "{err}");
        assert_eq!(tree_hash(copy.path()), before);
    }
    type Damage = Box<dyn Fn(&Path)>;
    let mut damages: Vec<(Damage, &str)> = vec![
        (Box::new(halve_a_layout), edited),
        (
            Box::new(|d: &Path| std::fs::remove_file(d.join("artifacts.csv")).unwrap()),
            "artifacts.csv: deleted",
        ),
        (
            Box::new(|d: &Path| std::fs::remove_file(d.join("code-size.csv")).unwrap()),
            "code-size.csv: deleted",
        ),
        (
            Box::new(|d: &Path| std::fs::write(d.join("gtest/extra.csv"), "a\n1\n").unwrap()),
            "gtest/extra.csv: not written by the lab",
        ),
    ];
    damages.push((
        Box::new(|d: &Path| std::fs::remove_file(d.join("metadata.json")).unwrap()),
        "metadata.json is missing: it records every results file's SHA-256",
    ));
    for (damage, expect) in damages {
        let copy = copy_of_results();
        damage(copy.path());
        let before = tree_hash(copy.path());
        let (ok, err) = lab(&["report", "--results", copy.path().to_str().unwrap()]);
        assert!(
            !ok && err.contains(expect) && err.contains(untracked),
            "{err}"
        );
        assert_eq!(
            tree_hash(copy.path()),
            before,
            "the failed report wrote files"
        );
    }
}

/// The tolerance is a finite percentage, 0 or more: `NaN` compared false with every rise and
/// let them all pass.
#[test]
fn a_tolerance_that_is_not_a_percentage_is_refused() {
    for bad in ["NaN", "inf", "-1", "x"] {
        let (ok, err) = lab(&["check", &format!("--tolerance-pct={bad}")]);
        assert!(!ok && err.contains("--tolerance-pct"), "{bad}: {err}");
        assert!(
            err.contains("is not a tolerance") || err.contains("give a percentage"),
            "{bad}: {err}"
        );
    }
}

/// Where the lab says how to get a file back, the path is one git can restore.
#[test]
fn restore_hints_give_a_real_path() {
    let hint = galloc_lab::results::restore_hint(&results().join("gtest/totals.csv"));
    let path = hint
        .split('`')
        .nth(1)
        .and_then(|c| c.strip_prefix("git checkout -- "))
        .unwrap_or_else(|| panic!("{hint}"));
    // The tests run in harness/: relative to it.
    assert_eq!(path, "../results/gtest/totals.csv", "{hint}");
    let copy = copy_of_results();
    let hint = galloc_lab::results::restore_hint(copy.path());
    assert!(hint.starts_with("git does not track"), "{hint}");
}
