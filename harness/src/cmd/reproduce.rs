//! `lab reproduce`: a reproduction of someone else's allocator (a registry variant with
//! `reproduces`) on its case, beside the variants it is held against, over the heap layouts
//! of the sweep on gtest; every message is sent whatever comes back, and the wrong outcomes
//! are counted, not fatal. Writes `results/<variant>/`: its own result set (manifest, hashes,
//! lock), its report and its chart.

use anyhow::{bail, Context, Result};
use galloc_lab::build::artifact::{build, BuildRequest};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::report::reproduction::{chart_file, Reproduction, BACKEND};
use galloc_lab::results::{
    write_csv, ArtifactRow, CostRow, LayoutRow, MeasuredRow, OutcomeRow, MANIFEST,
};
use galloc_lab::run::backend::{BackendKind, Unit};
use galloc_lab::run::cores::on_every_core;
use galloc_lab::run::execute::run_recording;
use galloc_lab::run::plan;
use galloc_lab::run::scenario;
use galloc_lab::store::metadata;
use galloc_variants::{Variant, REFERENCE};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The reproduction: a registry variant that names the case it reproduces.
    #[arg(default_value = "pr4853")]
    variant: String,
    /// The variants it is held against, comma-separated; shipping must be among them (every
    /// figure is against it).
    #[arg(long, default_value = "shipping,gear-next")]
    against: String,
    /// Heap layouts per build, stratified over the Wasm page as `lab measure`'s sweep.
    #[arg(long, default_value_t = plan::POINTS, allow_negative_numbers = true, value_parser = super::layouts)]
    layouts: u32,
    /// Where to write (default: `results/<variant>/`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let repro = galloc_variants::find(&args.variant)?;
    let Some(case_id) = repro.reproduces else {
        let known: Vec<&str> = galloc_variants::VARIANTS
            .iter()
            .filter(|v| v.reproduces.is_some())
            .map(|v| v.id)
            .collect();
        bail!(
            "`{}` is a variant the lab measures, not a reproduction: `lab measure --variants {}` \
             measures it; `lab reproduce` takes one of: {}",
            repro.id,
            repro.id,
            known.join(", ")
        );
    };
    let mut variants: Vec<&'static Variant> = galloc_variants::select(&args.against)?;
    if !variants.iter().any(|v| v.id == REFERENCE) {
        bail!(
            "--against {}: add {REFERENCE}: every figure of a reproduction is against it",
            args.against
        );
    }
    variants.retain(|v| v.id != repro.id);
    variants.push(repro);
    let case = scenario::select(case_id)?[0];
    let scenario = (case.make)();
    let offsets = plan::sweep(args.layouts, false)?;
    let given = args.out.is_some();
    let out = std::path::absolute(args.out.unwrap_or_else(|| ws.results_dir().join(repro.id)))
        .context("resolving --out")?;
    galloc_lab::store::destination::check(ws, &out, given)?;

    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new((variants.len() * offsets.len() * (scenario.steps.len() + 1)) as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{msg:44} [{bar:30}] {pos}/{len} messages, ETA {eta}")
            .expect("valid template"),
    );
    // Builds first (cargo locks its target directory; each layout is a re-link), then the runs
    // on every core, each on a fresh gtest chain; results are put back in order.
    let mut artifacts = Vec::new();
    for v in &variants {
        let plain = BuildRequest::deployed(scenario.package, v);
        bar.set_message(format!("building {} for {}", scenario.package, v.id));
        let mut at = vec![(0, build(ws, plain)?)];
        at.extend(galloc_lab::build::sweep::builds(
            ws,
            plain,
            &offsets,
            |line| bar.set_message(line.to_owned()),
        )?);
        artifacts.push(at);
    }
    let jobs: Vec<(usize, usize)> = (0..variants.len())
        .flat_map(|vi| (0..offsets.len()).map(move |oi| (vi, oi)))
        .collect();
    let done = on_every_core(&jobs, |&(vi, oi)| {
        let artifact = &artifacts[vi][oi].1;
        bar.set_message(format!("{BACKEND} {} {}", scenario.case, artifact.config));
        let mut b = BackendKind::Gtest.create()?;
        run_recording(b.as_mut(), &artifact.bytes, &scenario, || bar.inc(1))
            .with_context(|| format!("{} on {BACKEND} ({})", scenario.case, artifact.config))
    });
    bar.finish_and_clear();
    let done = done?;

    let mut rows = Reproduction {
        variant: repro.id.into(),
        case: scenario.case.into(),
        layouts: Vec::new(),
        outcomes: Vec::new(),
        costs: Vec::new(),
    };
    let mut artifact_rows = Vec::new();
    for (j, &(vi, oi)) in jobs.iter().enumerate() {
        let (v, (offset, artifact)) = (variants[vi], &artifacts[vi][oi]);
        let (run, wrong) = &done[j];
        // Only the reproduction may go wrong: a variant held against it that does has a bug
        // of its own (`lab measure` names it too).
        if let (false, Some(w)) = (v.id == repro.id, wrong.first()) {
            bail!(
                "{} on {BACKEND} ({}): {}",
                scenario.case,
                artifact.config,
                w.why
            );
        }
        let row: LayoutRow = galloc_lab::run::measure::layout_row(
            &scenario,
            v.id,
            BackendKind::Gtest,
            Unit::Gas,
            *offset,
            artifact,
            run,
        )?;
        rows.layouts.push(row);
        rows.outcomes.push(OutcomeRow {
            backend: BACKEND.into(),
            case: scenario.case.into(),
            variant: v.id.into(),
            offset: *offset,
            messages: run.messages.len() as u64,
            failed: run.messages.iter().filter(|m| m.failed).count() as u64,
            wrong: wrong.len() as u64,
            first_wrong: wrong.first().map(|w| w.index as u64),
            first_wrong_why: wrong.first().map_or(String::new(), |w| w.why.clone()),
        });
        if *offset == 0 {
            rows.costs.extend(run.messages.iter().map(|m| CostRow {
                backend: BACKEND.into(),
                case: scenario.case.into(),
                variant: v.id.into(),
                unit: Unit::Gas.name().into(),
                message: m.index as u64,
                cost: m.cost,
                failed: m.failed,
                wrong: wrong.iter().any(|w| w.index == m.index),
            }));
        }
        artifact_rows.push(ArtifactRow {
            package: scenario.package.into(),
            variant: v.id.into(),
            build: if *offset == 0 { "plain" } else { "layout" }.into(),
            layout_offset: *offset,
            bytes: artifact.bytes.len() as u64,
            heap_base: artifact.heap_base.unwrap_or(0),
            sha256: artifact.sha256.clone(),
        });
    }

    // Written to a staged copy and moved into place all at once: a failure writes nothing.
    let staged = galloc_lab::store::publish::Staged::begin(ws, &out)?;
    let summary = format!("{} {}", repro.summary, case.summary);
    let wrote = staged.explain((|| -> Result<()> {
        let dir = &staged.dir;
        let measured: Vec<MeasuredRow> = variants
            .iter()
            .map(|v| MeasuredRow {
                backend: BACKEND.into(),
                case: scenario.case.into(),
                variant: v.id.into(),
            })
            .collect();
        write_csv(&dir.join(MANIFEST), &measured)?;
        write_csv(&dir.join("artifacts.csv"), &artifact_rows)?;
        rows.write(dir)?;
        galloc_lab::results::write_file(
            &dir.join("README.md"),
            rows.markdown(&summary).as_bytes(),
        )?;
        std::fs::create_dir_all(&staged.images)?;
        rows.chart(&staged.images.join(chart_file(&rows.case)))?;
        metadata::write_for(ws.root(), dir, &format!("just {}", repro.id), None)
    })());
    wrote?;
    staged.commit()?;
    let first = rows
        .first_wrong()
        .map_or("never".to_owned(), |m| format!("at message {m}"));
    println!(
        "{}: {} goes wrong {first} at the linker's layout; report: {}",
        scenario.case,
        repro.id,
        out.join("README.md").display()
    );
    Ok(())
}
