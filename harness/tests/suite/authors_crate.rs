//! An author's crate is left exactly as found, however a run ends: a copy of the guestbook
//! example, measured by `lab measure --program` and interrupted with SIGINT and SIGKILL at
//! several moments of a cold build (nothing built yet for it) and of a warm one (its
//! dependencies built, a new variant), is byte for byte as it was after every interrupt and
//! after the successful runs that follow; and no process of an interrupted build outlives the
//! lab. The crate pins a toolchain of its own, and the lab builds it with the one it pins and
//! records. Then the same crate given a gmeta-era `state` export is refused after its plain
//! build, in one line naming the export, with nothing written.

use crate::cli::examples_turn;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// The lines still to come from a run that has ended (until its standard error closes).
fn rest(lines: &Receiver<String>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(30)) {
        out.push(line);
    }
    out
}

/// Every file under `dir` (hidden ones too) and its bytes.
pub fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), bytes);
            }
        }
    }
    out
}

/// The toolchain the copy's author pins: one rustup has not installed (and, with
/// `RUSTUP_AUTO_INSTALL=0` and no network, cannot), so a build that obeyed the crate's pin
/// instead of the lab's would fail.
const AUTHORS_TOOLCHAIN: &str = "[toolchain]\nchannel = \"1.70.0\"\n";

/// A copy of the guestbook example in a temporary directory, pinned to another toolchain than
/// the lab's ([`AUTHORS_TOOLCHAIN`]), and its cargo target directory under the lab's
/// `target/` (hundreds of MB), removed when the test ends, pass or fail.
struct Copy {
    dir: tempfile::TempDir,
    target: PathBuf,
}

impl Copy {
    fn new() -> Copy {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let example = root.join("contracts/examples/guestbook");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        for file in ["Cargo.toml", "Cargo.lock", "src/lib.rs", "guestbook.json"] {
            std::fs::copy(example.join(file), dir.path().join(file)).unwrap();
        }
        std::fs::write(dir.path().join("rust-toolchain.toml"), AUTHORS_TOOLCHAIN).unwrap();
        let key = galloc_lab::build::external::Program::at(dir.path())
            .unwrap()
            .key;
        let target = std::path::absolute(root.join("target/variants/external").join(key)).unwrap();
        let _ = std::fs::remove_dir_all(&target);
        Copy { dir, target }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.target);
    }
}

/// `lab measure --program COPY` of `variants` on the fuel meter at the linker's layout alone,
/// into `out`, its standard error read line by line into the receiver. Run as a person runs
/// `target/debug/lab` from a shell: without the toolchain `cargo test` was started with
/// (`RUSTUP_TOOLCHAIN`, `CARGO`), so only the lab's own pin can keep the crate's away.
fn measure(copy: &Copy, variants: &str, out: &Path) -> (Child, Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lab"))
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .args(["measure", "--program"])
        .arg(copy.path())
        .arg("--scenario")
        .arg(copy.path().join("guestbook.json"))
        .args([
            "--variants",
            variants,
            "--backends",
            "wasmtime",
            "--layouts",
            "1",
        ])
        .arg("--out")
        .arg(out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (send, lines) = channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

/// The processes (pid, command line) whose command line names `target`: the cargo, rustc,
/// build scripts and linkers of a build into it.
fn build_processes(target: &Path) -> Vec<(u32, String)> {
    let needle = target.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(&needle) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Interrupts a run `after` its first "building guestbook" line with `signal`, and checks
/// that the crate is as `before` and that the build's processes are gone within a few seconds.
/// Returns what the run had said by then (its last line).
fn interrupt(
    copy: &Copy,
    variants: &str,
    signal: i32,
    after: Duration,
    before: &BTreeMap<PathBuf, Vec<u8>>,
) -> String {
    let out = tempfile::tempdir().unwrap();
    let (mut child, lines) = measure(copy, variants, &out.path().join("results"));
    let started = Instant::now();
    let mut last = String::new();
    loop {
        match lines.recv_timeout(Duration::from_secs(600)) {
            Ok(line) => {
                let building = line.starts_with("building guestbook for");
                last = line;
                if building {
                    break;
                }
            }
            Err(_) => panic!("no build began within {:?}: {last}", started.elapsed()),
        }
    }
    std::thread::sleep(after);
    // Whatever it said up to the signal: the phase the signal landed in.
    while let Ok(line) = lines.try_recv() {
        last = line;
    }
    // SAFETY: `kill` on the child's pid, which has not been waited for, so it is still ours.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "the run ended before the signal ({last})"
    );
    let what = format!("{} {after:?} after the build began ({last})", name(signal));
    assert!(files(copy.path()) == *before, "{what}: the crate changed");
    let t = Instant::now();
    while !build_processes(&copy.target).is_empty() && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = build_processes(&copy.target);
    assert!(
        left.is_empty(),
        "{what}: the build outlived the lab: {left:?}"
    );
    assert!(
        !out.path().join("results").exists(),
        "{what}: an interrupted run wrote results"
    );
    eprintln!("{what}: crate as found, no build process left");
    last
}

fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGKILL => "SIGKILL",
        _ => "signal",
    }
}

/// A run of `variants` to its end: it succeeds and leaves the crate as `before`; returns the
/// directory its results are in (`results/` under it).
fn succeed(copy: &Copy, variants: &str, before: &BTreeMap<PathBuf, Vec<u8>>) -> tempfile::TempDir {
    let out = tempfile::tempdir().unwrap();
    let (child, lines) = measure(copy, variants, &out.path().join("results"));
    let status = child.wait_with_output().unwrap().status;
    let said = rest(&lines);
    assert!(status.success(), "{}", said.join("\n"));
    assert!(
        files(copy.path()) == *before,
        "a successful run of {variants} after the interrupts changed the crate"
    );
    out
}

/// An outside program's report says what it is (the program, its scenario, the command that
/// regenerates it) and holds only sections with data for it: not the lab's recipe, design,
/// second workloads or cases.
fn check_report(copy: &Copy, results: &Path) {
    let main = std::fs::read_to_string(results.join("README.md")).unwrap();
    let crate_dir = std::path::absolute(copy.path()).unwrap();
    let scenario = crate_dir.join("guestbook.json");
    assert!(main.starts_with("# guestbook: which allocator\n"), "{main}");
    assert!(
        main.contains(&format!("The program in `{}`", crate_dir.display()))
            && main.contains(&format!("`{}`", scenario.display())),
        "{main}"
    );
    let command = format!(
        "Generated by `lab measure --program {} --scenario {} --variants shipping,talc \
         --backends wasmtime --layouts 1 --out {}`",
        crate_dir.display(),
        scenario.display(),
        results.display()
    );
    assert!(main.contains(&command), "{command}\n{main}");
    for absent in [
        "just compare",
        "lab's design",
        "NaN",
        "Target",
        "second workload",
        "the other backend",
        "`ft*`",
        "vft-stress",
        "synthetic",
        "**gtest**",
    ] {
        assert!(
            !main.contains(absent),
            "`{absent}` in an outside program's report:\n{main}"
        );
    }
    let page = std::fs::read_to_string(results.join("cases/guestbook.md")).unwrap();
    assert!(
        page.contains(&format!(
            "[All results](../README.md) › guestbook: the program in `{}`, sent `{}`.",
            crate_dir.display(),
            scenario.display()
        )),
        "{page}"
    );
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(results.join("metadata.json")).unwrap()).unwrap();
    assert_eq!(
        meta["regenerate_with"].as_str().unwrap(),
        command
            .trim_start_matches("Generated by `")
            .trim_end_matches('`')
    );
    assert_eq!(
        meta["program"]["crate_dir"],
        crate_dir.display().to_string()
    );
    // Built by the lab's compiler, though the crate pins another, and recorded as such.
    let pinned = galloc_lab::build::toolchain::pinned();
    assert!(
        meta["rustc"]
            .as_str()
            .unwrap()
            .starts_with(&format!("rustc {pinned} ")),
        "{}",
        meta["rustc"]
    );
    assert_eq!(meta["toolchain"], pinned);
    // Re-rendered by `lab report`, it says the same.
    let (ok, err) = crate::cli::lab(&["report", "--results", results.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(results.join("README.md")).unwrap(),
        main
    );
}

#[test]
fn an_authors_crate_is_left_as_found_however_a_run_ends() {
    let _turn = examples_turn();
    let copy = Copy::new();
    let before = files(copy.path());
    assert!(before.contains_key(Path::new("Cargo.lock")));

    // Cold: nothing of this crate's is built; cargo resolves, then builds gstd and the rest
    // for the Wasm target (the moments where the lock file used to be rewritten).
    for (signal, ms) in [
        (libc::SIGINT, 500),
        (libc::SIGKILL, 1_500),
        (libc::SIGINT, 4_000),
        (libc::SIGKILL, 8_000),
    ] {
        interrupt(
            &copy,
            "shipping",
            signal,
            Duration::from_millis(ms),
            &before,
        );
    }
    succeed(&copy, "shipping", &before);

    // Warm: its dependencies built, a new variant's galloc and what links it are built.
    for (signal, ms) in [
        (libc::SIGKILL, 200),
        (libc::SIGINT, 1_000),
        (libc::SIGKILL, 2_500),
    ] {
        interrupt(&copy, "talc", signal, Duration::from_millis(ms), &before);
    }
    let out = succeed(&copy, "shipping,talc", &before);
    check_report(&copy, &out.path().join("results"));

    // A gmeta-era program: `state` exported as such programs write it (`extern fn`, no "C",
    // which a look at the source for `extern "C" fn state(` missed). Its plain build says so
    // in one line naming the export, before the probe build would fail to link it.
    let lib = copy.path().join("src/lib.rs");
    let mut text = std::fs::read_to_string(&lib).unwrap();
    text.push_str("\n#[no_mangle]\n#[allow(missing_abi)]\nextern fn state() {}\n");
    std::fs::write(&lib, text).unwrap();
    let edited = files(copy.path());
    let out = tempfile::tempdir().unwrap();
    let results = out.path().join("results");
    let (child, lines) = measure(&copy, "shipping", &results);
    let status = child.wait_with_output().unwrap().status;
    let said = rest(&lines);
    let error: Vec<&String> = said.iter().filter(|l| l.starts_with("error:")).collect();
    assert!(!status.success(), "{said:?}");
    assert_eq!(error.len(), 1, "{said:?}");
    assert!(
        error[0].contains("exports `state`")
            && error[0].contains("measure a copy without that export"),
        "{said:?}"
    );
    assert!(
        !said.iter().any(|l| l.contains("shipping+probe")),
        "the probe build was tried: {said:?}"
    );
    assert!(!results.exists(), "a refused program's run wrote results");
    assert!(
        files(copy.path()) == edited,
        "the refused run changed the crate"
    );
}
