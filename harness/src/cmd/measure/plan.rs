//! `lab measure`'s plan: what a run builds and runs, decided from its arguments before anything
//! is built. Every argument is checked here, so a run that cannot be written fails in seconds,
//! not after its builds.

use super::jobs::{Job, Part};
use super::Args;
use anyhow::{bail, Context, Result};
use galloc_lab::build::external::Program;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::results::{MeasuredRow, MANIFEST};
use galloc_lab::run::backend::{node, BackendKind};
use galloc_lab::run::cache::{Fingerprint, RunCache};
use galloc_lab::run::plan;
use galloc_lab::run::scenario::{self, Scenario};
use galloc_variants::Variant;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A run, planned: its selection, where it writes, the layouts each backend runs, the builds it
/// needs in the order the runs need them, and its jobs.
pub(crate) struct Plan {
    pub backends: Vec<BackendKind>,
    pub variants: Vec<&'static Variant>,
    /// The program measured, when it is not one of the lab's cases (`--program`).
    pub external: Option<Program>,
    /// That program as its results record it (its crate, sources and this run's scenario
    /// files): what the results directory must already hold, if anything.
    pub program: Option<galloc_lab::store::metadata::ProgramSource>,
    /// Each case's scenario, and its second workload where it has one.
    pub scenarios: Vec<Scenario>,
    pub second_workloads: Vec<Option<(scenario::Workload, Scenario)>>,
    /// Their fingerprints: part of the run cache's keys.
    pub prints: Vec<Fingerprint>,
    pub second_prints: Vec<Option<Fingerprint>>,
    /// The results directory written, absolute.
    pub out: PathBuf,
    /// Whether the run measures every row `results/` holds, so writes the set afresh.
    pub whole: bool,
    /// Per backend, the offsets its plain builds run at, and its second workloads'.
    pub runs_on: BTreeMap<BackendKind, Vec<u32>>,
    pub second_on: BTreeMap<BackendKind, Vec<u32>>,
    /// Each (package, variant) to build, in the order the runs need them.
    pub order: Vec<(&'static str, &'static Variant)>,
    /// The offsets built for the layout sweep.
    pub built: Vec<u32>,
    /// The jobs: a case's three builds, or one layout of its plain build under its scenario or
    /// its second workload, on one variant and backend. Point `p` is the build at the `p`th
    /// nonzero offset of `built`.
    pub jobs: Vec<Job>,
    /// How many jobs run at once: every core, or one for a node (one process, one run at a
    /// time).
    pub workers: usize,
}

impl Plan {
    /// The plan of `args`; an argument that cannot be run, or results that cannot be written
    /// to, are an error naming what to do.
    pub fn of(ws: &Workspace, args: &Args) -> Result<Plan> {
        let (cases, mut variants) = args.selection.resolve()?;
        // An outside program's every figure is against shipping: it is measured beside the
        // variants named, as `lab pick` does (the lab's own results hold it already).
        if args.program.is_some() && !variants.iter().any(|v| v.id == galloc_variants::REFERENCE) {
            variants.insert(0, galloc_variants::find(galloc_variants::REFERENCE)?);
        }
        let backends = backends(ws, args)?;
        super::check_extra_features(args)?;
        let (external, scenarios, program) = scenarios(args, &cases)?;
        // Each case's second workload, where it has one (the lab's own cases).
        let second_workloads: Vec<Option<(scenario::Workload, Scenario)>> = match &external {
            Some(_) => vec![None; scenarios.len()],
            None if args.no_second_workload => vec![None; cases.len()],
            None => cases
                .iter()
                .map(|c| c.second.map(|w| (w, (w.make)())))
                .collect(),
        };
        let out = match (&args.out, &external) {
            (Some(out), _) => out.clone(),
            (None, Some(_)) if scenarios.len() > 1 => bail!(
                "{} scenarios of one program go into one results directory, which the lab does not \
                 choose: add --out DIR",
                scenarios.len()
            ),
            (None, Some(p)) => galloc_lab::build::external::default_out(ws, p, scenarios[0].case),
            (None, None) => ws.results_dir(),
        };
        galloc_lab::store::destination::check(ws, &out, args.out.is_some())?;
        let to_results = std::path::absolute(&out).ok() == Some(ws.results_dir());
        let offsets = offsets(args, to_results)?;

        // A run of every variant on every default case on both embedded backends into
        // `results/` measures every row `results/` holds: it writes the set afresh instead of
        // merging with it, so the lab can always regenerate its results, even after a change
        // of their format. Any other run adds to what is there.
        let mut run_set = BTreeSet::new();
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
        let mut whole = to_results
            && external.is_none()
            && args.allocator_features.is_empty()
            && galloc_lab::report::inputs::full_set()
                .iter()
                .all(|m| run_set.contains(m));

        // A results directory holds one program. The directory the lab chose for a program
        // (`--out` not given) holding an earlier state of it is the lab's to replace: its rows
        // would mix two programs. Any other mismatch is refused, naming both.
        let program = match (&external, program) {
            (Some(p), Some(source)) => {
                Some(with_inputs(ws, p, source, Some(&out), &args.scenario)?)
            }
            (_, source) => source,
        };
        if let Err(mismatch) =
            galloc_lab::store::metadata::check_program(&out, program.as_ref(), false)
        {
            if args.out.is_some() || !mismatch.same_crate() {
                return Err(mismatch.into());
            }
            eprintln!(
                "{}: the program changed since its results there were measured, so they are \
                 replaced, not added to",
                out.display()
            );
            whole = true;
        }

        // The results this run adds to must be whole and readable now, not after minutes of
        // building and running: they are merged with its rows at the end.
        let mut kept = None;
        if check_out(ws, &out)? && !whole {
            let (_lock, inputs) =
                super::super::read_results(ws, &out, to_results).with_context(|| {
                    format!(
                        "--out {}: the results there are merged with this run's, so they must \
                         be whole first (or give an empty or new directory)",
                        out.display()
                    )
                })?;
            kept = Some(inputs);
        }
        let out = std::path::absolute(&out)
            .with_context(|| format!("--out {}: cannot resolve", out.display()))?;

        // The offsets each backend runs: the fuel meter a thinned sweep, a `--layout-step` grid
        // whole; and so the ones to build (a run on the fuel meter alone builds only its
        // points).
        let (fuel_stride, second_stride) = if args.layout_step.is_some() {
            (1, 1)
        } else {
            (args.fuel_stride, args.second_stride)
        };
        let runs_on: BTreeMap<BackendKind, Vec<u32>> = backends
            .iter()
            .map(|b| (*b, plan::on(*b, &offsets, fuel_stride)))
            .collect();
        let second_on: BTreeMap<BackendKind, Vec<u32>> = backends
            .iter()
            .map(|b| (*b, plan::second_on(*b, &offsets, second_stride)))
            .collect();
        if let Some(inputs) = &kept {
            check_kept(inputs, &out, &scenarios, &variants, &runs_on)?;
        }
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
        let nonzero: Vec<u32> = built.iter().copied().filter(|o| *o > 0).collect();
        // Jobs go case by case, as the builds are made.
        let mut jobs: Vec<Job> = Vec::new();
        for (case, second) in second_workloads.iter().enumerate() {
            for variant in 0..variants.len() {
                for &backend in &backends {
                    let job = |part| Job {
                        backend,
                        case,
                        variant,
                        part,
                    };
                    jobs.push(job(Part::Case));
                    jobs.extend(
                        (0..nonzero.len())
                            .filter(|p| runs_on[&backend].contains(&nonzero[*p]))
                            .map(|p| job(Part::Point(p))),
                    );
                    if second.is_some() {
                        jobs.extend((0..second_on[&backend].len()).map(|i| job(Part::Second(i))));
                    }
                }
            }
        }
        let workers = if backends.contains(&BackendKind::Node) {
            1
        } else {
            galloc_lab::run::cores::cores()
        };
        let prints = scenarios.iter().map(RunCache::fingerprint).collect();
        let second_prints = second_workloads
            .iter()
            .map(|w| w.as_ref().map(|(_, s)| RunCache::fingerprint(s)))
            .collect();
        Ok(Plan {
            backends,
            variants,
            external,
            program,
            scenarios,
            second_workloads,
            prints,
            second_prints,
            out,
            whole,
            runs_on,
            second_on,
            order,
            built,
            jobs,
            workers,
        })
    }

    /// The layout points built beyond the linker's own.
    pub fn points(&self) -> usize {
        self.built.iter().filter(|o| **o > 0).count()
    }

    /// Every message the run sends: per backend, case and variant, the plain, probe and twin
    /// runs, the layout points, and the second workload's points.
    pub fn messages(&self) -> u64 {
        self.backends
            .iter()
            .map(|b| {
                self.scenarios
                    .iter()
                    .zip(&self.second_workloads)
                    .map(|(s, second)| {
                        let second = second.as_ref().map_or(0, |(_, w)| {
                            (w.steps.len() as u64 + 1) * self.second_on[b].len() as u64
                        });
                        ((s.steps.len() as u64 + 1) * (2 + self.runs_on[b].len() as u64) + second)
                            * self.variants.len() as u64
                    })
                    .sum::<u64>()
            })
            .sum()
    }
}

/// The rows a run into `out` keeps beside its own (`inputs`: the directory's other variants of
/// the cases it measures) must pair with them, or the merged set is refused after every build
/// and run: each kept row of a case has the scenario's message count (`init` and every step; a
/// scenario edited since to fewer or more messages) and the layouts this run measures on its
/// backend (a case measured again at another `--layouts`). Checked here, before anything is
/// built. A scenario edited to as many messages is not seen here: its file is not recorded.
fn check_kept(
    inputs: &galloc_lab::report::inputs::Inputs,
    out: &Path,
    scenarios: &[Scenario],
    variants: &[&'static Variant],
    runs_on: &BTreeMap<BackendKind, Vec<u32>>,
) -> Result<()> {
    let measured: Vec<&str> = variants.iter().map(|v| v.id).collect();
    for (backend, offsets) in runs_on {
        let ours: BTreeSet<u32> = offsets.iter().copied().collect();
        for s in scenarios {
            let of_case = || {
                (inputs.totals.iter()).filter(|t| t.backend == backend.name() && t.case == s.case)
            };
            // What `--variants` measures every variant the directory holds of the case again.
            let again = || -> String {
                let mut every = measured.clone();
                every.extend(
                    of_case()
                        .map(|t| t.variant.as_str())
                        .filter(|v| !measured.contains(v)),
                );
                every.join(",")
            };
            let want = s.steps.len() as u64 + 1;
            // The rows of variants this run does not measure stay as they are.
            for t in of_case().filter(|t| !measured.contains(&t.variant.as_str())) {
                if t.messages != want {
                    bail!(
                        "--out {}: its rows of `{}` on {} for `{}`, which this run keeps, were \
                         measured with {} messages (init included) and this run's scenario sends {want}: the \
                         scenario changed since, and the two would not pair. Nothing was built: \
                         measure every variant it holds again (--variants {}), or give another \
                         --out",
                        out.display(),
                        s.case,
                        backend.name(),
                        t.variant,
                        t.messages,
                        again()
                    );
                }
                let theirs: BTreeSet<u32> = inputs
                    .layouts
                    .iter()
                    .filter(|r| {
                        r.backend == t.backend && r.case == t.case && r.variant == t.variant
                    })
                    .map(|r| r.offset)
                    .collect();
                if theirs != ours {
                    bail!(
                        "--out {}: its rows of `{}` on {} for `{}`, which this run keeps, are at \
                         {} and this run measures {}: the two would not pair. Nothing was built: \
                         run with the --layouts they were measured at, measure every variant it \
                         holds again (--variants {}), or give another --out",
                        out.display(),
                        s.case,
                        backend.name(),
                        t.variant,
                        layouts(theirs.len()),
                        ours.len(),
                        again()
                    );
                }
            }
        }
    }
    Ok(())
}

/// "1 heap layout", "16 heap layouts".
fn layouts(n: usize) -> String {
    format!("{n} heap layout{}", if n == 1 { "" } else { "s" })
}

/// The backends of `args`, with a node configured and answering when one is among them
/// (minutes of builds come first: find out now whether the node is there at all).
fn backends(ws: &Workspace, args: &Args) -> Result<Vec<BackendKind>> {
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
        node::NodeBackend::start().context("checking the node before building")?;
    }
    Ok(backends)
}

/// The program measured when it is not one of the lab's cases, the scenarios (the cases' own,
/// or each `--scenario` file's), and the program as its results record it.
#[allow(clippy::type_complexity)]
fn scenarios(
    args: &Args,
    cases: &[&'static scenario::Case],
) -> Result<(
    Option<Program>,
    Vec<Scenario>,
    Option<galloc_lab::store::metadata::ProgramSource>,
)> {
    let Some(program) = &args.program else {
        return Ok((None, cases.iter().map(|c| (c.make)()).collect(), None));
    };
    if args.selection.cases != "default" {
        bail!("--cases selects the lab's own cases; with --program the scenario file is the case");
    }
    let program = Program::at(program)?;
    let mut scenarios = Vec::new();
    let mut files = BTreeMap::new();
    for file in &args.scenario {
        let case = galloc_lab::build::external::case_of(file)?;
        if scenario::CASES.iter().any(|c| c.id == case) {
            bail!(
                "scenario file {}: `{case}` is one of the lab's own cases; rename the file",
                file.display()
            );
        }
        let abs = std::path::absolute(file)
            .with_context(|| format!("{}: cannot resolve", file.display()))?;
        if let Some(other) = files.insert(case.to_owned(), abs.display().to_string()) {
            bail!(
                "scenario files {other} and {} both name the case `{case}` (a case is its file's \
                 name): rename one",
                file.display()
            );
        }
        let case: &'static str = Box::leak(case.to_owned().into_boxed_str());
        scenarios.push(Scenario::read(file, case, &program)?);
    }
    let source = galloc_lab::store::metadata::ProgramSource {
        crate_dir: program
            .manifest
            .parent()
            .unwrap_or(&program.manifest)
            .display()
            .to_string(),
        sources_sha256: String::new(),
        inputs: BTreeMap::new(),
        scenarios: files,
    };
    Ok((Some(program), scenarios, Some(source)))
}

/// `source` with the program's build inputs as they are now ([`Program::inputs`]): those its
/// last build read, and those the results in `out` record for the same crate (so that a file
/// read then and changed, gone or no longer read now is seen before anything is built).
pub(crate) fn with_inputs(
    ws: &Workspace,
    program: &Program,
    mut source: galloc_lab::store::metadata::ProgramSource,
    out: Option<&Path>,
    scenarios: &[PathBuf],
) -> Result<galloc_lab::store::metadata::ProgramSource> {
    let recorded: Vec<PathBuf> = out
        .and_then(galloc_lab::store::metadata::read)
        .and_then(|m| m.program)
        .filter(|p| p.crate_dir == source.crate_dir)
        .map(|p| {
            p.inputs
                .into_keys()
                .filter(|k| k != galloc_lab::build::external::TOOLCHAIN_INPUT)
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default();
    source.inputs = program.inputs(ws, &recorded, scenarios)?;
    source.sources_sha256 = galloc_lab::build::external::identity(&source.inputs);
    Ok(source)
}

/// The sweep's offsets: a `--layout-step` grid, or `--layouts` points; `results/` (`to_results`)
/// holds the default sweep with its second workloads and nothing else.
fn offsets(args: &Args, to_results: bool) -> Result<Vec<u32>> {
    let offsets = match args.layout_step {
        Some(step) => plan::grid(step)?,
        None => plan::sweep(args.layouts, args.one_gear_page)?,
    };
    let default = offsets == plan::default_sweep()
        && args.fuel_stride == plan::FUEL_STRIDE
        && args.second_stride == plan::SECOND_STRIDE
        && !args.no_second_workload;
    if to_results && !default {
        bail!(
            "{}: results/ holds every case at the {} layouts of the default sweep, with its second \
             workload, so a run into it measures those; give --out DIR to measure others",
            match args.layout_step {
                _ if args.no_second_workload => "--no-second-workload".to_owned(),
                Some(step) => format!("--layout-step {step}"),
                None => format!(
                    "--layouts {}{} --fuel-stride {} --second-stride {}",
                    args.layouts,
                    if args.one_gear_page { " --one-gear-page" } else { "" },
                    args.fuel_stride,
                    args.second_stride
                ),
            },
            plan::POINTS
        );
    }
    Ok(offsets)
}

/// `--out` must be a directory the lab wrote, or an empty or new one: checked before anything
/// is built, since only the commit at the end would find out otherwise (a file there made the
/// commit fail after the whole run, leaving a journal that could never be applied). Returns
/// whether it holds files.
fn check_out(ws: &Workspace, out: &Path) -> Result<bool> {
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
