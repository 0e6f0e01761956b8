//! `lab sweep-check`: the default layout sweep held against a dense grid (docs/verdicts.md, "Is the
//! sweep enough?"). Reads a run made with `--layout-step` (`just sweep-check` makes it) and
//! prints, per variant and case, both sets' figures; fails if any verdict or median differs
//! beyond the stated tolerance.

use anyhow::{bail, Context, Result};
use galloc_lab::analyse::sweep;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::results::{read_csv, LayoutRow};
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::plan;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The dense run's directory (default: `target/lab/sweep-check`).
    #[arg(long)]
    results: Option<PathBuf>,
    /// The sweep to hold against the grid: this many points ...
    #[arg(long, default_value_t = plan::POINTS, allow_negative_numbers = true, value_parser = super::layouts)]
    layouts: u32,
    /// ... spread over one Gear page (`plan::offsets`, the lab's earlier sweep) instead of
    /// stratified over the Wasm page (`plan::stratified`, the default sweep) ...
    #[arg(long)]
    one_gear_page: bool,
    /// ... with the fuel meter at every this many of them.
    #[arg(long, default_value_t = plan::FUEL_STRIDE, allow_negative_numbers = true, value_parser = super::stride)]
    fuel_stride: usize,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let dir = args
        .results
        .unwrap_or_else(|| ws.root().join("target/lab/sweep-check"));
    let _lock = if dir.is_dir() {
        Some(galloc_lab::store::checked(ws, &dir)?)
    } else {
        None
    };
    let mut rows: Vec<LayoutRow> = Vec::new();
    for backend in ["gtest", "wasmtime"] {
        let path = dir.join(backend).join("layouts.csv");
        if path.exists() {
            rows.extend(read_csv(&path).with_context(|| format!("reading {}", path.display()))?);
        }
    }
    if rows.is_empty() {
        bail!(
            "{} holds no layouts.csv: make the dense run first (`just sweep-check` does)",
            dir.display()
        );
    }
    let sweep = plan::sweep(args.layouts, args.one_gear_page)?;
    println!(
        "{} points {}, on the fuel meter {}, against the grid in {}:\n",
        args.layouts,
        if args.one_gear_page {
            "over one Gear page"
        } else {
            "stratified over the Wasm page"
        },
        match args.fuel_stride.max(1) {
            1 => "every one".to_owned(),
            n => format!("every {n}th"),
        },
        dir.display()
    );
    let checked = sweep::check(&rows, |backend| {
        BackendKind::from_name(backend)
            .map(|b| plan::on(b, &sweep, args.fuel_stride))
            .unwrap_or_default()
    })?;
    print!("{}", sweep::render(&checked));
    let off = checked.iter().filter(|r| !r.agrees()).count();
    if off > 0 {
        bail!(
            "{off} of {} variant–case pairs reach another verdict or median with this sweep \
             than with the dense grid: the sweep is not enough for them",
            checked.len()
        );
    }
    Ok(())
}
