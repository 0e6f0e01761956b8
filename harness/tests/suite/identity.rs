//! What the lab measures is the program the author deploys, and every input that shapes it
//! counts (issue 73, items 1 and 2).
//!
//! A copy of the guestbook example that compiles in a JSON file and a hidden file: measured into
//! one `--out`, then each input edited in turn, and a cargo config added, each refused before
//! anything is built, naming the input, with the directory unchanged; put back, the same
//! program is taken again. (That a crate's own rustflags reach the lab's builds is held in
//! `layout.rs`, on the copy it gives `lab layout`'s line.) And two crates of one name, the copy
//! and the example, each build their own Wasm through the build directory every outside
//! program shares.

use crate::cli::{examples_turn, lab};
use crate::one_program::snapshot;
use galloc_lab::build::artifact::{build, BuildRequest};
use galloc_lab::build::external::Program;
use galloc_lab::build::workspace::Workspace;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A copy of the guestbook example in a temporary directory, compiling in `data.json` and
/// `.salt`; its cargo target directory under the lab's `target/` removed when the test ends.
struct Copy {
    dir: tempfile::TempDir,
    target: PathBuf,
}

impl Copy {
    fn new() -> Copy {
        let example = root().join("contracts/examples/guestbook");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        for file in ["Cargo.toml", "Cargo.lock", "src/lib.rs", "guestbook.json"] {
            std::fs::copy(example.join(file), dir.path().join(file)).unwrap();
        }
        let mut lib = std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap();
        lib.push_str(
            "\n/// Compiled-in data, as a program's constants often are.\n\
             #[no_mangle]\n\
             pub static GREETING: &str = include_str!(\"../data.json\");\n\
             #[no_mangle]\n\
             pub static SALT: &[u8] = include_bytes!(\"../.salt\");\n",
        );
        std::fs::write(dir.path().join("src/lib.rs"), lib).unwrap();
        std::fs::write(dir.path().join("data.json"), "{\"greeting\": \"hello\"}\n").unwrap();
        std::fs::write(dir.path().join(".salt"), "pepper\n").unwrap();
        let key = Program::at(dir.path()).unwrap().key;
        let target = root().join("target/variants/external").join(key);
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

/// `lab measure --program COPY --scenario S` on the fuel meter at the linker's layout into
/// `out`: whether it succeeded, and its standard error.
fn measure(copy: &Copy, scenario: &Path, out: &Path) -> (bool, String) {
    measure_on(copy, scenario, "wasmtime", Some(out))
}

/// The same on `backend`, into `out` or, without one, the directory the lab chooses.
fn measure_on(copy: &Copy, scenario: &Path, backend: &str, out: Option<&Path>) -> (bool, String) {
    let mut args = vec![
        "measure",
        "--quiet",
        "--program",
        copy.path().to_str().unwrap(),
        "--scenario",
        scenario.to_str().unwrap(),
        "--variants",
        "shipping",
        "--backends",
        backend,
        "--layouts",
        "1",
    ];
    if let Some(out) = out {
        args.extend(["--out", out.to_str().unwrap()]);
    }
    lab(&args)
}

/// The guestbook scenario cut to its first 6 messages, as `dir/gb.json`.
fn scenario(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join("contracts/examples/guestbook/guestbook.json"))
        .unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["messages"].as_array_mut().unwrap().truncate(6);
    let path = dir.join("gb.json");
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    path
}

#[test]
fn a_program_is_every_input_its_build_reads_and_two_never_merge() {
    let _turn = examples_turn();
    let copy = Copy::new();
    let scratch = tempfile::tempdir().unwrap();
    // Inside the crate, where an author may well keep them: the results are not an input of
    // its build (hashing the crate's every file made each later run "sources changed").
    let out = copy.path().join("lab-results");
    let gb = scenario(scratch.path());
    let (ok, err) = measure(&copy, &gb, &out);
    assert!(ok, "{err}");
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("metadata.json")).unwrap()).unwrap();
    let inputs = meta["program"]["inputs"]
        .as_object()
        .expect("inputs recorded");
    let dir = copy.path().canonicalize().unwrap();
    for read in [
        "data.json",
        ".salt",
        "src/lib.rs",
        "Cargo.toml",
        "Cargo.lock",
    ] {
        let path = dir.join(read).display().to_string();
        assert!(inputs.contains_key(&path), "{path} not among {inputs:?}");
    }
    assert!(inputs.contains_key(galloc_lab::build::external::TOOLCHAIN_INPUT));
    // The scenario is what the program is sent, not what it is.
    assert!(!inputs.keys().any(|k| k.ends_with("gb.json")), "{inputs:?}");
    let before = snapshot(&out);

    // Each input edited in turn: refused before any build, naming it; nothing written.
    let config = copy.path().join(".cargo/config.toml");
    // What the refusal says, the edit, and how to put it back.
    type Edit<'a> = (&'a str, &'a dyn Fn(), &'a dyn Fn());
    let edits: [Edit; 3] = [
        (
            "data.json changed",
            &|| std::fs::write(copy.path().join("data.json"), "{\"greeting\": \"bye\"}\n").unwrap(),
            &|| {
                std::fs::write(copy.path().join("data.json"), "{\"greeting\": \"hello\"}\n")
                    .unwrap()
            },
        ),
        (
            ".salt changed",
            &|| std::fs::write(copy.path().join(".salt"), "salt\n").unwrap(),
            &|| std::fs::write(copy.path().join(".salt"), "pepper\n").unwrap(),
        ),
        (
            ".cargo/config.toml is read now",
            &|| {
                std::fs::create_dir_all(config.parent().unwrap()).unwrap();
                std::fs::write(&config, "[profile.wasm]\noverflow-checks = true\n").unwrap();
            },
            &|| std::fs::remove_dir_all(config.parent().unwrap()).unwrap(),
        ),
    ];
    for (says, edit, undo) in edits {
        edit();
        let started = std::time::Instant::now();
        let (ok, err) = measure(&copy, &gb, &out);
        assert!(!ok, "{says}: a changed program was added to the results");
        assert!(
            err.contains("whose build inputs have changed since")
                && err.contains(says)
                && err.contains("Nothing was built"),
            "{says}: {err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
        assert!(snapshot(&out) == before, "{says}: a refused run wrote");
        undo();
    }
    // As it was: the same program, measured again into the same directory.
    let (ok, err) = measure(&copy, &gb, &out);
    assert!(ok, "{err}");

    // The directory the lab chooses itself (no `--out`) is replaced when the program changed,
    // every backend's rows with it: the meter's rows of the old program, left beside gtest's
    // of the new, made the run fail after it.
    let default = |backend: &str| measure_on(&copy, &gb, backend, None);
    let (ok, err) = default("wasmtime");
    assert!(ok, "{err}");
    std::fs::write(
        copy.path().join("data.json"),
        "{\"greeting\": \"changed\"}\n",
    )
    .unwrap();
    let (ok, err) = default("gtest");
    assert!(
        ok && err.contains("so they are replaced, not added to"),
        "{err}"
    );
    let program = Program::at(copy.path()).unwrap();
    let dir = root()
        .join("target/lab/programs")
        .join(&program.key)
        .join("gb");
    let backends = std::fs::read_to_string(dir.join("measured.csv")).unwrap();
    // (The commit removes files; an emptied folder may stay.)
    let meter_rows_left = dir.join("wasmtime/totals.csv").exists();
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
    assert!(
        !backends.contains("wasmtime") && backends.contains("gtest"),
        "{backends}"
    );
    assert!(!meter_rows_left, "the old program's meter rows are left");
}

/// The copy (its code changed: it compiles in two files) and the guestbook example itself, one
/// package name at two paths, built one after the other through the build directory every
/// outside program shares: the copy gets its own Wasm, and the example built again after it is
/// its first build byte for byte (cargo found its own units, not the copy's).
#[test]
fn two_crates_of_one_name_each_build_their_own_wasm_in_the_shared_build_directory() {
    let _turn = examples_turn();
    let copy = Copy::new();
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).expect("workspace");
    let variant = galloc_variants::find("shipping").expect("shipping");
    let example = Program::at(&root().join("contracts/examples/guestbook")).unwrap();
    let theirs = Program::at(copy.path()).unwrap();
    assert_eq!(example.package, theirs.package);
    let wasm = |program: &Program| {
        build(
            &ws,
            BuildRequest {
                external: Some(program),
                ..BuildRequest::deployed(&program.package, variant)
            },
        )
        .unwrap()
        .bytes
    };
    let first = wasm(&example);
    let copied = wasm(&theirs);
    assert_ne!(first, copied, "the copy was given the example's Wasm");
    let copy_has = |bytes: &[u8]| bytes.windows(7).any(|w| w == b"pepper\n");
    assert!(copy_has(&copied) && !copy_has(&first));
    assert!(
        wasm(&example) == first,
        "the example was given the copy's Wasm"
    );
    assert!(
        wasm(&theirs) == copied,
        "the copy was given the example's Wasm"
    );
}
