//! `lab measure`: every case × variant on the embedded backends; writes the results files
//! and the report.

use anyhow::{bail, Result};
use galloc::probe::Op;
use galloc_lab::backend::gtest::GtestBackend;
use galloc_lab::build::{build, Artifact, BuildRequest, PostProcess};
use galloc_lab::report;
use galloc_lab::results::{read_csv, round, write_csv, OpRow, TotalRow, ValidationRow};
use galloc_lab::run::{run_case, CaseRun};
use galloc_lab::scenario::{self, Scenario};
use galloc_lab::workspace::Workspace;
use galloc_variants::Variant;
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

    // Build every (package, variant, probe) first: a build error stops before any run.
    let mut artifacts: BTreeMap<(&str, &str, bool), Artifact> = BTreeMap::new();
    for s in &scenarios {
        for v in &variants {
            for probe in [false, true] {
                let key = (s.package, v.id, probe);
                if !artifacts.contains_key(&key) {
                    let req = BuildRequest {
                        package: s.package,
                        variant: v,
                        probe,
                        post: PostProcess::Gear,
                    };
                    if !args.quiet {
                        eprintln!("building {} for {}", s.package, req.config());
                    }
                    artifacts.insert(key, build(ws, req)?);
                }
            }
        }
    }

    let total_messages: u64 = scenarios
        .iter()
        .map(|s| (s.steps.len() as u64 + 1) * 2 * variants.len() as u64)
        .sum();
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(total_messages)
    };
    bar.set_style(
        ProgressStyle::with_template("{msg:32} [{bar:30}] {pos}/{len} messages, ETA {eta}")
            .expect("valid template"),
    );

    let (mut totals, mut ops, mut checks) = (Vec::new(), Vec::new(), Vec::new());
    for s in &scenarios {
        for v in &variants {
            let run = |probe: bool| -> Result<CaseRun> {
                bar.set_message(format!(
                    "{} {}{}",
                    s.case,
                    v.id,
                    if probe { "+probe" } else { "" }
                ));
                let mut backend = GtestBackend::new();
                let code = &artifacts[&(s.package, v.id, probe)].bytes;
                run_case(&mut backend, code, s, probe, || bar.inc(1))
            };
            let plain = run(false)?;
            let probed = run(true)?;
            let code_bytes = artifacts[&(s.package, v.id, false)].bytes.len() as u64;
            let (total, op_rows) = rows("gtest", s, v, &plain, &probed, code_bytes)?;
            totals.push(total);
            ops.extend(op_rows);
            checks.push(validate("gtest", s, v, &plain, &probed));
        }
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
    std::fs::write(
        dir.join("README.md"),
        report::markdown(&totals, &ops, &checks),
    )?;
    println!("{}", report::summary(&totals));
    eprintln!("wrote results/totals.csv, results/ops.csv, results/probe-validation.csv, results/README.md");
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

/// Replaces the rows of what was rerun, keeps the rest, and sorts into report order.
fn merge<T, K: Ord>(path: &std::path::Path, fresh: Vec<T>, key: impl Fn(&T) -> K) -> Result<Vec<T>>
where
    T: serde::de::DeserializeOwned,
{
    let mut all: Vec<T> = match path.exists().then(|| read_csv(path)) {
        Some(Ok(rows)) => rows,
        Some(Err(e)) => {
            eprintln!("warning: replacing {} whole: {e:#}", path.display());
            Vec::new()
        }
        None => Vec::new(),
    };
    all.retain(|old| !fresh.iter().any(|f| key(f) == key(old)));
    all.extend(fresh);
    all.sort_by_key(|r| key(r));
    Ok(all)
}

fn rows(
    backend: &str,
    s: &Scenario,
    v: &Variant,
    plain: &CaseRun,
    probed: &CaseRun,
    code_bytes: u64,
) -> Result<(TotalRow, Vec<OpRow>)> {
    let stats = probed.probe.as_ref().expect("probe build records");
    let total_gas = plain.total_cost();
    let allocator_gas: u64 = Op::ALL.iter().map(|op| stats.op(*op).total).sum();
    let pct = |part: u64| round(100.0 * part as f64 / total_gas as f64, 4);
    let ops = Op::ALL
        .iter()
        .map(|&op| {
            let o = stats.op(op);
            OpRow {
                backend: backend.into(),
                case: s.case.into(),
                variant: v.id.into(),
                unit: "gas".into(),
                op: op.name().into(),
                count: o.count,
                total: o.total,
                avg: o.total.checked_div(o.count).unwrap_or(0),
                min: if o.count == 0 { 0 } else { o.min },
                max: o.max,
                share_pct: pct(o.total),
            }
        })
        .collect();
    let total = TotalRow {
        backend: backend.into(),
        case: s.case.into(),
        variant: v.id.into(),
        unit: "gas".into(),
        messages: plain.messages.len() as u64,
        total_gas,
        allocator_gas,
        allocator_share_pct: pct(allocator_gas),
        code_bytes,
    };
    Ok((total, ops))
}

/// Fits `probe - plain = per_message + per_op * calls` over the messages and reports how
/// exactly it holds.
fn validate(
    backend: &str,
    s: &Scenario,
    v: &Variant,
    plain: &CaseRun,
    probed: &CaseRun,
) -> ValidationRow {
    let points: Vec<(i64, i64)> = plain
        .messages
        .iter()
        .zip(&probed.messages)
        .map(|(p, q)| {
            let calls: u64 = q.op_counts.expect("probe counts").iter().sum();
            (calls as i64, q.cost as i64 - p.cost as i64)
        })
        .collect();
    let median = |mut xs: Vec<i64>| -> i64 {
        xs.sort_unstable();
        xs.get(xs.len() / 2).copied().unwrap_or(0)
    };
    // Messages without allocator calls show the per-message part alone; the per-call part is
    // the typical slope of the rest.
    let per_message = median(points.iter().filter(|p| p.0 == 0).map(|p| p.1).collect());
    let per_op = median(
        points
            .iter()
            .filter(|p| p.0 > 0)
            .map(|p| (p.1 - per_message) / p.0)
            .collect(),
    );
    let residuals: Vec<u64> = points
        .iter()
        .map(|&(calls, diff)| (diff - per_message - per_op * calls).unsigned_abs())
        .collect();
    ValidationRow {
        backend: backend.into(),
        case: s.case.into(),
        variant: v.id.into(),
        unit: "gas".into(),
        messages: points.len() as u64,
        overhead_per_op: per_op.max(0) as u64,
        overhead_per_message: per_message,
        exact_messages: residuals.iter().filter(|r| **r == 0).count() as u64,
        max_abs_residual: residuals.iter().copied().max().unwrap_or(0),
        residual_pct: round(
            100.0 * residuals.iter().sum::<u64>() as f64 / plain.total_cost() as f64,
            6,
        ),
    }
}
