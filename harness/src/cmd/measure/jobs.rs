//! `lab measure`'s jobs: the builds, made one at a time on a thread of their own, and every run
//! on the other cores as soon as its builds are made; the results put back in job order.

use anyhow::Result;
use galloc_lab::build::artifact::{BuildRequest, PostProcess};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::cache::RunCache;
use galloc_lab::run::execute::CaseRun;
use galloc_lab::run::measure::{measure_case, Builds, CaseMeasurement};
use indicatif::ProgressBar;
use std::collections::BTreeMap;

/// What one job ran: a case's three builds, or one layout of its plain build (under the case's
/// scenario or its second workload's).
pub(super) enum Ran {
    Case(Box<CaseMeasurement>),
    Point(Box<CaseRun>),
}

/// One job of a (backend, case, variant): the case's three builds at the linker's layout, the
/// plain build at the `p`th nonzero point of the sweep, or the second workload at the `i`th of
/// its offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Job {
    Case,
    Point(usize),
    Second(usize),
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

/// What every job ran, by job.
pub(super) type Done = BTreeMap<(BackendKind, usize, usize, Job), Ran>;

/// How long the run's parts took, for the next run's estimate of its size: the builder's
/// whole time, and the time and messages of the runs made (not those reused), summed over the
/// cores that made them.
#[derive(Clone, Debug, Default)]
pub(super) struct Timing {
    /// Seconds and count of the plain, probe and twin builds made or found up to date.
    pub builds: (f64, u64),
    /// Seconds and count of the layout points' re-links.
    pub relinks: (f64, u64),
    /// Per (backend, case): seconds and runs made (a case's three builds' runs count three).
    pub runs: BTreeMap<(BackendKind, &'static str), (f64, u64)>,
}

impl Timing {
    fn ran(&mut self, backend: BackendKind, case: &'static str, seconds: f64, runs: u64) {
        let t = self.runs.entry((backend, case)).or_default();
        t.0 += seconds;
        t.1 += runs;
    }
}

/// Makes every build and runs every job: the builds by (package, variant), what each job ran,
/// and how many runs were reused from the cache and how many ran. The first error stops
/// every job.
#[allow(clippy::type_complexity)]
pub(super) fn execute(
    w: &Work,
) -> Result<(
    BTreeMap<(&'static str, &'static str), Builds>,
    Done,
    usize,
    usize,
    Timing,
)> {
    let Work {
        ws,
        args,
        bar,
        plan,
        cache,
    } = *w;
    let super::Plan {
        order,
        external,
        built,
        scenarios,
        variants,
        seconds,
        prints,
        second_prints,
        second_on,
        jobs,
        workers,
        ..
    } = plan;
    let (external, workers) = (external.as_ref(), *workers);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (reused, ran) = (
        std::sync::atomic::AtomicUsize::new(0),
        std::sync::atomic::AtomicUsize::new(0),
    );
    let done: std::sync::Mutex<Done> = Default::default();
    let timing: std::sync::Mutex<Timing> = Default::default();
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
        for &(package, v) in order {
            if failed.lock().expect("no panic holds it").is_some() {
                return Ok(());
            }
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
            b.layouts = galloc_lab::build::sweep::builds(ws, plain, built, log)?;
            let mut t = timing.lock().expect("no panic holds it");
            t.builds.0 += three;
            t.builds.1 += 3;
            t.relinks.0 += started.elapsed().as_secs_f64();
            t.relinks.1 += b.layouts.len() as u64;
            drop(t);
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
                let started = std::time::Instant::now();
                let m = measure_case(&b, s, backend, |config| {
                    bar.set_message(format!("{} {} {config}", backend.name(), s.case));
                    bar.inc(1);
                })?;
                let seconds = started.elapsed().as_secs_f64();
                timing
                    .lock()
                    .expect("no panic holds it")
                    .ran(backend, s.case, seconds, 3);
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
                let started = std::time::Instant::now();
                let (run, _) = galloc_lab::run::measure::run_build(
                    artifact,
                    s,
                    backend,
                    galloc_lab::run::execute::ProbeReads::Never,
                    || {},
                )?;
                let seconds = started.elapsed().as_secs_f64();
                timing
                    .lock()
                    .expect("no panic holds it")
                    .ran(backend, s.case, seconds, 1);
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
    Ok((
        builds,
        done.into_inner().expect("no panic holds it"),
        reused.into_inner(),
        ran.into_inner(),
        timing.into_inner().expect("no panic holds it"),
    ))
}
