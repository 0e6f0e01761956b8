//! `lab layout` on a crate outside the lab: the setting it prints is applied the way its author
//! would apply it (the `.cargo/config.toml` lines it prints, in a copy of the crate, built with
//! cargo as the author builds it, outside the lab), and the built Wasm's statics start where the
//! line says and its heap base moves by exactly the bytes printed.

use super::cli::{examples_turn, lab_printing};
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

#[test]
fn the_setting_lab_layout_prints_moves_the_authors_heap_base_as_it_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let example = root.join("contracts/examples/guestbook");
    let (ok, out, err) = {
        let _turn = examples_turn();
        lab_printing(&[
            "layout",
            "../contracts/examples/guestbook",
            "../contracts/examples/guestbook/guestbook.json",
        ])
    };
    assert!(ok, "{err}");
    // It chose a layout (guestbook's heap falls where a move pays on its scenario), says by
    // how much every static moved and where the heap base went, and what was measured.
    let moved = number_after(&out, "every static ");
    let before = number_after(&out, "linker's layout: heap base ");
    let after = number_after(&out, "bytes higher; heap base ");
    assert_eq!(after - before, moved, "{out}");
    assert!(
        out.contains("measured on ") && out.contains("(gtest): "),
        "{out}"
    );
    assert!(
        out.contains("judged on workloads it did not choose from"),
        "{out}"
    );
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
}
