//! Results survive a second writer and a kill: two `lab measure` runs into one directory both
//! land (the second waits for the first and merges into what it wrote), and a run killed at
//! any moment leaves the directory as it was or as the whole run leaves it, never in between
//! once the next command has looked at it. One case, on the fuel meter alone: the runs are
//! cached after the first, so most of each run is the part where files are written.

use crate::cli::lab;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Every file under `dir` and its bytes; in the report and the metadata, which name the
/// command that writes the directory (`--out DIR`), each directory named there as `<dir>`, so
/// that directories written alike (or copied from one another) compare equal.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    galloc_lab::store::staging::files(dir)
        .unwrap()
        .into_iter()
        .map(|rel| {
            let mut bytes = std::fs::read(dir.join(&rel)).unwrap();
            if rel.extension().is_some_and(|e| e == "md" || e == "json") {
                bytes = without_out_dirs(&String::from_utf8(bytes).unwrap()).into_bytes();
            }
            (rel, bytes)
        })
        .collect()
}

/// `text` with the path after every `--out ` (up to a backquote, quote or space) as `<dir>`.
fn without_out_dirs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("--out ") {
        out.push_str(&rest[..at + "--out ".len()]);
        rest = &rest[at + "--out ".len()..];
        let end = rest.find(['`', '"', ' ', '\n']).unwrap_or(rest.len());
        out.push_str("<dir>");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn copy(from: &Path, to: &Path) {
    for rel in galloc_lab::store::staging::files(from).unwrap() {
        std::fs::create_dir_all(to.join(&rel).parent().unwrap()).unwrap();
        std::fs::copy(from.join(&rel), to.join(rel)).unwrap();
    }
}

/// `lab measure` of the nft case on the fuel meter, one variant, into `out`.
fn measure(variant: &str, out: &Path, pause_ms: Option<u64>) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_lab"));
    c.args([
        "measure",
        "--quiet",
        "--cases",
        "nft",
        "--backends",
        "wasmtime",
    ])
    .args(["--variants", variant, "--out"])
    .arg(out)
    .current_dir(env!("CARGO_MANIFEST_DIR"))
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    if let Some(ms) = pause_ms {
        c.env("LAB_COMMIT_PAUSE_MS", ms.to_string());
    }
    c.spawn().unwrap()
}

/// The temporary files a commit is writing in `dir` now (`.NAME.journal.tmp`).
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    galloc_lab::store::staging::files(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|rel| rel.to_string_lossy().ends_with(".tmp"))
        .collect()
}

fn finish(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

fn workspace() -> PathBuf {
    std::path::absolute(Path::new(env!("CARGO_MANIFEST_DIR")).join("..")).unwrap()
}

#[test]
fn a_second_writer_waits_and_a_killed_run_leaves_one_of_two_states() {
    let root = tempfile::tempdir().unwrap();
    let at = |name: &str| root.path().join(name);

    // Before: shipping alone. After: shipping, then no-buffer merged into it.
    finish(measure("shipping", &at("before"), None));
    copy(&at("before"), &at("after"));
    let started = Instant::now();
    finish(measure("no-buffer", &at("after"), None));
    let whole_run = started.elapsed();
    let (before, after) = (snapshot(&at("before")), snapshot(&at("after")));
    assert_ne!(before, after);

    // Two writers into one empty directory at once: both land, and the result is the same,
    // byte for byte, as one after the other. Each commit is slowed so that they overlap.
    let (a, b) = (
        measure("shipping", &at("both"), Some(20)),
        measure("no-buffer", &at("both"), Some(20)),
    );
    let said = finish(a) + &finish(b);
    assert_eq!(snapshot(&at("both")), after, "one writer's rows were lost");
    eprintln!(
        "two writers: {}",
        if said.contains("waiting: ") {
            "the second waited for the first"
        } else {
            "they did not overlap"
        }
    );
    let (ok, err) = lab(&[
        "verdict",
        "no-buffer,shipping",
        "--results",
        at("both").to_str().unwrap(),
    ]);
    assert!(ok, "{err}");

    // Killed at a spread of moments: before and while its files are staged (time after start),
    // and after each of the files its commit puts in place (time after its journal appears;
    // the commit pauses `PAUSE` before each file). After the next command on the directory
    // (a read), it is exactly `before` or exactly `after`.
    const PAUSE: u64 = 40;
    let mut kills: Vec<(&str, Duration)> = [0.0, 0.3, 0.6, 0.85]
        .iter()
        .map(|f| ("after start", whole_run.mul_f64(*f)))
        .collect();
    kills.extend((0..8).map(|i| ("into the commit", Duration::from_millis(i * PAUSE * 2))));
    // And with a file's temporary written but not yet renamed (the commit pauses `PAUSE` there
    // too): the 1st and the 3rd file's. Replaying the journal must leave no temporary behind.
    kills.extend([0, 2].map(|n| ("in a temporary", Duration::from_millis(n))));
    let mut ended = (0, 0);
    for (k, (from, delay)) in kills.iter().enumerate() {
        let dir = at(&format!("killed-{k}"));
        copy(&at("before"), &dir);
        let journal = galloc_lab::store::staging::journal_of(&workspace(), &dir);
        let mut child = measure("no-buffer", &dir, Some(PAUSE));
        let t = Instant::now();
        if *from == "into the commit" {
            while !journal.exists() && t.elapsed() < whole_run * 4 {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(journal.exists(), "kill {k}: the commit never began");
        }
        if *from == "in a temporary" {
            let n = delay.as_millis() as usize;
            let mut seen = std::collections::BTreeSet::new();
            while seen.len() <= n && t.elapsed() < whole_run * 4 {
                seen.extend(temporaries(&dir));
                std::thread::sleep(Duration::from_micros(200));
            }
            assert!(
                seen.len() > n,
                "kill {k}: no temporary {n} was ever written"
            );
        } else {
            std::thread::sleep(*delay);
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        if *from == "in a temporary" {
            assert!(
                !temporaries(&dir).is_empty(),
                "kill {k}: the kill missed the temporary's window"
            );
        }
        let left_journal = journal.exists();
        // The next command to look at the directory finishes or discards what was left. The
        // verdict itself fails when the kill came before the commit (no-buffer is not there).
        let _ = lab(&[
            "verdict",
            "no-buffer,shipping",
            "--results",
            dir.to_str().unwrap(),
        ]);
        let now = snapshot(&dir);
        assert!(!journal.exists(), "kill {k}: the journal was not applied");
        assert_eq!(
            temporaries(&dir),
            Vec::<PathBuf>::new(),
            "kill {k} ({from}): temporaries left"
        );
        if now == before {
            assert!(
                !left_journal,
                "kill {k}: a journal, yet nothing was applied"
            );
            ended.0 += 1;
        } else {
            assert!(
                now == after,
                "kill {k} ({delay:?} {from}): the directory is neither before nor after the run"
            );
            ended.1 += 1;
        }
        // The killed run's copies (its stage) go with the next writer; this one is a test's.
        let _ = std::fs::remove_dir_all(journal.parent().unwrap());
    }
    eprintln!(
        "{} kills: {} left it as before, {} as after (whole run {whole_run:?})",
        kills.len(),
        ended.0,
        ended.1
    );
    assert!(ended.0 > 0 && ended.1 > 0, "{ended:?}");
}

/// A command that finds a results directory locked says who holds it and waits for it.
#[test]
fn a_reader_waits_for_the_writer_and_names_it() {
    let copy = crate::integrity::copy_of_results();
    let dir = std::path::absolute(copy.path()).unwrap();
    let writing = galloc_lab::store::lock::Lock::write(&workspace(), &[&dir]).unwrap();
    let mut verdict = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["verdict", "lab,shipping", "--results"])
        .arg(&dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        verdict.try_wait().unwrap().is_none(),
        "the verdict read while the directory was being written"
    );
    drop(writing);
    let out = verdict.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("waiting: {} is being written by `", dir.display()))
            && err.contains(&format!("(pid {})", std::process::id())),
        "{err}"
    );
}
