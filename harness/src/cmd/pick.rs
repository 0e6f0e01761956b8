//! `lab pick CRATE SCENARIO`: the variant a program should use, in one answer.
//!
//! It measures the program as `lab measure --program` does (every variant, the layout sweep),
//! on gtest by default (gas: what Gear charges), then applies the ship rule with the program's
//! layouts as its deployments ([`galloc_lab::analyse::pick::for_program`], docs/ship.md, "One
//! program"): the program's heap may start at any of them after its next change, so a variant
//! must be cheaper on average over them with certainty, and dearer at few; of those, the lowest
//! mean; `shipping` (change nothing) when none is. Never the floor, nor a variant that fails one
//! of the lab's own tests (the registry's `fails`): the answer names what it left out and why.

use anyhow::{bail, Result};
use galloc_lab::analyse::layout::SHIPPING;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::report::pick::Pick;
use galloc_lab::results::{read_csv, LayoutRow};
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::plan;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The program's crate directory (or its `Cargo.toml`).
    program: PathBuf,
    /// Its scenario file (docs/your-program.md, "Measuring another program").
    scenario: PathBuf,
    /// The variants to choose among, comma-separated, or `all`; `shipping` is always measured
    /// (every figure is relative to it).
    #[arg(long, default_value = "all")]
    variants: String,
    /// The backend whose unit decides: `gtest` (gas, Gear's own charge) or `wasmtime` (fuel).
    #[arg(long, default_value = "gtest")]
    backend: String,
    /// Heap layouts to run each build at (docs/verdicts.md, "Verdicts across heap layouts").
    #[arg(long, default_value_t = plan::POINTS, allow_negative_numbers = true, value_parser = super::layouts)]
    layouts: u32,
    /// More workloads of the program, not chosen from: the layout `lab pick` offers beside its
    /// variant is measured on these too, and recommended only where each is cheaper (as `lab
    /// layout CRATE SCENARIO SECOND...` does). Without one, the layout is said to be untested.
    #[arg(long = "second", value_name = "SCENARIO")]
    seconds: Vec<PathBuf>,
    /// Where the measurement is written (default: `target/lab/programs/<package>-<path
    /// hash>/<scenario name>/`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// No progress bar and no build log.
    #[arg(long)]
    quiet: bool,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let backend = match BackendKind::select(&args.backend)?.as_slice() {
        [one] if *one != BackendKind::Node => *one,
        _ => bail!(
            "--backend {}: give one embedded backend, `gtest` (gas) or `wasmtime` (fuel)",
            args.backend
        ),
    };
    let mut variants: Vec<&str> = galloc_variants::select(&args.variants)?
        .iter()
        .map(|v| v.id)
        .collect();
    if !variants.contains(&SHIPPING) {
        variants.insert(0, SHIPPING);
    }
    if variants.len() < 2 {
        bail!(
            "--variants {}: name at least one variant besides shipping",
            args.variants
        );
    }
    let case = galloc_lab::build::external::case_of(&args.scenario)?.to_owned();
    let program = galloc_lab::build::external::Program::at(&args.program)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| galloc_lab::build::external::default_out(ws, &program, &case));
    // The same stages as `lab measure`: plan, build and run, write and render; then the rule
    // for one program over the rows written.
    // Gas decides; the fuel meter beside it counts the pages, so the answer can say where the
    // pick's gain comes from (docs/ship.md, "Where the gas goes").
    let backends = match backend {
        BackendKind::Gtest => "gtest,wasmtime",
        other => other.name(),
    };
    let measuring = super::measure::Args::program(
        &args.program,
        &args.scenario,
        &variants.join(","),
        backends,
        args.layouts,
        &out,
        args.quiet,
    );
    let plan = super::measure::Plan::of(ws, &measuring)?;
    let cache = galloc_lab::run::cache::RunCache::new(ws.root().join("target/lab/cache"))?;
    let executed = super::measure::execute(ws, &measuring, &plan, &cache)?;
    let source = super::measure::Source::of(&measuring, &plan.out, plan.program.as_ref())?;
    super::measure::publish(ws, &measuring, &plan, &cache, executed, source)?;

    // Read as `measure` wrote it: no other command half way through writing there, every file
    // as the lab recorded it.
    let _lock = galloc_lab::store::checked(ws, &out)?;
    let path = out.join(backend.name()).join("layouts.csv");
    let rows: Vec<LayoutRow> = read_csv(&path)?;
    let pick = Pick::of(&rows, backend.name(), &case, &variants)?;
    println!(
        "{}",
        pick.answer(&case, backend, args.layouts, &ws.root().join("allocator"))
    );
    if backend == BackendKind::Gtest {
        println!("{}", where_from(ws, &out, &case, &pick)?);
        // One more thing the author may change, beside the allocator: where its statics and
        // heap fall, for the variant picked (its builds are the sweep's, already made).
        let scenarios: Vec<PathBuf> = std::iter::once(args.scenario.clone())
            .chain(args.seconds.iter().cloned())
            .collect();
        let layout = super::layout::advise(ws, &args.program, &scenarios, &pick.variant, None)?;
        println!("and its layout (`lab layout`, the same as `just layout`):\n{layout}");
    }
    Ok(())
}

/// One line: where the pick's gain comes from (or, when it picks shipping, the closest
/// candidate's change), by what Gear charges, on gtest against shipping; or why it cannot say.
fn where_from(ws: &Workspace, out: &std::path::Path, case: &str, pick: &Pick) -> Result<String> {
    let subject = match pick.variant.as_str() {
        SHIPPING => match pick.candidates.first() {
            Some(c) => c.variant.clone(),
            None => return Ok(String::new()),
        },
        v => v.to_owned(),
    };
    let inputs = galloc_lab::report::inputs::Inputs::read(out)?;
    // A variant whose calls here all take fresh pages has no price on this program alone: the
    // lab's own results give it one.
    let anatomy = galloc_lab::report::anatomy_rows::anatomy_borrowing(
        &ws.results_dir(),
        &inputs,
        &[SHIPPING, subject.as_str()],
    )?;
    Ok(match anatomy.against(&subject, SHIPPING, &[case]) {
        Some(p) => format!(
            "  where `{subject}`'s {:+.2} % comes from (gtest, in points, at {} the fuel meter \
             ran; docs/ship.md, \"Where the gas goes\"): {}",
            p.expected_pct,
            match p.deployments {
                1 => "the 1 layout".to_owned(),
                n => format!("the {n} layouts"),
            },
            galloc_lab::report::anatomy::sentence(&p)
        ),
        None => format!(
            "  where `{subject}`'s change comes from cannot be said: no layout has both gtest's \
             gas and the fuel meter's page counts, or `{subject}` has no allocator price"
        ),
    })
}
