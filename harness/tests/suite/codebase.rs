//! The code's layout keeps its own rules: no module remapped with `#[path]` (a module's name is
//! its file's), and no file over 600 lines without its first comment saying why.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Every Rust file the lab's own crates hold (not `target/`, not what the lab writes).
fn sources() -> Vec<PathBuf> {
    lab_files(|name| name.ends_with(".rs"))
}

/// Every file of the lab's own crates whose name `keep` accepts (not `target/`, not hidden
/// directories), sorted.
pub fn lab_files(keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = [
        "allocator",
        "variants",
        "harness",
        "replay",
        "fuzz",
        "contracts",
    ]
    .iter()
    .map(|d| root().join(d))
    .collect();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    dirs.push(path);
                }
            } else if keep(&name) {
                out.push(path);
            }
        }
    }
    out.sort();
    assert!(out.len() > 50, "found only {} files", out.len());
    out
}

#[test]
fn no_module_is_remapped_with_a_path_attribute() {
    for path in sources() {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("#[path")),
            "{} remaps a module with #[path]: name the file after the module",
            path.display()
        );
    }
}

#[test]
fn a_file_over_600_lines_says_why_in_its_first_comment() {
    let mut long = Vec::new();
    for path in sources() {
        let text = std::fs::read_to_string(&path).unwrap();
        if text.lines().count() <= 600 {
            continue;
        }
        let first_comment: String = text
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            first_comment.contains("Over 600 lines"),
            "{} has {} lines and its first comment does not say why (\"Over 600 lines: ...\"); \
             split it by what its parts do, or say why it stays whole",
            path.display(),
            text.lines().count()
        );
        long.push(path);
    }
    assert!(
        long.len() <= 6,
        "{} files over 600 lines: {long:?}",
        long.len()
    );
}

/// Every cargo the lab starts runs under a supervisor in a group of its own (build/process.rs),
/// so no build outlives the lab: each file's `cargo_command()`s are handed to
/// `process::output` or `process::status`, never run with `Command`'s own `status()` or
/// `output()` (as `lab replay`'s native replayer and the node backend's `lab-node` were).
#[test]
fn every_cargo_the_lab_starts_is_supervised() {
    let src = root().join("harness/src");
    for path in sources().into_iter().filter(|p| p.starts_with(&src)) {
        let text = std::fs::read_to_string(&path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let started = code.matches("cargo_command()").count()
            - usize::from(code.contains("pub fn cargo_command()"));
        let supervised =
            code.matches("process::output(").count() + code.matches("process::status(").count();
        assert!(
            started <= supervised,
            "{}: {started} cargo commands, {supervised} run through build::process",
            path.display()
        );
    }
}
