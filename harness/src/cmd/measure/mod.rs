//! `lab measure`: every case × variant on the chosen backends; writes the results files and
//! the report.

use anyhow::Result;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::cache::{Fingerprint, RunCache};
use galloc_lab::run::execute::CaseRun;
use galloc_lab::run::measure::CaseMeasurement;
use galloc_lab::run::scenario::{self, Scenario};
use galloc_lab::store::staging::Written;
use galloc_variants::Variant;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod jobs;
mod plan;
mod size;
mod source;
mod write;

use jobs::{Job, Part, Ran};
pub(crate) use plan::Plan;
use size::{Pace, RunSize};
pub(crate) use source::Source;

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
    /// Second workloads run on gas at every this many of the points (1: at every point, as
    /// `just layout-model` judges its layout rules on them). Needs `--out` unless it is the
    /// default.
    #[arg(long, default_value_t = galloc_lab::run::plan::SECOND_STRIDE, allow_negative_numbers = true, value_parser = crate::cmd::stride)]
    second_stride: usize,
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
    /// another program"). Its file stem names the case. Give it again for more scenarios of the
    /// same program: each is a case of its own, in the same results.
    #[arg(long, requires = "program")]
    scenario: Vec<std::path::PathBuf>,
    /// Print the run's size (builds, runs, messages, and the time at the last run's pace) and
    /// stop: nothing is built, run or written.
    #[arg(long)]
    plan: bool,
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
            second_stride: galloc_lab::run::plan::SECOND_STRIDE,
            layout_step: None,
            no_second_workload: false,
            program: Some(program.to_path_buf()),
            scenario: vec![scenario.to_path_buf()],
            plan: false,
        }
    }
}

/// What a run sends: each case's scenario and second workload (by case index), their
/// fingerprints (part of the run cache's keys), and each backend's second-workload offsets.
pub(super) struct Sending<'a> {
    pub scenarios: &'a [Scenario],
    pub prints: &'a [Fingerprint],
    pub second_workloads: &'a [Option<(scenario::Workload, Scenario)>],
    pub second_prints: &'a [Option<Fingerprint>],
    pub second_on: &'a BTreeMap<BackendKind, Vec<u32>>,
    /// What the report and the metadata say wrote the results.
    pub source: Source,
    /// The backends asked for and left out for a case, and why (`left-out.csv`).
    pub left_out: &'a [galloc_lab::results::LeftOutRow],
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

/// `lab measure`: plan, build and run, assemble, then write the results and render the
/// report from them, all at once or not at all.
pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    galloc_lab::results::keep_compressed_in(ws.root().join("target/lab/compressed"));
    let plan = Plan::of(ws, &args)?;
    if args.plan {
        println!("{}", size_of(&plan, Pace::at(ws).read()));
        return Ok(());
    }
    let cache = RunCache::new(ws.root().join("target/lab/cache"))?;
    let executed = execute(ws, &args, &plan, &cache)?;
    let source = Source::of(&args, &plan.out, plan.program.as_ref())?;
    publish(ws, &args, &plan, &cache, executed, source)
}

/// What a run made and ran: its builds by (package, variant), and everything measured.
pub(crate) struct Executed<'a> {
    builds: BTreeMap<(&'static str, &'static str), galloc_lab::run::measure::Builds>,
    measured: Measured<'a>,
    /// Each case a backend asked for did not run, and why: the fuel meter left out for a
    /// program that imports what it does not implement.
    left_out: Vec<galloc_lab::results::LeftOutRow>,
    /// Runs made, and runs reused from the cache.
    ran: usize,
}

/// Builds what `plan` needs and runs its jobs (on every core, builds as the runs need them),
/// with a progress bar unless `--quiet`; a run whose size is large says so first.
pub(crate) fn execute<'a>(
    ws: &Workspace,
    args: &Args,
    plan: &'a Plan,
    cache: &RunCache,
) -> Result<Executed<'a>> {
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(plan.messages())
    };
    bar.set_style(
        ProgressStyle::with_template("{msg:44} [{bar:30}] {pos}/{len} messages, ETA {eta}")
            .expect("valid template"),
    );
    let work = jobs::Work {
        ws,
        args,
        bar: &bar,
        plan,
        cache,
    };
    let pace = Pace::at(ws);
    let size = size_of(plan, pace.read());
    if size.is_large() {
        eprintln!("{size}");
    }
    let jobs::Outcome {
        builds,
        done,
        reused,
        ran,
        timing,
        meter_left_out,
    } = jobs::execute(&work).inspect_err(|_| {
        bar.finish_and_clear();
    })?;
    // Only a guide for the next run's estimate: a pace that cannot be kept is not an error.
    let _ = pace.record(&timing);
    bar.finish_and_clear();
    if !args.quiet {
        eprintln!(
            "ran {ran} case x variant x backend measurements; reused {reused} whose builds, \
             scenario and lab were unchanged (target/lab/cache; --fresh runs all)"
        );
    }
    let measured = assemble(plan, &builds, done, &meter_left_out);
    let left_out = plan
        .scenarios
        .iter()
        .filter_map(|s| {
            let lacking = meter_left_out.get(s.package)?;
            Some(galloc_lab::results::LeftOutRow {
                backend: BackendKind::Wasmtime.name().into(),
                case: s.case.into(),
                why: format!(
                    "the Wasm imports {}, which the wasmtime meter does not implement",
                    lacking.join(", ")
                ),
            })
        })
        .collect();
    Ok(Executed {
        builds,
        measured,
        left_out,
        ran,
    })
}

/// What `plan` builds and runs: each (program, variant)'s three builds and its layout points'
/// re-links, a case job's three runs and one per other job, timed at `pace`.
fn size_of(plan: &Plan, pace: Option<size::Pace>) -> RunSize {
    let runs: Vec<(BackendKind, &str, u64)> = plan
        .jobs
        .iter()
        .map(|j| (j.backend, plan.scenarios[j.case].case, j.runs()))
        .collect();
    let builds = (plan.order.len() * 3, plan.order.len() * plan.points());
    RunSize::new(builds, &runs, plan.messages(), pace, plan.workers)
}

/// Every job's runs put together by (backend, case, variant): the three builds' runs at the
/// linker's layout, the plain build's at each layout this backend ran, the second workload's.
fn assemble<'a>(
    plan: &'a Plan,
    builds: &BTreeMap<(&'static str, &'static str), galloc_lab::run::measure::Builds>,
    mut done: BTreeMap<Job, Ran>,
    meter_left_out: &BTreeMap<&'static str, Vec<String>>,
) -> Measured<'a> {
    let mut measured: Measured = BTreeMap::new();
    let left_out = |j: &Job| {
        j.backend == BackendKind::Wasmtime
            && meter_left_out.contains_key(plan.scenarios[j.case].package)
    };
    for &job in (plan.jobs.iter()).filter(|j| j.part == Part::Case && !left_out(j)) {
        let Job {
            backend,
            case: ci,
            variant: vi,
            ..
        } = job;
        let (s, v) = (&plan.scenarios[ci], plan.variants[vi]);
        let Some(Ran::Case(m)) = done.remove(&job) else {
            unreachable!("every job ran");
        };
        let mut take = |key| match done.remove(&key) {
            Some(Ran::Point(run)) => *run,
            _ => unreachable!("every job ran"),
        };
        // The points this backend ran (the fuel meter runs every `fuel_stride`th).
        let points = builds[&(s.package, v.id)]
            .layouts
            .iter()
            .enumerate()
            .filter(|(_, (offset, _))| plan.runs_on[&backend].contains(offset))
            .map(|(p, (offset, _))| {
                (
                    *offset,
                    take(Job {
                        part: Part::Point(p),
                        ..job
                    }),
                )
            })
            .collect();
        let second = match plan.second_workloads[ci] {
            Some(_) => (plan.second_on[&backend].iter().enumerate())
                .map(|(i, offset)| {
                    (
                        *offset,
                        take(Job {
                            part: Part::Second(i),
                            ..job
                        }),
                    )
                })
                .collect(),
            None => Vec::new(),
        };
        measured.insert((backend, ci, vi), (s, v, *m, points, second));
    }
    measured
}

/// Writes the results of `executed` into `plan.out` and renders the report from them, all in a
/// staged copy moved into place only once everything is made (a failure writes nothing; a
/// command writing them first is waited for and merged with); or, when nothing ran and nothing
/// they are made from changed since this very run last wrote them, prints the verdicts of the
/// files as they are.
pub(crate) fn publish(
    ws: &Workspace,
    args: &Args,
    plan: &Plan,
    cache: &RunCache,
    executed: Executed<'_>,
    mut source: Source,
) -> Result<()> {
    let out = &plan.out;
    // The program as its builds read it: their dep-info completes what was known before them
    // (the program's first build, a file read now that was not then). Here, where `lab measure`
    // and `lab pick` both publish: done by each caller, `pick` recorded the inputs known before
    // its first build, and its next run found the program changed.
    if let (Some(p), Some(known)) = (&plan.external, source.program.take()) {
        source.program = Some(plan::with_inputs(ws, p, known, None, &args.scenario)?);
    }
    let dirs = galloc_lab::store::publish::staged_dirs(ws, out);
    let written = Written::of(
        ws.root(),
        &dirs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    );
    let mut sending = Sending {
        scenarios: &plan.scenarios,
        prints: &plan.prints,
        second_workloads: &plan.second_workloads,
        second_prints: &plan.second_prints,
        second_on: &plan.second_on,
        source,
        left_out: &executed.left_out,
    };
    let whole = (plan.whole, args.allocator_features.as_str());
    let digest = write::digest_of(
        ws,
        cache,
        &plan.jobs,
        &sending,
        &plan.variants,
        &executed.builds,
        whole,
    )?;
    let reading = galloc_lab::store::lock::Lock::read(ws.root(), out)?;
    if executed.ran == 0
        && !plan.backends.contains(&BackendKind::Node)
        && written.unchanged(&digest)
    {
        let inputs = galloc_lab::report::inputs::Inputs::read_for_verdicts(out)?;
        println!("{}", galloc_lab::report::verdicts::verdicts(&inputs));
        println!(
            "Full report: {} (up to date: no run or input changed since it was written)",
            out.join("README.md").display()
        );
        return Ok(());
    }
    drop(reading);
    let staged = galloc_lab::store::publish::Staged::begin(ws, out)?;
    // Under the lock now: another command may have written the directory since the plan
    // looked, so it is asked again whether the directory holds this program (unless this run
    // replaces what is there), and the scenarios it records join this run's in its command.
    if !plan.whole {
        galloc_lab::store::metadata::check_program(
            &staged.dir,
            sending.source.program.as_ref(),
            true,
        )
        .map_err(|e| staged.explain::<()>(Err(e.into())).unwrap_err())?;
        let recorded = galloc_lab::store::metadata::read(&staged.dir).and_then(|m| m.program);
        sending.source = sending.source.with_recorded(recorded.as_ref());
    }
    written.forget()?;
    if plan.whole {
        // Only in the staged copy: the real files go only if everything succeeds.
        // An outside program's directory is written whole only to replace an earlier state of
        // the program: every backend's rows go, not only this run's (another backend's rows of
        // the old program made the run fail after it, when they were read with the new ones).
        let clear = match plan.external {
            Some(_) => &BackendKind::ALL[..],
            None => &plan.backends[..],
        };
        write::clear(&staged.dir, clear)?;
    }
    let report = staged.explain(write::write_all(
        ws,
        &staged,
        out,
        &plan.backends,
        &executed.measured,
        &executed.builds,
        &sending,
    ))?;
    staged.commit()?;
    written.record(&digest)?;
    eprintln!("{}", report.wrote);
    // A failed probe validation said where the figures are, not only in the report.
    let note = galloc_lab::report::validation::validation_note(&report.inputs);
    if !note.is_empty() {
        eprintln!("{}", note.trim_end().replace("**", ""));
    }
    println!("{}", galloc_lab::report::verdicts::verdicts(&report.inputs));
    println!("Full report: {}", out.join("README.md").display());
    Ok(())
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
