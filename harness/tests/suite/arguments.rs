//! Bad input on the command line gets the lab's own message and loses nothing: negative
//! numbers, an `--out` that is a file or someone else's directory, a results directory the lab
//! never wrote; the way back to a damaged file is one that works from where the user stands;
//! and a large run says its size before it starts.

use crate::cli::lab;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

/// `-1` after a numeric flag reaches the lab's message, in both spellings (`--flag -1` used to
/// get the parser's "unexpected argument '-1' found"); nothing runs.
#[test]
fn negative_numbers_reach_the_lab_s_own_messages() {
    let guestbook = "../contracts/examples/guestbook";
    let scenario = "../contracts/examples/guestbook/guestbook.json";
    let cases: [(&[&str], &str, &str); 8] = [
        (&["check"], "--tolerance-pct", "is not a tolerance"),
        (&["measure"], "--layouts", "-1 is not a number of layouts"),
        (
            &["pick", guestbook, scenario],
            "--layouts",
            "-1 is not a number of layouts",
        ),
        (
            &["measure"],
            "--fuel-stride",
            "-1: give a whole number, 1 or more",
        ),
        (
            &["measure"],
            "--second-stride",
            "-1: give a whole number, 1 or more",
        ),
        (
            &["measure"],
            "--layout-step",
            "-1: give a whole number, 1 or more",
        ),
        (&["bench"], "--repeat", "-1: give a whole number, 1 or more"),
        (
            &["heap-skip"],
            "--points",
            "-1: give a whole number, 1 or more",
        ),
    ];
    for (command, flag, message) in cases {
        for spelled in [
            vec![flag.to_owned(), "-1".to_owned()],
            vec![format!("{flag}=-1")],
        ] {
            let mut args: Vec<&str> = command.to_vec();
            args.extend(spelled.iter().map(String::as_str));
            let (ok, err) = lab(&args);
            assert!(!ok, "{args:?}");
            assert!(
                err.contains(message) && err.contains(flag) && !err.contains("unexpected argument"),
                "{args:?}: {err}"
            );
        }
    }
}

/// `lab measure` of nft on shipping, on the fuel meter at the linker's layout, into `out`.
pub fn measure_into(out: &Path) -> (bool, String) {
    lab(&[
        "measure",
        "--cases",
        "nft",
        "--variants",
        "shipping",
        "--backends",
        "wasmtime",
        "--layouts",
        "1",
        "--out",
        out.to_str().unwrap(),
    ])
}

/// `--out` naming a file, or a directory of someone else's files, is refused before anything
/// is built (a file used to be found only by the commit, after the whole run, leaving a
/// journal that could never be applied), and what is there is left as it was.
#[test]
fn out_is_a_directory_the_lab_wrote_or_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("results.txt");
    std::fs::write(&file, "mine").unwrap();
    let (ok, err) = measure_into(&file);
    assert!(!ok, "{err}");
    assert!(
        err.contains("this is a file, not a directory") && err.contains("Nothing was built"),
        "{err}"
    );
    assert!(!err.contains("building "), "it built first: {err}");
    assert_eq!(std::fs::read(&file).unwrap(), b"mine");

    let theirs = dir.path().join("notes");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("notes.md"), "mine").unwrap();
    let (ok, err) = measure_into(&theirs);
    assert!(!ok, "{err}");
    assert!(
        err.contains("holds files but no lab results") && err.contains("Nothing was built"),
        "{err}"
    );
    assert!(!err.contains("building "), "it built first: {err}");
    assert_eq!(std::fs::read_dir(&theirs).unwrap().count(), 1);
    assert_eq!(std::fs::read(theirs.join("notes.md")).unwrap(), b"mine");
}

/// A directory the lab never wrote, given to a command that reads results, is called that:
/// not "delete the directory and run again the `lab measure --out` that wrote it".
#[test]
fn a_directory_the_lab_never_wrote_is_called_that() {
    let empty = tempfile::tempdir().unwrap();
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(notes.path().join("notes.md"), "mine").unwrap();
    for dir in [empty.path(), notes.path()] {
        let (ok, err) = lab(&[
            "verdict",
            "lab,shipping",
            "--results",
            dir.to_str().unwrap(),
        ]);
        assert!(!ok);
        assert!(err.contains("holds no lab results"), "{err}");
        assert!(
            !err.contains("delete") && !err.contains("that wrote it"),
            "{err}"
        );
    }
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);

    // Rows with no metadata naming what wrote them: no command of the lab's is named as theirs.
    let rows = tempfile::tempdir().unwrap();
    std::fs::write(rows.path().join("measured.csv"), "backend,case,variant\n").unwrap();
    let hint = galloc_lab::results::restore_hint(rows.path());
    assert!(
        hint.contains("the lab may not have written it") && !hint.contains("delete"),
        "{hint}"
    );

    // `lab check --current` naming nothing: the fix is a run into that directory, not `just
    // check`, which measures into its own.
    let missing = rows.path().join("missing");
    let (ok, err) = lab(&["check", "--current", missing.to_str().unwrap()]);
    assert!(
        !ok && err.contains("lab measure --layouts 1 --out DIR") && !err.contains("just check"),
        "{err}"
    );
}

/// A run says how big it is before it builds anything: `--layouts 1000` on every variant is
/// about a hundred thousand runs, and used to start with no word of it. The line comes first
/// and asks for nothing; the run is stopped right after it.
#[test]
fn a_large_run_says_its_size_before_it_starts() {
    let out = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["measure", "--cases", "nft", "--variants", "all"])
        .args(["--backends", "gtest,wasmtime", "--layouts", "1000", "--out"])
        .arg(out.path().join("results"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = Vec::new();
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        let size = line.starts_with("this run: ");
        said.push(line);
        if size {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let line = said.last().cloned().unwrap_or_default();
    assert!(line.starts_with("this run: "), "{said:?}");
    assert_eq!(said.len(), 1, "something came before the size: {said:?}");
    // Every variant's plain, probe and twin builds and 999 re-linked layout points.
    let variants = galloc_variants::select("all").unwrap().len();
    assert!(
        line.starts_with(&format!("this run: {} builds", variants * (3 + 999))),
        "{line}"
    );
    let runs: usize = line
        .split(", ")
        .find_map(|part| part.strip_suffix(" runs"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    // On gas every layout, on fuel every 4th; each case's plain, probe and twin runs.
    assert!(runs >= variants * (1002 + 252), "{line}");
    assert!(line.contains("Ctrl-C stops it, writing nothing"), "{line}");
    assert!(!out.path().join("results").exists());
}

/// Where the lab says how to get a file back, it names that file, and the command works from
/// wherever the user stands: here the tests' directory (`harness/`) and the filesystem root.
/// A copy git does not track is regenerated by what wrote it; a directory that never held lab
/// results is called that, not given a recipe.
#[test]
fn restore_hints_name_the_file_and_work_from_anywhere() {
    let hint =
        galloc_lab::results::restore_hint(&crate::integrity::results().join("gtest/totals.csv"));
    let command = hint.split('`').nth(1).unwrap_or_else(|| panic!("{hint}"));
    let repo = std::path::absolute(crate::integrity::results().join("..")).unwrap();
    let repo = repo.canonicalize().unwrap();
    assert_eq!(
        command,
        format!(
            "git -C {} checkout -- results/gtest/totals.csv",
            repo.display()
        ),
        "{hint}"
    );
    assert!(
        hint.contains("regenerate") && hint.contains("`just compare`"),
        "{hint}"
    );
    // Run as `git ls-files --error-unmatch`, with the same `-C` and path: it fails where the
    // checkout would (a wrong directory or path) and, unlike it, leaves the working tree alone
    // (a checkout here reverted uncommitted results mid-suite).
    let probe = command.replace(" checkout -- ", " ls-files --error-unmatch -- ");
    assert_ne!(probe, command);
    for cwd in [Path::new("."), Path::new("/")] {
        let words: Vec<&str> = probe.split(' ').collect();
        let ok = std::process::Command::new(words[0])
            .args(&words[1..])
            .current_dir(cwd)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(ok.success(), "`{command}` fails from {}", cwd.display());
    }
    let corpus = galloc_lab::results::restore_hint(
        &crate::integrity::results().join("corpus/gtest/totals.csv"),
    );
    assert!(corpus.contains("`just corpus`"), "{corpus}");

    let copy = crate::integrity::copy_of_results();
    let hint = galloc_lab::results::restore_hint(&copy.path().join("gtest/totals.csv"));
    assert!(hint.starts_with("git does not track"), "{hint}");
    // Its recipe writes the lab's own results/, not this copy: said so, and no `lab measure`
    // that never wrote it is named.
    assert!(
        hint.contains("`just compare` in the lab") && hint.contains("this one is a copy"),
        "{hint}"
    );
    assert!(!hint.contains("lab measure"), "{hint}");

    for (i, unrelated) in [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()]
        .iter()
        .enumerate()
    {
        if i == 0 {
            std::fs::write(unrelated.path().join("notes.md"), "mine").unwrap();
        }
        let hint = galloc_lab::results::restore_hint(unrelated.path());
        assert!(hint.contains("holds no lab results"), "{hint}");
        assert!(!hint.contains("delete") && !hint.contains("git"), "{hint}");
    }
}

/// A copy of an outside program's results is regenerated by nothing: the `lab measure` its
/// metadata records writes the original (its `--out`), so the hints and the report say that
/// instead of sending the reader to rewrite the original; and a file missing a column is not
/// blamed on another version of the lab alone, nor answered with `just compare`.
#[test]
fn a_copy_of_an_outside_program_s_results_is_named_a_copy() {
    let copy = crate::integrity::copy_of_results();
    let original = "/elsewhere/polls";
    let command = format!(
        "lab measure --program /c/polls --scenario /c/polls.json --variants shipping,lab \
         --backends gtest --out {original}"
    );
    let meta = copy.path().join("metadata.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    json["regenerate_with"] = command.clone().into();
    std::fs::write(&meta, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
    let totals = copy.path().join("gtest/totals.csv");
    let hint = galloc_lab::results::restore_hint(&totals);
    assert!(
        hint.contains(&format!(
            "`{command}`, which writes the original this directory is a copy of"
        )),
        "{hint}"
    );
    assert!(!hint.contains("just compare"), "{hint}");
    let about = galloc_lab::report::document::About::of(
        &crate::integrity::results().join(".."),
        copy.path(),
        None,
    );
    assert_eq!(about.command, command);
    let note = about.note.unwrap_or_default();
    assert!(
        note.contains("this directory is a copy of what it wrote"),
        "{note}"
    );

    // Every line without its last column (`failed_total`, a number: no quoted comma).
    let text = std::fs::read_to_string(&totals).unwrap();
    let cut: String = text
        .lines()
        .map(|l| format!("{}\n", &l[..l.rfind(',').unwrap()]))
        .collect();
    std::fs::write(&totals, cut).unwrap();
    let err = galloc_lab::results::read_csv::<galloc_lab::results::TotalRow>(&totals)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("lacks a column this lab's format has") && err.contains("it was edited"),
        "{err}"
    );
    assert!(
        err.contains(&command) && !err.contains("just compare"),
        "{err}"
    );
}

/// One word for each verdict everywhere: `lab verdict` prints the report's `noise`, not
/// "within layout noise" (which `measure` and `pick` never said), beside `better`, `same` and
/// `worse`, and its header says what `noise` means.
#[test]
fn verdict_prints_the_report_s_words() {
    let (ok, out, err) = crate::cli::lab_printing(&["verdict", "lab,shipping"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("**cheaper**") || out.contains(" cheaper (dearer) when"),
        "{out}"
    );
    // One vocabulary: each row's word is the one `totals.csv` (and so the report) gives.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut rows = 0;
    for backend in ["gtest", "wasmtime"] {
        let totals: Vec<galloc_lab::results::TotalRow> =
            galloc_lab::results::read_csv(&root.join("results").join(backend).join("totals.csv"))
                .unwrap();
        for line in out
            .lines()
            .filter(|l| l.starts_with(&format!("| {backend} |")))
        {
            let cells: Vec<&str> = line.split(" | ").collect();
            let (case, word) = (cells[1], cells[6]);
            let row = totals
                .iter()
                .find(|t| t.case == case && t.variant == "lab")
                .unwrap_or_else(|| panic!("no lab row for {case}"));
            assert_eq!(word, row.verdict, "{line}");
            rows += 1;
        }
    }
    assert_eq!(rows, 18, "{out}");
}

/// `lab measure` runs what every verdict needs unless told otherwise: gtest (gas decides) and
/// the fuel meter (pages, per-op costs, traces), not the fuel meter alone.
#[test]
fn measure_defaults_to_the_backends_every_verdict_needs() {
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["measure", "--help"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("[default: gtest,wasmtime]"), "{help}");
}

/// Every command that writes results checks its `--out` before it builds or runs anything.
#[test]
fn every_out_is_checked_before_anything_runs() {
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let under_file = file.join("out");
    for args in [
        vec![
            "heap-skip",
            "--cases",
            "nft",
            "--out",
            under_file.to_str().unwrap(),
        ],
        vec!["reproduce", "pr4853", "--out", under_file.to_str().unwrap()],
        vec![
            "layout-model",
            "--cases",
            "nft",
            "--out",
            under_file.to_str().unwrap(),
        ],
        vec!["heap-skip", "--cases", "nft", "--out", "/proc/lab-results"],
    ] {
        let started = std::time::Instant::now();
        let (ok, err) = lab(&args);
        assert!(
            !ok && err.contains("Nothing was built") && err.trim_end().lines().count() == 1,
            "{args:?}: {err}"
        );
        assert!(
            started.elapsed().as_secs() < 30,
            "{args:?}: {:?}",
            started.elapsed()
        );
    }
}
