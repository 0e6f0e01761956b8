//! `metadata.json`, the description a results directory carries: what regenerates it and what
//! produced it (toolchain, crate versions, the hashes of its files and of the artifacts
//! measured). The store writes and checks it ([`crate::store::metadata`]); the report and the
//! hints read it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// File name under `results/`.
pub const FILE: &str = "metadata.json";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// The recipe that regenerates these results.
    pub regenerate_with: String,
    /// UTC day the results last changed (YYYY-MM-DD).
    pub date: String,
    /// SHA-256 over every results file (name and bytes) except this one and the report.
    pub results_sha256: String,
    /// Each of those files (path under the results directory) -> its SHA-256: what `report`,
    /// `check`, `verdict` and `pick` hold the files to before they read them ([`verify`]), so
    /// a stray edit is named instead of changing a verdict. Empty in files written before the
    /// lab recorded them (then only `results_sha256` is checked).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// `rustc --version`, and the channel `rust-toolchain.toml` pins.
    pub rustc: String,
    pub toolchain: String,
    /// `wasm-opt --version` (binaryen's; the post-processing's last step).
    pub wasm_opt: String,
    /// Versions from `Cargo.lock`.
    pub crates: BTreeMap<String, String>,
    /// `package/variant/build` -> SHA-256 of the `.opt.wasm` measured.
    pub artifacts: BTreeMap<String, String>,
    /// For results of a program outside the lab (`lab measure --program`, `lab pick`): the
    /// program and its scenario, which its report names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramSource>,
}

/// A program outside the lab as its results record it: which crate, in which state, and the
/// scenario files it was sent. A results directory holds one program: every write into it
/// compares this with the program it measures ([`ProgramSource::same_program`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramSource {
    /// The crate's directory (absolute).
    pub crate_dir: String,
    /// SHA-256 over every input its build read ([`Self::inputs`],
    /// [`crate::build::external::identity`]): the same directory with any input changed is
    /// another program. Empty in files written before the lab recorded it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sources_sha256: String,
    /// Each input of its build (path, or `rustc -vV` for the toolchain) and its SHA-256
    /// ([`crate::build::external::Program::inputs`]): what a later run hashes again, before it
    /// builds anything, to tell whether the program is still the one measured, and names when
    /// it is not. Empty in files written before the lab recorded it (then the program is taken
    /// to have changed: what it read is not known).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, String>,
    /// Each scenario file (absolute), by the case it names (its file stem): a directory may
    /// hold several scenarios of its program, side by side.
    #[serde(default)]
    pub scenarios: BTreeMap<String, String>,
}

impl ProgramSource {
    /// Whether `self` and `other` are one program: the same crate directory, and the same
    /// sources where both record them.
    pub fn same_program(&self, other: &ProgramSource) -> bool {
        self.crate_dir == other.crate_dir && self.sources_sha256 == other.sources_sha256
    }

    /// The first input (in path order) that differs between `self` and `other`: changed,
    /// added or gone; `None` when their inputs are the same, or either records none.
    pub fn changed_input(&self, other: &ProgramSource) -> Option<String> {
        if self.inputs.is_empty() || other.inputs.is_empty() {
            return None;
        }
        let keys: std::collections::BTreeSet<&String> =
            self.inputs.keys().chain(other.inputs.keys()).collect();
        keys.into_iter()
            .find_map(|k| match (self.inputs.get(k), other.inputs.get(k)) {
                (Some(a), Some(b)) if a == b => None,
                (Some(_), Some(_)) => Some(format!("{k} changed")),
                (Some(_), None) => Some(format!("{k} is no longer read")),
                (None, _) => Some(format!("{k} is read now")),
            })
    }

    /// The scenario file of `case`, as recorded.
    pub fn scenario(&self, case: &str) -> Option<&str> {
        self.scenarios.get(case).map(String::as_str)
    }

    /// `--program CRATE --scenario FILE…` for `lab measure`, shell-quoted: every scenario whose
    /// case `keep` accepts.
    pub fn measure_args(&self, keep: impl Fn(&str) -> bool) -> String {
        let mut args = format!("--program {}", quote(&self.crate_dir));
        for (_, file) in self.scenarios.iter().filter(|(case, _)| keep(case)) {
            args.push_str(&format!(" --scenario {}", quote(file)));
        }
        args
    }
}

/// What regenerates the results in `dir` (as the filesystem has it) of the workspace at `root`:
/// `just compare` for `results/`, `just corpus` for `results/corpus/`, `just <name>` for another
/// set directly under `results/` (a reproduction's), else `recorded` when it is a `lab measure`
/// command that writes this very directory (a copy of what one wrote elsewhere is written by
/// nothing: its command writes the original); `None` when nothing is known. The one place that
/// decides it, for the report, the metadata and the hints alike.
pub fn regenerated_by(root: Option<&Path>, dir: &Path, recorded: Option<&str>) -> Option<String> {
    if let Some(rel) = root.and_then(|r| dir.strip_prefix(r.join("results")).ok()) {
        match rel.to_str() {
            Some("") => return Some("just compare".into()),
            Some(name) if !name.contains('/') => return Some(format!("just {name}")),
            _ => {}
        }
    }
    recorded
        .filter(|r| r.starts_with("lab measure") && writes_into(r, dir))
        .map(str::to_owned)
}

/// Whether the `lab measure` `command` writes `dir`: its `--out` (the last word, [`quote`]d as
/// the command that recorded it wrote it) names `dir` as given or as the filesystem has it.
pub fn writes_into(command: &str, dir: &Path) -> bool {
    let Some((_, out)) = command.rsplit_once(" --out ") else {
        return false;
    };
    let named = |p: &Path| quote(&p.display().to_string()) == out;
    named(dir)
        || dir
            .canonicalize()
            .is_ok_and(|d| named(&d) || Path::new(out).canonicalize().is_ok_and(|o| o == d))
}

/// The metadata in `dir`, if there is a readable one.
pub fn read(dir: &Path) -> Option<Metadata> {
    serde_json::from_slice(&std::fs::read(dir.join(FILE)).ok()?).ok()
}

/// The lab's workspace root above `start`: the nearest directory holding `allocator/` and
/// `variants/` (what [`crate::build::workspace::Workspace::find`] finds).
pub fn lab_root(start: &Path) -> Option<PathBuf> {
    let start = start.canonicalize().ok()?;
    start
        .ancestors()
        .find(|dir| {
            dir.join("variants/Cargo.toml").is_file() && dir.join("allocator/Cargo.toml").is_file()
        })
        .map(Path::to_path_buf)
}

/// `arg` as one shell word: as it is when it holds nothing a shell would read, else in single
/// quotes (each `'` written `'\''`), so a command the report prints runs as printed.
pub fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-,=:+@%".contains(c));
    if plain {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::{quote, regenerated_by};

    /// A `lab measure` command regenerates the directory it writes (named as given, quoted, or
    /// as the filesystem has it) and not a copy of it elsewhere, whose hints and report would
    /// otherwise send the reader to rewrite the original.
    #[test]
    fn a_recorded_command_regenerates_its_own_out_and_no_copy() {
        let tmp = tempfile::tempdir().unwrap();
        let (original, copy) = (tmp.path().join("it's here"), tmp.path().join("copy"));
        std::fs::create_dir_all(&original).unwrap();
        std::fs::create_dir_all(&copy).unwrap();
        let command = format!(
            "lab measure --program /c --scenario /c/s.json --variants shipping --backends gtest \
             --out {}",
            quote(&original.display().to_string())
        );
        assert_eq!(
            regenerated_by(None, &original, Some(&command)).as_deref(),
            Some(command.as_str())
        );
        let through = original.join("..").join("it's here");
        assert!(regenerated_by(None, &through, Some(&command)).is_some());
        assert_eq!(regenerated_by(None, &copy, Some(&command)), None);
        assert_eq!(
            regenerated_by(None, &copy, Some("lab measure --cases nft")),
            None
        );
    }

    /// A word a shell reads as itself stays bare; any other is one single-quoted word that
    /// `sh -c` gives back unchanged, `$(…)`, spaces and quotes included.
    #[test]
    fn a_quoted_word_is_one_word_the_shell_never_runs() {
        assert_eq!(quote("/a/b-c_d.json"), "/a/b-c_d.json");
        for word in [
            "/d/with space/x",
            "x$(touch /nonexistent/f)",
            "it's",
            "",
            "a\tb",
        ] {
            let quoted = quote(word);
            let out = std::process::Command::new("sh")
                .args(["-c", &format!("printf '%s' {quoted}")])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), word, "{quoted}");
        }
    }
}
