//! `lab check`: the regression gate. Compares a run's totals (`--current`, by default what
//! `just check` measured into `target/lab/check`) with the committed baseline (`results/`,
//! the results of `main`) and fails if any variant's total or allocator cost rose.

use anyhow::{bail, Context, Result};
use galloc_lab::gate::{compare, table, unmatched};
use galloc_lab::report::Inputs;
use galloc_lab::workspace::Workspace;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Results directory holding the baseline (default: the committed `results/`).
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Results directory of the run to judge (default: `target/lab/check`).
    #[arg(long)]
    current: Option<PathBuf>,
    /// Allowed rise in percent before a row fails; 0 (the default) fails on any rise, since
    /// gas and fuel are deterministic.
    #[arg(long, default_value_t = 0.0)]
    tolerance_pct: f64,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let baseline_dir = args.baseline.unwrap_or_else(|| ws.results_dir());
    let current_dir = args
        .current
        .unwrap_or_else(|| ws.root().join("target/lab/check"));
    if !current_dir.is_dir() {
        bail!(
            "no results in {}: run `just check` (it measures there first)",
            current_dir.display()
        );
    }
    if !baseline_dir.is_dir() {
        bail!(
            "no baseline in {}: `just compare` writes it; commit it on main",
            baseline_dir.display()
        );
    }
    // A baseline is a whole result set, whatever directory holds it: a gate against a baseline
    // with rows or files missing would pass those rows unjudged.
    let baseline = Inputs::read_complete(&baseline_dir, true)
        .context("the baseline cannot be used")?
        .totals;
    let current_inputs =
        Inputs::read_complete(&current_dir, false).context("the run to judge cannot be used")?;
    let current = current_inputs.totals;
    let unmatched = unmatched(&baseline, &current);
    if !unmatched.is_empty() {
        bail!(
            "{} rows are in one of the two result sets and not the other:\n  {}\na new variant \
             or case enters the baseline only through `just bless` (and a commit of results/)",
            unmatched.len(),
            unmatched.join("\n  ")
        );
    }
    let moved = compare(&baseline, &current, args.tolerance_pct);
    if moved.is_empty() {
        println!(
            "gate: {} rows, all equal to the baseline in {}",
            current.len(),
            baseline_dir.display()
        );
        return Ok(());
    }
    println!("{}", table(&moved));
    let regressed = moved.iter().filter(|m| m.regressed).count();
    if regressed > 0 {
        bail!(
            "{regressed} of {} rows cost more than the baseline (tolerance {}%); if that is \
             intended, accept it with `just bless` and commit results/",
            current.len(),
            args.tolerance_pct
        );
    }
    println!("gate: nothing rose beyond {}%", args.tolerance_pct);
    Ok(())
}
