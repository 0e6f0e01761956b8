//! The `lab` command refuses bad arguments with a message that names the fix.
//!
//! Over 600 lines: 15 tests of the command line, each with the arguments, program and scenario
//! it runs and the message it expects, around the helpers that run `lab` and the lock below.

use std::process::Command;

/// Held by every test that builds one of `contracts/examples/` (or a copy): their builds wait
/// for each other anyway (every outside program builds through one shared build directory,
/// under its lock: `galloc_lab::build::shared::dir`), and some measure into the
/// directory the lab chooses itself for a crate and read it back, which another test's run of
/// the same crate would change under them.
pub fn examples_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub fn lab(args: &[&str]) -> (bool, String) {
    let (ok, _, err) = lab_printing(args);
    (ok, err)
}

/// Runs `lab` with `args`: whether it succeeded, its standard output and its standard error.
pub fn lab_printing(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run lab");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `lab measure --quiet --program PROGRAM --scenario SCENARIO --variants VARIANTS --backends
/// BACKENDS --out OUT`: whether it succeeded, and its standard error.
fn measure_program(
    program: &std::path::Path,
    scenario: &std::path::Path,
    variants: &str,
    backends: &str,
    out: &std::path::Path,
) -> (bool, String) {
    lab(&[
        "measure",
        "--quiet",
        "--program",
        program.to_str().unwrap(),
        "--scenario",
        scenario.to_str().unwrap(),
        "--variants",
        variants,
        "--backends",
        backends,
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn unknown_variant_case_and_backend_are_named() {
    let (ok, err) = lab(&["measure", "--variants", "no-buffer,tiny"]);
    assert!(!ok);
    assert!(
        err.contains("unknown variant `tiny`; known variants: shipping,"),
        "{err}"
    );

    let (ok, err) = lab(&["measure", "--cases", "nft,erc20"]);
    assert!(!ok);
    assert!(
        err.contains("unknown case `erc20`; known cases: nft, nft-stress,"),
        "{err}"
    );

    let (ok, err) = lab(&["measure", "--backends", "nodes"]);
    assert!(!ok);
    assert!(
        err.contains(
            "unknown backend `nodes`; available here: wasmtime, gtest; `node` too with a node \
             given (--node URL or --node-bin PATH)"
        ),
        "{err}"
    );
}

/// Without a node, naming the node backend is an error that says what to pass (`all` leaving
/// it out is tested in the backend module). With an address where no node listens: the connection error, before
/// any build. (No node can run here; docs/node.md, "Measuring on a real node".)
#[test]
fn the_node_backend_says_what_it_needs() {
    let lab = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_lab"))
            .args(args)
            .env_remove("LAB_NODE")
            .env_remove("LAB_NODE_BIN")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("run lab");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, err) = lab(&["measure", "--backends", "node", "--variants", "bump"]);
    assert!(!ok);
    assert!(
        err.contains("backend `node`: no node given: pass --node ws://HOST:PORT (or set LAB_NODE)"),
        "{err}"
    );

    let out = tempfile::tempdir().unwrap();
    let (ok, err) = lab(&[
        "measure",
        "--backends",
        "node",
        "--node",
        "ws://127.0.0.1:1",
        "--variants",
        "bump",
        "--cases",
        "nft",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        err.contains("cannot connect to a Gear node at ws://127.0.0.1:1"),
        "{err}"
    );
    assert!(
        !err.contains("building lab-nft"),
        "the node is checked before builds: {err}"
    );
}

#[test]
fn outside_the_workspace_the_fix_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["sizes"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not inside the galloc lab workspace") && err.contains("--workspace"),
        "{err}"
    );
}

/// The gate fails, with a table naming the row, when a variant costs more than the baseline;
/// passes when nothing rose. (The run judged here is the committed results; the baseline is a
/// copy with one variant made cheaper, which is the same as that variant getting worse.)
#[test]
fn the_gate_fails_on_a_worsened_variant_and_passes_otherwise() {
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    // A baseline is a whole result set: a copy of the committed one.
    let base = crate::integrity::copy_of_results();
    let dir = base.path().join("gtest");
    let totals = std::fs::read_to_string(results.join("gtest/totals.csv")).unwrap();
    let mut lines: Vec<String> = totals.lines().map(str::to_owned).collect();
    let row = lines
        .iter()
        .position(|l| l.starts_with("gtest,nft-stress,no-buffer,"))
        .expect("committed results have gtest nft-stress no-buffer");
    let mut cells: Vec<String> = lines[row].split(',').map(str::to_owned).collect();
    let total: u64 = cells[5].parse().unwrap();
    cells[5] = (total - 1).to_string();
    lines[row] = cells.join(",");
    std::fs::write(dir.join("totals.csv"), lines.join("\n") + "\n").unwrap();
    // The sweep's offset-0 row is the same total, and a whole set keeps them equal.
    let layouts = std::fs::read_to_string(dir.join("layouts.csv")).unwrap();
    let at_zero = "gtest,nft-stress,no-buffer,gas,0,";
    let layouts: Vec<String> = layouts
        .lines()
        .map(|l| {
            if !l.starts_with(at_zero) {
                return l.to_owned();
            }
            let mut cells: Vec<String> = l.split(',').map(str::to_owned).collect();
            cells[6] = (total - 1).to_string();
            cells.join(",")
        })
        .collect();
    std::fs::write(dir.join("layouts.csv"), layouts.join("\n") + "\n").unwrap();
    crate::integrity::reseal(base.path());

    let base_arg = base.path().to_str().unwrap();
    let current = results.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["check", "--baseline", base_arg, "--current", current])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stdout.contains("| gtest | nft-stress | no-buffer | linker's | gas |")
            && stdout.contains("REGRESSED"),
        "{stdout}"
    );
    assert!(stderr.contains("just bless"), "{stderr}");

    // Against itself, nothing moved.
    let out = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["check", "--baseline", current, "--current", current])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(out.status.success());
}

/// End to end: an allocator that really does more work per `malloc` (galloc's `gate-canary`
/// feature) is built, measured like any change, and the gate fails on it naming its rows on
/// both backends. (That `main` itself passes is what `just gate` checks in CI.)
#[test]
fn the_gate_fails_on_a_really_worsened_build() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let measure = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args([
            "measure",
            "--quiet",
            "--out",
            dir,
            "--variants",
            "static-buffer",
            "--cases",
            "nft",
            "--backends",
            "wasmtime,gtest",
            "--allocator-features",
            "gate-canary",
            // The gate judges the linker's layout alone, as `just check` measures it.
            "--layouts",
            "1",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        measure.status.success(),
        "{}",
        String::from_utf8_lossy(&measure.stderr)
    );
    let check = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["check", "--current", dir])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(!check.status.success(), "{stdout}");
    for row in [
        "| wasmtime | nft | static-buffer | linker's | fuel |",
        "| gtest | nft | static-buffer | linker's | gas |",
    ] {
        assert!(stdout.contains(row), "{row} missing from:\n{stdout}");
    }
    assert!(stdout.contains("REGRESSED"), "{stdout}");

    // Extra features never overwrite the committed results.
    let (ok, err) = lab(&[
        "measure",
        "--variants",
        "static-buffer",
        "--allocator-features",
        "gate-canary",
    ]);
    assert!(!ok && err.contains("--out"), "{err}");
}

/// A Sails crate as its author wrote it (a `build.rs` calling Sails' wasm builder, `rlib` and
/// `cdylib`) is measured without edits, from a scenario of calls by service and method name
/// encoded from its IDL: every reply, thrown error and event is checked on both embedded
/// backends, and the crate's files are left as they were.
#[test]
fn a_sails_crate_as_written_is_measured_from_calls_by_name() {
    let _turn = examples_turn();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let program = root.join("contracts/examples/polls");
    let files = ["Cargo.toml", "Cargo.lock", "build.rs", "src/lib.rs"];
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|f| std::fs::read(program.join(f)).unwrap())
        .collect();
    let out = tempfile::tempdir().unwrap();
    let (ok, err) = measure_program(
        &program,
        &program.join("polls.json"),
        "shipping",
        "wasmtime,gtest",
        out.path(),
    );
    assert!(ok, "{err}");
    for backend in ["wasmtime", "gtest"] {
        let totals = std::fs::read_to_string(out.path().join(backend).join("totals.csv")).unwrap();
        let row = totals
            .lines()
            .find(|l| l.contains(",polls,shipping,"))
            .unwrap_or_else(|| panic!("no polls row in {backend}'s\n{totals}"));
        // 125 calls and `init`.
        assert!(row.contains(",126,"), "{row}");
    }

    // Every expectation can fail, on the built program: `None` expected where the call
    // returns `Some`, and a message to a user expected where the call sends only its event.
    let open = r#"{"call": "Polls/Open", "args": ["Q?", ["a", "b"]], "returns": 0}"#;
    for (wrong, expect) in [
        (
            r#"{"call": "Polls/Tally", "args": [0], "returns": null}"#,
            "message 2",
        ),
        (
            r#"{"from": 5, "call": "Polls/Vote", "args": [0, 1], "returns": 1, "sends": [{"event": {"Voted": {"id": 0, "voter": 5, "option": 1}}}, {"to": 5, "payload": "0x01"}]}"#,
            // Events read through the IDL, users by number.
            "expected it to send event Voted { id: 0, voter: user 5, option: 1 }; to user 5: \
             0x01, it sent event Voted { id: 0, voter: user 5, option: 1 }",
        ),
    ] {
        let file = out.path().join("wrong.json");
        std::fs::write(
            &file,
            format!(
                r#"{{"idl": {:?}, "init": {{"constructor": "New", "args": []}}, "messages": [{open}, {wrong}]}}"#,
                program.join("polls.idl")
            ),
        )
        .unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let (ok, err) = measure_program(&program, &file, "shipping", "wasmtime", scratch.path());
        assert!(!ok && err.contains(expect), "{wrong}: {err}");
    }
    for (file, bytes) in files.iter().zip(&before) {
        assert_eq!(
            &std::fs::read(program.join(file)).unwrap(),
            bytes,
            "{file} was changed"
        );
    }
}

/// A Sails program with what authors turn on that the lab's own programs do not (gstd's
/// `debug`, so `gr_debug`; a delayed send; the block height) measures on both default
/// backends, and they agree on what a program can see: the heights its calls answer by, and a
/// delayed message reaching its user in the block its delay ends in, even when that block's
/// own message fails. The same notice expected one block early fails on each backend.
#[test]
fn a_sails_program_with_debug_and_a_delayed_send_measures_on_both_default_backends() {
    let _turn = examples_turn();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let program = root.join("contracts/examples/auction");
    let scenario = program.join("auction.json");
    let out = tempfile::tempdir().unwrap();
    // No `--backends`: the defaults.
    let (ok, err) = lab(&[
        "measure",
        "--quiet",
        "--layouts",
        "1",
        "--program",
        program.to_str().unwrap(),
        "--scenario",
        scenario.to_str().unwrap(),
        "--variants",
        "shipping",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    for backend in ["wasmtime", "gtest"] {
        let totals = std::fs::read_to_string(out.path().join(backend).join("totals.csv")).unwrap();
        let header: Vec<&str> = totals.lines().next().unwrap().split(',').collect();
        let row: Vec<&str> = totals
            .lines()
            .find(|l| l.contains(",auction,shipping,"))
            .unwrap_or_else(|| panic!("no auction row in {backend}'s\n{totals}"))
            .split(',')
            .collect();
        let column = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
        // Five calls and `init`, two of them refused.
        assert_eq!(
            (column("messages"), column("failed_messages")),
            ("6", "2"),
            "{backend}"
        );
    }
    // The report opens with the answer; with shipping alone there is none to give.
    let report = std::fs::read_to_string(out.path().join("README.md")).unwrap();
    assert!(
        report.contains("Only `shipping` was measured on `auction`: there is nothing to compare"),
        "{report}"
    );
    // What the program imports is what this test is for.
    let artifacts = root.join("target/artifacts");
    let plain = std::fs::read_dir(&artifacts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| {
            d.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("auction-"))
        })
        .map(|d| d.join("shipping.opt.wasm"))
        .find(|f| f.exists())
        .expect("auction's plain build");
    let info = galloc_lab::build::wasm::inspect(&std::fs::read(plain).unwrap()).unwrap();
    for import in ["env.gr_debug", "env.gr_block_height", "env.gr_send"] {
        assert!(
            info.function_imports.iter().any(|i| i == import),
            "{import} not in {:?}",
            info.function_imports
        );
    }

    let text = std::fs::read_to_string(&scenario).unwrap();
    let notice = r#""sends": [{"to": 2, "payload": "0x636c6f7365642030"}]"#;
    let early = text
        .replacen(
            &format!(r#""throws": "Closed", {notice}"#),
            r#""throws": "Closed""#,
            1,
        )
        .replacen(
            r#""throws": "TooLow""#,
            &format!(r#""throws": "TooLow", {notice}"#),
            1,
        );
    assert_ne!(early, text);
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("early.json");
    std::fs::write(&file, early).unwrap();
    std::fs::copy(
        program.join("auction.idl"),
        scratch.path().join("auction.idl"),
    )
    .unwrap();
    for backend in ["wasmtime", "gtest"] {
        let out = tempfile::tempdir().unwrap();
        let (ok, err) = measure_program(&program, &file, "shipping", backend, out.path());
        assert!(
            !ok && err.contains(
                "message 3 (counting from 1 after `init`): expected it to send to user 2: \
                     0x636c6f7365642030, it sent nothing"
            ),
            "{backend}: {err}"
        );
    }
}

/// The "any contract" path end to end: the example program outside the workspace is built
/// for a variant through the galloc patch, runs its scenario file with every reply checked,
/// and its crate is left as it was (its `Cargo.lock` included).
#[test]
fn an_outside_program_is_built_per_variant_and_measured() {
    let _turn = examples_turn();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let program = root.join("contracts/examples/guestbook");
    let scenario = program.join("guestbook.json");
    let lock = std::fs::read(program.join("Cargo.lock")).expect("the example's Cargo.lock");
    let out = tempfile::tempdir().unwrap();
    let (ok, err) = measure_program(&program, &scenario, "no-buffer", "wasmtime", out.path());
    assert!(ok, "{err}");
    let totals = std::fs::read_to_string(out.path().join("wasmtime/totals.csv")).unwrap();
    let row = totals
        .lines()
        .find(|l| l.contains(",guestbook,no-buffer,"))
        .unwrap_or_else(|| panic!("no guestbook row in\n{totals}"));
    // 117 messages and `init`.
    assert!(row.contains(",118,"), "{row}");
    assert_eq!(
        std::fs::read(program.join("Cargo.lock")).unwrap(),
        lock,
        "the program's Cargo.lock was left patched"
    );
    assert!(out.path().join("README.md").is_file());

    // Another crate of the same package name, elsewhere, that does not compile (its files
    // older than the build above): it is built on its own, so it fails, and nothing is written.
    let impostor = tempfile::tempdir().unwrap();
    std::fs::create_dir(impostor.path().join("src")).unwrap();
    for file in ["Cargo.toml", "Cargo.lock", "src/lib.rs"] {
        let mut text = std::fs::read_to_string(program.join(file)).unwrap();
        if file == "src/lib.rs" {
            text.push_str("\nfn impostor( {}\n");
        }
        let to = impostor.path().join(file);
        std::fs::write(&to, text).unwrap();
        let old = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        std::fs::File::options()
            .write(true)
            .open(&to)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let empty = tempfile::tempdir().unwrap();
    let (ok, err) = measure_program(
        impostor.path(),
        &scenario,
        "no-buffer",
        "wasmtime",
        empty.path(),
    );
    // Its own cargo target directory (~220 MB of host tools) is of no use after the test.
    let key = galloc_lab::build::external::Program::at(impostor.path())
        .unwrap()
        .key;
    let _ = std::fs::remove_dir_all(root.join("target/variants/external").join(&key));
    assert!(!ok, "the other crate's build was measured");
    assert!(
        err.contains("building guestbook (") && err.contains("failed") && err.contains("impostor"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0);
}

/// A program that messages itself (the relay sends itself `n - 1` hops, so one user message
/// sets off `n` more executions in the same block) runs on both default backends with the same
/// replies: the meter carries Gear's message layer (it was left out of such programs while it
/// implemented 9 of gsys's 52 syscalls). Its cost on the meter is every execution the message
/// set off, as on gtest, and the report says nothing was left out.
#[test]
fn a_program_that_messages_itself_is_measured_on_both_default_backends() {
    let _turn = examples_turn();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let program = root.join("contracts/examples/relay");
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("relay.json");
    // No hop (64 entries logged), two hops (the reply counts 128; two more executions follow
    // in the same step), none again (320).
    std::fs::write(
        &scenario,
        r#"{"messages": [
            {"from": 3, "payload": "0x00", "reply": "0x40000000"},
            {"from": 3, "payload": "0x02", "reply": "0x80000000"},
            {"from": 3, "payload": "0x00", "reply": "0x40010000"}
        ]}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let (ok, err) = lab(&[
        "measure",
        "--quiet",
        "--program",
        program.to_str().unwrap(),
        "--scenario",
        scenario.to_str().unwrap(),
        "--variants",
        "shipping",
        "--layouts",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(!err.contains("without the fuel meter"), "{err}");
    assert!(!out.join("left-out.csv").exists(), "something was left out");
    let fuel = |message: u32| -> u64 {
        let text =
            zstd::decode_all(std::fs::File::open(out.join("wasmtime/messages.csv.zst")).unwrap())
                .unwrap();
        let text = String::from_utf8(text).unwrap();
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let (m, cost) = (col("message"), col("cost"));
        text.lines()
            .skip(1)
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|c| c[col("variant")] == "shipping" && c[m] == message.to_string())
            .map(|c| c[cost].parse().unwrap())
            .unwrap_or_else(|| panic!("no message {message} in\n{text}"))
    };
    // The two hops are two more executions of the same program: the step costs more than
    // either step that sets off none.
    assert!(
        fuel(2) > fuel(1) && fuel(2) > fuel(3),
        "{} {} {}",
        fuel(1),
        fuel(2),
        fuel(3)
    );
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(!readme.contains("Asked for and not run"), "{readme}");
    let generated = readme
        .lines()
        .find(|l| l.starts_with("Generated by `lab measure "))
        .unwrap_or_else(|| panic!("no 'Generated by' line in {readme}"));
    assert!(
        generated.contains(" --variants shipping --backends wasmtime,gtest --layouts 1 "),
        "{generated}"
    );
}

#[test]
fn outside_program_mistakes_are_named() {
    let (ok, err) = lab(&["measure", "--program", "../contracts/examples/guestbook"]);
    assert!(!ok && err.contains("--scenario"), "{err}");
    let (ok, err) = lab(&[
        "measure",
        "--program",
        "../contracts/examples/guestbook",
        "--scenario",
        "../contracts/examples/guestbook/missing.json",
    ]);
    assert!(!ok && err.contains("missing.json"), "{err}");
    let (ok, err) = lab(&[
        "measure",
        "--program",
        "../contracts/examples/nowhere",
        "--scenario",
        "../contracts/examples/guestbook/guestbook.json",
    ]);
    assert!(!ok && err.contains("no crate at"), "{err}");
    let (ok, err) = lab(&[
        "measure",
        "--program",
        "../contracts/examples/guestbook",
        "--scenario",
        "../contracts/examples/guestbook/guestbook.json",
        "--cases",
        "nft",
    ]);
    assert!(!ok && err.contains("--cases"), "{err}");
}

/// `lab replay` on a contract's own trace: the shipping allocator's calls, replayed in the
/// replay program at the recording's heap base, cost exactly the fuel they cost in the
/// contract, call by call (results/traces/nft-shipping.csv.zst), and the native replay agrees.
#[test]
fn a_recorded_trace_replays_to_the_recorded_fuel_on_shipping() {
    let (ok, err) = lab(&["replay", "--cases", "nft", "--variants", "shipping"]);
    assert!(ok, "{err}");
    let csv =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/lab/replay/replay.csv");
    let table = std::fs::read_to_string(&csv).unwrap();
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines
        .find(|l| l.starts_with("nft,shipping,"))
        .expect("nft on shipping")
        .split(',')
        .collect();
    let col = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(col("replay_fuel"), col("recorded_fuel"));
    assert_eq!(col("calls_equal"), col("steps"));
    assert_eq!(col("fault"), "none");

    let (ok, err) = lab(&[
        "replay",
        "--trace",
        "no/such/trace.csv",
        "--variants",
        "shipping",
    ]);
    assert!(!ok);
    assert!(err.contains("no trace no/such/trace.csv"), "{err}");
}

/// `lab pick` (`just pick`) on a gstd program and on a Sails program, both outside the
/// workspace: one answer, and it is the ship rule applied to the layouts it measured as the
/// program's deployments (every variant at every layout of the sweep, on gtest), with the gas
/// at the program's own layout beside it.
#[test]
fn pick_answers_for_a_gstd_and_a_sails_program() {
    let _turn = examples_turn();
    use galloc_lab::analyse::layout::SHIPPING;
    use galloc_lab::analyse::population::Totals;
    // Four of the sweep's points (stratified: one in each Gear page of the Wasm page) keep the
    // test's runs few; `pick` runs the default 16 unless told.
    const POINTS: usize = 4;
    use galloc_lab::results::{read_csv, LayoutRow};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // guestbook with its second workload (`--second`), polls without: the layout offered beside
    // the variant is recommended only where a workload it was not chosen from measured it too.
    for (crate_dir, scenario, second) in [
        (
            "contracts/examples/guestbook",
            "guestbook.json",
            Some("guestbook-second.json"),
        ),
        ("contracts/examples/polls", "polls.json", None),
    ] {
        let program = root.join(crate_dir);
        let out = tempfile::tempdir().unwrap();
        let run = Command::new(env!("CARGO_BIN_EXE_lab"))
            .args([
                "pick",
                "--quiet",
                "--variants",
                "talc,no-buffer",
                "--layouts",
                "4",
                "--out",
            ])
            .arg(out.path())
            .arg(&program)
            .arg(program.join(scenario))
            .args(
                second
                    .iter()
                    .flat_map(|s| ["--second".into(), program.join(s)]),
            )
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
        );
        assert!(run.status.success(), "{stderr}");
        // Every layout point was re-linked from the kept link, none built again through cargo
        // (an outside program's link names rlibs in rustc's temporary directory: kept too).
        assert!(!stderr.contains("re-linking"), "{stderr}");

        let rows: Vec<LayoutRow> = read_csv(&out.path().join("gtest/layouts.csv")).unwrap();
        let case = scenario.trim_end_matches(".json");
        for v in [SHIPPING, "talc", "no-buffer"] {
            let points = rows
                .iter()
                .filter(|r| r.case == case && r.variant == v)
                .count();
            assert_eq!(points, POINTS, "{case} {v}");
        }
        let (_, expected) = galloc_lab::analyse::pick::for_program(
            galloc_lab::analyse::ship::RULE,
            &Totals::of_sweep(&rows, "gtest"),
            &Totals::default(),
            case,
            &[SHIPPING, "talc", "no-buffer"],
        );
        let expected = expected.as_str();
        assert!(
            stdout.contains(&format!(
                "pick for {case}: 3 variants, gas on gtest, {POINTS} heap layouts, minimum effect 1 %"
            )),
            "{stdout}"
        );
        assert!(
            stdout.contains("at its own layout (offset 0) ")
                && stdout.contains(" gas against shipping's "),
            "{stdout}"
        );
        if expected == SHIPPING {
            assert!(
                stdout.contains("  use shipping (gstd's own galloc)"),
                "{stdout}"
            );
            assert!(stdout.contains("Cargo.toml: nothing to change"), "{stdout}");
        } else {
            assert!(stdout.contains(&format!("  use {expected}: ")), "{stdout}");
            assert!(
                stdout.contains(&format!(
                    "galloc = {{ version = \"=2.0.0\", features = [\"{expected}\"] }}"
                )),
                "{stdout}"
            );
        }
        // Beside the allocator, the layout: for the variant picked, a setting or the linker's
        // layout kept, and the rule's own standing out of sample.
        let layout = stdout
            .split_once("and its layout (`lab layout`")
            .unwrap_or_else(|| panic!("no layout offered:\n{stdout}"))
            .1;
        assert!(
            layout.contains(&format!(
                " with `{expected}`: where its statics and heap fall"
            )),
            "{stdout}"
        );
        assert!(
            layout.contains("link-arg=--global-base=")
                || layout.contains("keep the linker's layout"),
            "{stdout}"
        );
        if layout.contains("link-arg=--global-base=") {
            match second {
                Some(s) => assert_eq!(
                    layout.matches(&format!("{s} (gtest): ")).count(),
                    1,
                    "the second workload is measured:\n{stdout}"
                ),
                None => assert!(
                    layout.contains("  untested: ") && !layout.contains("  to apply it:"),
                    "{stdout}"
                ),
            }
        }
        // The rule's standing out of sample where the committed study judged it with the
        // variant picked (`shipping` and `lab`), and plainly that it has not where it did not
        // (`pick` may name any variant: on guestbook it names `no-buffer`).
        let judged = layout_study_judged(&root.join("results"));
        if judged.iter().any(|v| v == expected) {
            assert!(
                layout.contains("judged on workloads it did not choose from"),
                "{stdout}"
            );
        } else {
            assert!(
                layout.contains(&format!(
                    "the lab has not judged this rule with `{expected}` (results/layout-model/"
                )),
                "{stdout}"
            );
        }
    }
}

/// The variants the committed layout study judged its robust rule with, read from its files.
fn layout_study_judged(results: &std::path::Path) -> Vec<String> {
    use galloc_lab::analyse::layout_choice::ChoiceRule;
    let corpus = results.join("corpus");
    let study = galloc_lab::report::layout_model::study(results, &[results, &corpus])
        .unwrap()
        .expect("the committed layout study (results/layout-model/)");
    let judged: Vec<String> = study
        .standings
        .iter()
        .filter(|s| s.rule == ChoiceRule::Robust)
        .map(|s| s.variant.clone())
        .collect();
    assert!(
        !judged.is_empty(),
        "the study judged the robust rule with no variant"
    );
    judged
}

#[test]
fn pick_mistakes_are_named() {
    let (ok, err) = lab(&[
        "pick",
        "../contracts/examples/guestbook",
        "../contracts/examples/guestbook/guestbook.json",
        "--backend",
        "wasmtime,gtest",
    ]);
    assert!(!ok && err.contains("give one embedded backend"), "{err}");
    let (ok, err) = lab(&[
        "pick",
        "../contracts/examples/guestbook",
        "../contracts/examples/guestbook/guestbook.json",
        "--variants",
        "shipping",
    ]);
    assert!(
        !ok && err.contains("at least one variant besides shipping"),
        "{err}"
    );
    let (ok, err) = lab(&[
        "pick",
        "../contracts/examples/guestbook",
        "../contracts/examples/guestbook/missing.json",
    ]);
    assert!(!ok && err.contains("missing.json"), "{err}");
}

/// A reproduction is refused where candidates are measured, naming the command that measures
/// it; a candidate is refused by `lab reproduce`, naming the reproductions.
#[test]
fn reproductions_and_candidates_each_go_to_their_own_command() {
    let (ok, err) = lab(&[
        "measure",
        "--variants",
        "shipping,pr4853",
        "--out",
        "/nonexistent",
    ]);
    assert!(!ok);
    assert!(
        err.contains("`pr4853` is a reproduction, not a candidate")
            && err.contains("`lab reproduce pr4853`"),
        "{err}"
    );
    let (ok, err) = lab(&["reproduce", "gear-next", "--out", "/nonexistent"]);
    assert!(!ok);
    assert!(
        err.contains("`gear-next` is a variant the lab measures, not a reproduction")
            && err.contains("takes one of: pr4853"),
        "{err}"
    );
    let (ok, err) = lab(&["reproduce", "pr4853", "--against", "gear-next"]);
    assert!(!ok);
    assert!(err.contains("--against gear-next: add shipping"), "{err}");
    assert!(!std::path::Path::new("/nonexistent").exists());
}

/// A reader that closes its end (`lab verdict … | true`) ends the lab as it ends any tool:
/// by the closed pipe, with no panic.
#[test]
fn a_closed_stdout_ends_the_lab_without_a_panic() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["verdict", "lab,shipping"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run lab");
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    use std::os::unix::process::ExitStatusExt;
    assert!(
        out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
        "{:?}: {err}",
        out.status
    );
}
