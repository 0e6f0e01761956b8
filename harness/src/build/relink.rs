//! Layout points by re-linking, not rebuilding.
//!
//! A point of the layout sweep differs from the program's plain build only in the linker's
//! `--global-base`: the same compiled code, its statics placed higher. Through cargo, each
//! point recompiled the program crate (rustc's front end, most of a build's time) although
//! only the link (`rust-lld`, with the linker-plugin LTO gear-wasm-builder asks for) depends
//! on it. So every build is linked
//! through the `lab` executable itself (cargo's linker setting for the target), which runs
//! `rust-lld` with rustc's arguments and, for a plain build at the linker's own layout, keeps
//! what a link needs that rustc deletes afterwards: the program crate's object files and the
//! arguments (`<artifact>.link/`). A point is then `rust-lld` over those with `--global-base`
//! added.
//!
//! Nothing relinked is taken on trust: before a stash serves a point, linking it unchanged
//! must reproduce the plain build byte for byte (so the dependencies' rlibs it names are
//! still the ones that build used), and the suite checks that a relinked point equals the
//! same point built through cargo. A stash that is missing, stale or fails that check is
//! ignored and the point goes through cargo as before.

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set on cargo's command: the `rust-lld` the `lab` executable runs when rustc calls it as
/// the linker. Its presence is what tells `lab` it was called as a linker.
const LLD_ENV: &str = "GALLOC_LAB_AS_LINKER_RUN";

/// Set on cargo's command for a build whose link is to be kept: the stash directory.
const STASH_ENV: &str = "GALLOC_LAB_AS_LINKER_STASH";

/// In a stash's argument list: the stash directory, and the output file.
const STASH_MARK: &str = "<stash>";
const OUTPUT_MARK: &str = "<output>";

/// The `lab` executable to link through: this process if it is `lab`, else the `lab` beside
/// the test binaries cargo builds (`target/<profile>/deps/..`). `None` (no relinking, every
/// point through cargo) if there is none. The path is the same from `lab` and from the
/// tests, so their builds share cargo's fingerprints.
pub fn linker() -> Option<PathBuf> {
    static LINKER: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    LINKER
        .get_or_init(|| {
            let exe = std::env::current_exe().ok()?;
            let name = format!("lab{}", std::env::consts::EXE_SUFFIX);
            let dir = exe.parent()?;
            [dir.join(&name), dir.parent()?.join(&name)]
                .into_iter()
                .find(|p| p.is_file())
                .and_then(|p| p.canonicalize().ok())
        })
        .clone()
}

/// Makes cargo's command link through `lab` (for `target`), and, with `stash`, keep the link.
///
/// The linker is given as cargo's target setting, not as a rustc flag: cargo hashes the
/// flags given to `cargo rustc` into the output's file name, which is the module's name in
/// the raw `.wasm`, so a flag naming this checkout's `lab` would make the raw bytes depend on
/// where the repository is (and change every recorded hash). The setting does not.
pub fn link_through_lab(cmd: &mut Command, target: &str, stash: Option<&Path>) -> Result<()> {
    let Some(lab) = linker() else {
        return Ok(());
    };
    let setting = format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_uppercase().replace(['-', '.'], "_")
    );
    cmd.env(setting, lab).env(LLD_ENV, rust_lld()?);
    match stash {
        Some(stash) => cmd.env(STASH_ENV, stash),
        None => cmd.env_remove(STASH_ENV),
    };
    Ok(())
}

/// `rust-lld` of the toolchain that builds the programs: what rustc itself runs for Wasm.
fn rust_lld() -> Result<&'static Path> {
    static LLD: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(lld) = LLD.get() {
        return Ok(lld);
    }
    let out = super::toolchain::command("rustc")
        .args(["--print", "sysroot"])
        .output()
        .context("cannot run rustc")?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let host = super::toolchain::rustc_version()?
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .context("rustc -vV names no host")?
        .to_owned();
    let lld = Path::new(&sysroot)
        .join("lib/rustlib")
        .join(host)
        .join("bin")
        .join(format!("rust-lld{}", std::env::consts::EXE_SUFFIX));
    if !lld.is_file() {
        bail!(
            "{} is missing: the toolchain's linker for Wasm (rustup component `rust-std` of \
             the host ships it); run `just setup`",
            lld.display()
        );
    }
    Ok(LLD.get_or_init(|| lld))
}

/// When rustc runs `lab` as its linker: runs `rust-lld` with rustc's arguments, keeps the
/// link if asked, and gives the exit code. `None` when this process is not a link.
pub fn serve_as_linker() -> Option<i32> {
    let lld = std::env::var_os(LLD_ENV)?;
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let code = match Command::new(&lld).args(&args).status() {
        Ok(status) => status.code().unwrap_or(1),
        Err(e) => {
            eprintln!(
                "error: lab, as rustc's Wasm linker, cannot run {}: {e}",
                Path::new(&lld).display()
            );
            return Some(1);
        }
    };
    if code == 0 {
        if let Some(stash) = std::env::var_os(STASH_ENV) {
            // Not fatal: without a stash, this build's layout points go through cargo.
            if let Err(e) = keep(Path::new(&stash), &args) {
                eprintln!("warning: the link is not kept for re-linking: {e:#}");
            }
        }
    }
    Some(code)
}

/// Keeps a link in `stash`: the object files rustc passed and every file it passed from its
/// own temporary directory (`rustcXXXXXX/`: for an outside program's build, copies of rlibs it
/// links; rustc deletes both after the link), the arguments with those and the output
/// replaced by marks, and the SHA-256 of the output.
fn keep(stash: &Path, args: &[OsString]) -> Result<()> {
    let tmp = stash.with_extension(format!("link.{}.tmp", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let (mut kept, mut output, mut objects) = (Vec::new(), None, 0);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let text = arg
            .to_str()
            .with_context(|| format!("argument {arg:?} is not UTF-8"))?;
        if text.starts_with('@') {
            bail!("rustc passed a response file ({text})");
        }
        if text == "-o" {
            let out = PathBuf::from(it.next().context("-o without a file")?);
            // The file's name is the module's name in its name section: a re-link keeps it.
            let name = out
                .file_name()
                .and_then(|n| n.to_str())
                .context("rustc's output has no UTF-8 file name")?;
            kept.extend(["-o".to_owned(), format!("{OUTPUT_MARK}/{name}")]);
            output = Some(out);
        } else if Path::new(text).extension().is_some_and(|e| e == "o") {
            let name = format!("{objects}.o");
            objects += 1;
            std::fs::copy(text, tmp.join(&name)).with_context(|| format!("cannot copy {text}"))?;
            kept.push(format!("{STASH_MARK}/{name}"));
        } else if let Some(file) = in_rustc_temp(text) {
            // Under a directory of its own: the file keeps its name (an archive's name can
            // reach the linker's output), and two such files may share one.
            let dir = format!("t{objects}");
            objects += 1;
            std::fs::create_dir_all(tmp.join(&dir))?;
            std::fs::copy(text, tmp.join(&dir).join(file))
                .with_context(|| format!("cannot copy {text}"))?;
            kept.push(format!("{STASH_MARK}/{dir}/{file}"));
        } else {
            kept.push(text.to_owned());
        }
    }
    let output = output.context("rustc's link has no -o")?;
    let bytes =
        std::fs::read(&output).with_context(|| format!("cannot read {}", output.display()))?;
    std::fs::write(tmp.join("args"), kept.join("\n"))?;
    std::fs::write(
        tmp.join("output.sha256"),
        crate::results::hex(&Sha256::digest(&bytes)),
    )?;
    let _ = std::fs::remove_dir_all(stash);
    std::fs::rename(&tmp, stash)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), stash.display()))
}

/// The file name of `arg` if it is a file in rustc's temporary directory (a directory named
/// `rustc` and six more characters, which rustc removes after the link).
fn in_rustc_temp(arg: &str) -> Option<&str> {
    let path = Path::new(arg);
    let parent = path.parent()?.file_name()?.to_str()?;
    let temporary = parent.len() == "rustcXXXXXX".len() && parent.starts_with("rustc");
    (temporary && path.is_file())
        .then(|| path.file_name()?.to_str())
        .flatten()
}

/// Where a plain build's link is kept: beside its collected `.wasm`.
pub fn stash_of(raw: &Path) -> PathBuf {
    raw.with_extension("link")
}

/// A kept link checked against the build it made.
pub struct Stash {
    dir: PathBuf,
    args: Vec<String>,
}

impl Stash {
    /// The stash beside the plain build at `path` (at the linker's layout, as collected: its
    /// `sha256` and `bytes`), if it was kept from the link that made those bytes and linking
    /// it again reproduces them exactly. Checked once per process and stash.
    pub fn verified(path: &Path, sha256: &str, bytes: &[u8]) -> Result<Option<Stash>> {
        static CHECKED: std::sync::Mutex<Vec<(PathBuf, String)>> =
            std::sync::Mutex::new(Vec::new());
        let dir = stash_of(path);
        let Ok(recorded) = std::fs::read_to_string(dir.join("output.sha256")) else {
            return Ok(None);
        };
        let Ok(args) = std::fs::read_to_string(dir.join("args")) else {
            return Ok(None);
        };
        let output = format!("{OUTPUT_MARK}/");
        if recorded.trim() != sha256 || !args.lines().any(|a| a.starts_with(&output)) {
            return Ok(None);
        }
        let stash = Stash {
            args: args.lines().map(str::to_owned).collect(),
            dir,
        };
        let checked = (stash.dir.clone(), sha256.to_owned());
        if CHECKED
            .lock()
            .expect("no panic holds it")
            .contains(&checked)
        {
            return Ok(Some(stash));
        }
        let again = stash.link(None, None);
        if again.as_deref().ok() != Some(bytes) {
            let why = match again {
                Err(e) => format!("{e:#}"),
                Ok(_) => "it does not reproduce the build".into(),
            };
            eprintln!(
                "warning: re-linking {}: {why}; its layout points go through cargo",
                path.display()
            );
            return Ok(None);
        }
        CHECKED.lock().expect("no panic holds it").push(checked);
        Ok(Some(stash))
    }

    /// The module linked with its statics from `global_base` (`None`: where the linker puts
    /// them) and, last, the object `skip` ([`skip_object`]) when given.
    pub fn link(&self, global_base: Option<u64>, skip: Option<&Path>) -> Result<Vec<u8>> {
        self.link_keeping(global_base, skip, true)
    }

    /// The module linked as the linker places it by itself, then with `global_base` if given:
    /// every `--global-base` the build's own flags gave the linker (an author's layout setting,
    /// from their cargo config) left out.
    pub fn link_from_linker(&self, global_base: Option<u64>) -> Result<Vec<u8>> {
        self.link_keeping(global_base, None, false)
    }

    fn link_keeping(
        &self,
        global_base: Option<u64>,
        skip: Option<&Path>,
        theirs: bool,
    ) -> Result<Vec<u8>> {
        static LINKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let tmp = self.dir.with_extension(format!(
            "link.{}-{}.out",
            std::process::id(),
            LINKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        let stash = self.dir.display().to_string();
        let mut out = None;
        let mut cmd = Command::new(rust_lld()?);
        for arg in &self.args {
            if let Some(name) = arg.strip_prefix(OUTPUT_MARK) {
                let path = tmp.join(name.trim_start_matches('/'));
                cmd.arg(&path);
                out = Some(path);
            } else if let Some(object) = arg.strip_prefix(STASH_MARK) {
                cmd.arg(format!("{stash}{object}"));
            } else if !theirs && arg.starts_with("--global-base=") {
                continue;
            } else {
                cmd.arg(arg);
            }
        }
        if let Some(base) = global_base {
            cmd.arg(format!("--global-base={base}"));
        }
        // After every other input: its block is the last static, so it moves the heap base
        // and nothing else.
        cmd.args(skip);
        let out = out.with_context(|| format!("{}/args names no output", self.dir.display()))?;
        let result = cmd.output();
        let bytes = std::fs::read(&out);
        let _ = std::fs::remove_dir_all(&tmp);
        let result = result.with_context(|| format!("cannot run {}", rust_lld_name()))?;
        if !result.status.success() {
            bail!(
                "re-linking {} failed:\n{}",
                self.dir.display(),
                String::from_utf8_lossy(&result.stderr).trim_end()
            );
        }
        bytes.with_context(|| format!("rust-lld wrote no {}", out.display()))
    }
}

fn rust_lld_name() -> String {
    rust_lld().map_or_else(|_| "rust-lld".into(), |p| p.display().to_string())
}

/// A Wasm object file holding one zeroed static of `bytes` bytes, kept by the linker
/// (`#[used]`), for [`crate::build::artifact::BuildRequest::heap_skip`]: linked after a
/// program's own objects, it is the last static, so the linker's `__heap_base` moves up by
/// `bytes` and every other static stays where it was. Gear's post-processing drops its zeros
/// (Gear's memory starts zeroed), so the program's bytes are the plain build's but for the
/// heap base. Compiled once per size with the lab's own `rustc` into `target/lab/skip/`.
pub fn skip_object(ws: &crate::build::workspace::Workspace, bytes: u32) -> Result<PathBuf> {
    let dir = ws.root().join("target/lab/skip");
    let object = dir.join(format!("{bytes}.o"));
    if object.is_file() {
        return Ok(object);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!(".{bytes}.{}", std::process::id()));
    let source = tmp.with_extension("rs");
    std::fs::write(
        &source,
        format!(
            "#![no_std]\n#[used]\n#[no_mangle]\nstatic mut LAB_HEAP_SKIP: [u8; {bytes}] = [0; {bytes}];\n"
        ),
    )
    .with_context(|| format!("cannot write {}", source.display()))?;
    let out = super::toolchain::command("rustc")
        .current_dir(ws.root())
        .args([
            "--crate-type",
            "lib",
            "--crate-name",
            "lab_heap_skip",
            "--emit",
            "obj",
        ])
        .args(["--target", super::toolchain::TARGET])
        .args(["-C", "opt-level=z", "-C", "panic=abort", "-o"])
        .arg(&tmp)
        .arg(&source)
        .output()
        .context("cannot run rustc to make the heap-skip object")?;
    let _ = std::fs::remove_file(&source);
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        bail!(
            "rustc could not make the heap-skip object for {bytes} bytes:\n{}",
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    std::fs::rename(&tmp, &object).with_context(|| format!("cannot write {}", object.display()))?;
    Ok(object)
}
