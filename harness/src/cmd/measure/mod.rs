//! `lab measure`: every case × variant on the chosen backends; writes the results files and
//! the report.

use anyhow::{bail, Context, Result};
use galloc_lab::build::external::Program;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::results::{MeasuredRow, MANIFEST};
use galloc_lab::run::backend::{node, BackendKind};
use galloc_lab::run::cache::{Fingerprint, RunCache};
use galloc_lab::run::execute::CaseRun;
use galloc_lab::run::measure::CaseMeasurement;
use galloc_lab::run::plan;
use galloc_lab::run::scenario::{self, Scenario};
use galloc_lab::store::staging::Written;
use galloc_variants::Variant;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod jobs;
mod size;
mod source;
mod write;

use jobs::{Job, Ran};
use size::{Pace, RunSize};
use source::Source;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    selection: super::Selection,
    /// Comma-separated backends (`wasmtime`, `gtest`, `node`), or `all` (every one available:
    /// `node` only with a node given). The default is what every verdict needs: gtest (gas,
    /// which decides) and the wasmtime fuel meter (pages, per-op costs, traces); `just
    /// compare` runs all.
    #[arg(long, default_value = "gtest,wasmtime")]
    backends: String,
    /// A running Gear node for the `node` backend, e.g. ws://127.0.0.1:9944.
    #[arg(long, env = "LAB_NODE", conflicts_with = "node_bin")]
    node: Option<String>,
    /// A Gear node binary for the `node` backend, started with --dev for each run.
    #[arg(long, env = "LAB_NODE_BIN")]
    node_bin: Option<std::path::PathBuf>,
    /// No progress bar and no build log (for CI).
    #[arg(long)]
    quiet: bool,
    /// Where to write the results (default: `results/`); `just check` measures into
    /// `target/lab/check` and compares that with `results/`.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    /// Run everything again, ignoring the runs kept in `target/lab/cache/` (kept runs are
    /// reused only when the builds, the scenario and the lab itself are byte for byte the
    /// same, so this is for timing the lab, not for correctness).
    #[arg(long)]
    fresh: bool,
    /// More `galloc` features for every build, comma-separated (not variants: e.g. `debug`,
    /// or `gate-canary`, which makes every malloc do extra work to prove the gate fails).
    /// The results then describe a modified allocator, so they need `--out`.
    #[arg(long, default_value = "")]
    allocator_features: String,
    /// Heap layouts to run each case's plain build at, stratified over the 64 KiB Wasm page and
    /// each 16 KiB Gear page in it (docs/verdicts.md, "Verdicts across heap layouts"); 1 runs the linker's
    /// layout alone, as the gate does. `results/` always holds every case at 16.
    #[arg(long, default_value_t = galloc_lab::run::plan::POINTS, allow_negative_numbers = true, value_parser = crate::cmd::layouts)]
    layouts: u32,
    /// Spread the `--layouts` points evenly over one Gear page instead (the sweep the lab ran
    /// before, kept to compare with). Needs `--out`.
    #[arg(long)]
    one_gear_page: bool,
    /// The fuel meter runs every this many of the points (docs/verdicts.md, "Is the sweep enough?").
    /// Needs `--out` unless it is the default.
    #[arg(long, default_value_t = galloc_lab::run::plan::FUEL_STRIDE, allow_negative_numbers = true, value_parser = crate::cmd::stride)]
    fuel_stride: usize,
    /// Instead of `--layouts`: a layout every this many bytes over the 64 KiB Wasm page (1024
    /// gives the 64 points `just sweep-check` holds the default sweep against). Needs `--out`.
    #[arg(long, conflicts_with = "layouts", allow_negative_numbers = true, value_parser = crate::cmd::count)]
    layout_step: Option<u32>,
    /// Skip the cases' second workloads (docs/verdicts.md, "A second workload"), as the dense grid of
    /// `just sweep-check` does. Needs `--out`: `results/` holds them for every pair.
    #[arg(long)]
    no_second_workload: bool,
    /// Measure another gstd program instead of the lab's cases: its crate directory (or
    /// `Cargo.toml`). Needs `--scenario`; built per variant without editing the crate.
    #[arg(long, requires = "scenario")]
    program: Option<std::path::PathBuf>,
    /// The messages for `--program`: JSON, or text lines of SCALE hex (docs/your-program.md, "Measuring
    /// another program"). Its file stem names the case.
    #[arg(long, requires = "program")]
    scenario: Option<std::path::PathBuf>,
}

impl Args {
    /// `lab measure --program PROGRAM --scenario SCENARIO` with these settings (for `lab pick`).
    pub fn program(
        program: &Path,
        scenario: &Path,
        variants: &str,
        backends: &str,
        layouts: u32,
        out: &Path,
        quiet: bool,
    ) -> Self {
        Args {
            selection: super::Selection {
                cases: "default".into(),
                variants: variants.into(),
            },
            backends: backends.into(),
            node: None,
            node_bin: None,
            quiet,
            out: Some(out.to_path_buf()),
            fresh: false,
            allocator_features: String::new(),
            layouts,
            one_gear_page: false,
            fuel_stride: galloc_lab::run::plan::FUEL_STRIDE,
            layout_step: None,
            no_second_workload: false,
            program: Some(program.to_path_buf()),
            scenario: Some(scenario.to_path_buf()),
        }
    }
}

/// What a run sends: each case's scenario and second workload (by case index), their
/// fingerprints (part of the run cache's keys), and each backend's second-workload offsets.
pub(super) struct Sending<'a> {
    pub scenarios: &'a [Scenario],
    pub prints: &'a [Fingerprint],
    pub seconds: &'a [Option<(scenario::Workload, Scenario)>],
    pub second_prints: &'a [Option<Fingerprint>],
    pub second_on: &'a BTreeMap<BackendKind, Vec<u32>>,
    /// What the report and the metadata say wrote the results.
    pub source: Source,
}

/// Everything measured in this run, by (backend, case, variant): the runs at the linker's
/// layout, the plain build's at each other layout (by offset), and the second workload's (by
/// offset).
pub(super) type Measured<'a> = BTreeMap<
    (BackendKind, usize, usize),
    (
        &'a Scenario,
        &'static Variant,
        CaseMeasurement,
        Vec<(u32, CaseRun)>,
        Vec<(u32, CaseRun)>,
    ),
>;

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let (cases, variants) = args.selection.resolve()?;
    galloc_lab::results::keep_compressed_in(ws.root().join("target/lab/compressed"));
    match (&args.node, &args.node_bin) {
        (Some(url), _) => node::configure(node::Endpoint::Url(url.clone()), ws.root()),
        (None, Some(bin)) => {
            let bin = std::fs::canonicalize(bin)
                .with_context(|| format!("--node-bin {}: no such file", bin.display()))?;
            node::configure(node::Endpoint::Binary(bin), ws.root())
        }
        (None, None) => {}
    }
    let backends = BackendKind::select(&args.backends)?;
    if backends.contains(&BackendKind::Node) {
        // Minutes of builds come first: find out now whether the node is there at all.
        node::NodeBackend::start().context("checking the node before building")?;
    }
    check_extra_features(&args)?;
    let (external, scenarios) = match (&args.program, &args.scenario) {
        (Some(program), Some(file)) => {
            if args.selection.cases != "default" {
                bail!("--cases selects the lab's own cases; with --program the scenario file is the case");
            }
            let program = Program::at(program)?;
            let case = galloc_lab::build::external::case_of(file)?;
            if scenario::CASES.iter().any(|c| c.id == case) {
                bail!(
                    "scenario file {}: `{case}` is one of the lab's own cases; rename the file",
                    file.display()
                );
            }
            let case: &'static str = Box::leak(case.to_owned().into_boxed_str());
            let s = Scenario::read(file, case, &program)?;
            (Some(program), vec![s])
        }
        _ => (None, cases.iter().map(|c| (c.make)()).collect()),
    };
    // Each case's second workload, where it has one (the lab's own cases).
    let seconds: Vec<Option<(scenario::Workload, Scenario)>> = match &external {
        Some(_) => vec![None],
        None if args.no_second_workload => vec![None; cases.len()],
        None => cases
            .iter()
            .map(|c| c.second.map(|w| (w, (w.make)())))
            .collect(),
    };
    let out = match (&args.out, &external) {
        (Some(out), _) => out.clone(),
        (None, Some(_)) => galloc_lab::build::external::default_out(ws, scenarios[0].case),
        (None, None) => ws.results_dir(),
    };

    let offsets = match args.layout_step {
        Some(step) => galloc_lab::run::plan::grid(step)?,
        None => galloc_lab::run::plan::sweep(args.layouts, args.one_gear_page)?,
    };
    if (offsets != galloc_lab::run::plan::default_sweep()
        || args.fuel_stride != galloc_lab::run::plan::FUEL_STRIDE
        || args.no_second_workload)
        && std::path::absolute(&out).ok() == Some(ws.results_dir())
    {
        bail!(
            "{}: results/ holds every case at the {} layouts of the default sweep, with its second \
             workload, so a run into it measures those; give --out DIR to measure others",
            match args.layout_step {
                _ if args.no_second_workload => "--no-second-workload".to_owned(),
                Some(step) => format!("--layout-step {step}"),
                None => format!(
                    "--layouts {}{} --fuel-stride {}",
                    args.layouts,
                    if args.one_gear_page { " --one-gear-page" } else { "" },
                    args.fuel_stride
                ),
            },
            galloc_lab::run::plan::POINTS
        );
    }

    // A run of every variant on every default case on both embedded backends into
    // `results/` measures every row `results/` holds: it writes the set afresh instead of
    // merging with it, so the lab can always regenerate its results, even after a change of
    // their format. Any other run adds to what is there.
    let to_results = std::path::absolute(&out).ok() == Some(ws.results_dir());
    let mut run_set = std::collections::BTreeSet::new();
    for b in &backends {
        for s in &scenarios {
            for v in &variants {
                run_set.insert(MeasuredRow {
                    backend: b.name().into(),
                    case: s.case.into(),
                    variant: v.id.into(),
                });
            }
        }
    }
    let whole = to_results
        && external.is_none()
        && args.allocator_features.is_empty()
        && galloc_lab::report::inputs::full_set()
            .iter()
            .all(|m| run_set.contains(m));

    // The results this run adds to must be whole and readable now, not after minutes of
    // building and running: they are merged with its rows at the end.
    let has_files = check_out(ws, &out)?;
    if has_files && !whole {
        let full = std::path::absolute(&out).ok() == Some(ws.results_dir());
        super::read_results(ws, &out, full).with_context(|| {
            format!(
                "--out {}: the results there are merged with this run's, so they must be \
                 whole first (or give an empty or new directory)",
                out.display()
            )
        })?;
    }

    // The offsets each backend runs: the fuel meter a thinned sweep, a `--layout-step` grid
    // whole; and so the ones to build (a run on the fuel meter alone builds only its points).
    let fuel_stride = if args.layout_step.is_some() {
        1
    } else {
        args.fuel_stride
    };
    let runs_on: BTreeMap<BackendKind, Vec<u32>> = backends
        .iter()
        .map(|b| (*b, plan::on(*b, &offsets, fuel_stride)))
        .collect();
    let second_on: BTreeMap<BackendKind, Vec<u32>> = backends
        .iter()
        .map(|b| (*b, plan::second_on(*b, &offsets, fuel_stride)))
        .collect();
    // Per backend, case and variant: plain, probe and twin runs, the layout points, and the
    // second workload's points.
    let total_messages: u64 = backends
        .iter()
        .map(|b| {
            scenarios
                .iter()
                .zip(&seconds)
                .map(|(s, second)| {
                    let second = second.as_ref().map_or(0, |(_, w)| {
                        (w.steps.len() as u64 + 1) * second_on[b].len() as u64
                    });
                    ((s.steps.len() as u64 + 1) * (2 + runs_on[b].len() as u64) + second)
                        * variants.len() as u64
                })
                .sum::<u64>()
        })
        .sum();
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(total_messages)
    };
    bar.set_style(
        ProgressStyle::with_template("{msg:44} [{bar:30}] {pos}/{len} messages, ETA {eta}")
            .expect("valid template"),
    );

    // What to build, in the order the runs need it: each (package, variant) once.
    let mut order: Vec<(&'static str, &Variant)> = Vec::new();
    for s in &scenarios {
        for v in &variants {
            if !order.iter().any(|(p, w)| *p == s.package && w.id == v.id) {
                order.push((s.package, v));
            }
        }
    }
    let built: Vec<u32> = offsets
        .iter()
        .copied()
        .filter(|o| runs_on.values().any(|on| on.contains(o)))
        .collect();
    // Point p is the build at nonzero[p].
    let nonzero: Vec<u32> = built.iter().copied().filter(|o| *o > 0).collect();
    let points = nonzero.len();

    let cache = RunCache::new(ws.root().join("target/lab/cache"))?;
    let prints: Vec<Fingerprint> = scenarios.iter().map(RunCache::fingerprint).collect();
    let second_prints: Vec<Option<Fingerprint>> = seconds
        .iter()
        .map(|w| w.as_ref().map(|(_, s)| RunCache::fingerprint(s)))
        .collect();
    // Every run is its own job: the case's three builds, or one layout of its plain build under
    // the case's scenario or its second workload.
    // They run on every core (each on a fresh chain or meter of its own), and their results
    // are put back in order, so the files do not depend on which finished first. A node is
    // one process, driven by one run at a time. Jobs go case by case, as the builds are made.
    let mut jobs: Vec<(BackendKind, usize, usize, Job)> = Vec::new();
    for (ci, _) in scenarios.iter().enumerate() {
        for (vi, _) in variants.iter().enumerate() {
            for &backend in &backends {
                jobs.push((backend, ci, vi, Job::Case));
                jobs.extend(
                    (0..points)
                        .filter(|p| runs_on[&backend].contains(&nonzero[*p]))
                        .map(|p| (backend, ci, vi, Job::Point(p))),
                );
                if seconds[ci].is_some() {
                    jobs.extend(
                        (0..second_on[&backend].len()).map(|i| (backend, ci, vi, Job::Second(i))),
                    );
                }
            }
        }
    }
    let workers = if backends.contains(&BackendKind::Node) {
        1
    } else {
        std::thread::available_parallelism().map_or(1, usize::from)
    };
    let work = jobs::Work {
        ws,
        args: &args,
        bar: &bar,
        order: &order,
        external: external.as_ref(),
        built: &built,
        scenarios: &scenarios,
        variants: &variants,
        seconds: &seconds,
        prints: &prints,
        second_prints: &second_prints,
        second_on: &second_on,
        cache: &cache,
        jobs: &jobs,
        workers,
    };
    let pace = Pace::at(ws);
    let runs: Vec<(BackendKind, &str, u64)> = jobs
        .iter()
        .map(|j| {
            (
                j.0,
                scenarios[j.1].case,
                if j.3 == Job::Case { 3 } else { 1 },
            )
        })
        .collect();
    let size = RunSize::new(
        (order.len() * 3, order.len() * points),
        &runs,
        total_messages,
        pace.read(),
        workers,
    );
    if size.is_large() {
        eprintln!("{size}");
    }
    let (builds, mut done, reused, ran, timing) = match jobs::execute(&work) {
        Ok(done) => done,
        Err(e) => {
            bar.finish_and_clear();
            return Err(e);
        }
    };
    // Only a guide for the next run's estimate: a pace that cannot be kept is not an error.
    let _ = pace.record(&timing);
    let mut measured: Measured = BTreeMap::new();
    for (backend, ci, vi, job) in jobs.iter().copied().filter(|j| j.3 == Job::Case) {
        let (s, v) = (&scenarios[ci], variants[vi]);
        let Some(Ran::Case(m)) = done.remove(&(backend, ci, vi, job)) else {
            unreachable!("every job ran");
        };
        let layouts = &builds[&(s.package, v.id)].layouts;
        // The points this backend ran (the fuel meter runs every `fuel_stride`th).
        let points = layouts
            .iter()
            .enumerate()
            .filter(|(_, (offset, _))| runs_on[&backend].contains(offset))
            .map(
                |(p, (offset, _))| match done.remove(&(backend, ci, vi, Job::Point(p))) {
                    Some(Ran::Point(run)) => (*offset, *run),
                    _ => unreachable!("every job ran"),
                },
            )
            .collect();
        let second = match seconds[ci] {
            Some(_) => second_on[&backend]
                .iter()
                .enumerate()
                .map(
                    |(i, offset)| match done.remove(&(backend, ci, vi, Job::Second(i))) {
                        Some(Ran::Point(run)) => (*offset, *run),
                        _ => unreachable!("every job ran"),
                    },
                )
                .collect(),
            None => Vec::new(),
        };
        measured.insert((backend, ci, vi), (s, v, *m, points, second));
    }
    bar.finish_and_clear();
    if !args.quiet {
        eprintln!(
            "ran {ran} case x variant x backend measurements; reused {reused} whose builds, \
             scenario and lab were unchanged (target/lab/cache; --fresh runs all)"
        );
    }

    let out = std::path::absolute(&out)
        .with_context(|| format!("--out {}: cannot resolve", out.display()))?;
    // Nothing ran, and nothing the files are made from changed since this very run last wrote
    // them, and they are still exactly as it wrote them: they are what it would write again.
    let dirs = galloc_lab::store::publish::staged_dirs(ws, &out);
    let written = Written::of(
        ws.root(),
        &dirs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    );
    let sending = Sending {
        scenarios: &scenarios,
        prints: &prints,
        seconds: &seconds,
        second_prints: &second_prints,
        second_on: &second_on,
        source: Source::of(&args, &out, external.as_ref())?,
    };
    let digest = write::digest_of(
        ws,
        &cache,
        &jobs,
        &sending,
        &variants,
        &builds,
        (whole, &args.allocator_features),
    )?;
    let reading = galloc_lab::store::lock::Lock::read(ws.root(), &out)?;
    if ran == 0 && !backends.contains(&BackendKind::Node) && written.unchanged(&digest) {
        let inputs = galloc_lab::report::inputs::Inputs::read_for_verdicts(&out)?;
        println!("{}", galloc_lab::report::verdicts::verdicts(&inputs));
        println!(
            "Full report: {} (up to date: no run or input changed since it was written)",
            out.join("README.md").display()
        );
        return Ok(());
    }
    drop(reading);

    // Every file is written to a copy of the results (and of their charts) and moved into
    // place only once all of them, and the report, have been made: a failure writes nothing.
    // Another command writing them first is waited for (and merged with: the copy is taken
    // once it is done).
    let staged = galloc_lab::store::publish::Staged::begin(ws, &out)?;
    written.forget()?;
    if whole {
        // Only in the staged copy: the real files go only if everything succeeds.
        let mut gone: Vec<std::path::PathBuf> =
            backends.iter().map(|b| staged.dir.join(b.name())).collect();
        gone.extend(
            ["artifacts.csv", "agreement.csv", MANIFEST, "traces"].map(|f| staged.dir.join(f)),
        );
        for path in gone {
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else if path.exists() {
                std::fs::remove_file(&path)
            } else {
                Ok(())
            };
            removed.with_context(|| format!("cannot clear {}", path.display()))?;
        }
    }
    let report = staged.explain(write::write_all(
        ws, &staged, &out, &backends, &measured, &builds, &sending,
    ))?;
    staged.commit()?;
    written.record(&digest)?;
    eprintln!("{}", report.wrote);
    let report = report.inputs;
    println!("{}", galloc_lab::report::verdicts::verdicts(&report));
    println!("Full report: {}", out.join("README.md").display());
    Ok(())
}

/// `--out` must be a directory the lab wrote, or an empty or new one: checked before anything
/// is built, since only the commit at the end would find out otherwise (a file there made the
/// commit fail after the whole run, leaving a journal that could never be applied). Returns
/// whether it holds files.
fn check_out(ws: &Workspace, out: &Path) -> Result<bool> {
    if out.exists() && !out.is_dir() {
        bail!(
            "--out {}: this is a file, not a directory; the lab writes a directory of results \
             (CSVs, README.md, images/). Nothing was built: give a new or empty directory, or \
             one a `lab measure --out` wrote",
            out.display()
        );
    }
    if !std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        return Ok(false);
    }
    let abs = std::path::absolute(out)
        .with_context(|| format!("--out {}: cannot resolve", out.display()))?;
    // A commit a killed run left unfinished there is applied first (under the lock), so a
    // directory the lab was writing is seen as what it wrote.
    drop(galloc_lab::store::lock::Lock::read(ws.root(), &abs)?);
    if !abs.join(MANIFEST).is_file() && !abs.join(galloc_lab::store::metadata::FILE).is_file() {
        bail!(
            "--out {}: it holds files but no lab results (no {MANIFEST} or {}), so it is not a \
             directory the lab wrote, and its files would be mixed with the run's. Nothing was \
             built: give a new or empty directory",
            out.display(),
            galloc_lab::store::metadata::FILE
        );
    }
    Ok(true)
}

/// Extra allocator features must be real non-variant features, and their results must not
/// pass for the variants' own in `results/`.
fn check_extra_features(args: &Args) -> Result<()> {
    let features: Vec<&str> = args
        .allocator_features
        .split(',')
        .filter(|f| !f.is_empty())
        .collect();
    if features.is_empty() {
        return Ok(());
    }
    for f in &features {
        if f.starts_with("layout-pad-") {
            anyhow::bail!(
                "--allocator-features {f}: the heap layout is the lab's to vary: every case is \
                 already run at {} layouts over the Wasm page (see --layouts), each placed exactly \
                 by the linker rather than by padding",
                galloc_lab::run::plan::POINTS
            );
        }
        if galloc_variants::VARIANTS.iter().any(|v| v.feature == *f)
            || *f == "probe"
            || *f == galloc_lab::build::artifact::TWIN_FEATURE
        {
            anyhow::bail!(
                "--allocator-features {f}: `{f}` is chosen by the lab itself (use --variants for \
                 variants; the probe build and its twin are always made)"
            );
        }
    }
    if args.out.is_none() {
        anyhow::bail!(
            "--allocator-features {} changes the allocator, so its results must not replace the \
             committed ones: add --out DIR (e.g. --out target/lab/try)",
            args.allocator_features
        );
    }
    Ok(())
}
