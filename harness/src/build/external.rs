//! Any gstd program, not just the lab's: built once per variant without editing its crate,
//! and driven by a scenario file.
//!
//! **Building.** gstd depends on `galloc = "=2.0.0"` with default features, so a variant is
//! swapped in by patching crates.io's `galloc` for that one cargo run (`--config
//! patch.crates-io.galloc.path=...`) with a shim ([`super::shared::galloc_shim`]) that links, on Wasm only,
//! a manifest the lab writes per configuration under `target/lab/galloc/<config>/`: the
//! allocator's own manifest with workspace fields filled in, its sources and build script
//! referred to where they are, and the variant (plus `probe` and any extra features) as its
//! *default* features. The `wasm` profile is passed the same
//! way, from the lab's own `Cargo.toml`, so the program gets exactly the lab's codegen. The
//! patched resolution goes to a copy of the program's `Cargo.lock` under the lab's `target/`
//! ([`Program::private_lock`]): nothing in the author's crate is ever written, so a run that
//! ends any way at all leaves it exactly as found.
//!
//! **Scenarios.** A JSON file, or a text file of hex lines: [`crate::run::scenario::file`] and the
//! docs/your-program.md, "Measuring another program".

use crate::build::workspace::Workspace;
use anyhow::{bail, Context, Result};
use sha2::Digest;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The key under which [`Program::inputs`] records the toolchain.
pub const TOOLCHAIN_INPUT: &str = "rustc -vV";

/// SHA-256 over a program's inputs ([`Program::inputs`]): its identity. Two builds with any
/// input different are two programs, whose results never mix.
pub fn identity(inputs: &BTreeMap<String, String>) -> String {
    let mut h = sha2::Sha256::new();
    for (path, hash) in inputs {
        h.update(path.as_bytes());
        h.update([0]);
        h.update(hash.as_bytes());
        h.update([0]);
    }
    crate::results::hex(&h.finalize())
}

/// The files a cargo dep-info file names as its first rule's prerequisites (Makefile syntax:
/// `target: a b \` with spaces escaped `\ ` and lines continued by a trailing `\`).
pub fn dep_info_files(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\n", " ");
    let Some(line) = joined.lines().find(|l| !l.trim().is_empty()) else {
        return Vec::new();
    };
    // The target ends at the first `: ` not escaped; the target's own path may hold a colon.
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = line.chars().peekable();
    let mut in_deps = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some(' ') | Some('\\') | Some('#') | Some(':')) => {
                word.push(chars.next().expect("peeked"));
            }
            ':' if !in_deps && matches!(chars.peek(), Some(' ') | None) => {
                in_deps = true;
                word.clear();
            }
            ' ' | '\t' => {
                if in_deps && !word.is_empty() {
                    words.push(PathBuf::from(std::mem::take(&mut word)));
                }
                word.clear();
            }
            c => word.push(c),
        }
    }
    if in_deps && !word.is_empty() {
        words.push(PathBuf::from(word));
    }
    words
}

/// A gstd program outside the lab's workspace.
#[derive(Clone, Debug)]
pub struct Program {
    /// Its `Cargo.toml`.
    pub manifest: PathBuf,
    /// Its package name.
    pub package: String,
    /// The file stem of the `.wasm` cargo writes (the lib target's name).
    pub lib_name: String,
    /// `<package>-<hash of the manifest's path>`: names the program's cargo target directory
    /// and its collected artifacts. Two crates may share a package name (a copy elsewhere, a
    /// fork); keyed by name alone, cargo would find the other crate's units up to date and the
    /// lab would measure the wrong program.
    pub key: String,
}

impl Program {
    /// The program whose crate is at `path` (a directory or its `Cargo.toml`).
    pub fn at(path: &Path) -> Result<Self> {
        let manifest = if path.is_dir() {
            path.join("Cargo.toml")
        } else {
            path.to_path_buf()
        };
        let manifest = manifest.canonicalize().with_context(|| {
            format!(
                "no crate at {}: pass the directory of a gstd program's Cargo.toml",
                path.display()
            )
        })?;
        let table = read_toml(&manifest)?;
        let package = table
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(toml::Value::as_str)
            .with_context(|| format!("{} has no [package] name", manifest.display()))?
            .to_owned();
        // Its `crate-type` is not read: the build asks cargo for a `cdylib` whatever the
        // manifest lists (Sails crates list `rlib` and `cdylib`; a plain gstd crate may list
        // `cdylib` alone), as gear-wasm-builder does.
        let lib = table.get("lib");
        let lib_name = lib
            .and_then(|l| l.get("name"))
            .and_then(toml::Value::as_str)
            .map_or_else(|| package.replace('-', "_"), str::to_owned);
        let path_hash = crate::results::hex(&sha2::Sha256::digest(
            manifest.as_os_str().as_encoded_bytes(),
        ));
        let key = format!("{package}-{}", &path_hash[..16]);
        Ok(Program {
            manifest,
            package,
            lib_name,
            key,
        })
    }

    /// The `Cargo.lock` cargo will write for this program (its workspace's).
    fn lock_file(&self) -> Result<PathBuf> {
        let out = crate::build::process::output(
            crate::build::workspace::cargo_command()
                .args(["locate-project", "--workspace", "--message-format", "plain"])
                .arg("--manifest-path")
                .arg(&self.manifest),
        )
        .context("cannot run cargo locate-project")?;
        if !out.status.success() {
            // Killed by a signal (cargo itself or the lab's supervisor of it): that is not a
            // manifest cargo cannot read.
            if out.status.code().is_none() {
                bail!(
                    "cargo locate-project for {} was stopped from outside the lab ({}); nothing \
                     was built: run it again",
                    self.manifest.display(),
                    out.status
                );
            }
            bail!(
                "cargo cannot read {}:\n{}",
                self.manifest.display(),
                String::from_utf8_lossy(&out.stderr).trim_end()
            );
        }
        let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        Ok(root.with_file_name("Cargo.lock"))
    }

    /// Every input a build of this program reads, as far as the lab can know it now, each by
    /// path (absolute) and the SHA-256 of its bytes (`absent` for a file that is not there):
    ///
    /// - the files cargo's dep-info lists for its last build in the lab
    ///   ([`Program::built_inputs`]: every source file `rustc` read, `include_str!`'s and
    ///   `include_bytes!`'s included, and every file a build script said it reads), and `also`
    ///   (the inputs an earlier results directory recorded, so that a file read then and
    ///   deleted or no longer read now counts as a change);
    /// - the manifest of every package those files belong to, the workspace's manifest and its
    ///   `Cargo.lock`;
    /// - every cargo config file that applies in the crate's directory ([`super::config::files`]);
    /// - the toolchain (`rustc -vV`, under the key `rustc -vV`).
    ///
    /// Registry and git sources are not listed (the lock file pins them), nor the lab's own
    /// files (the allocator, which the artifacts' hashes record) and build outputs. The scenario
    /// files given are left out by path, and nothing else by pattern: a JSON file or a hidden
    /// file the build reads is an input like any other. Before the program's first build only
    /// the manifests, lock, config and toolchain are known; the builds' own dep-info completes
    /// the set after them.
    pub fn inputs(
        &self,
        ws: &Workspace,
        also: &[PathBuf],
        scenarios: &[PathBuf],
    ) -> Result<BTreeMap<String, String>> {
        let scenarios: Vec<PathBuf> = scenarios
            .iter()
            .filter_map(|s| s.canonicalize().ok())
            .collect();
        let cargo_home = super::config::cargo_home()?;
        let dir = self.manifest.parent().unwrap_or(Path::new("/"));
        let lock = self.lock_file()?;
        let mut files: BTreeSet<PathBuf> = self.built_inputs(ws)?.into_iter().collect();
        files.extend(also.iter().cloned());
        // The manifest of each package a file belongs to (the nearest `Cargo.toml` above it).
        let manifests: BTreeSet<PathBuf> = files
            .iter()
            .filter_map(|f| {
                f.ancestors()
                    .skip(1)
                    .map(|d| d.join("Cargo.toml"))
                    .find(|m| m.is_file())
            })
            .collect();
        files.extend(manifests);
        files.insert(self.manifest.clone());
        files.insert(lock.with_file_name("Cargo.toml"));
        files.insert(lock);
        files.extend(super::config::files(dir, &cargo_home));
        let mut out = BTreeMap::new();
        for file in files.into_iter().filter(|f| !scenarios.contains(f)) {
            let hash = match std::fs::read(&file) {
                Ok(bytes) => crate::results::hex(&sha2::Sha256::digest(&bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => "absent".to_owned(),
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
            };
            out.insert(file.display().to_string(), hash);
        }
        out.insert(
            TOOLCHAIN_INPUT.to_owned(),
            crate::results::hex(&sha2::Sha256::digest(
                super::toolchain::rustc_version()?.as_bytes(),
            )),
        );
        Ok(out)
    }

    /// The files the program's last build in the lab read, from cargo's dep-info for it
    /// (`<target>/wasm32v1-none/wasm/<lib>.d`, rewritten by every build, read under the build
    /// lock), but for the registry's and git's sources, the toolchain's, the lab's allocator
    /// and build outputs ([`Program::inputs`]); none before its first build.
    pub fn built_inputs(&self, ws: &Workspace) -> Result<Vec<PathBuf>> {
        let target_dir = self.target_dir(ws);
        let dep_info = super::files::built(&target_dir, &format!("{}.d", self.lib_name));
        if !dep_info.is_file() {
            return Ok(Vec::new());
        }
        let lock = super::files::build_lock(&target_dir)?;
        let text = std::fs::read_to_string(&dep_info)
            .with_context(|| format!("cannot read {}", dep_info.display()))?;
        drop(lock);
        let home = super::config::cargo_home()?;
        let rustup = std::env::var("RUSTUP_HOME")
            .map_or_else(|_| home.with_file_name(".rustup"), PathBuf::from);
        let skip = [
            home,
            rustup,
            ws.root().join("target"),
            ws.root().join("allocator"),
        ];
        // rustc names an `include_str!`'d file as the macro spelled it (`src/../data.json`):
        // one spelling per file, so that the same file is the same input.
        Ok(dep_info_files(&text)
            .into_iter()
            .map(|f| f.canonicalize().unwrap_or(f))
            .filter(|f| !skip.iter().any(|s| f.starts_with(s)))
            .collect())
    }
    /// Its cargo target directory under the lab's `target/` ([`Program::key`]): its Wasm, its
    /// dep-info and its copy of the lock file. Cargo's intermediate units go to the build
    /// directory every outside program shares ([`super::shared`]).
    pub fn target_dir(&self, ws: &Workspace) -> PathBuf {
        ws.target_dir(&format!("external/{}", self.key))
    }

    /// The lock file cargo resolves this program's build against, under the lab's `target_dir`
    /// for it: a copy of the author's `Cargo.lock` as it is now (none if they have none), made
    /// before each build. Cargo is pointed at it (`resolver.lockfile-path`, [`lock_args`]), so
    /// the patched resolution it writes lands there and the author's file is only ever read:
    /// an interrupted or killed build, at any moment, has nothing in their crate to put back.
    /// Copied afresh each time so that a change the author makes to their lock is used.
    pub fn private_lock(&self, target_dir: &Path) -> Result<PathBuf> {
        let theirs = self.lock_file()?;
        let ours = private_lock_of(target_dir);
        std::fs::create_dir_all(target_dir)
            .with_context(|| format!("cannot create {}", target_dir.display()))?;
        match std::fs::read(&theirs) {
            Ok(bytes) => crate::results::write_file(&ours, &bytes)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match std::fs::remove_file(&ours)
            {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("cannot remove {}", ours.display()))
                }
                _ => {}
            },
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", theirs.display())),
        }
        Ok(ours)
    }
}

/// The copy of an outside program's lock file in its cargo target directory `target_dir`.
fn private_lock_of(target_dir: &Path) -> PathBuf {
    target_dir.join("Cargo.lock")
}

/// Cargo's arguments and environment that make a build into `target_dir` resolve into its
/// private copy of the lock file ([`Program::private_lock`]) instead of the workspace's own
/// `Cargo.lock`. Cargo's own options: they go before the `--` that starts rustc's.
///
/// `resolver.lockfile-path` is an unstable cargo setting (`-Zlockfile-path`) on the pinned
/// stable toolchain; `__CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS` lets this one cargo call
/// accept it. Only cargo reads that variable, unlike `RUSTC_BOOTSTRAP`, which build scripts
/// probe (anyhow, thiserror, proc-macro2) and which would change what they compile. The
/// alternatives were worse: building a copy of the crate moves every path rustc embeds (the
/// Wasm changes) and breaks crates that reach outside their directory; restoring the file
/// afterwards leaves it patched between a SIGKILL and the next run, or for good if there is no
/// next run. The suite builds an outside program on every run (`cli::an_outside_program_…`,
/// `interrupts::…`), so a toolchain that drops the setting fails there, not in a user's hands.
pub fn lock_args(cmd: &mut std::process::Command, target_dir: &Path) -> Result<()> {
    let lock = private_lock_of(target_dir);
    cmd.env("__CARGO_TEST_CHANNEL_OVERRIDE_DO_NOT_USE_THIS", "nightly")
        .arg("-Zlockfile-path")
        .arg("--config")
        .arg(format!("resolver.lockfile-path={}", path_value(&lock)?));
    Ok(())
}

/// The case a scenario file names: its file stem, which must be a name a case can have
/// ([`crate::results::check_case`]).
pub fn case_of(file: &Path) -> Result<&str> {
    let case = file
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .with_context(|| format!("{}: no file name to name the case", file.display()))?;
    crate::results::check_case(case, file)?;
    Ok(case)
}

/// Where `lab measure --program` (and `lab pick`) write a case's results unless told
/// (`--out`): by program ([`Program::key`]: its package and the hash of its path) and case, so
/// two programs with a `test.json` each never share a directory.
pub fn default_out(ws: &Workspace, program: &Program, case: &str) -> PathBuf {
    ws.root()
        .join("target/lab/programs")
        .join(&program.key)
        .join(case)
}

fn read_toml(path: &Path) -> Result<toml::Table> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.parse()
        .with_context(|| format!("{} is not valid TOML", path.display()))
}

/// Writes (when it changed) the `galloc` manifest whose default features are `features`, for
/// configuration `config`, and returns its directory.
pub fn galloc_manifest(ws: &Workspace, config: &str, features: &[&str]) -> Result<PathBuf> {
    let root = read_toml(&ws.root().join("Cargo.toml"))?;
    let allocator = ws.root().join("allocator");
    let mut manifest = read_toml(&allocator.join("Cargo.toml"))?;
    let empty = toml::Table::new();
    let workspace = root.get("workspace").and_then(toml::Value::as_table);
    let inherited_package = workspace
        .and_then(|w| w.get("package"))
        .and_then(toml::Value::as_table)
        .unwrap_or(&empty);
    let inherited_deps = workspace
        .and_then(|w| w.get("dependencies"))
        .and_then(toml::Value::as_table)
        .unwrap_or(&empty);

    let package = manifest
        .get_mut("package")
        .and_then(toml::Value::as_table_mut)
        .context("allocator/Cargo.toml has no [package]")?;
    for (key, value) in package.iter_mut() {
        if is_inherited(value) {
            *value = inherited_package
                .get(key)
                .cloned()
                .with_context(|| format!("[workspace.package] has no `{key}`"))?;
        }
    }
    package.insert("build".into(), path_value(&allocator.join("build.rs"))?);
    // Under another package name, so that cargo can lock it beside the shim named `galloc`
    // that links it ([`super::shared::galloc_shim`]); the crate keeps its name.
    package.insert("name".into(), VARIANT_PACKAGE.into());
    let mut lib = toml::Table::new();
    lib.insert("name".into(), "galloc".into());
    lib.insert("path".into(), path_value(&allocator.join("src/lib.rs"))?);
    manifest.insert("lib".into(), lib.into());
    manifest.remove("dev-dependencies");
    inherit_dependencies(&mut manifest, inherited_deps)?;
    if let Some(targets) = manifest
        .get_mut("target")
        .and_then(toml::Value::as_table_mut)
    {
        for (_, target) in targets.iter_mut() {
            if let Some(target) = target.as_table_mut() {
                target.remove("dev-dependencies");
                inherit_dependencies(target, inherited_deps)?;
            }
        }
    }
    let table = manifest
        .get_mut("features")
        .and_then(toml::Value::as_table_mut)
        .context("allocator/Cargo.toml has no [features]")?;
    for f in features {
        if !table.contains_key(*f) {
            bail!("galloc has no feature `{f}`");
        }
    }
    table.insert(
        "default".into(),
        toml::Value::Array(features.iter().map(|f| (*f).into()).collect()),
    );
    // Its own workspace: it lives under the lab's `target/`, not in the lab's workspace.
    manifest.insert("workspace".into(), toml::Table::new().into());

    let dir = ws.root().join("target/lab/galloc").join(config);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let text = format!(
        "# Written by `lab` for variant configuration `{config}`: the allocator in\n\
         # allocator/ with these default features. Not edited by hand; rewritten per build.\n{}",
        toml::to_string(&manifest).context("cannot write the galloc manifest")?
    );
    let path = dir.join("Cargo.toml");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(dir)
}

/// The package name of the allocator's manifest that [`galloc_manifest`] writes.
pub(crate) const VARIANT_PACKAGE: &str = "galloc-variant";

fn is_inherited(value: &toml::Value) -> bool {
    value
        .get("workspace")
        .and_then(toml::Value::as_bool)
        .unwrap_or(false)
}

pub(crate) fn path_value(path: &Path) -> Result<toml::Value> {
    Ok(path
        .to_str()
        .with_context(|| format!("{} is not UTF-8", path.display()))?
        .into())
}

/// Replaces `{ workspace = true, ... }` dependencies with the workspace's entry, keeping the
/// local `optional` and adding the local `features`.
fn inherit_dependencies(table: &mut toml::Table, inherited: &toml::Table) -> Result<()> {
    let Some(deps) = table
        .get_mut("dependencies")
        .and_then(toml::Value::as_table_mut)
    else {
        return Ok(());
    };
    for (name, dep) in deps.iter_mut() {
        if !is_inherited(dep) {
            continue;
        }
        let mut resolved = match inherited.get(name) {
            Some(toml::Value::String(version)) => {
                let mut t = toml::Table::new();
                t.insert("version".into(), version.clone().into());
                t
            }
            Some(toml::Value::Table(t)) => t.clone(),
            _ => bail!("[workspace.dependencies] has no `{name}`"),
        };
        if let Some(local) = dep.as_table() {
            if let Some(optional) = local.get("optional") {
                resolved.insert("optional".into(), optional.clone());
            }
            if let Some(toml::Value::Array(more)) = local.get("features") {
                let mut all = resolved
                    .get("features")
                    .and_then(toml::Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                all.extend(more.iter().cloned());
                resolved.insert("features".into(), all.into());
            }
        }
        *dep = resolved.into();
    }
    Ok(())
}

/// `--config` arguments giving an outside build the lab's `[profile.<profile>]`.
pub fn profile_config(ws: &Workspace, profile: &str) -> Result<Vec<String>> {
    let root = read_toml(&ws.root().join("Cargo.toml"))?;
    let settings = root
        .get("profile")
        .and_then(|p| p.get(profile))
        .and_then(toml::Value::as_table)
        .with_context(|| format!("the lab's Cargo.toml has no [profile.{profile}]"))?;
    Ok(settings
        .iter()
        .flat_map(|(key, value)| {
            [
                "--config".to_owned(),
                format!("profile.{profile}.{key}={value}"),
            ]
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Escaped spaces stay in their path, continued lines join, later rules are not read.
    #[test]
    fn dep_info_lists_every_prerequisite_of_its_first_rule() {
        let text = "/t/w/x.wasm: /a/src/lib.rs /a/with\\ space/data.json \\\n /a/.hidden\n\n/a/src/lib.rs:\n";
        assert_eq!(
            dep_info_files(text),
            ["/a/src/lib.rs", "/a/with space/data.json", "/a/.hidden"].map(PathBuf::from)
        );
        assert!(dep_info_files("").is_empty());
    }

    /// Two crates of one package name get different keys (target directories and default
    /// results directories: two programs with a `test.json` each never share one), the same
    /// crate the same one whichever way its path is given.
    #[test]
    fn a_program_is_keyed_by_its_path_not_its_name() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for dir in [&a, &b] {
            std::fs::write(
                dir.path().join("Cargo.toml"),
                "[package]\nname = \"same\"\n[lib]\ncrate-type = [\"cdylib\"]\n",
            )
            .unwrap();
        }
        let (pa, pb) = (
            Program::at(a.path()).unwrap(),
            Program::at(b.path()).unwrap(),
        );
        assert_eq!((pa.package.as_str(), pb.package.as_str()), ("same", "same"));
        assert!(pa.key.starts_with("same-") && pb.key.starts_with("same-"));
        assert_ne!(pa.key, pb.key);
        let again = Program::at(&a.path().join("Cargo.toml")).unwrap();
        assert_eq!(again.key, pa.key);
        let ws = Workspace::find(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        let (da, db) = (default_out(&ws, &pa, "test"), default_out(&ws, &pb, "test"));
        assert_ne!(da, db);
        assert!(
            da.ends_with(Path::new(&pa.key).join("test")),
            "{}",
            da.display()
        );
        assert_ne!(da, default_out(&ws, &pa, "other"));
    }
}
