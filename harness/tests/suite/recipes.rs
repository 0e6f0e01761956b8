//! The justfile's recipes hand every argument to the lab as one argument, whatever it holds:
//! a path with a space stays one path, and `$(…)` is a character string, never a command.
//!
//! Each recipe runs as `just` runs it (its own bash line, its `setup` dependency), with a
//! `cargo` first on `PATH` that only records the arguments it was given, so no build starts.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory whose `cargo` writes each argument it gets, NUL-terminated, to `args`, and
/// answers the registry's `variants ids` with `shipping` (as `just _variants` expects).
struct FakeCargo {
    dir: tempfile::TempDir,
}

impl FakeCargo {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let cargo = dir.path().join("cargo");
        std::fs::write(
            &cargo,
            "#!/usr/bin/env bash\n\
             for a in \"$@\"; do printf '%s\\0' \"$a\"; done >> \"$FAKE_CARGO_ARGS\"\n\
             printf '\\n' >> \"$FAKE_CARGO_ARGS\"\n\
             case \" $* \" in *' ids '*) echo shipping ;; esac\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeCargo { dir }
    }

    /// `just ARGS` in the lab's root: whether it succeeded, its standard error, and the
    /// argument lists every `cargo` call was given, in order.
    fn just(&self, args: &[&str]) -> (bool, String, Vec<Vec<String>>) {
        let log = self.dir.path().join("args");
        let _ = std::fs::remove_file(&log);
        let path = format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new(just_binary())
            .args(args)
            .current_dir(root())
            .env("PATH", path)
            .env("FAKE_CARGO_ARGS", &log)
            .output()
            .expect("run just");
        let calls = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|line| {
                line.split('\0')
                    .filter(|a| !a.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .collect();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            calls,
        )
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `just` as CI has it (`.ci/run` installs it): the recipes are what this tests.
fn just_binary() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("just"))
            .find(|p| p.is_file())
    });
    found.expect("`just` is not on PATH: `cargo install just --locked` (CI's .ci/run does)")
}

/// The arguments after `--` of the first call that ran the lab (not the registry's).
fn lab_args(calls: &[Vec<String>]) -> Vec<String> {
    let lab = calls
        .iter()
        .find(|c| c.iter().any(|a| a == "galloc-lab"))
        .unwrap_or_else(|| panic!("no call of the lab in {calls:?}"));
    let at = lab.iter().position(|a| a == "--").expect("a `--`");
    lab[at + 1..].to_vec()
}

#[test]
fn every_recipe_argument_reaches_the_lab_as_one_argument_and_never_runs() {
    let cargo = FakeCargo::new();
    let scratch = tempfile::tempdir().unwrap();
    let touched = scratch.path().join("touched");
    let evil = format!(
        "{}/with space/x$(touch {})",
        scratch.path().display(),
        touched.display()
    );
    let scenario = format!("{}/a b.json", scratch.path().display());

    let (ok, err, calls) = cargo.just(&["program", &evil, &scenario, "lab", "gtest"]);
    assert!(ok, "{err}");
    assert_eq!(
        lab_args(&calls),
        [
            "measure",
            "--program",
            &evil,
            "--scenario",
            &scenario,
            "--variants",
            "lab",
            "--backends",
            "gtest"
        ]
    );
    let (ok, err, calls) = cargo.just(&["pick", &evil, &scenario, "lab,talc"]);
    assert!(ok, "{err}");
    assert_eq!(
        lab_args(&calls),
        ["pick", &evil, &scenario, "--variants", "lab,talc"]
    );
    // `layout` takes any number of scenarios and the lab's own flags, each passed on as one
    // argument however many there are.
    let (ok, err, calls) = cargo.just(&["layout", &evil, &scenario, &evil, "--variant", "lab"]);
    assert!(ok, "{err}");
    assert_eq!(
        lab_args(&calls),
        ["layout", &evil, &scenario, &evil, "--variant", "lab"]
    );
    let (ok, err, calls) = cargo.just(&["layout", &evil]);
    assert!(ok, "{err}");
    assert_eq!(lab_args(&calls), ["layout", &evil]);
    let (ok, err, calls) = cargo.just(&["replay", "all", "default", &evil]);
    assert!(ok, "{err}");
    assert_eq!(
        lab_args(&calls),
        [
            "replay",
            "--variants",
            "all",
            "--cases",
            "default",
            "--trace",
            &evil
        ]
    );
    let (ok, err, calls) = cargo.just(&["measure", "all", &evil, "gtest"]);
    assert!(ok, "{err}");
    assert_eq!(
        lab_args(&calls),
        [
            "measure",
            "--backends",
            "gtest",
            "--variants",
            "all",
            "--cases",
            &evil
        ]
    );
    let (ok, err, calls) = cargo.just(&["heap-skip", &evil, "lab"]);
    assert!(ok, "{err}");
    assert_eq!(
        lab_args(&calls),
        ["heap-skip", "--cases", &evil, "--variants", "lab"]
    );

    let (ok, err, calls) = cargo.just(&["layout-model", &evil]);
    assert!(ok, "{err}");
    let model = calls
        .iter()
        .find(|c| c.iter().any(|a| a == "layout-model"))
        .expect("a call of lab layout-model");
    assert_eq!(
        lab_args(std::slice::from_ref(model)),
        [
            "layout-model",
            "--heap",
            &evil,
            "--second",
            "target/lab/layout-second"
        ]
    );

    // The fuzz recipe's arguments become paths, features and arithmetic: each is checked
    // before any of that, and refused with what is wrong.
    let (ok, err, _) = cargo.just(&["fuzz", &evil, "3"]);
    assert!(
        !ok && err.contains("no variant") && err.contains("registry"),
        "{err}"
    );
    let (ok, err, _) = cargo.just(&["fuzz", "shipping", &evil]);
    assert!(
        !ok && err.contains("SECONDS must be a whole number"),
        "{err}"
    );

    assert!(
        !touched.exists(),
        "an argument was run as shell: {} was made",
        touched.display()
    );
}

/// `just check`'s tolerance is refused before anything is measured (it measured everything
/// first, then refused `-1`).
#[test]
fn the_gate_refuses_its_tolerance_before_measuring() {
    let cargo = FakeCargo::new();
    for bad in ["-1", "abc", "1;touch x", ""] {
        let (ok, err, calls) = cargo.just(&["check", "all", "default", "wasmtime", bad]);
        assert!(!ok && err.contains("is not a tolerance"), "{bad}: {err}");
        assert!(
            !calls.iter().any(|c| c.iter().any(|a| a == "galloc-lab")),
            "{bad}: the lab ran: {calls:?}"
        );
    }
    let (ok, err, calls) = cargo.just(&["check", "all", "default", "wasmtime", "0.5"]);
    assert!(ok, "{err}");
    assert_eq!(lab_args(&calls)[..2], ["measure", "--quiet"]);
}
