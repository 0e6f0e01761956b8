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
//! only that variant: cargo's freshness check is per unit.
//!
//! A warm `just compare` asks for every build again, and cargo's check that one is fresh was
//! most of a warm run. So each build of the lab's own packages leaves a stamp
//! (`target/lab/stamps/`): the key of everything cargo could read — every file of the
//! repository outside `target/`, `.git/`, `results/` and `images/` but Markdown (path and
//! content), the exact command and environment, `rustc -vV`, cargo's own config files — and
//! the SHA-256 of the `.wasm` it produced. A build whose key and collected `.wasm` match its
//! stamp skips cargo; anything else, down to one changed byte, goes through cargo as before.
//! Programs outside the repository are always built through cargo.
//!
//! Paths are remapped (it changes nothing but the text of panic locations) so the bytes do not
//! depend on where the repository or cargo's registry is checked out: sizes and hashes are
//! comparable across machines. The one other addition to the builder's setup is the linker
//! (cargo's setting for the target, not a flag): the `lab` executable, which runs the
//! toolchain's own `rust-lld` with rustc's arguments and keeps plain builds' links so that
//! layout points are re-linked, not rebuilt ([`super::relink`]). The modules are the same bytes
//! either way.

use crate::build::stamp::{Check, Recorded, Stamp};
use crate::build::workspace::Workspace;

use anyhow::{bail, Context, Result};
use galloc_variants::Variant;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

use super::files::{hex, publish, temp_beside};
use super::gear::{builder_rustc_flags, gear_post_process};
pub use super::toolchain::PROFILE;
pub use super::toolchain::TARGET;

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
    /// Bytes of padding after the allocator's static state (galloc's `layout-pad-*`), to give a
    /// plain build its probe build's heap base; 0 for every build that is reported as is.
    pub layout_pad: u32,
    /// Bytes by which every static, and so the heap base, is placed higher than the linker
    /// places them by itself (`--global-base`): a point of the layout sweep, as a program with
    /// that much more static data would have it. Only the program is re-linked; 0 for every
    /// build reported as is.
    pub layout_offset: u32,
    /// Bytes by which the heap base alone is placed higher, every static left where the linker
    /// puts it: a zeroed block linked after the last static ([`super::relink::skip_object`]).
    /// An experiment (what share of the layout spread is the allocator's), never a
    /// build reported as deployed; 0 for every other build.
    pub heap_skip: u32,
    /// More `galloc` features, comma-separated ("" for none): not variants, but switches a
    /// maintainer (or the gate's own test, with `gate-canary`) adds to a variant.
    pub extra_features: &'a str,
    /// A program outside the lab's workspace (`package` is then its package name), built
    /// through a `galloc` patch ([`crate::build::external`]); `None` for the lab's own contracts.
    pub external: Option<&'a crate::build::external::Program>,
}

/// galloc's feature for the probe's twin ([`crate::run::measure::Builds`]): given through
/// [`BuildRequest::extra_features`], as it is a switch on a plain build.
pub const TWIN_FEATURE: &str = "probe-twin";

impl<'a> BuildRequest<'a> {
    /// The lab's own `package` with `variant`, as deployed: no probe, Gear's post-processing,
    /// the linker's layout, no extra feature.
    pub fn deployed(package: &'a str, variant: &'static Variant) -> Self {
        BuildRequest {
            package,
            variant,
            probe: false,
            post: PostProcess::Gear,
            layout_pad: 0,
            layout_offset: 0,
            heap_skip: 0,
            extra_features: "",
            external: None,
        }
    }

    /// Whether this is a probe's twin (the probe's statics, no brackets).
    pub fn is_twin(&self) -> bool {
        self.extra_features.split(',').any(|f| f == TWIN_FEATURE)
    }

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
        if self.layout_offset > 0 {
            config.push_str(&format!("+at{}", self.layout_offset));
        }
        if self.heap_skip > 0 {
            config.push_str(&format!("+skip{}", self.heap_skip));
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

impl Artifact {
    /// What the module imports and exports ([`crate::build::wasm::inspect`]); a module Gear would
    /// reject is an error naming the file and the way to a fresh build.
    pub fn inspect(&self) -> Result<crate::build::wasm::WasmInfo> {
        crate::build::wasm::inspect(&self.bytes).with_context(|| {
            format!(
                "{} ({}) is a module Gear would reject. It matches the lab's record of its \
                 build, so the build itself made it: rebuild it from clean sources (`git \
                 status` in the crate; delete the file and rerun), and if a fresh build is \
                 rejected too, the program or allocator uses a Wasm feature Gear lacks",
                self.path.display(),
                self.config
            )
        })
    }
}

/// Builds `req` with [`PROFILE`] for [`TARGET`] and collects (and post-processes) the `.wasm`.
pub fn build(ws: &Workspace, req: BuildRequest<'_>) -> Result<Artifact> {
    let config = req.config();
    // A variant with no feature is a program that names none: galloc's default (`shipping`).
    let mut galloc_features: Vec<String> = Some(req.variant.feature)
        .filter(|f| !f.is_empty())
        .map(str::to_owned)
        .into_iter()
        .collect();
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
    let cargo_home = super::config::cargo_home()?;
    let mut cmd = crate::build::workspace::cargo_command();
    cmd.args(["rustc", "--profile", PROFILE, "--quiet", "--lib"])
        .args(["--target", TARGET]);
    // An outside program, the directory its build shares with every other (its build
    // directory, the galloc shim) and the variant the shim links, written under the lock.
    let mut outside = None;
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
            let galloc = crate::build::external::galloc_manifest(ws, &config, &features)?;
            let target_dir = program.target_dir(ws);
            let shared = crate::build::shared::dir(ws);
            // `--crate-type cdylib` makes the Wasm whatever the manifest lists (`rlib` beside
            // `cdylib` in Sails crates).
            cmd.args(["--crate-type", "cdylib"]);
            crate::build::shared::outside_options(&mut cmd, ws, program, &target_dir)?;
            outside = Some((program, shared, galloc));
            target_dir
        }
    };
    let dir = ws
        .artifacts_dir()
        .join(req.external.map_or(req.package, |p| p.key.as_str()));
    let raw = dir.join(format!("{config}.wasm"));
    // A plain build at the linker's own layout keeps its link: the layout points re-link it.
    let keep_link = !req.probe
        && !req.is_twin()
        && req.layout_pad == 0
        && req.layout_offset == 0
        && req.heap_skip == 0;
    super::relink::link_through_lab(
        &mut cmd,
        TARGET,
        keep_link.then(|| super::relink::stash_of(&raw)).as_deref(),
    )?;
    let (mut base_flags, canonical) = relink_plan(ws, req)?;
    let skip = match req.heap_skip {
        0 => None,
        bytes => Some(super::relink::skip_object(ws, bytes)?),
    };
    if let Some(object) = &skip {
        base_flags.extend(["-C".into(), format!("link-arg={}", object.display())]);
    }
    // The rustflags the crate's own cargo config gives this target, which cargo would ignore
    // once the variable below is set ([`super::config`]): first, then the lab's remaps.
    let runs_in = cmd
        .get_current_dir()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| ws.root().to_path_buf());
    let mut rustflags = super::config::rustflags(&runs_in)?;
    // `cargo rustc`'s own arguments come before the rustflags on rustc's command line, and the
    // linker takes the last `--global-base`: where the author's config sets one and the lab
    // moves the layout, the lab's flags go after theirs so that they win there, and only there.
    if super::config::global_base(&rustflags).is_some() && !base_flags.is_empty() {
        rustflags.append(&mut base_flags);
    }
    rustflags.extend(remap_flags(ws.root(), &cargo_home));
    cmd.arg("--target-dir")
        .arg(&target_dir)
        .arg("--")
        .args(builder_rustc_flags()?)
        .args(base_flags)
        .env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"))
        .env("__CARGO_DEFAULT_LIB_METADATA", "galloc-lab")
        .env_remove("RUSTFLAGS");
    let stamp = match req.external {
        None => Some(Stamp::new(ws, req.package, &config, &cmd, &cargo_home)?),
        Some(_) => None,
    };
    if let Some(bytes) = stamp.as_ref().and_then(|s| s.fresh(&raw)) {
        return finish(req, config, dir, raw, bytes);
    }
    if let Some((canonical, base)) = &canonical {
        if let Some(stash) =
            super::relink::Stash::verified(&canonical.path, &canonical.sha256, &canonical.bytes)?
        {
            let bytes = stash.link(*base, skip.as_deref())?;
            collect(&dir, &raw, &bytes, stamp.as_ref())?;
            return finish(req, config, dir, raw, bytes);
        }
    }
    std::fs::create_dir_all(&target_dir)
        .with_context(|| format!("cannot create {}", target_dir.display()))?;
    let lock = super::files::build_lock(&target_dir)?;
    // The program's lock first, then the shared one (the only order anything takes them in):
    // the shim and the build directory every outside program shares stay as this build wrote
    // them until it has read what cargo made.
    let mut shared_lock = None;
    if let Some((program, shared, variant)) = outside {
        std::fs::create_dir_all(&shared)
            .with_context(|| format!("cannot create {}", shared.display()))?;
        shared_lock = Some(super::files::build_lock(&shared)?);
        super::shared::galloc_shim(&shared.join("galloc"), &variant)?;
        // Under the lock: a copy of the author's `Cargo.lock` as it is now, for cargo to
        // resolve the patched build into (given by `shared::outside_options` above).
        program.private_lock(&target_dir)?;
        // No unit another crate of this one's name left in the shared build directory is
        // taken for one of its own.
        let mut metadata = super::shared::metadata_command();
        crate::build::shared::outside_options(&mut metadata, ws, program, &target_dir)?;
        let members = super::shared::members(&mut metadata, &program.manifest)?;
        let mut clean = super::shared::clean_command(&target_dir, &members);
        crate::build::shared::outside_options(&mut clean, ws, program, &target_dir)?;
        super::shared::claim(&shared, &members, &mut clean)?;
    }
    let out = crate::build::process::output(&mut cmd)
        .with_context(|| format!("cannot run cargo to build {} ({config})", req.package))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let hint = if stderr.contains("target may not be installed")
            || stderr.contains("can't find crate for `core`")
        {
            format!("\nhint: the {TARGET} target is missing; run `just setup`")
        } else {
            String::new()
        };
        let what = match req.external {
            None => req.package.to_owned(),
            Some(program) => format!("{} ({})", req.package, program.manifest.display()),
        };
        let said = match stderr.trim_end() {
            // Killed (its supervisor or cargo itself, by a signal from outside the lab): cargo
            // printed nothing, and an empty "failed:" said less than the exit does.
            "" => format!(
                " cargo ended with {} and printed nothing (it was stopped from outside the lab?)",
                out.status
            ),
            text => format!("\n{text}"),
        };
        bail!("building {what} for variant `{config}` failed:{said}{hint}");
    }
    let file = match req.external {
        None => format!("{}.wasm", req.package.replace('-', "_")),
        Some(program) => format!("{}.wasm", program.lib_name),
    };
    let built = super::files::built(&target_dir, &file);
    let bytes = std::fs::read(&built)
        .with_context(|| format!("cargo succeeded but {} is missing", built.display()))?;
    drop(shared_lock);
    drop(lock);
    super::toolchain::check_built_by(&bytes, &format!("{} ({config})", built.display()))?;
    collect(&dir, &raw, &bytes, stamp.as_ref())?;
    finish(req, config, dir, raw, bytes)
}

/// `req`'s program placed from the linker's own layout instead of its crate's: its plain build
/// (with the crate's cargo config, [`super::config`]) re-linked without the `--global-base` that
/// config gives it, then its statics `offset` bytes higher than the linker puts them (0: where
/// it puts them). What `lab layout` measures a crate that sets its own layout against, so that
/// its choice is the same before and after the author applies it. Needs the plain build's kept
/// link ([`super::relink`]).
pub fn from_linker(ws: &Workspace, req: BuildRequest<'_>, offset: u32) -> Result<Artifact> {
    check_offset(offset)?;
    let plain = build(
        ws,
        BuildRequest {
            layout_offset: 0,
            heap_skip: 0,
            post: PostProcess::None,
            ..req
        },
    )?;
    let stash = super::relink::Stash::verified(&plain.path, &plain.sha256, &plain.bytes)?
        .with_context(|| {
            format!(
                "{} sets its own `--global-base`, and the lab places such a program from the \
                 linker's own layout by re-linking its build, which could not be done here (see \
                 the warning above); build the lab (`cargo build -p galloc-lab`) and try again",
                plain.path.display()
            )
        })?;
    let linker = stash.link_from_linker(None)?;
    let bytes = match offset {
        0 => linker,
        _ => {
            let start = crate::build::wasm::data_start(&linker)?
                .with_context(|| format!("{} has no static data to move", plain.path.display()))?;
            stash.link_from_linker(Some(u64::from(start) + u64::from(offset)))?
        }
    };
    let config = format!("{}+linker{offset}", plain.config);
    let dir = plain.path.parent().unwrap_or(ws.root()).to_path_buf();
    let raw = dir.join(format!("{config}.wasm"));
    collect(&dir, &raw, &bytes, None)?;
    finish(req, config, dir, raw, bytes)
}

/// The flags every build's rustc gets through cargo: the lab's root and cargo's home remapped,
/// so no path of this machine is in a program's bytes. As `CARGO_ENCODED_RUSTFLAGS` (flags
/// separated by 0x1f): `RUSTFLAGS` is split on spaces, and a lab checked out at a path with a
/// space gave rustc half a flag and built nothing.
fn remap_flags(root: &Path, cargo_home: &Path) -> [String; 2] {
    [
        format!("--remap-path-prefix={}=/lab", root.display()),
        format!("--remap-path-prefix={}=/cargo", cargo_home.display()),
    ]
}

/// Puts a build's `bytes` at `raw` in `dir` (untouched if they are already there) and records
/// them in its stamp: the same whether cargo linked them or they were re-linked.
fn collect(dir: &Path, raw: &Path, bytes: &[u8], stamp: Option<&Stamp>) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    if std::fs::read(raw).ok().as_deref() != Some(bytes) {
        let tmp = temp_beside(raw);
        std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
        publish(&tmp, raw)?;
    }
    if let Some(stamp) = stamp {
        stamp.write(bytes)?;
    }
    Ok(())
}

/// The plain build a point is re-linked from, and where its statics go (`None`: they stay).
type Relink = (Artifact, Option<u64>);

/// Largest layout offset a build can be given (bytes): four Gear pages.
pub const MAX_LAYOUT_OFFSET: u32 = 64 * 1024;

/// A layout offset a build can be given, or an error saying which can.
fn check_offset(offset: u32) -> Result<()> {
    if !offset.is_multiple_of(16) || offset > MAX_LAYOUT_OFFSET {
        bail!(
            "a layout offset of {offset} bytes cannot be built: it must be a multiple of 16 up \
             to {MAX_LAYOUT_OFFSET}"
        );
    }
    Ok(())
}

/// What a layout point or heap skip is re-linked from. A point: the linker flag that places
/// static data `req.layout_offset` bytes above where the linker puts it without an offset (read
/// from that build, made first: with the stack first, as Rust's Wasm targets link, data starts
/// right after it), that plain build and the address. A skip: the plain build alone (the caller
/// adds its object). The flag reaches only the program's own compile and link.
fn relink_plan(ws: &Workspace, req: BuildRequest<'_>) -> Result<(Vec<String>, Option<Relink>)> {
    let offset = req.layout_offset;
    if offset == 0 {
        if req.heap_skip == 0 {
            return Ok((Vec::new(), None));
        }
        if !req.heap_skip.is_multiple_of(16) || req.heap_skip > MAX_LAYOUT_OFFSET {
            bail!(
                "a heap skip of {} bytes cannot be built: it must be a multiple of 16 up to \
                 {MAX_LAYOUT_OFFSET}",
                req.heap_skip
            );
        }
        // The plain build re-linked with the skip's block after the statics: no base to move.
        let canonical = build(
            ws,
            BuildRequest {
                heap_skip: 0,
                post: PostProcess::None,
                ..req
            },
        )?;
        return Ok((Vec::new(), Some((canonical, None))));
    }
    if req.heap_skip > 0 {
        bail!("a heap skip is measured at the linker's layout: give no layout offset with it");
    }
    check_offset(offset)?;
    let canonical = build(
        ws,
        BuildRequest {
            layout_offset: 0,
            post: PostProcess::None,
            ..req
        },
    )?;
    let start = crate::build::wasm::data_start(&canonical.bytes)?.with_context(|| {
        format!(
            "{} has no static data to move: a layout offset needs a data segment",
            canonical.path.display()
        )
    })?;
    let base = u64::from(start) + u64::from(offset);
    Ok((
        vec!["-C".into(), format!("link-arg=--global-base={base}")],
        Some((canonical, Some(base))),
    ))
}

/// Post-processes the collected `raw` copy (`bytes`) as `req` asks. A post-processed file
/// already beside it is used only if its record ([`Recorded`]) says it was made from these very
/// bytes and it still hashes to what was made; anything else (a new build, a file edited or
/// damaged since) is post-processed again.
fn finish(
    req: BuildRequest<'_>,
    config: String,
    dir: PathBuf,
    raw: PathBuf,
    bytes: Vec<u8>,
) -> Result<Artifact> {
    let heap_base = crate::build::wasm::exported_global(&bytes, "__heap_base")
        .with_context(|| format!("{} is not a Wasm module the lab can read", raw.display()))?;
    let (path, bytes) = match req.post {
        PostProcess::None => (raw, bytes),
        PostProcess::Gear => {
            let opt = dir.join(format!("{config}.opt.wasm"));
            let record = Recorded::of(&opt);
            let source = hex(&Sha256::digest(&bytes));
            match record.check(&source) {
                Check::Fresh(made) => (opt, made),
                check => {
                    if let Check::Altered(found) = check {
                        eprintln!(
                            "warning: {} is not the file the lab built (SHA-256 {found}, recorded \
                             {}); rebuilding it",
                            opt.display(),
                            record.path.display()
                        );
                    }
                    let tmp = temp_beside(&opt);
                    gear_post_process(&raw, &tmp)?;
                    let made = std::fs::read(&tmp)
                        .with_context(|| format!("cannot read {}", tmp.display()))?;
                    publish(&tmp, &opt)?;
                    record.write(&source, &made)?;
                    (opt, made)
                }
            }
        }
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each flag reaches rustc whole, a path with a space in it too.
    #[test]
    fn a_root_with_a_space_stays_one_flag() {
        let flags = remap_flags(Path::new("/w/a lab"), Path::new("/h/my cargo"));
        assert_eq!(
            flags,
            [
                "--remap-path-prefix=/w/a lab=/lab",
                "--remap-path-prefix=/h/my cargo=/cargo"
            ]
        );
    }

    /// A module Gear would reject is named, with the way to a fresh build.
    #[test]
    fn a_rejected_module_names_its_file() {
        let artifact = Artifact {
            config: "bump+probe".into(),
            path: PathBuf::from("target/artifacts/lab-nft/bump+probe.opt.wasm"),
            bytes: wat::parse_str("(module (func (result f32) (f32.const 1)))").unwrap(),
            sha256: String::new(),
            heap_base: None,
        };
        let err = format!("{:#}", artifact.inspect().unwrap_err());
        for part in [
            "target/artifacts/lab-nft/bump+probe.opt.wasm (bump+probe) is a module Gear would reject",
            "delete the file and rerun",
            "beyond WASM 1.0",
        ] {
            assert!(err.contains(part), "`{part}` not in: {err}");
        }
    }
}
