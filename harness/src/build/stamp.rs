//! What tells a build is fresh without asking cargo: a stamp keyed on everything cargo could
//! read for it, and the record beside each post-processed module of what it was made from.

use super::files::{hex, publish, temp_beside};
use super::toolchain::rustc_version;
use crate::build::workspace::Workspace;
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The record kept beside a post-processed module (`<file>.sha256`): the SHA-256 of the module
/// it was made from and of what was made. Checked on every use, so a file changed after it was
/// built (by hand, by a tool, by a damaged disk) is never measured as the build.
pub(crate) struct Recorded {
    pub(crate) path: PathBuf,
    file: PathBuf,
}

/// What [`Recorded::check`] found.
pub(crate) enum Check {
    /// The file is what was made from the given source: its bytes.
    Fresh(Vec<u8>),
    /// The record is for the same source but the file hashes to this instead.
    Altered(String),
    /// No file, no record, or a record of another source: an ordinary (re)build.
    Stale,
}

impl Recorded {
    pub(crate) fn of(file: &Path) -> Self {
        let mut name = file.file_name().unwrap_or_default().to_os_string();
        name.push(".sha256");
        Recorded {
            path: file.with_file_name(name),
            file: file.to_path_buf(),
        }
    }

    pub(crate) fn check(&self, source: &str) -> Check {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return Check::Stale;
        };
        let Some((from, made)) = text.trim_end().split_once(' ') else {
            return Check::Stale;
        };
        let Ok(bytes) = std::fs::read(&self.file) else {
            return Check::Stale;
        };
        if from != source {
            return Check::Stale;
        }
        let found = hex(&Sha256::digest(&bytes));
        if found == made {
            Check::Fresh(bytes)
        } else {
            Check::Altered(found)
        }
    }

    pub(crate) fn write(&self, source: &str, made: &[u8]) -> Result<()> {
        let tmp = temp_beside(&self.path);
        let line = format!("{source} {}\n", hex(&Sha256::digest(made)));
        std::fs::write(&tmp, line).with_context(|| format!("cannot write {}", tmp.display()))?;
        publish(&tmp, &self.path)
    }
}

/// A build's stamp: the key of what cargo would read for it, and where the key and the hash
/// of the `.wasm` it produced are kept.
pub(crate) struct Stamp {
    pub(crate) path: PathBuf,
    pub(crate) key: String,
}

impl Stamp {
    pub(crate) fn new(
        ws: &Workspace,
        package: &str,
        config: &str,
        cmd: &Command,
        cargo_home: &Path,
    ) -> Result<Self> {
        let mut h = Sha256::new();
        h.update(tree_key(ws.root(), cargo_home)?.as_bytes());
        h.update(format!("{:?}", cmd.get_program()).as_bytes());
        for arg in cmd.get_args() {
            h.update(format!("\0{arg:?}").as_bytes());
        }
        // The environment cargo and rustc will see: the lab's own `CARGO*` and `RUST*`
        // variables as the command leaves them (it sets some and removes others), and what it
        // sets besides.
        let mut env: std::collections::BTreeMap<_, _> = std::env::vars_os()
            .filter(|(k, _)| {
                let k = k.to_string_lossy();
                k.starts_with("CARGO") || k.starts_with("RUST")
            })
            .collect();
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => env.insert(k.to_owned(), v.to_owned()),
                None => env.remove(k),
            };
        }
        for (k, v) in &env {
            h.update(format!("\0{k:?}={v:?}").as_bytes());
        }
        h.update(format!("\0{:?}", cmd.get_current_dir()).as_bytes());
        Ok(Stamp {
            path: ws
                .root()
                .join("target/lab/stamps")
                .join(package)
                .join(format!("{config}.stamp")),
            key: hex(&h.finalize()),
        })
    }

    /// The collected `.wasm`'s bytes, if the stamp says cargo would rebuild nothing and they
    /// are the bytes cargo produced then.
    pub(crate) fn fresh(&self, raw: &Path) -> Option<Vec<u8>> {
        let stamp = std::fs::read_to_string(&self.path).ok()?;
        let (key, sha256) = stamp.trim_end().split_once(' ')?;
        if key != self.key {
            return None;
        }
        let bytes = std::fs::read(raw).ok()?;
        (hex(&Sha256::digest(&bytes)) == sha256).then_some(bytes)
    }

    pub(crate) fn write(&self, bytes: &[u8]) -> Result<()> {
        let dir = self.path.parent().expect("a stamp has a directory");
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let tmp = temp_beside(&self.path);
        let line = format!("{} {}\n", self.key, hex(&Sha256::digest(bytes)));
        std::fs::write(&tmp, line).with_context(|| format!("cannot write {}", tmp.display()))?;
        publish(&tmp, &self.path)
    }
}

/// The key of what any build of the lab's packages can read besides the registry's sources
/// (which `Cargo.lock` pins): every file of the repository outside `target/`, `.git/` and
/// what the lab writes (`results/`, `images/`) by path and content; cargo's own config files;
/// and `rustc -vV` (the environment is each build's: [`Stamp::new`]). Computed once per
/// process: a file edited during a run changes the next run's key, so at worst that run goes
/// through cargo.
///
/// Content, not modification times: a checkout, a rebase or `touch` leaves the bytes cargo
/// would compile as they were, and builds are reproducible (a fresh clone makes the committed
/// hashes), so they must not send every build of a warm run back through cargo. Reading the
/// repository costs far less than one cargo start. Markdown files are left out: no code here includes one
/// (`include_str!`), so editing a README changes no build.
pub(crate) fn tree_key(root: &Path, cargo_home: &Path) -> Result<String> {
    static KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(key) = KEY.get() {
        return Ok(key.clone());
    }
    let key = tree_key_now(root, cargo_home)?;
    Ok(KEY.get_or_init(|| key).clone())
}

pub(crate) fn tree_key_now(root: &Path, cargo_home: &Path) -> Result<String> {
    let mut files = Vec::new();
    let skip = ["target", ".git", "results", "images"].map(|d| root.join(d));
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?
        {
            let path = entry?.path();
            if skip.contains(&path) {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_none_or(|e| e != "md") {
                files.push(path);
            }
        }
    }
    // Cargo's config files wherever they apply: above the repository too, and cargo's home.
    files.extend(super::config::files(root, cargo_home));
    files.sort();
    files.dedup();
    let mut h = Sha256::new();
    for file in &files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        h.update(format!("{}\0{}\0", file.display(), bytes.len()).as_bytes());
        h.update(&bytes);
    }
    h.update(rustc_version()?.as_bytes());
    Ok(hex(&h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key moves with any file cargo could read and ignores what the lab writes itself.
    #[test]
    fn tree_key_follows_sources_not_outputs() {
        let root = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        for d in ["src", "target", "results"] {
            std::fs::create_dir(root.path().join(d)).unwrap();
        }
        std::fs::write(root.path().join("src/lib.rs"), "fn a() {}").unwrap();
        let key = || tree_key_now(root.path(), home.path()).unwrap();
        let first = key();
        assert_eq!(key(), first);
        std::fs::write(root.path().join("target/x.wasm"), "out").unwrap();
        std::fs::write(root.path().join("results/totals.csv"), "out").unwrap();
        assert_eq!(key(), first, "outputs must not move the key");
        std::fs::write(root.path().join("src/lib.rs"), "fn b() {}").unwrap();
        let edited = key();
        assert_ne!(edited, first, "an edit must move the key");
        std::fs::write(root.path().join("src/new.rs"), "").unwrap();
        assert_ne!(key(), edited, "a new file must move the key");
        std::fs::write(home.path().join("config.toml"), "[build]").unwrap();
        assert_ne!(key(), edited, "cargo's config must move the key");
    }

    /// A stamp vouches only for its own key and for the very bytes it was written with.
    #[test]
    fn stamp_is_fresh_only_for_its_key_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("p.wasm");
        let stamp = |key: &str| Stamp {
            path: dir.path().join("stamps/p/v.stamp"),
            key: key.into(),
        };
        assert_eq!(stamp("k").fresh(&raw), None, "no stamp yet");
        std::fs::write(&raw, b"wasm").unwrap();
        stamp("k").write(b"wasm").unwrap();
        assert_eq!(stamp("k").fresh(&raw), Some(b"wasm".to_vec()));
        assert_eq!(stamp("other").fresh(&raw), None, "another key");
        std::fs::write(&raw, b"changed").unwrap();
        assert_eq!(stamp("k").fresh(&raw), None, "the collected copy changed");
        std::fs::remove_file(&raw).unwrap();
        assert_eq!(stamp("k").fresh(&raw), None, "the collected copy is gone");
    }

    /// A post-processed module is used only while it is what was made, from the very source
    /// it was made from; a change to it is told apart from an ordinary rebuild.
    #[test]
    fn a_record_vouches_only_for_what_was_made() {
        let dir = tempfile::tempdir().unwrap();
        let opt = dir.path().join("v.opt.wasm");
        let record = Recorded::of(&opt);
        assert_eq!(record.path, dir.path().join("v.opt.wasm.sha256"));
        assert!(matches!(record.check("src"), Check::Stale), "nothing yet");
        std::fs::write(&opt, b"made").unwrap();
        assert!(matches!(record.check("src"), Check::Stale), "no record yet");
        record.write("src", b"made").unwrap();
        assert!(matches!(record.check("src"), Check::Fresh(b) if b == b"made"));
        assert!(matches!(record.check("new"), Check::Stale), "a new source");
        std::fs::write(&opt, b"mad3").unwrap();
        let altered = hex(&Sha256::digest(b"mad3"));
        assert!(matches!(record.check("src"), Check::Altered(h) if h == altered));
    }
}
