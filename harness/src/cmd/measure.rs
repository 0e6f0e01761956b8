//! `lab measure`: every case × variant on the embedded backends; writes the results files
//! and the report.

use anyhow::{bail, Result};
use galloc_lab::measure::{
    case_rows, measure_case, message_rows, validate, Builds, CaseMeasurement,
};
use galloc_lab::report;
use galloc_lab::results::{merge, write_csv, ArtifactRow, OpRow, TotalRow, ValidationRow};
use galloc_lab::scenario::{self, Scenario};
use galloc_lab::workspace::Workspace;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;

/// Backends this command can run.
const BACKENDS: &[&str] = &["gtest"];

#[derive(clap::Args)]
pub struct Args {
    /// Comma-separated case ids, `default`, or `all` (adds the on-demand cases).
    #[arg(long, default_value = "default")]
    cases: String,
    /// Comma-separated variant ids, or `all`.
    #[arg(long, default_value = "all")]
    variants: String,
    /// Comma-separated backends.
    #[arg(long, default_value = "gtest")]
    backends: String,
    /// No progress bar (for CI logs).
    #[arg(long)]
    quiet: bool,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let cases = scenario::select(&args.cases)?;
    let variants = galloc_variants::select(&args.variants)?;
    for backend in args.backends.split(',').map(str::trim) {
        if !BACKENDS.contains(&backend) {
            bail!(
                "unknown backend `{backend}`; available here: {}",
                BACKENDS.join(", ")
            );
        }
    }
    let scenarios: Vec<Scenario> = cases.iter().map(|c| (c.make)()).collect();

    // Build everything first: a build error stops before any run.
    let mut builds: BTreeMap<(&str, &str), Builds> = BTreeMap::new();
    for s in &scenarios {
        for v in &variants {
            if let std::collections::btree_map::Entry::Vacant(slot) =
                builds.entry((s.package, v.id))
            {
                let log = |line: &str| {
                    if !args.quiet {
                        eprintln!("{line}");
                    }
                };
                slot.insert(Builds::new(ws, s.package, v, log)?);
            }
        }
    }

    let artifact_rows: Vec<ArtifactRow> = builds
        .iter()
        .flat_map(|((package, variant), b)| b.rows(package, variant))
        .collect();

    // Three runs per case and variant: plain, probe, twin.
    let total_messages: u64 = scenarios
        .iter()
        .map(|s| (s.steps.len() as u64 + 1) * 3 * variants.len() as u64)
        .sum();
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(total_messages)
    };
    bar.set_style(
        ProgressStyle::with_template("{msg:40} [{bar:30}] {pos}/{len} messages, ETA {eta}")
            .expect("valid template"),
    );

    let (mut totals, mut ops, mut checks) = (Vec::new(), Vec::new(), Vec::new());
    let mut per_message = Vec::new();
    let mut measured: BTreeMap<(&str, &str), Vec<(&Scenario, CaseMeasurement)>> = BTreeMap::new();
    for s in &scenarios {
        for v in &variants {
            let b = &builds[&(s.package, v.id)];
            let m = measure_case(b, s, |config| {
                bar.set_message(format!("{} {config}", s.case));
                bar.inc(1);
            })?;
            if b.twin.is_none() {
                bar.inc(m.plain.messages.len() as u64);
            }
            let (total, op_rows) = case_rows(s, v, &m, b.plain.bytes.len() as u64);
            totals.push(total);
            ops.extend(op_rows);
            per_message.extend(message_rows(s, v, &m));
            measured.entry((s.package, v.id)).or_default().push((s, m));
        }
    }
    // The probe's overhead is a property of each build: validated over all its cases at once.
    for ((package, variant), runs) in &measured {
        let v = galloc_variants::find(variant)?;
        let runs: Vec<_> = runs.iter().map(|(s, m)| (*s, m)).collect();
        checks.extend(validate(v, &builds[&(*package, *variant)], &runs));
    }
    bar.finish_and_clear();

    let dir = ws.results_dir();
    let totals = merge(&dir.join("totals.csv"), totals, |r: &TotalRow| {
        key(&r.backend, &r.case, &r.variant)
    })?;
    let ops = merge(&dir.join("ops.csv"), ops, |r: &OpRow| {
        key(&r.backend, &r.case, &r.variant)
    })?;
    let checks = merge(
        &dir.join("probe-validation.csv"),
        checks,
        |r: &ValidationRow| key(&r.backend, &r.case, &r.variant),
    )?;
    write_csv(&dir.join("totals.csv"), &totals)?;
    write_csv(&dir.join("ops.csv"), &ops)?;
    write_csv(&dir.join("probe-validation.csv"), &checks)?;
    let artifact_rows = merge(
        &dir.join("artifacts.csv"),
        artifact_rows,
        |r: &ArtifactRow| {
            (
                r.package.clone(),
                key("gtest", "", &r.variant).1,
                r.build.clone(),
            )
        },
    )?;
    write_csv(&dir.join("artifacts.csv"), &artifact_rows)?;
    // Per-message rows are large; they live beside the build, not in results/.
    write_csv(&ws.root().join("target/lab/messages.csv"), &per_message)?;
    std::fs::write(
        dir.join("README.md"),
        report::markdown(&totals, &ops, &checks),
    )?;
    println!("{}", report::summary(&totals));
    eprintln!("wrote results/{{totals,ops,probe-validation,artifacts}}.csv and results/README.md");
    Ok(())
}

fn key(backend: &str, case: &str, variant: &str) -> (usize, usize, usize) {
    let case = scenario::CASES
        .iter()
        .position(|c| c.id == case)
        .unwrap_or(usize::MAX);
    let variant = galloc_variants::VARIANTS
        .iter()
        .position(|v| v.id == variant)
        .unwrap_or(usize::MAX);
    let backend = BACKENDS
        .iter()
        .position(|b| *b == backend)
        .unwrap_or(usize::MAX);
    (case, variant, backend)
}
