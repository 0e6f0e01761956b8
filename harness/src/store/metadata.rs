//! Writing and checking `results/metadata.json` ([`crate::results::metadata`]): what produced
//! the results — toolchain, crate versions, tools, the hashes of the very artifacts measured —
//! so a reader can tell whether two result sets are comparable, and whether a file was edited.
//!
//! The date is the day the results last *changed*: a rerun that reproduces them keeps the
//! file byte-identical, and a copy re-rendered elsewhere keeps it too (only the command that
//! regenerates it differs).

pub use crate::results::metadata::{read, regenerated_by, Metadata, ProgramSource, FILE};
use crate::results::{read_csv, ArtifactRow};
use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The crates whose versions decide the figures.
const CRATES: [&str; 12] = [
    "gtest",
    "gstd",
    "sails-rs",
    "foldhash",
    "gear-core",
    "gear-wasm-optimizer",
    "dlmalloc",
    "gear-dlmalloc",
    "wasmtime",
    "parity-scale-codec",
    "plotters",
    "zstd",
];

/// Writes `dir/metadata.json` for the results in `dir`, which `recipe` regenerates (a `just`
/// recipe, or the `lab measure` command that wrote them); `root` is the workspace.
pub fn write_for(
    root: &Path,
    dir: &Path,
    recipe: &str,
    program: Option<&ProgramSource>,
) -> Result<()> {
    let mut meta = Metadata {
        program: program.cloned(),
        regenerate_with: recipe.into(),
        date: String::new(),
        results_sha256: results_hash(dir)?,
        files: file_hashes(dir)?,
        rustc: rustc(),
        toolchain: crate::build::toolchain::pinned().to_owned(),
        wasm_opt: tool_version("wasm-opt", "--version"),
        crates: locked_versions(root)?,
        artifacts: artifacts(dir)?,
    };
    let path = dir.join(FILE);
    let previous: Option<Metadata> = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    // What regenerates the directory (and the program it measured) is not the results: a copy
    // re-rendered elsewhere names another command, yet its results did not change that day.
    meta.date = match previous {
        Some(p)
            if Metadata {
                date: p.date.clone(),
                regenerate_with: p.regenerate_with.clone(),
                program: p.program.clone(),
                ..meta.clone()
            } == p =>
        {
            p.date
        }
        _ => time::OffsetDateTime::now_utc().date().to_string(),
    };
    let mut json = serde_json::to_string_pretty(&meta)?;
    json.push('\n');
    crate::results::write_file(&path, json.as_bytes())
}

/// A results directory that records another program than the one a command would write into
/// it ([`check_program`]); its message is one line, naming both and what to do.
#[derive(Debug)]
pub struct OtherProgram {
    dir: std::path::PathBuf,
    /// What the directory holds, and what the command measures (`None`: the lab's own cases).
    holds: Option<ProgramSource>,
    measures: Option<ProgramSource>,
    /// Whether it was found after the run's builds (under the lock, before writing), so that
    /// the message says what was not done.
    built: bool,
}

impl OtherProgram {
    /// Whether it is the same crate, changed since (not another crate, nor the lab's cases).
    pub fn same_crate(&self) -> bool {
        matches!((&self.holds, &self.measures), (Some(h), Some(m)) if h.crate_dir == m.crate_dir)
    }
}

impl std::fmt::Display for OtherProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = |p: &Option<ProgramSource>| match p {
            Some(p) => format!("the program in {}", p.crate_dir),
            None => "the lab's own cases".to_owned(),
        };
        let dir = self.dir.display();
        if self.same_crate() {
            let which = match (&self.holds, &self.measures) {
                (Some(h), Some(m)) => match h.changed_input(m) {
                    Some(input) => format!(" ({input})"),
                    None if h.inputs.is_empty() => {
                        " (they were recorded by an earlier lab, which did not keep what its \
                         build read)"
                            .to_owned()
                    }
                    None => String::new(),
                },
                _ => String::new(),
            };
            write!(
                f,
                "{dir} holds results of {}, whose build inputs have changed since{which}, and a \
                 results directory holds one program, so its rows would mix two. {}: give \
                 another --out, or remove {dir} to measure it afresh",
                what(&self.holds),
                if self.built {
                    "Nothing was written"
                } else {
                    "Nothing was built"
                }
            )
        } else {
            write!(
                f,
                "{dir} holds results of {}, not of {}, and a results directory holds one \
                 program. {}: give another --out",
                what(&self.holds),
                what(&self.measures),
                if self.built {
                    "Nothing was written"
                } else {
                    "Nothing was built"
                }
            )
        }
    }
}

impl std::error::Error for OtherProgram {}

/// Checks that the results in `dir` (if any) are of `measures`: the outside program a command
/// writes there, or the lab's own cases (`None`); the same program is the same crate directory
/// with the same sources.
pub fn check_program(
    dir: &Path,
    measures: Option<&ProgramSource>,
    built: bool,
) -> Result<(), Box<OtherProgram>> {
    let Some(recorded) = read(dir) else {
        return Ok(());
    };
    let same = match (&recorded.program, measures) {
        (None, None) => true,
        (Some(holds), Some(measures)) => holds.same_program(measures),
        _ => false,
    };
    if same {
        return Ok(());
    }
    Err(Box::new(OtherProgram {
        dir: dir.to_path_buf(),
        holds: recorded.program,
        measures: measures.cloned(),
        built,
    }))
}

/// What the file records beyond the results themselves (toolchain, `wasm-opt`, crate
/// versions), as one string: part of what a run's files are made from.
pub fn sources(root: &Path) -> Result<String> {
    Ok(format!(
        "{:?}",
        (
            rustc(),
            crate::build::toolchain::pinned(),
            tool_version("wasm-opt", "--version"),
            locked_versions(root)?,
        )
    ))
}

/// The results files in `dir` (every `.csv` and `.zst`; not the report, the charts or this
/// file), as paths relative to it.
fn results_files(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    Ok(crate::store::staging::files(dir)?
        .into_iter()
        .filter(|rel| rel.extension().is_some_and(|e| e == "csv" || e == "zst"))
        .collect())
}

fn results_hash(dir: &Path) -> Result<String> {
    let mut h = Sha256::new();
    for rel in results_files(dir)? {
        let f = dir.join(&rel);
        h.update(rel.to_string_lossy().as_bytes());
        h.update(std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?);
    }
    Ok(crate::results::hex(&h.finalize()))
}

fn file_hashes(dir: &Path) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for rel in results_files(dir)? {
        let f = dir.join(&rel);
        let bytes = std::fs::read(&f).with_context(|| format!("cannot read {}", f.display()))?;
        out.insert(
            rel.to_string_lossy().into_owned(),
            crate::results::hex(&Sha256::digest(&bytes)),
        );
    }
    Ok(out)
}

/// Checks that every results file in `dir` is exactly as the command that last wrote the
/// directory left it (the hashes in its `metadata.json`): none edited, deleted or added. An
/// error names each file that differs and how to get it back.
pub fn verify(dir: &Path) -> Result<()> {
    let path = dir.join(FILE);
    let text = std::fs::read(&path).map_err(|_| {
        if !dir.join(crate::results::MANIFEST).exists() {
            // Not results the lab wrote at all: say that, not what is missing from them.
            return anyhow::anyhow!("{}", crate::results::restore_hint(dir));
        }
        anyhow::anyhow!(
            "{} is missing: it records every results file's SHA-256, so a file changed since \
             the lab wrote it cannot be told from one it wrote; {}",
            path.display(),
            crate::results::restore_hint(&path)
        )
    })?;
    let meta: Metadata = serde_json::from_slice(&text).map_err(|e| {
        anyhow::anyhow!(
            "{} is not the lab's metadata ({e}); {}",
            path.display(),
            crate::results::restore_hint(&path)
        )
    })?;
    if meta.files.is_empty() {
        // Written before the lab recorded each file: the hash over all of them still holds.
        if results_hash(dir)? != meta.results_sha256 {
            bail!(
                "a results file in {} differs from what the lab wrote (results_sha256 in {}); \
                 {}",
                dir.display(),
                path.display(),
                crate::results::restore_hint(dir)
            );
        }
        return Ok(());
    }
    let now = file_hashes(dir)?;
    let mut wrong = Vec::new();
    for (rel, sha) in &meta.files {
        match now.get(rel) {
            None => wrong.push((rel, "deleted")),
            Some(s) if s != sha => wrong.push((rel, "changed since the lab wrote it")),
            Some(_) => {}
        }
    }
    for rel in now.keys().filter(|r| !meta.files.contains_key(*r)) {
        wrong.push((rel, "not written by the lab (not in its metadata)"));
    }
    if wrong.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = wrong
        .iter()
        .take(12)
        .map(|(rel, what)| format!("{}: {what}", dir.join(rel).display()))
        .collect();
    // Files the lab wrote are restored (or regenerated); files it did not are removed.
    let (added, restore): (Vec<_>, Vec<_>) = wrong
        .iter()
        .map(|(rel, _)| (Path::new(rel.as_str()), !meta.files.contains_key(*rel)))
        .partition(|(_, added)| *added);
    let mut fix = Vec::new();
    if !added.is_empty() {
        fix.push(format!(
            "remove {}",
            added
                .iter()
                .map(|(rel, _)| dir.join(rel).display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !restore.is_empty() {
        let rels: Vec<&Path> = restore.iter().map(|(rel, _)| *rel).collect();
        fix.push(crate::results::restore_files_hint(dir, &rels));
    }
    bail!(
        "{} from the hashes recorded in {} when they were written:\n  {}\nthe \
         verdicts would be read from them; {}",
        match wrong.len() {
            1 => "1 results file differs".to_owned(),
            n => format!("{n} results files differ"),
        },
        path.display(),
        lines.join("\n  "),
        fix.join("; ")
    )
}

fn tool_version(tool: &str, flag: &str) -> String {
    Command::new(tool)
        .arg(flag)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| format!("{tool} not found"))
}

/// The compiler of every artifact the lab builds: the pinned toolchain's `rustc --version`,
/// asked as the builds ask it ([`crate::build::toolchain`]), never the one the current
/// directory would pick.
fn rustc() -> String {
    crate::build::toolchain::rustc()
        .map(str::to_owned)
        .unwrap_or_else(|_| "rustc not found".into())
}

/// The locked version of each crate in [`CRATES`] (all versions, if several are locked).
fn locked_versions(root: &Path) -> Result<BTreeMap<String, String>> {
    let path = root.join("Cargo.lock");
    let lock: toml::Table = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .parse()
        .with_context(|| format!("{} is not TOML", path.display()))?;
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in lock
        .get("package")
        .and_then(|p| p.as_array())
        .into_iter()
        .flatten()
    {
        let (Some(name), Some(version)) = (
            p.get("name").and_then(|v| v.as_str()),
            p.get("version").and_then(|v| v.as_str()),
        ) else {
            continue;
        };
        if CRATES.contains(&name) {
            out.entry(name.into()).or_default().push(version.into());
        }
    }
    Ok(out.into_iter().map(|(k, v)| (k, v.join(", "))).collect())
}

fn artifacts(dir: &Path) -> Result<BTreeMap<String, String>> {
    let path = dir.join("artifacts.csv");
    if !path.exists() {
        return Ok(BTreeMap::new());
    }
    Ok(read_csv::<ArtifactRow>(&path)?
        .into_iter()
        .map(|a| (format!("{}/{}/{}", a.package, a.variant, a.build), a.sha256))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The date is the day the results last changed: written again with another command (a
    /// copy of the results re-rendered elsewhere, on another day) it stays; with a results
    /// file changed it moves to today.
    #[test]
    fn the_date_moves_with_the_results_not_with_the_command() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("totals.csv"), "a\n1\n").unwrap();
        write_for(&root, dir.path(), "just compare", None).unwrap();
        let path = dir.path().join(FILE);
        let mut meta = read(dir.path()).unwrap();
        meta.date = "2000-01-01".into();
        std::fs::write(&path, serde_json::to_string_pretty(&meta).unwrap()).unwrap();

        let program = ProgramSource {
            crate_dir: "/p".into(),
            sources_sha256: "ab".into(),
            inputs: [("/p/src/lib.rs".to_owned(), "cd".to_owned())].into(),
            scenarios: [("s".to_owned(), "/p/s.json".to_owned())].into(),
        };
        write_for(
            &root,
            dir.path(),
            "lab measure … --out /elsewhere",
            Some(&program),
        )
        .unwrap();
        let again = read(dir.path()).unwrap();
        assert_eq!(again.date, "2000-01-01");
        assert_eq!(again.regenerate_with, "lab measure … --out /elsewhere");
        assert_eq!(again.program, Some(program));

        std::fs::write(dir.path().join("totals.csv"), "a\n2\n").unwrap();
        write_for(&root, dir.path(), "just compare", None).unwrap();
        assert_ne!(read(dir.path()).unwrap().date, "2000-01-01");
    }
}
