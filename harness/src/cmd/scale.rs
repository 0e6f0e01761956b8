//! `lab scale`: the scale cases. Programs whose state grows by batches past 4 MiB of
//! live heap, with the same probe messages at checkpoints along the way, on gtest at a few
//! layouts of the sweep, every variant beside shipping. Each message's gas is kept with the
//! live heap it began with (the program's requests, read from shipping's probe build on the
//! wasmtime meter: the requests are the program's, the same for every variant). A message a
//! variant fails that the scenario expects to succeed is recorded, not fatal: it is a refusal
//! the target counts; shipping must serve every one.
//!
//! Everything goes to `results/scale/` (README.md, messages.csv, images/scale.png), written all
//! together or not at all.

use anyhow::{bail, Context, Result};
use galloc_lab::analyse::scale::{changes, live_at_start, standing, Part};
use galloc_lab::build::artifact::{build, BuildRequest};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::report::charts;
use galloc_lab::report::scale::{checkpoint_table, standing_table};
use galloc_lab::results::{write_csv, write_file, MeasuredRow, ScaleRow, MANIFEST, SCALE_DIR};
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::cores::on_every_core;
use galloc_lab::run::execute::{run_recording, trace_records, ProbeReads};
use galloc_lab::run::measure::run_build;
use galloc_lab::run::{plan, scenario};
use galloc_lab::store::metadata;
use galloc_variants::REFERENCE;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Scale cases, comma-separated.
    #[arg(long, default_value = "collection-scale,journal-scale")]
    cases: String,
    /// Variants, comma-separated, or `all`; `shipping` is always run.
    #[arg(long, default_value = "all")]
    variants: String,
    /// Layouts of the sweep to run each plain build at, stratified over the Wasm page as the
    /// sweep's (0, the linker's own, first).
    #[arg(long, default_value_t = 4, allow_negative_numbers = true, value_parser = super::count)]
    layouts: u32,
    /// Where the results go (default: `results/scale/`).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let cases = scenario::select(&args.cases)?;
    if let Some(c) = cases.iter().find(|c| scenario::scale::plan(c.id).is_none()) {
        bail!(
            "`{}` is not a scale case; the scale cases are collection-scale and journal-scale",
            c.id
        );
    }
    let mut variants = galloc_variants::select(&args.variants)?;
    if !variants.iter().any(|v| v.id == REFERENCE) {
        variants.insert(0, galloc_variants::find(REFERENCE)?);
    }
    let offsets = plan::sweep(args.layouts, false)?;
    let given = args.out.is_some();
    let out = args.out.unwrap_or_else(|| ws.results_dir().join(SCALE_DIR));
    galloc_lab::store::destination::check(ws, &out, given)?;

    // Builds first, one at a time (cargo locks its target directory; each layout is a re-link).
    let scenarios: Vec<_> = cases.iter().map(|c| (c.make)()).collect();
    let mut jobs = Vec::new();
    let mut probes = Vec::new();
    for scenario in &scenarios {
        let shipping = galloc_variants::find(REFERENCE)?;
        eprintln!(
            "building {} for {REFERENCE} with the probe",
            scenario.package
        );
        let probe = BuildRequest {
            probe: true,
            ..BuildRequest::deployed(scenario.package, shipping)
        };
        probes.push((scenario, build(ws, probe)?));
        for v in &variants {
            for &layout_offset in &offsets {
                eprintln!(
                    "building {} for {} at +{layout_offset}",
                    scenario.package, v.id
                );
                let req = BuildRequest {
                    layout_offset,
                    ..BuildRequest::deployed(scenario.package, v)
                };
                jobs.push((scenario, v.id, layout_offset, build(ws, req)?));
            }
        }
    }
    // The live heap at each message: shipping's requests, from its probe build's records.
    let live = on_every_core(&probes, |(scenario, probe)| {
        let (run, _) = run_build(
            probe,
            scenario,
            BackendKind::Wasmtime,
            ProbeReads::EveryMessage,
            || {},
        )?;
        let trace = trace_records(&run);
        let at_start = live_at_start(&trace, run.messages.len());
        Ok((scenario.case, at_start))
    })?;
    // Then the gtest runs on every core, each on a fresh chain.
    let runs = on_every_core(&jobs, |(scenario, variant, offset, artifact)| {
        let mut chain = BackendKind::Gtest.create()?;
        let (run, wrong) = run_recording(chain.as_mut(), &artifact.bytes, scenario, || {})
            .with_context(|| format!("{} on gtest ({})", scenario.case, artifact.config))?;
        if *variant == REFERENCE {
            if let Some(w) = wrong.first() {
                bail!(
                    "{} with {REFERENCE} at +{offset}: message {} {}; the scale case must be \
                     served by shipping",
                    scenario.case,
                    w.index,
                    w.why
                );
            }
        }
        let plan = scenario::scale::plan(scenario.case).expect("checked above");
        let live = &live
            .iter()
            .find(|(case, _)| *case == scenario.case)
            .expect("a live heap per case")
            .1;
        let checkpoints = plan.checkpoints();
        Ok(run
            .messages
            .iter()
            .filter(|m| m.index > 0)
            .map(|m| ScaleRow {
                case: scenario.case.into(),
                variant: (*variant).into(),
                offset: *offset,
                message: m.index as u32,
                checkpoint: checkpoints
                    .iter()
                    .position(|c| c.contains(&m.index))
                    .map(|c| c as u32),
                live_bytes: live.get(m.index).copied().unwrap_or(0),
                failed: wrong.iter().any(|w| w.index == m.index),
                gas: m.cost,
            })
            .collect::<Vec<_>>())
    })?;
    let rows: Vec<ScaleRow> = runs.into_iter().flatten().collect();

    let staged = galloc_lab::store::publish::Staged::begin(ws, &out)?;
    let wrote = staged.explain((|| -> Result<()> {
        let dir = &staged.dir;
        let case_ids: Vec<&str> = cases.iter().map(|c| c.id).collect();
        let variant_ids: Vec<&str> = variants.iter().map(|v| v.id).collect();
        let measured = MeasuredRow::every("gtest", &case_ids, &variant_ids);
        write_csv(&dir.join(MANIFEST), &measured)?;
        write_csv(&dir.join("messages.csv"), &rows)?;
        std::fs::create_dir_all(&staged.images)?;
        charts::scale::scale(&rows, &staged.images.join("scale.png"))?;
        let md = galloc_lab::report::scale::readme(&rows, &offsets);
        write_file(&dir.join("README.md"), md.as_bytes())?;
        metadata::write_for(ws.root(), dir, "just scale", None)
    })());
    wrote?;
    staged.commit()?;
    print!("{}", standing_table(&standing(&rows)));
    print!("{}", checkpoint_table(&changes(&rows, Part::Probes), &rows));
    println!("wrote {}", out.join("README.md").display());
    Ok(())
}
