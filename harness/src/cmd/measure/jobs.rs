//! `lab measure`'s jobs: the builds, made one at a time on a thread of their own, and every run
//! on the other cores (`run::cores`) as soon as its builds are made; the results put back by
//! job.

use anyhow::Result;
use galloc_lab::build::artifact::{BuildRequest, PostProcess};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::cache::RunCache;
use galloc_lab::run::execute::CaseRun;
use galloc_lab::run::measure::{measure_case, Builds, CaseMeasurement};
use indicatif::ProgressBar;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What one job ran: a case's three builds, or one layout of its plain build (under the case's
/// scenario or its second workload's).
pub(super) enum Ran {
    Case(Box<CaseMeasurement>),
    Point(Box<CaseRun>),
}

/// Which runs of a (backend, case, variant) a job makes: the case's three builds at the
/// linker's layout, the plain build at the `p`th nonzero point of the sweep, or the second
/// workload at the `i`th of its offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Part {
    Case,
    Point(usize),
    Second(usize),
}

/// One job: a part of one case on one variant on one backend (the case and variant are indices
/// into the plan's scenarios and variants).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Job {
    pub backend: BackendKind,
    pub case: usize,
    pub variant: usize,
    pub part: Part,
}

impl Job {
    /// How many runs the job makes: a case's plain, probe and twin builds, or one.
    pub fn runs(&self) -> u64 {
        if self.part == Part::Case {
            3
        } else {
            1
        }
    }
}

/// What the jobs are made of: the run's arguments and plan (its builds to make and its runs),
/// where to show progress, and the runs kept from earlier.
pub(super) struct Work<'a> {
    pub ws: &'a Workspace,
    pub args: &'a super::Args,
    pub bar: &'a ProgressBar,
    pub plan: &'a super::Plan,
    pub cache: &'a RunCache,
}

/// Seconds spent on some count of things (builds, re-links or runs), summed over the cores
/// that made them.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Spent {
    pub seconds: f64,
    pub count: u64,
}

impl Spent {
    fn add(&mut self, seconds: f64, count: u64) {
        self.seconds += seconds;
        self.count += count;
    }
}

/// How long the run's parts took, for the next run's estimate of its size: the builder's
/// whole time, and the time and number of the runs made (not those reused).
#[derive(Clone, Debug, Default)]
pub(super) struct Timing {
    /// The plain, probe and twin builds made or found up to date.
    pub builds: Spent,
    /// The layout points' re-links.
    pub relinks: Spent,
    /// Per (backend, case): the runs made (a case's three builds' runs count three).
    pub runs: BTreeMap<(BackendKind, &'static str), Spent>,
}

/// Everything the jobs made: the builds by (package, variant), what each job ran, how many
/// jobs were reused from the cache and how many ran, and how long it took.
pub(super) struct Outcome {
    pub builds: BTreeMap<(&'static str, &'static str), Builds>,
    pub done: BTreeMap<Job, Ran>,
    pub reused: usize,
    pub ran: usize,
    pub timing: Timing,
    /// The programs (by package) the fuel meter was left out for, with the imports it lacks.
    pub meter_left_out: BTreeMap<&'static str, Vec<String>>,
}

/// Makes every build and runs every job. The first error stops every job; it is the one
/// returned.
pub(super) fn execute(w: &Work) -> Result<Outcome> {
    let Work {
        ws,
        args,
        bar,
        plan,
        cache,
    } = *w;
    let external = plan.external.as_ref();
    let (reused, ran) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let timing: Mutex<Timing> = Default::default();
    let metered = plan.backends.contains(&BackendKind::Wasmtime);
    // Builds go one at a time (cargo locks its target directory) on a thread of their own; as
    // each is made, its jobs go down the channel to the runs on the other cores: a first run
    // from a fresh clone overlaps minutes of building with running. A failed run drops the
    // channel's receiver, so the builder stops at its next send. It returns what it made and
    // the programs it left the meter out for.
    type Made = BTreeMap<(&'static str, &'static str), Arc<Builds>>;
    type LeftOut = BTreeMap<&'static str, Vec<String>>;
    let build_all = |jobs: std::sync::mpsc::Sender<(Job, Arc<Builds>)>| -> Result<(Made, LeftOut)> {
        let (mut made, mut left_out) = (Made::new(), LeftOut::new());
        for &(package, v) in &plan.order {
            let log = |line: &str| {
                if !args.quiet {
                    bar.suspend(|| eprintln!("{line}"));
                }
            };
            let started = std::time::Instant::now();
            let mut b =
                Builds::with_features(ws, package, external, v, &args.allocator_features, log)?;
            let three = started.elapsed().as_secs_f64();
            let plain = BuildRequest {
                package,
                variant: v,
                probe: false,
                post: PostProcess::Gear,
                layout_pad: 0,
                layout_offset: 0,
                heap_skip: 0,
                extra_features: &args.allocator_features,
                external,
            };
            let started = std::time::Instant::now();
            b.layouts = galloc_lab::build::sweep::builds(ws, plain, &plan.built, log)?;
            let mut t = timing.lock().expect("no panic holds it");
            t.builds.add(three, 3);
            t.relinks
                .add(started.elapsed().as_secs_f64(), b.layouts.len() as u64);
            drop(t);
            let b = Arc::new(b);
            made.insert((package, v.id), b.clone());
            // A program importing what the fuel meter does not implement (the meter has every
            // Gear syscall: only a function Gear does not have, which gtest refuses too) is
            // measured without it, said in one line, rather than failing its first run on it.
            if metered && !left_out.contains_key(package) {
                let lacking =
                    galloc_lab::run::backend::wasmtime::WasmtimeBackend::lacking(&b.plain.bytes)?;
                if !lacking.is_empty() {
                    bar.suspend(|| {
                        eprintln!(
                            "{package}: measured without the fuel meter, which does not \
                             implement {} (gtest, which runs everything Gear does, measures it)",
                            lacking.join(", ")
                        )
                    });
                    left_out.insert(package, lacking);
                }
            }
            let unmetered = left_out.contains_key(package);
            // Its jobs, in the plan's order (a later case of the same program included).
            let of_build = plan.jobs.iter().filter(|j| {
                plan.scenarios[j.case].package == package
                    && plan.variants[j.variant].id == v.id
                    && !(unmetered && j.backend == BackendKind::Wasmtime)
            });
            for &job in of_build {
                if jobs.send((job, b.clone())).is_err() {
                    return Ok((made, left_out));
                }
            }
        }
        Ok((made, left_out))
    };
    let run = |job: Job, b: &Builds| -> Result<Ran> {
        let s = &plan.scenarios[job.case];
        let backend = job.backend;
        // A node's runs are not kept: the same builds can cost differently on another node
        // or runtime, and the cache key cannot see which node it was.
        let keep = !args.fresh && backend != BackendKind::Node;
        let count = |kept: bool| {
            let n = if kept { &reused } else { &ran };
            n.fetch_add(1, Ordering::Relaxed);
        };
        let spent = |elapsed: f64, runs: u64| {
            let mut t = timing.lock().expect("no panic holds it");
            t.runs
                .entry((backend, s.case))
                .or_default()
                .add(elapsed, runs);
        };
        let (artifact, s, print) = match job.part {
            Part::Point(p) => (&b.layouts[p].1, s, &plan.prints[job.case]),
            Part::Second(i) => {
                let (Some((_, second)), Some(print)) = (
                    &plan.second_workloads[job.case],
                    &plan.second_prints[job.case],
                ) else {
                    unreachable!("a second workload's job has one");
                };
                (b.at(plan.second_on[&backend][i]), second, print)
            }
            Part::Case => {
                let key = cache.key(backend, &plan.prints[job.case], b);
                if let Some(m) = keep.then(|| cache.load(&key, backend)).flatten() {
                    count(true);
                    bar.inc(3 * m.plain.messages.len() as u64);
                    return Ok(Ran::Case(Box::new(m)));
                }
                count(false);
                let started = std::time::Instant::now();
                let m = measure_case(b, s, backend, |config| {
                    bar.set_message(format!("{} {} {config}", backend.name(), s.case));
                    bar.inc(1);
                })?;
                spent(started.elapsed().as_secs_f64(), job.runs());
                if keep {
                    cache.store(&key, &m)?;
                }
                return Ok(Ran::Case(Box::new(m)));
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
                let started = std::time::Instant::now();
                let (run, _) = galloc_lab::run::measure::run_build(
                    artifact,
                    s,
                    backend,
                    galloc_lab::run::execute::ProbeReads::Never,
                    || {},
                )?;
                spent(started.elapsed().as_secs_f64(), job.runs());
                if keep {
                    cache.store_run(&key, &run)?;
                }
                run
            }
        };
        bar.inc(run.messages.len() as u64);
        Ok(Ran::Point(Box::new(run)))
    };
    let (send, receive) = std::sync::mpsc::channel();
    let (built, ran_jobs) = std::thread::scope(|scope| {
        let builder = scope.spawn(|| build_all(send));
        let ran_jobs = galloc_lab::run::cores::as_they_come(plan.workers, receive, |(job, b)| {
            run(job, &b).map(|r| (job, r))
        });
        (
            builder.join().expect("the builder does not panic"),
            ran_jobs,
        )
    });
    // A build's error first: the runs stopped for want of its builds.
    let (made, meter_left_out) = built?;
    let done: BTreeMap<Job, Ran> = ran_jobs?.into_iter().collect();
    let builds = made
        .into_iter()
        .map(|(k, b)| (k, Arc::into_inner(b).expect("every run has ended")))
        .collect();
    Ok(Outcome {
        builds,
        done,
        reused: reused.into_inner(),
        ran: ran.into_inner(),
        timing: timing.into_inner().expect("no panic holds it"),
        meter_left_out,
    })
}
