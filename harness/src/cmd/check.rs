//! `lab check`: the regression gate. Compares a run's totals (`--current`, by default what
//! `just check` measured into `target/lab/check`) with the committed baseline (`results/`,
//! the results of `main`) and fails if any variant's total or allocator cost rose.

use anyhow::{bail, Context, Result};
use galloc_lab::analyse::gate::{compare, compare_layouts, layout_rows, table, unmatched};
use galloc_lab::build::workspace::Workspace;
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
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = tolerance)]
    tolerance_pct: f64,
}

/// A tolerance is a finite percentage, 0 or more: NaN compares false with everything, so
/// `--tolerance-pct NaN` used to pass any rise.
fn tolerance(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t >= 0.0 => Ok(t),
        Ok(t) => Err(format!(
            "{t} is not a tolerance: give a finite percentage, 0 or more (0: any rise fails)"
        )),
        Err(e) => Err(format!("`{text}`: {e}; give a percentage such as 0 or 0.5")),
    }
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let baseline_dir = args.baseline.unwrap_or_else(|| ws.results_dir());
    let given = args.current.is_some();
    let current_dir = args
        .current
        .unwrap_or_else(|| ws.root().join("target/lab/check"));
    if !current_dir.is_dir() {
        // `just check` measures into target/lab/check, so it is the fix only for that one.
        bail!(
            "no results in {}: {}",
            current_dir.display(),
            if given {
                "give a directory `lab measure --out` wrote (the run to judge), e.g. \
                 `lab measure --layouts 1 --out DIR`, then `lab check --current DIR`"
            } else {
                "run `just check` (it measures there first)"
            }
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
    let (_base_lock, baseline_inputs) =
        super::read_results(ws, &baseline_dir, true).context("the baseline cannot be used")?;
    let (_lock, current_inputs) =
        super::read_results(ws, &current_dir, false).context("the run to judge cannot be used")?;
    let (baseline, current) = (baseline_inputs.totals, current_inputs.totals);
    let unmatched = unmatched(&baseline, &current);
    if !unmatched.is_empty() {
        bail!(
            "{} rows are in one of the two result sets and not the other:\n  {}\na new variant \
             or case enters the baseline only through `just bless` (and a commit of results/)",
            unmatched.len(),
            unmatched.join("\n  ")
        );
    }
    let mut moved = compare(&baseline, &current, args.tolerance_pct);
    // The verdicts come from the sweep: every layout both sets ran must hold as well (offset 0
    // is the total above).
    moved.extend(compare_layouts(
        &baseline_inputs.layouts,
        &current_inputs.layouts,
        args.tolerance_pct,
    ));
    if moved.is_empty() {
        println!(
            "gate: {} rows and {} layout rows, all equal to the baseline in {}",
            current.len(),
            layout_rows(&baseline_inputs.layouts, &current_inputs.layouts),
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
