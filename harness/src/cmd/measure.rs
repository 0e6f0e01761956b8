//! `lab measure`: every case × variant on the chosen backends; writes the results files and
//! the report.

use anyhow::{bail, Context, Result};
use galloc_lab::analyse::agreement::{agreement, Pair};
use galloc_lab::analyse::layout;
use galloc_lab::build::artifact::{BuildRequest, PostProcess};
use galloc_lab::build::external::Program;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::report::staging::Written;
use galloc_lab::results::{
    merge, read_csv, write_csv, AgreementRow, ArtifactRow, LayoutRow, MeasuredRow, MessageRow,
    OpRow, PagesRow, SecondRow, TotalRow, ValidationRow, MANIFEST, SECOND,
};
use galloc_lab::run::backend::{node, BackendKind};
use galloc_lab::run::cache::{digest_of_parts, Fingerprint, RunCache};
use galloc_lab::run::execute::CaseRun;
use galloc_lab::run::measure::{
    case_rows, measure_case, message_rows, overheads_of, pages_row, validate, Builds,
    CaseMeasurement,
};
use galloc_lab::run::scenario::{self, Scenario};
use galloc_lab::trace;
use galloc_variants::Variant;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    selection: super::Selection,
    /// Comma-separated backends (`wasmtime`, `gtest`, `node`), or `all` (every one available:
    /// `node` only with a node given). The embedded default is the wasmtime fuel meter;
    /// `just compare` runs all.
    #[arg(long, default_value = "wasmtime")]
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
    #[arg(long, default_value_t = galloc_lab::analyse::layout::POINTS)]
    layouts: u32,
    /// Spread the `--layouts` points evenly over one Gear page instead (the sweep the lab ran
    /// before, kept to compare with). Needs `--out`.
    #[arg(long)]
    one_gear_page: bool,
    /// The fuel meter runs every this many of the points (docs/verdicts.md, "Is the sweep enough?").
    /// Needs `--out` unless it is the default.
    #[arg(long, default_value_t = galloc_lab::analyse::layout::FUEL_STRIDE)]
    fuel_stride: usize,
    /// Instead of `--layouts`: a layout every this many bytes over the 64 KiB Wasm page (1024
    /// gives the 64 points `just sweep-check` holds the default sweep against). Needs `--out`.
    #[arg(long, conflicts_with = "layouts")]
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
            fuel_stride: galloc_lab::analyse::layout::FUEL_STRIDE,
            layout_step: None,
            no_second_workload: false,
            program: Some(program.to_path_buf()),
            scenario: Some(scenario.to_path_buf()),
        }
    }
}

/// What one job ran: a case's three builds, or one layout of its plain build (under the case's
/// scenario or its second workload's).
enum Ran {
    Case(Box<CaseMeasurement>),
    Point(Box<CaseRun>),
}

/// One job of a (backend, case, variant): the case's three builds at the linker's layout, the
/// plain build at the `p`th nonzero point of the sweep, or the second workload at the `i`th of
/// its offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Job {
    Case,
    Point(usize),
    Second(usize),
}

/// What a run sends: each case's scenario and second workload (by case index), their
/// fingerprints (part of the run cache's keys), and each backend's second-workload offsets.
struct Sending<'a> {
    scenarios: &'a [Scenario],
    prints: &'a [Fingerprint],
    seconds: &'a [Option<(scenario::Workload, Scenario)>],
    second_prints: &'a [Option<Fingerprint>],
    second_on: &'a BTreeMap<BackendKind, Vec<u32>>,
}

/// Everything measured in this run, by (backend, case, variant): the runs at the linker's
/// layout, the plain build's at each other layout (by offset), and the second workload's (by
/// offset).
type Measured<'a> = BTreeMap<
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
        Some(step) => galloc_lab::analyse::layout::grid(step)?,
        None => galloc_lab::analyse::layout::sweep(args.layouts, args.one_gear_page)?,
    };
    if (offsets != galloc_lab::analyse::layout::default_sweep()
        || args.fuel_stride != galloc_lab::analyse::layout::FUEL_STRIDE
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
            galloc_lab::analyse::layout::POINTS
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
    let has_files = std::fs::read_dir(&out).is_ok_and(|mut d| d.next().is_some());
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
        .map(|b| (*b, layout::on(*b, &offsets, fuel_stride)))
        .collect();
    let second_on: BTreeMap<BackendKind, Vec<u32>> = backends
        .iter()
        .map(|b| (*b, layout::second_on(*b, &offsets, fuel_stride)))
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
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (reused, ran) = (
        std::sync::atomic::AtomicUsize::new(0),
        std::sync::atomic::AtomicUsize::new(0),
    );
    type Done = BTreeMap<(BackendKind, usize, usize, Job), Ran>;
    let done: std::sync::Mutex<Done> = Default::default();
    let failed: std::sync::Mutex<Option<anyhow::Error>> = Default::default();
    // The builds made so far, and whether the builder has stopped (done, or failed).
    type Shelf<'a> = (BTreeMap<(&'a str, &'a str), std::sync::Arc<Builds>>, bool);
    let shelf: std::sync::Mutex<Shelf> = Default::default();
    let shelved = std::sync::Condvar::new();
    // The builds of (package, variant), once made; `None` once the builder has stopped
    // without them (it failed: every worker stops).
    let builds_of = |package: &str, variant: &str| -> Option<std::sync::Arc<Builds>> {
        let mut s = shelf.lock().expect("no panic holds it");
        loop {
            if let Some(b) = s.0.get(&(package, variant)) {
                return Some(b.clone());
            }
            if s.1 {
                return None;
            }
            s = shelved.wait(s).expect("no panic holds it");
        }
    };
    // Builds go one at a time (cargo locks its target directory) on a thread of their own,
    // while the runs whose builds are made go on the other cores: a first run from a fresh
    // clone overlaps minutes of building with running. A build error stops every run, and
    // nothing is written.
    let build_all = || -> Result<()> {
        for &(package, v) in &order {
            if failed.lock().expect("no panic holds it").is_some() {
                return Ok(());
            }
            let log = |line: &str| {
                if !args.quiet {
                    bar.suspend(|| eprintln!("{line}"));
                }
            };
            let mut b = Builds::with_features(
                ws,
                package,
                external.as_ref(),
                v,
                &args.allocator_features,
                log,
            )?;
            let plain = BuildRequest {
                package,
                variant: v,
                probe: false,
                post: PostProcess::Gear,
                layout_pad: 0,
                layout_offset: 0,
                extra_features: &args.allocator_features,
                external: external.as_ref(),
            };
            b.layouts = layout::builds(ws, plain, &built, log)?;
            let mut s = shelf.lock().expect("no panic holds it");
            s.0.insert((package, v.id), std::sync::Arc::new(b));
            shelved.notify_all();
        }
        Ok(())
    };
    let job = |(backend, ci, vi, job): (BackendKind, usize, usize, Job)| -> Result<Option<Ran>> {
        let (s, v) = (&scenarios[ci], variants[vi]);
        let Some(b) = builds_of(s.package, v.id) else {
            return Ok(None);
        };
        // A node's runs are not kept: the same builds can cost differently on another node
        // or runtime, and the cache key cannot see which node it was.
        let keep = !args.fresh && backend != BackendKind::Node;
        let count = |kept: bool| {
            let n = if kept { &reused } else { &ran };
            n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        let (artifact, s, print) = match job {
            Job::Point(p) => (&b.layouts[p].1, s, &prints[ci]),
            Job::Second(i) => {
                let (Some((_, second)), Some(print)) = (&seconds[ci], &second_prints[ci]) else {
                    unreachable!("a second workload's job has one");
                };
                (b.at(second_on[&backend][i]), second, print)
            }
            Job::Case => {
                let key = cache.key(backend, &prints[ci], &b);
                if let Some(m) = keep.then(|| cache.load(&key, backend)).flatten() {
                    count(true);
                    bar.inc(3 * m.plain.messages.len() as u64);
                    return Ok(Some(Ran::Case(Box::new(m))));
                }
                count(false);
                let m = measure_case(&b, s, backend, |config| {
                    bar.set_message(format!("{} {} {config}", backend.name(), s.case));
                    bar.inc(1);
                })?;
                if keep {
                    cache.store(&key, &m)?;
                }
                return Ok(Some(Ran::Case(Box::new(m))));
            }
        };
        let key = cache.key_of_run(backend, print, &artifact.sha256);
        let run = match keep.then(|| cache.load_run(&key)).flatten() {
            Some(run) => {
                count(true);
                run
            }
            None => {
                count(false);
                bar.set_message(format!("{} {} {}", backend.name(), s.case, artifact.config));
                let run = layout::run(artifact, s, backend)?;
                if keep {
                    cache.store_run(&key, &run)?;
                }
                run
            }
        };
        bar.inc(run.messages.len() as u64);
        Ok(Some(Ran::Point(Box::new(run))))
    };
    std::thread::scope(|scope| {
        scope.spawn(|| {
            if let Err(e) = build_all() {
                failed.lock().expect("no panic holds it").get_or_insert(e);
            }
            shelf.lock().expect("no panic holds it").1 = true;
            shelved.notify_all();
        });
        for _ in 0..workers {
            scope.spawn(|| loop {
                if failed.lock().expect("no panic holds it").is_some() {
                    return;
                }
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&id) = jobs.get(i) else { return };
                match job(id) {
                    Ok(Some(r)) => {
                        done.lock().expect("no panic holds it").insert(id, r);
                    }
                    Ok(None) => return,
                    Err(e) => {
                        failed.lock().expect("no panic holds it").get_or_insert(e);
                    }
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().expect("no panic holds it") {
        bar.finish_and_clear();
        return Err(e);
    }
    let builds: BTreeMap<(&str, &str), Builds> = shelf
        .into_inner()
        .expect("no panic holds it")
        .0
        .into_iter()
        .map(|(k, b)| {
            (
                k,
                std::sync::Arc::into_inner(b).expect("every run has ended"),
            )
        })
        .collect();
    let mut measured: Measured = BTreeMap::new();
    let mut done = done.into_inner().expect("no panic holds it");
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
    let (reused, ran) = (reused.into_inner(), ran.into_inner());
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
    let dirs = super::report::staged_dirs(ws, &out);
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
    };
    let digest = digest_of(
        ws,
        &cache,
        &jobs,
        &sending,
        &variants,
        &builds,
        (whole, &args.allocator_features),
    )?;
    let reading = galloc_lab::report::lock::Lock::read(ws.root(), &out)?;
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
    let staged = super::report::Staged::begin(ws, &out)?;
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
    let report = staged.explain(write_all(
        ws, &staged, &out, &backends, &measured, &builds, &sending,
    ))?;
    staged.commit()?;
    written.record(&digest)?;
    println!("{}", galloc_lab::report::verdicts::verdicts(&report));
    println!("Full report: {}", out.join("README.md").display());
    Ok(())
}

/// The digest of everything a run's files are made from: every run's cache key (which holds
/// the lab's own bytes, the backend, the scenario and the builds' hashes), every build (its
/// file and hash: what `artifacts.csv` is read from), the selection's shape, the toolchain and
/// crate versions the metadata records, and the charts' font.
fn digest_of(
    ws: &Workspace,
    cache: &RunCache,
    jobs: &[(BackendKind, usize, usize, Job)],
    sending: &Sending,
    variants: &[&'static Variant],
    builds: &BTreeMap<(&str, &str), Builds>,
    (whole, features): (bool, &str),
) -> Result<String> {
    let mut parts = vec![format!("whole {whole}, features {features}")];
    for &(backend, ci, vi, point) in jobs {
        let (s, v) = (&sending.scenarios[ci], variants[vi]);
        let b = &builds[&(s.package, v.id)];
        let print = &sending.prints[ci];
        parts.push(match point {
            Job::Case => cache.key(backend, print, b),
            Job::Point(p) => cache.key_of_run(backend, print, &b.layouts[p].1.sha256),
            Job::Second(i) => cache.key_of_run(
                backend,
                sending.second_prints[ci]
                    .as_ref()
                    .expect("a second workload's job has one"),
                &b.at(sending.second_on[&backend][i]).sha256,
            ),
        });
    }
    for b in builds.values() {
        let layouts = b.layouts.iter().map(|(_, a)| a);
        for a in [&b.plain, &b.probe, &b.twin].into_iter().chain(layouts) {
            parts.push(format!("{} {}", a.path.display(), a.sha256));
        }
    }
    parts.push(galloc_lab::report::metadata::sources(ws.root())?);
    parts.push(galloc_lab::report::charts::font_identity());
    Ok(digest_of_parts(parts.iter().map(String::as_str)))
}

/// Every results file of the run, the manifest and the report, into the staged copy.
fn write_all(
    ws: &Workspace,
    staged: &super::report::Staged,
    out: &Path,
    backends: &[BackendKind],
    measured: &Measured,
    builds: &BTreeMap<(&str, &str), Builds>,
    sending: &Sending,
) -> Result<galloc_lab::report::inputs::Inputs> {
    let dir = staged.dir.clone();
    for &backend in backends {
        write_backend(&dir, backend, measured, builds, sending.seconds)?;
    }
    write_artifacts(&dir, builds)?;
    write_agreement(&dir, sending.scenarios)?;
    let runs: Vec<MeasuredRow> = measured
        .values()
        .map(|(s, v, m, _, _)| MeasuredRow {
            backend: m.backend.name().into(),
            case: s.case.into(),
            variant: v.id.into(),
        })
        .collect();
    let manifest = merge(&dir.join(MANIFEST), runs, |r: &MeasuredRow| {
        (r.backend.clone(), key(&r.case, &r.variant))
    })?;
    write_csv(&dir.join(MANIFEST), &manifest)?;
    super::report::publish(ws, &dir, &staged.images, out)
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
                galloc_lab::analyse::layout::POINTS
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

/// One backend's files: `results/<backend>/*.csv`, its per-message rows
/// (`messages.csv.zst`) and its traces.
fn write_backend(
    results: &Path,
    backend: BackendKind,
    measured: &Measured,
    builds: &BTreeMap<(&str, &str), Builds>,
    seconds: &[Option<(scenario::Workload, Scenario)>],
) -> Result<()> {
    let (mut totals, mut ops, mut pages, mut messages, mut layouts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut second_rows: Vec<SecondRow> = Vec::new();
    let mut per_build: BTreeMap<(&str, &str), Vec<(&Scenario, &CaseMeasurement)>> = BTreeMap::new();
    for ((_, ci, _), (s, v, m, points, second)) in
        measured.iter().filter(|((b, _, _), _)| *b == backend)
    {
        let build = &builds[&(s.package, v.id)];
        if let Some((workload, scenario)) = &seconds[*ci] {
            for (offset, run) in second {
                let row = layout::row(
                    scenario,
                    v.id,
                    backend,
                    m.unit,
                    *offset,
                    build.at(*offset),
                    run,
                )?;
                second_rows.push(SecondRow::of(row, workload.id));
            }
        }
        layouts.push(layout::row(
            s,
            v.id,
            backend,
            m.unit,
            0,
            &build.plain,
            &m.plain,
        )?);
        for (offset, run) in points {
            layouts.push(layout::row(
                s,
                v.id,
                backend,
                m.unit,
                *offset,
                build.at(*offset),
                run,
            )?);
        }
        let (total, op_rows) = case_rows(s, v, m, build.plain.bytes.len() as u64);
        totals.push(total);
        ops.extend(op_rows);
        pages.extend(pages_row(s, v, m));
        messages.extend(message_rows(s, v, m));
        if backend.records_calls() {
            let path = results
                .join("traces")
                .join(format!("{}-{}.csv.zst", s.case, v.id));
            trace::write(&path, &trace::records(&m.probe))?;
        }
        per_build.entry((s.package, v.id)).or_default().push((s, m));
    }
    let dir = results.join(backend.name());
    let save = |name: &str| dir.join(name);

    // The probe's overhead is a property of each build: fitted over all its cases at once. A
    // run of fewer of the build's cases than the stored rows cover keeps the stored fit.
    let stored: Vec<ValidationRow> = if save("probe-validation.csv").exists() {
        read_csv(&save("probe-validation.csv"))?
    } else {
        Vec::new()
    };
    let mut checks = Vec::new();
    for ((package, variant), runs) in &per_build {
        let v = galloc_variants::find(variant)?;
        let ran: Vec<&str> = runs.iter().map(|(s, _)| s.case).collect();
        let earlier: Vec<&ValidationRow> = stored
            .iter()
            .filter(|r| r.variant == *variant && package_of(&r.case, runs) == Some(*package))
            .collect();
        let partial = earlier.iter().any(|r| !ran.contains(&r.case.as_str()));
        let kept = partial.then(|| overheads_of(earlier[0]));
        checks.extend(validate(v, runs, kept));
    }

    let layouts = merge_points(&save("layouts.csv"), layouts, |r: &LayoutRow| {
        (r.case.as_str(), r.variant.as_str(), r.offset)
    })?;
    write_csv(&save("layouts.csv"), &layouts)?;
    // Only gas runs the second workloads (`layout::second_on`).
    if !second_rows.is_empty() || save(SECOND).exists() {
        let rows = merge_points(&save(SECOND), second_rows, |r: &SecondRow| {
            (r.case.as_str(), r.variant.as_str(), r.offset)
        })?;
        write_csv(&save(SECOND), &rows)?;
    }

    let mut totals = merge(&save("totals.csv"), totals, |r: &TotalRow| {
        key(&r.case, &r.variant)
    })?;
    // Derived from every layout row, so a rerun of shipping refreshes every variant's pairing.
    layout::fill(&mut totals, &layouts);
    write_csv(&save("totals.csv"), &totals)?;
    let ops = merge(&save("ops.csv"), ops, |r: &OpRow| {
        (key(&r.case, &r.variant), op_index(&r.op))
    })?;
    write_csv(&save("ops.csv"), &ops)?;
    let checks = merge(
        &save("probe-validation.csv"),
        checks,
        |r: &ValidationRow| key(&r.case, &r.variant),
    )?;
    write_csv(&save("probe-validation.csv"), &checks)?;
    if !pages.is_empty() {
        let pages = merge(&save("pages.csv"), pages, |r: &PagesRow| {
            key(&r.case, &r.variant)
        })?;
        write_csv(&save("pages.csv"), &pages)?;
    }
    let path = save("messages.csv.zst");
    let messages = merge(&path, messages, |r: &MessageRow| {
        (key(&r.case, &r.variant), r.message)
    })?;
    write_csv(&path, &messages)
}

fn write_artifacts(dir: &Path, builds: &BTreeMap<(&str, &str), Builds>) -> Result<()> {
    let rows: Vec<ArtifactRow> = builds
        .iter()
        .flat_map(|((package, variant), b)| b.rows(package, variant))
        .collect();
    let path = dir.join("artifacts.csv");
    let fresh: std::collections::BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r.package.clone(), r.variant.clone()))
        .collect();
    let made: std::collections::BTreeSet<(String, String, String, u32)> = rows
        .iter()
        .map(|r| {
            (
                r.package.clone(),
                r.variant.clone(),
                r.build.clone(),
                r.layout_offset,
            )
        })
        .collect();
    // The plain build (offset 0) of each (package, variant), as stored and as made now: a layout
    // point is its plain build re-linked, so it stays what it was while the plain build does.
    let plain_of = |rows: &[ArtifactRow]| -> BTreeMap<(String, String), String> {
        rows.iter()
            .filter(|r| r.build == "plain" && r.layout_offset == 0)
            .map(|r| ((r.package.clone(), r.variant.clone()), r.sha256.clone()))
            .collect()
    };
    let made_plain = plain_of(&rows);
    let stored_plain = if path.exists() {
        plain_of(&read_csv::<ArtifactRow>(&path)?)
    } else {
        BTreeMap::new()
    };
    let mut rows = merge(&path, rows, |r: &ArtifactRow| {
        (
            r.package.clone(),
            key("", &r.variant).1,
            build_index(&r.build),
            r.layout_offset,
        )
    })?;
    // Rows of builds the lab no longer makes would otherwise be kept forever: of a (package,
    // variant) built now only this run's builds stay, and the layout points it did not need
    // (the fuel meter alone runs fewer) where its plain build is the one they were linked from.
    rows.retain(|r| {
        let pv = (r.package.clone(), r.variant.clone());
        build_index(&r.build) != usize::MAX
            && (!fresh.contains(&pv)
                || made.contains(&(
                    r.package.clone(),
                    r.variant.clone(),
                    r.build.clone(),
                    r.layout_offset,
                ))
                || (r.build == "layout"
                    && stored_plain
                        .get(&pv)
                        .is_some_and(|s| made_plain.get(&pv) == Some(s))))
    });
    write_csv(&path, &rows)
}

/// For each case this run measured: do fuel and gas agree, over every variant the results
/// hold for it on both backends? Read back from the merged files, so a run of one variant
/// (`just compare X`) recomputes the case's row over all of them rather than over itself.
fn write_agreement(dir: &Path, scenarios: &[Scenario]) -> Result<()> {
    let read = |backend: BackendKind| -> Result<Option<(Vec<TotalRow>, Vec<MessageRow>)>> {
        let sub = dir.join(backend.name());
        if !sub.join("messages.csv.zst").is_file() {
            return Ok(None);
        }
        Ok(Some((
            read_csv(&sub.join("totals.csv"))?,
            read_csv(&sub.join("messages.csv.zst"))?,
        )))
    };
    let (Some((fuel_totals, fuel_msgs)), Some((gas_totals, gas_msgs))) =
        (read(BackendKind::Wasmtime)?, read(BackendKind::Gtest)?)
    else {
        return Ok(());
    };
    let mut rows = Vec::new();
    for s in scenarios {
        let pairs: Vec<Pair> = galloc_variants::VARIANTS
            .iter()
            .filter_map(|v| {
                let total = |rows: &[TotalRow]| {
                    rows.iter()
                        .find(|t| t.case == s.case && t.variant == v.id)
                        .map(|t| t.allocator)
                };
                let per_message = |rows: &[MessageRow]| -> Vec<MessageRow> {
                    rows.iter()
                        .filter(|m| m.case == s.case && m.variant == v.id)
                        .cloned()
                        .collect()
                };
                let (fuel, gas) = (per_message(&fuel_msgs), per_message(&gas_msgs));
                if fuel.is_empty() || fuel.len() != gas.len() {
                    return None;
                }
                Some(Pair {
                    variant: v.id,
                    allocator_fuel: total(&fuel_totals)?,
                    allocator_gas: total(&gas_totals)?,
                    code_bytes: gas_totals
                        .iter()
                        .find(|t| t.case == s.case && t.variant == v.id)?
                        .code_bytes,
                    messages: fuel
                        .iter()
                        .zip(&gas)
                        .map(|(f, g)| (f.cost, pages_of(f), g.cost))
                        .collect(),
                })
            })
            .collect();
        if pairs.len() >= 2 {
            rows.push(agreement(s.case, &pairs));
        }
    }
    let path = dir.join("agreement.csv");
    let rows = merge(&path, rows, |r: &AgreementRow| key(&r.case, "").0)?;
    write_csv(&path, &rows)
}

/// `rows` (this run's points of a sweep) merged into the stored file at `path`: a (case,
/// variant) this run measured keeps only this run's points, so that no point of an earlier
/// build stays beside this one's; the others keep theirs.
fn merge_points<R: serde::de::DeserializeOwned>(
    path: &Path,
    rows: Vec<R>,
    point: impl Fn(&R) -> (&str, &str, u32),
) -> Result<Vec<R>> {
    let owned = |r: &R| {
        let (case, variant, offset) = point(r);
        (case.to_owned(), variant.to_owned(), offset)
    };
    let measured: std::collections::BTreeSet<(String, String, u32)> =
        rows.iter().map(owned).collect();
    let fresh: std::collections::BTreeSet<(String, String)> = measured
        .iter()
        .map(|(c, v, _)| (c.clone(), v.clone()))
        .collect();
    let mut all = merge(path, rows, |r: &R| {
        let (case, variant, offset) = point(r);
        (key(case, variant), offset)
    })?;
    all.retain(|r| {
        let (case, variant, offset) = owned(r);
        !fresh.contains(&(case.clone(), variant.clone()))
            || measured.contains(&(case, variant, offset))
    });
    Ok(all)
}

/// The plain build's page counts a message row keeps (all but `changed`, which the agreement
/// does not use; the first-touch split is the probe build's).
fn pages_of(m: &MessageRow) -> galloc_lab::run::backend::PageCounts {
    galloc_lab::run::backend::PageCounts {
        read: m.pages_read.unwrap_or(0),
        write: m.pages_written.unwrap_or(0),
        write_after_read: m.pages_write_after_read.unwrap_or(0),
        loaded: m.pages_loaded.unwrap_or(0),
        changed: 0,
        allocation_intervals: m.allocation_intervals.unwrap_or(0),
        first_touch: None,
    }
}

/// The package a stored row's case runs: from this run's scenarios, else the lab's own cases.
fn package_of(case: &str, runs: &[(&Scenario, &CaseMeasurement)]) -> Option<&'static str> {
    if let Some((s, _)) = runs.iter().find(|(s, _)| s.case == case) {
        return Some(s.package);
    }
    scenario::CASES
        .iter()
        .find(|c| c.id == case)
        .map(|c| (c.make)().package)
}

/// Sort key of a row: the case's and the variant's registry positions.
fn key(case: &str, variant: &str) -> (usize, usize) {
    let case = scenario::CASES
        .iter()
        .position(|c| c.id == case)
        .unwrap_or(usize::MAX);
    let variant = galloc_variants::VARIANTS
        .iter()
        .position(|v| v.id == variant)
        .unwrap_or(usize::MAX);
    (case, variant)
}

fn op_index(op: &str) -> usize {
    galloc::probe::Op::ALL
        .iter()
        .position(|o| o.name() == op)
        .unwrap_or(usize::MAX)
}

fn build_index(build: &str) -> usize {
    ["plain", "probe", "twin", "layout"]
        .iter()
        .position(|b| *b == build)
        .unwrap_or(usize::MAX)
}
