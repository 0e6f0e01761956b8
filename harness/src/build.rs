//! Builds a Wasm package once per allocator variant, as Gear programs are built.
//!
//! The cargo invocation repeats gear-wasm-builder 2.0's (`cargo rustc` for `wasm32v1-none`
//! with its linker flags), and [`PostProcess::Gear`] applies the builder's own post-processing
//! through its `gear-wasm-optimizer` crate: insert `__gear_stack_end`, strip custom sections
//! and extra exports, then `wasm-opt -O4` — the `.opt.wasm` Gear programs deploy.
//!
//! Every configuration (variant, probe, extra features, padding) is built in one shared cargo
//! target directory: cargo hashes a unit's features into its file names, so each configuration
//! keeps its own `galloc`, `gstd` and program units while the ~230 MB of host tools
//! (proc-macros, build scripts) and the dependencies below `galloc` are built once, not once
//! per configuration (26 copies filled a CI disk). Two things make that sound: cargo leaves
//! the hash off a path package's `cdylib` unless `__CARGO_DEFAULT_LIB_METADATA` is set (the
//! variable rustc's own build sets for the same reason), so it is set and every configuration
//! gets its own `.wasm`; and cargo re-links the unhashed copy it leaves beside `deps/` on every
//! build, fresh or not, so a lock is held from `cargo` until that copy is read, and a parallel
//! build of another configuration cannot swap it in between. Editing one variant still rebuilds
//! only that variant: cargo's freshness check is per unit. Paths are remapped (our only addition to the builder's flags; it changes nothing but the text of
//! panic locations) so the bytes do not depend on where the repository or cargo's registry
//! is checked out: sizes and hashes are comparable across machines.

use crate::workspace::Workspace;
use anyhow::{bail, Context, Result};
use galloc_variants::Variant;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target Gear programs are built for.
pub const TARGET: &str = "wasm32v1-none";
/// The cargo profile programs are built with (see the workspace `Cargo.toml`).
pub const PROFILE: &str = "wasm";

/// What happens to the `.wasm` cargo produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostProcess {
    /// Nothing: the linker's output as it is.
    None,
    /// gear-wasm-builder's post-processing, ending in `wasm-opt -O4` (needs Debian's
    /// `binaryen`; `just setup` installs it).
    Gear,
}

/// What to build.
#[derive(Clone, Copy, Debug)]
pub struct BuildRequest<'a> {
    /// Cargo package name.
    pub package: &'a str,
    /// The allocator variant to link.
    pub variant: &'static Variant,
    /// Whether to wrap the allocator in the gas probe.
    pub probe: bool,
    /// What to do with the linker's output.
    pub post: PostProcess,
    /// Bytes of padding after the allocator's static state (`GALLOC_LAYOUT_PAD`), to give a
    /// plain build its probe build's heap base; 0 for every build that is reported as is.
    pub layout_pad: u32,
    /// More `galloc` features, comma-separated ("" for none): not variants, but switches a
    /// maintainer (or the gate's own test, with `gate-canary`) adds to a variant.
    pub extra_features: &'a str,
    /// A program outside the lab's workspace (`package` is then its package name), built
    /// through a `galloc` patch ([`crate::external`]); `None` for the lab's own contracts.
    pub external: Option<&'a crate::external::Program>,
}

impl BuildRequest<'_> {
    /// `variant` or `variant+probe`: names target dirs, artifacts and result rows.
    pub fn config(&self) -> String {
        let mut config = self.variant.id.to_owned();
        if self.probe {
            config.push_str("+probe");
        }
        for f in self.extra_features.split(',').filter(|f| !f.is_empty()) {
            config.push('+');
            config.push_str(f);
        }
        if self.layout_pad > 0 {
            config.push_str(&format!("+pad{}", self.layout_pad));
        }
        config
    }
}

/// A built Wasm file.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// The build configuration ([`BuildRequest::config`]).
    pub config: String,
    /// Collected copy under `target/artifacts/<package>/`: `<config>.wasm`, or
    /// `<config>.opt.wasm` after [`PostProcess::Gear`].
    pub path: PathBuf,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Hex SHA-256 of `bytes`.
    pub sha256: String,
    /// The linker's `__heap_base`: where static data ends and the heap begins.
    pub heap_base: Option<u32>,
}

/// Builds `req` with [`PROFILE`] for [`TARGET`] and collects (and post-processes) the `.wasm`.
pub fn build(ws: &Workspace, req: BuildRequest<'_>) -> Result<Artifact> {
    let config = req.config();
    let mut galloc_features = vec![req.variant.feature.to_owned()];
    if req.probe {
        galloc_features.push("probe".into());
    }
    galloc_features.extend(
        req.extra_features
            .split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_owned),
    );
    galloc_features.extend(layout_pad_features(req.layout_pad)?);
    let cargo_home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    let remap = [
        format!("--remap-path-prefix={}=/lab", ws.root().display()),
        format!("--remap-path-prefix={}=/cargo", cargo_home.display()),
    ]
    .join(" ");
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["rustc", "--profile", PROFILE, "--quiet", "--lib"])
        .args(["--target", TARGET]);
    let target_dir = match req.external {
        None => {
            let features: Vec<String> = galloc_features
                .iter()
                .map(|f| format!("galloc/{f}"))
                .collect();
            cmd.current_dir(ws.root())
                .args(["--locked", "--package", req.package])
                .args(["--features", &features.join(",")]);
            ws.wasm_target_dir()
        }
        Some(program) => {
            let features: Vec<&str> = galloc_features.iter().map(String::as_str).collect();
            let galloc = crate::external::galloc_manifest(ws, &config, &features)?;
            let dir = program.manifest.parent().unwrap_or(ws.root());
            cmd.current_dir(dir)
                .arg("--manifest-path")
                .arg(&program.manifest)
                .arg("--config")
                .arg(format!(
                    "patch.crates-io.galloc.path={:?}",
                    galloc.display().to_string()
                ))
                .args(crate::external::profile_config(ws, PROFILE)?);
            ws.target_dir(&format!("external/{}", req.package))
        }
    };
    cmd.arg("--target-dir")
        .arg(&target_dir)
        .arg("--")
        .args(builder_rustc_flags()?)
        .env("RUSTFLAGS", remap)
        .env("__CARGO_DEFAULT_LIB_METADATA", "galloc-lab")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    std::fs::create_dir_all(&target_dir)
        .with_context(|| format!("cannot create {}", target_dir.display()))?;
    let lock_path = target_dir.join("lab-build.lock");
    let lock = std::fs::File::create(&lock_path)
        .with_context(|| format!("cannot create {}", lock_path.display()))?;
    lock.lock()
        .with_context(|| format!("cannot lock {}", lock_path.display()))?;
    let mut run = || {
        cmd.output()
            .with_context(|| format!("cannot run cargo to build {} ({config})", req.package))
    };
    let out = match req.external {
        None => run()?,
        Some(program) => program.keeping_lock_file(run)?,
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let hint = if stderr.contains("target may not be installed")
            || stderr.contains("can't find crate for `core`")
        {
            format!("\nhint: the {TARGET} target is missing; run `just setup`")
        } else {
            String::new()
        };
        bail!(
            "building {} for variant `{config}` failed:\n{}{hint}",
            req.package,
            stderr.trim_end()
        );
    }
    let file = match req.external {
        None => format!("{}.wasm", req.package.replace('-', "_")),
        Some(program) => format!("{}.wasm", program.lib_name),
    };
    let built = target_dir.join(TARGET).join(PROFILE).join(&file);
    let bytes = std::fs::read(&built)
        .with_context(|| format!("cargo succeeded but {} is missing", built.display()))?;
    drop(lock);
    let dir = ws.artifacts_dir().join(req.package);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let heap_base = crate::wasm::exported_global(&bytes, "__heap_base")?;
    let raw = dir.join(format!("{config}.wasm"));
    let unchanged = std::fs::read(&raw).is_ok_and(|old| old == bytes);
    if !unchanged {
        let tmp = temp_beside(&raw);
        std::fs::write(&tmp, &bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
        publish(&tmp, &raw)?;
    }
    let path = match req.post {
        PostProcess::None => raw,
        PostProcess::Gear => {
            let opt = dir.join(format!("{config}.opt.wasm"));
            if !(unchanged && opt.is_file()) {
                let tmp = temp_beside(&opt);
                gear_post_process(&raw, &tmp)?;
                publish(&tmp, &opt)?;
            }
            opt
        }
    };
    let bytes = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let sha256 = hex(&Sha256::digest(&bytes));
    Ok(Artifact {
        config,
        path,
        bytes,
        sha256,
        heap_base,
    })
}

/// Largest padding [`layout_pad_features`] can express (bytes).
pub const MAX_LAYOUT_PAD: u32 = (1 << 20) - 16;

/// `galloc`'s `layout-pad-<2^k>` features whose sum is `pad`: the padding travels as features,
/// not as an environment variable, so that cargo gives each padding its own units in the shared
/// target directory instead of rebuilding one set back and forth. Heap bases are 16-aligned,
/// so every padding the lab needs is a multiple of 16.
fn layout_pad_features(pad: u32) -> Result<Vec<String>> {
    if !pad.is_multiple_of(16) || pad > MAX_LAYOUT_PAD {
        bail!("a layout padding of {pad} bytes cannot be built: it must be a multiple of 16 up to {MAX_LAYOUT_PAD}");
    }
    Ok((4..20)
        .filter(|k| pad & (1 << k) != 0)
        .map(|k| format!("layout-pad-{}", 1u32 << k))
        .collect())
}

/// The flags gear-wasm-builder 2.0 passes to `rustc` for the program crate, by rustc version
/// (`CargoCommand::new` in gear-wasm-optimizer).
fn builder_rustc_flags() -> Result<Vec<&'static str>> {
    let out = Command::new("rustc")
        .arg("--version")
        .output()
        .context("cannot run rustc")?;
    let version = String::from_utf8_lossy(&out.stdout);
    let minor: u32 = version
        .split(['.', ' '])
        .nth(2)
        .and_then(|m| m.parse().ok())
        .with_context(|| format!("cannot read rustc's version from `{}`", version.trim()))?;
    let mut flags = vec!["-Clink-arg=--import-memory"];
    if minor >= 91 {
        flags.extend([
            "-C",
            "link-arg=--mllvm=-mcpu=mvp",
            "-C",
            "link-arg=--mllvm=-mattr=+mutable-globals",
            "-C",
            "linker-plugin-lto",
        ]);
    }
    if minor >= 96 {
        flags.extend(["-C", "link-arg=--allow-undefined"]);
    }
    Ok(flags)
}

/// gear-wasm-builder's `postprocess_opt`, step for step, except that a missing or failing
/// `wasm-opt` is an error here (the builder only warns): every variant must get the same
/// post-processing or the comparison is void.
fn gear_post_process(raw: &Path, opt: &Path) -> Result<()> {
    use gear_wasm_optimizer::{optimize_wasm, Optimizer};
    let raw = raw.to_path_buf();
    let opt = opt.to_path_buf();
    let mut optimizer = Optimizer::new(&raw).with_context(|| {
        format!(
            "{} is not a module gear-wasm-optimizer reads",
            raw.display()
        )
    })?;
    // The builder carries on without the export when insertion fails; so do we.
    let _ = optimizer.insert_stack_end_export();
    optimizer.strip_custom_sections();
    optimizer.strip_exports();
    optimizer.flush_to_file(&opt);
    optimize_wasm(&opt, &opt, "4", true).map_err(|e| {
        anyhow::anyhow!(
            "wasm-opt failed on {}: {e}\nhint: run `just setup` (installs Debian's binaryen)",
            opt.display()
        )
    })?;
    Ok(())
}

/// A fresh path next to `path`: concurrent builds of one configuration (parallel tests) each
/// write their own file, then [`publish`] renames it into place, so no reader ever sees a
/// half-written module.
fn temp_beside(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}-{n}.tmp", std::process::id()));
    path.with_file_name(name)
}

/// Atomically replaces `to` with `from`.
fn publish(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to)
        .with_context(|| format!("cannot move {} to {}", from.display(), to.display()))
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
