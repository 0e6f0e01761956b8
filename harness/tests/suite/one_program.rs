//! A results directory holds one program, and every case of it: two scenarios of a program
//! written into one `--out` live side by side (the second never deletes the first's rows, nor
//! leaves its messages beside another's), another program is refused in one line before
//! anything is built, and so are a directory the lab cannot write and a scenario name no case
//! can have.
//!
//! Measures the guestbook example (as `cli::an_outside_program_…` does, so its builds are
//! shared) on the fuel meter at the linker's layout alone.

use crate::cli::{examples_turn, lab};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn guestbook() -> PathBuf {
    root().join("contracts/examples/guestbook")
}

/// `lab measure --quiet --program PROGRAM [--scenario S]... --variants shipping --backends
/// wasmtime --layouts 1 --out OUT`: whether it succeeded, and its standard error.
fn measure(program: &Path, scenarios: &[&Path], out: &Path) -> (bool, String) {
    measure_on(program, scenarios, "wasmtime", out)
}

/// The same on `backend`.
fn measure_on(program: &Path, scenarios: &[&Path], backend: &str, out: &Path) -> (bool, String) {
    let mut args: Vec<String> = vec!["measure".into(), "--quiet".into(), "--program".into()];
    args.push(program.display().to_string());
    for s in scenarios {
        args.push("--scenario".into());
        args.push(s.display().to_string());
    }
    for a in [
        "--variants",
        "shipping",
        "--backends",
        backend,
        "--layouts",
        "1",
        "--out",
    ] {
        args.push(a.into());
    }
    args.push(out.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    lab(&args)
}

/// The guestbook scenario cut to its first `messages` messages, as `dir/name.json`.
fn shorter_scenario(dir: &Path, name: &str, messages: usize) -> PathBuf {
    let text = std::fs::read_to_string(guestbook().join("guestbook.json")).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["messages"].as_array_mut().unwrap().truncate(messages);
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    path
}

/// The distinct values of `column` in the CSV `path` (zstd-compressed when it ends `.zst`).
fn column(path: &Path, column: &str) -> Vec<String> {
    let mut bytes = std::fs::read(path).unwrap();
    if path.extension().is_some_and(|e| e == "zst") {
        bytes = zstd::decode_all(&bytes[..]).unwrap();
    }
    let mut reader = csv::Reader::from_reader(&bytes[..]);
    let at = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == column)
        .unwrap_or_else(|| panic!("no column {column} in {}", path.display()));
    let mut values: Vec<String> = reader
        .records()
        .map(|r| r.unwrap()[at].to_owned())
        .collect();
    values.sort();
    values.dedup();
    values
}

/// Every file under `dir` and its bytes.
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    galloc_lab::store::staging::files(dir)
        .unwrap()
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(dir.join(&rel)).unwrap();
            (rel, bytes)
        })
        .collect()
}

#[test]
fn two_scenarios_of_one_program_live_side_by_side_and_another_program_is_refused() {
    let _turn = examples_turn();
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("results");
    let gb = shorter_scenario(scratch.path(), "gb", 9);
    let gb2 = shorter_scenario(scratch.path(), "gb2", 5);

    let (ok, err) = measure(&guestbook(), &[&gb], &out);
    assert!(ok, "{err}");
    let (ok, err) = measure(&guestbook(), &[&gb2], &out);
    assert!(ok, "{err}");
    assert_eq!(column(&out.join("measured.csv"), "case"), ["gb", "gb2"]);
    let messages = out.join("wasmtime/messages.csv.zst");
    assert_eq!(column(&messages, "case"), ["gb", "gb2"]);
    // Each case's messages are its own: 9 and `init` for gb, 5 and `init` for gb2.
    let mut bytes = zstd::decode_all(&std::fs::read(&messages).unwrap()[..]).unwrap();
    let text = String::from_utf8(std::mem::take(&mut bytes)).unwrap();
    for (case, count) in [("gb", 10), ("gb2", 6)] {
        let rows = text
            .lines()
            .filter(|l| l.contains(&format!(",{case},shipping,")))
            .count();
        assert_eq!(rows, count, "{case}:\n{text}");
    }
    // The directory's command measures both again, and is what its metadata records.
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("metadata.json")).unwrap()).unwrap();
    let command = meta["regenerate_with"].as_str().unwrap();
    assert!(
        command.contains(&format!("--scenario {}", gb.display()))
            && command.contains(&format!("--scenario {}", gb2.display())),
        "{command}"
    );
    assert_eq!(meta["program"]["scenarios"]["gb"], gb.display().to_string());
    let (ok, err) = lab(&["report", "--results", out.to_str().unwrap()]);
    assert!(ok, "{err}");

    // gb2 measured on gtest too: gtest now decides the directory's tables, and gb, which only
    // the meter measured, keeps its page and is named on the main page (it vanished).
    let (ok, err) = measure_on(&guestbook(), &[&gb2], "gtest", &out);
    assert!(ok, "{err}");
    assert!(out.join("cases/gb.md").is_file(), "gb's page is gone");
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        readme.contains(
            "Not measured on gtest, which decides here, so in no table below: [`gb`](cases/gb.md)"
        ),
        "{readme}"
    );
    // A pair it does not hold: the command named measures this program, not the lab's cases.
    let (ok, err) = lab(&[
        "verdict",
        "lab,shipping",
        "--results",
        out.to_str().unwrap(),
    ]);
    let crate_dir = guestbook().canonicalize().unwrap();
    assert!(
        !ok && err.contains(&format!(
            "`lab measure --program {} --scenario {} --scenario {} --variants lab,shipping --out {}`",
            crate_dir.display(),
            gb.display(),
            gb2.display(),
            out.display()
        )),
        "{err}"
    );

    // Another crate of the same package, holding the same scenario: refused in one line,
    // before any build, and the directory is as it was.
    let before = snapshot(&out);
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir(other.path().join("src")).unwrap();
    for file in ["Cargo.toml", "Cargo.lock", "src/lib.rs"] {
        let mut text = std::fs::read_to_string(guestbook().join(file)).unwrap();
        if file == "src/lib.rs" {
            text.push_str("\n// another program: its handle allocates more\n");
        }
        std::fs::write(other.path().join(file), text).unwrap();
    }
    let started = std::time::Instant::now();
    let (ok, err) = measure(other.path(), &[&gb], &out);
    assert!(!ok, "another program was added to the results");
    assert!(
        err.contains(&format!(
            "holds results of the program in {}",
            crate_dir.display()
        )) && err.contains("a results directory holds one program")
            && err.contains("Nothing was built"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        started.elapsed().as_secs() < 60,
        "refused only after {:?}",
        started.elapsed()
    );
    assert!(
        snapshot(&out) == before,
        "a refused run changed the results"
    );

    // The same crate, changed since (its recorded sources differ): refused too.
    let mut edited = meta.clone();
    edited["program"]["sources_sha256"] = "0".repeat(64).into();
    std::fs::write(
        out.join("metadata.json"),
        serde_json::to_string_pretty(&edited).unwrap(),
    )
    .unwrap();
    let (ok, err) = measure(&guestbook(), &[&gb], &out);
    assert!(
        !ok && err.contains("whose build inputs have changed since") && err.contains("--out"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    // The lab's own cases into a program's directory (the reverse is the same comparison).
    let (ok, err) = crate::arguments::measure_into(&out);
    assert!(!ok && err.contains("not of the lab's own cases"), "{err}");
}

/// Rows a run keeps beside its own must pair with them: a case whose scenario now sends fewer
/// messages, or measured again at other layouts, while the directory keeps another variant's
/// rows of it, is refused before anything is built (it was refused after every build and
/// run), and the directory is left as it was.
#[test]
fn rows_that_would_not_pair_are_refused_before_building() {
    let _turn = examples_turn();
    let scratch = tempfile::tempdir().unwrap();
    let out = scratch.path().join("results");
    let gb = shorter_scenario(scratch.path(), "gb", 9);
    let run = |variants: &str, layouts: &str| {
        lab(&[
            "measure",
            "--quiet",
            "--program",
            guestbook().to_str().unwrap(),
            "--scenario",
            gb.to_str().unwrap(),
            "--variants",
            variants,
            "--backends",
            "wasmtime",
            "--layouts",
            layouts,
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let (ok, err) = run("lab", "1");
    assert!(ok, "{err}");
    let before = snapshot(&out);
    let started = std::time::Instant::now();
    // `lab`'s rows stay (shipping alone is measured again), at one layout of 10 messages.
    let (ok, err) = run("shipping", "2");
    assert!(
        !ok && err.contains(
            "its rows of `gb` on wasmtime for `lab`, which this run keeps, are at 1 \
             heap layout and this run measures 2"
        ) && err.contains("Nothing was built")
            && err.contains("--variants shipping,lab"),
        "{err}"
    );
    shorter_scenario(scratch.path(), "gb", 7);
    let (ok, err) = run("shipping", "1");
    assert!(
        !ok && err.contains(
            "were measured with 10 messages (init included) and this run's \
             scenario sends 8"
        ) && err.contains("Nothing was built"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        started.elapsed().as_secs() < 60,
        "refused after {:?}",
        started.elapsed()
    );
    assert!(
        snapshot(&out) == before,
        "a refused run changed the results"
    );
    // Every variant it holds, measured again: the directory is the new scenario's.
    let (ok, err) = run("shipping,lab", "1");
    assert!(ok, "{err}");
}

/// An `--out` the lab cannot make, and a scenario whose name cannot be a case's, are refused
/// in one line before anything is built, and nothing is written.
#[test]
fn unwritable_places_and_unnameable_cases_are_refused_before_building() {
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let dangling = scratch.path().join("dangling");
    std::os::unix::fs::symlink(scratch.path().join("nowhere"), &dangling).unwrap();
    let scenario = guestbook().join("guestbook.json");
    for (out, why) in [
        (
            file.join("results"),
            "is a file, so no directory can be made under it",
        ),
        (
            PathBuf::from("/proc/lab-results"),
            "the lab cannot write in /proc",
        ),
        (dangling.clone(), "a symbolic link to"),
        (root().join("target/lab"), "it holds the lab's own state"),
    ] {
        let started = std::time::Instant::now();
        let (ok, err) = measure(&guestbook(), &[&scenario], &out);
        assert!(
            !ok && err.contains(why) && err.contains("Nothing was built"),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    }
    assert!(!dangling.exists() && !file.join("results").exists());

    // `...json` named the case `..`: without `--out` its results went into `target/lab/`.
    for name in ["...json", "a b.json", "tab\there.json"] {
        let odd = scratch.path().join(name);
        std::fs::copy(&scenario, &odd).unwrap();
        let (ok, err) = lab(&[
            "measure",
            "--quiet",
            "--program",
            guestbook().to_str().unwrap(),
            "--scenario",
            odd.to_str().unwrap(),
        ]);
        assert!(!ok && err.contains("rename the file"), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    assert!(!root().join("target/lab/README.md").exists());

    // Two scenarios and no `--out`: the message says to add one, in words, not 18 spaces.
    let (ok, err) = lab(&[
        "measure",
        "--quiet",
        "--program",
        guestbook().to_str().unwrap(),
        "--scenario",
        scenario.to_str().unwrap(),
        "--scenario",
        guestbook().join("guestbook-second.json").to_str().unwrap(),
    ]);
    assert!(
        !ok && err.contains("which the lab does not choose: add --out DIR"),
        "{err}"
    );
    assert!(!err.contains("  "), "{err:?}");
}
