//! `lab layout` on crates outside the lab. The setting it prints is applied the way its author
//! would apply it (the `.cargo/config.toml` lines it prints, in a copy of the crate, built with
//! cargo as the author builds it, outside the lab), and the built Wasm's statics start where the
//! line says and its heap base moves by exactly the bytes printed. Given a second scenario, a
//! workload the choice was not made from, it recommends the setting exactly when every scenario
//! measured it cheaper, and on polls, where the second is dearer, it does not.

use super::cli::{examples_turn, lab, lab_printing};
use galloc_lab::build::wasm::{data_start, exported_global};
use std::path::{Path, PathBuf};

/// The number after `before` in `text` (thousands separators allowed), or a panic naming it.
fn number_after(text: &str, before: &str) -> u64 {
    let at = text
        .find(before)
        .unwrap_or_else(|| panic!("no `{before}` in\n{text}"))
        + before.len();
    let digits: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after `{before}` in\n{text}"))
}

/// The lines between `[target.wasm32v1-none]` and the closing `]` of its rustflags, as printed.
fn config_lines(text: &str) -> String {
    let from = text
        .find("[target.wasm32v1-none]")
        .unwrap_or_else(|| panic!("no config lines in\n{text}"));
    let rest = &text[from..];
    let to = rest.find("\"]").expect("the rustflags' end") + 2;
    rest[..to]
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The author's build: `cargo build --release --target wasm32v1-none` in `dir`, outside the
/// lab (its environment's flags removed, as on an author's machine), and the Wasm's
/// `(data start, heap base)`.
fn authors_build(dir: &Path, target: &Path) -> (u32, u32) {
    let out = galloc_lab::build::workspace::cargo_command()
        .args(["build", "--quiet", "--locked", "--release"])
        .args(["--target", "wasm32v1-none"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "the author's build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let wasm = std::fs::read(target.join("wasm32v1-none/release/guestbook.wasm")).unwrap();
    (
        data_start(&wasm).unwrap().expect("static data"),
        exported_global(&wasm, "__heap_base")
            .unwrap()
            .expect("__heap_base"),
    )
}

fn copy_crate(from: &Path, to: &Path) {
    for entry in walk(from) {
        let dest = to.join(entry.strip_prefix(from).unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&entry, dest).unwrap();
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}

/// Each `measured on FILE (gtest): X %` line of `lab layout`'s answer: the file and its change.
fn measured_changes(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("measured on "))
        .map(|l| {
            let (file, rest) = l.split_once(" (gtest): ").expect("a measured line");
            let pct = rest.split_once(" %").expect("a percentage").0;
            (file.to_owned(), pct.parse().expect("a change in percent"))
        })
        .collect()
}

/// `lab layout CRATE SCENARIO SECOND` on an example: its answer, after checking the parts
/// every answer with a chosen layout has. The heap base moved by exactly the bytes every static
/// moved; both scenarios measured, the second said to be one the choice was not made from; and
/// the setting recommended exactly when every scenario measured it cheaper.
fn layout_with_a_second_workload(example: &str) -> String {
    let (ok, out, err) = {
        let _turn = examples_turn();
        lab_printing(&[
            "layout",
            &format!("../contracts/examples/{example}"),
            &format!("../contracts/examples/{example}/{example}.json"),
            &format!("../contracts/examples/{example}/{example}-second.json"),
        ])
    };
    assert!(ok, "{err}");
    let moved = number_after(&out, "every static ");
    let before = number_after(&out, "linker's layout: heap base ");
    let after = number_after(&out, "bytes higher; heap base ");
    assert_eq!(after - before, moved, "{out}");
    let changes = measured_changes(&out);
    assert_eq!(changes.len(), 2, "{out}");
    assert!(changes[1].0.ends_with("-second.json"), "{out}");
    assert_eq!(
        out.matches("; not chosen from").count(),
        1,
        "only the second scenario is one the layout was not chosen from:\n{out}"
    );
    let every_cheaper = changes.iter().all(|(_, c)| *c < 0.0);
    assert_eq!(out.contains("  to apply it:"), every_cheaper, "{out}");
    assert_eq!(
        out.contains("  not recommended (dearer on a scenario above)"),
        !every_cheaper,
        "{out}"
    );
    assert!(
        out.contains("judged on workloads it did not choose from"),
        "{out}"
    );
    out
}

/// polls (Sails) with `shipping`: the rule's choice is cheaper on the scenario it was chosen
/// from and dearer on the second (measured: -6.42 % and +5.96 %), so `lab layout` must not
/// recommend it. The case the author's second scenario is for.
#[test]
fn a_layout_dearer_on_a_workload_it_did_not_see_is_not_recommended() {
    let out = layout_with_a_second_workload("polls");
    let changes = measured_changes(&out);
    assert!(
        changes[0].1 < 0.0 && changes[1].1 > 0.0,
        "polls no longer shows a choice cheaper where it was made and dearer elsewhere; this \
         test needs such a program:\n{out}"
    );
    assert!(!out.contains("  to apply it:"), "{out}");
}

/// polls with `shipping` on the scenario alone: the layout chosen there is cheaper there (the
/// choice looking at itself) and dearer on the second workload, so one workload must not make
/// an "apply it": it is said to be untested, with the command that tests it.
#[test]
fn a_layout_chosen_on_one_workload_is_untested() {
    let (ok, out, err) = {
        let _turn = examples_turn();
        lab_printing(&[
            "layout",
            "../contracts/examples/polls",
            "../contracts/examples/polls/polls.json",
        ])
    };
    assert!(ok, "{err}");
    assert!(
        out.contains("[target.wasm32v1-none]"),
        "polls keeps its layout now; this test needs a choice:\n{out}"
    );
    assert!(!out.contains("  to apply it:"), "{out}");
    assert!(
        out.contains("  untested: measured only on the workload it was chosen from")
            && out.contains("SECOND.json"),
        "{out}"
    );
}

#[test]
fn the_setting_lab_layout_prints_moves_the_authors_heap_base_as_it_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = root.join("contracts/examples/guestbook");
    // guestbook's heap falls where a move pays on its scenario: the rule chooses a layout.
    let out = layout_with_a_second_workload("guestbook");
    let moved = number_after(&out, "every static ");
    let global_base = number_after(&out, "link-arg=--global-base=");
    let start = number_after(&out, "where the statics start, ");
    assert_eq!(global_base, start + moved, "{out}");

    // The author's copy, built as they build it, without and then with the printed lines.
    let copy = tempfile::tempdir().unwrap();
    copy_crate(&example, copy.path());
    let target = root.join("target/lab/tests/layout-author");
    let (start_as_found, base_as_found) = authors_build(copy.path(), &target);
    assert_eq!(
        u64::from(start_as_found),
        start,
        "the author's build places its statics elsewhere than the lab's"
    );
    std::fs::create_dir_all(copy.path().join(".cargo")).unwrap();
    std::fs::write(
        copy.path().join(".cargo/config.toml"),
        config_lines(&out) + "\n",
    )
    .unwrap();
    let (start_set, base_set) = authors_build(copy.path(), &target);
    assert_eq!(u64::from(start_set), global_base, "{out}");
    assert_eq!(
        u64::from(base_set - base_as_found),
        moved,
        "the heap base moved by {} bytes, not the {moved} printed:\n{out}",
        base_set - base_as_found
    );

    // The lab builds the copy as its author now does: its config's rustflags reach the lab's
    // builds (they were dropped for the lab's own), so its statics start where the author's
    // build puts them, and a layout point moves them from there (the lab's `--global-base`
    // after theirs).
    let ws = galloc_lab::build::workspace::Workspace::find(&root).unwrap();
    let program = galloc_lab::build::external::Program::at(copy.path()).unwrap();
    let lab_target = root.join("target/variants/external").join(&program.key);
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _remove = Remove(lab_target);
    let request = |layout_offset| galloc_lab::build::artifact::BuildRequest {
        layout_offset,
        post: galloc_lab::build::artifact::PostProcess::None,
        external: Some(&program),
        ..galloc_lab::build::artifact::BuildRequest::deployed(
            "guestbook",
            galloc_variants::find("shipping").unwrap(),
        )
    };
    let plain = galloc_lab::build::artifact::build(&ws, request(0)).unwrap();
    assert_eq!(data_start(&plain.bytes).unwrap(), Some(start_set));
    let point = galloc_lab::build::artifact::build(&ws, request(4096)).unwrap();
    assert_eq!(data_start(&point.bytes).unwrap(), Some(start_set + 4096));

    // And `lab layout` again on the copy: it reports the author's layout as the crate's, chooses
    // as before from the linker's own, and finds it already applied.
    let scenarios = ["guestbook.json", "guestbook-second.json"].map(|f| copy.path().join(f));
    let (ok, again, err) = lab_printing(&[
        "layout",
        copy.path().to_str().unwrap(),
        scenarios[0].to_str().unwrap(),
        scenarios[1].to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    // The same linker's layout as before the line was applied, and the crate's own that far
    // above it as the author's build has it.
    let linker_again = number_after(&again, "linker's layout: heap base ");
    assert_eq!(
        linker_again,
        number_after(&out, "linker's layout: heap base "),
        "{again}"
    );
    assert_eq!(
        number_after(&again, "the crate's layout: heap base ") - linker_again,
        u64::from(base_set - base_as_found),
        "{again}"
    );
    assert!(
        again.contains(&format!(
            "`--global-base={global_base}` in its cargo config"
        )),
        "{again}"
    );
    assert!(again.contains("nothing further to apply"), "{again}");
    assert!(!again.contains("[target.wasm32v1-none]"), "{again}");
}

/// Each mistake an author can make with `lab layout` is named with what to do, before any build.
#[test]
fn layout_mistakes_are_named() {
    let guestbook = "../contracts/examples/guestbook";
    let scenario = "../contracts/examples/guestbook/guestbook.json";
    for (args, says) in [
        (
            vec![guestbook, scenario, "--variant", "nope"],
            "unknown variant `nope`; known variants:",
        ),
        (
            vec![guestbook, scenario, "--variant", "pr4853"],
            "`pr4853` is a reproduction, not an allocator a program links",
        ),
        (
            vec![guestbook, scenario, "--offset", "100"],
            "--offset 100: a layout moves the statics by a multiple of 16 bytes",
        ),
        (
            vec![guestbook, scenario, "--offset", "-16"],
            "-16: a layout moves the statics up from the linker's layout, never below it",
        ),
        (
            vec![guestbook, scenario, "--offset", "0"],
            "--offset 0 is the linker's layout itself: there is nothing to move or compare",
        ),
        (
            vec![
                guestbook,
                scenario,
                "../contracts/examples/guestbook/missing.json",
            ],
            "cannot read the scenario file ../contracts/examples/guestbook/missing.json",
        ),
        // relay has no scenario file beside it: one must be given.
        (
            vec!["../contracts/examples/relay"],
            "relay/relay.json: the layout is chosen from one run of the program, so give a scenario file",
        ),
    ] {
        let (ok, err) = lab(&[&["layout"], args.as_slice()].concat());
        assert!(!ok && err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("building "),
            "{args:?} built before refusing: {err}"
        );
    }
}
