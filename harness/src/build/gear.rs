//! gear-wasm-builder 2.0's own steps, as the lab repeats them for every build: the flags it
//! gives `rustc` for a program crate, and its post-processing of the linked module.

use super::toolchain::rustc_version;
use anyhow::{Context, Result};
use std::path::Path;

/// The flags gear-wasm-builder 2.0 passes to `rustc` for the program crate, by rustc version
/// (`CargoCommand::new` in gear-wasm-optimizer).
pub(super) fn builder_rustc_flags() -> Result<Vec<&'static str>> {
    let version = rustc_version()?.lines().next().unwrap_or_default();
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
pub(super) fn gear_post_process(raw: &Path, opt: &Path) -> Result<()> {
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
            "wasm-opt failed on {}: {e}\nhint: run `just setup` (installs binaryen)",
            opt.display()
        )
    })?;
    Ok(())
}
