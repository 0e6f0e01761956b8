//! `lab measure`: every case × variant on the embedded backends; writes the results files
//! and the report.

use anyhow::{bail, Context, Result};
use galloc::probe::Op;
use galloc_lab::backend::gtest::GtestBackend;
use galloc_lab::build::{build, Artifact, BuildRequest, PostProcess};
use galloc_lab::report;
use galloc_lab::results::{read_csv, round, write_csv, MessageRow, OpRow, TotalRow, ValidationRow};
use galloc_lab::run::{run_case, CaseRun};
use galloc_lab::scenario::{self, Scenario};
use galloc_lab::wasm::inspect;
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

    // Build everything first: a build error stops before any run.
    let mut builds: BTreeMap<(&str, &str), Builds> = BTreeMap::new();
    for s in &scenarios {
        for v in &variants {
            if !builds.contains_key(&(s.package, v.id)) {
                builds.insert(
                    (s.package, v.id),
                    Builds::new(ws, s.package, v, args.quiet)?,
                );
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
    let mut per_message = Vec::new();
    for s in &scenarios {
        for v in &variants {
            let b = &builds[&(s.package, v.id)];
            let run = |artifact: &Artifact, probe: bool| -> Result<CaseRun> {
                bar.set_message(format!("{} {}", s.case, artifact.config));
                let mut backend = GtestBackend::new();
                run_case(&mut backend, &artifact.bytes, s, probe, || bar.inc(1))
            };
            let plain = run(&b.plain, false)?;
            let probed = run(&b.probe, true)?;
            let twin = match &b.twin {
                Some(twin) => run(twin, false)?,
                None => {
                    bar.inc(plain.messages.len() as u64);
                    plain.clone()
                }
            };
            let code_bytes = b.plain.bytes.len() as u64;
            let (total, op_rows) = rows("gtest", s, v, &plain, &probed, code_bytes)?;
            totals.push(total);
            ops.extend(op_rows);
            checks.push(validate("gtest", s, v, b, &plain, &twin, &probed));
            per_message.extend(message_rows("gtest", s, v, &twin, &probed));
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
    // Per-message rows are large; they live beside the build, not in results/.
    write_csv(&ws.root().join("target/lab/messages.csv"), &per_message)?;
    std::fs::write(
        dir.join("README.md"),
        report::markdown(&totals, &ops, &checks),
    )?;
    println!("{}", report::summary(&totals));
    eprintln!("wrote results/totals.csv, results/ops.csv, results/probe-validation.csv, results/README.md");
    Ok(())
}

/// The builds one (package, variant) is measured with.
struct Builds {
    /// As deployed: total gas comes from here.
    plain: Artifact,
    /// With the gas probe: allocator gas comes from here.
    probe: Artifact,
    /// The plain build padded to the probe build's heap base (`None` when they already
    /// match): probe minus twin is the probe's own work alone.
    twin: Option<Artifact>,
    /// Bytes of padding in the twin.
    pad: u32,
}

impl Builds {
    fn new(
        ws: &Workspace,
        package: &'static str,
        variant: &'static Variant,
        quiet: bool,
    ) -> Result<Self> {
        let get = |probe: bool, layout_pad: u32| -> Result<Artifact> {
            let req = BuildRequest {
                package,
                variant,
                probe,
                post: PostProcess::Gear,
                layout_pad,
            };
            if !quiet {
                eprintln!("building {package} for {}", req.config());
            }
            let artifact = build(ws, req)?;
            // A probe build answers state reads; without the export the galloc patch is not
            // in effect and every figure would be Gear's own allocator's.
            let has_state = inspect(&artifact.bytes)?
                .exports
                .iter()
                .any(|e| e == "state");
            if probe != has_state {
                bail!(
                    "{package} ({}) {} a `state` export: is `[patch.crates-io] galloc` in the \
                     workspace Cargo.toml in effect?",
                    req.config(),
                    if probe { "lacks" } else { "has" }
                );
            }
            Ok(artifact)
        };
        let probe = get(true, 0)?;
        let plain = get(false, 0)?;
        let base = |a: &Artifact| {
            a.heap_base
                .with_context(|| format!("{} exports no __heap_base", a.path.display()))
        };
        let (probe_base, plain_base) = (base(&probe)?, base(&plain)?);
        let Some(pad) = probe_base.checked_sub(plain_base) else {
            bail!("{package} ({}): the probe build's heap base {probe_base:#x} is below the plain build's {plain_base:#x}", variant.id);
        };
        let twin = if pad == 0 {
            None
        } else {
            let twin = get(false, pad)?;
            if twin.heap_base != Some(probe_base) {
                bail!(
                    "{package} ({}): padding by {pad} bytes moved the heap base to {:?}, not {probe_base:#x}",
                    variant.id,
                    twin.heap_base
                );
            }
            Some(twin)
        };
        Ok(Builds {
            plain,
            probe,
            twin,
            pad,
        })
    }
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

fn message_rows(
    backend: &str,
    s: &Scenario,
    v: &Variant,
    plain: &CaseRun,
    probed: &CaseRun,
) -> Vec<MessageRow> {
    plain
        .messages
        .iter()
        .zip(&probed.messages)
        .map(|(p, q)| MessageRow {
            backend: backend.into(),
            case: s.case.into(),
            variant: v.id.into(),
            unit: "gas".into(),
            message: p.index as u64,
            gas: p.cost,
            probe_build_gas: q.cost,
            allocator_calls: q.op_counts.map_or(0, |c| c.iter().sum()),
            allocator_gas: q.op_costs.map_or(0, |c| c.iter().sum()),
        })
        .collect()
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

/// Fits `probe - twin = per_message + per_call * calls` over the messages after `init`
/// (whose excess is the probe's one-time calibration) and counts where it holds exactly.
fn validate(
    backend: &str,
    s: &Scenario,
    v: &Variant,
    builds: &Builds,
    plain: &CaseRun,
    twin: &CaseRun,
    probed: &CaseRun,
) -> ValidationRow {
    let points: Vec<(i64, i64)> = twin
        .messages
        .iter()
        .zip(&probed.messages)
        .map(|(p, q)| {
            let calls: u64 = q.op_counts.expect("probe counts").iter().sum();
            (calls as i64, q.cost as i64 - p.cost as i64)
        })
        .collect();
    let (per_message, per_call) = fit(&points[1..]);
    let residual = |&(calls, diff): &(i64, i64)| diff - per_message - per_call * calls;
    let residuals: Vec<u64> = points[1..]
        .iter()
        .map(|p| residual(p).unsigned_abs())
        .collect();
    ValidationRow {
        backend: backend.into(),
        case: s.case.into(),
        variant: v.id.into(),
        unit: "gas".into(),
        messages: points.len() as u64,
        layout_pad_bytes: builds.pad,
        layout_shift_gas: twin.total_cost() as i64 - plain.total_cost() as i64,
        overhead_per_call: per_call,
        overhead_per_message: per_message,
        calibration_gas: points.first().map_or(0, residual),
        exact_messages: residuals.iter().filter(|r| **r == 0).count() as u64,
        max_abs_residual: residuals.iter().copied().max().unwrap_or(0),
        residual_pct: round(
            100.0 * residuals.iter().sum::<u64>() as f64 / twin.total_cost() as f64,
            6,
        ),
    }
}

/// `(per_message, per_call)` from the two most common call counts, each taken at its most
/// common difference (gas is deterministic: most messages with the same calls agree).
fn fit(points: &[(i64, i64)]) -> (i64, i64) {
    let mut by_calls: BTreeMap<i64, BTreeMap<i64, u64>> = BTreeMap::new();
    for &(calls, diff) in points {
        *by_calls.entry(calls).or_default().entry(diff).or_default() += 1;
    }
    let mut groups: Vec<(u64, i64, i64)> = by_calls
        .iter()
        .map(|(&calls, diffs)| {
            let (&diff, &n) = diffs
                .iter()
                .max_by_key(|(d, n)| (**n, -**d))
                .expect("non-empty");
            (n, calls, diff)
        })
        .collect();
    groups.sort_by_key(|&(n, calls, _)| (std::cmp::Reverse(n), calls));
    match groups.as_slice() {
        [] => (0, 0),
        [(_, calls, diff)] if *calls == 0 => (*diff, 0),
        [(_, calls, diff)] => (0, diff / calls),
        [(_, n1, d1), (_, n2, d2), ..] => {
            let per_call = (d2 - d1) / (n2 - n1);
            (d1 - per_call * n1, per_call)
        }
    }
}
