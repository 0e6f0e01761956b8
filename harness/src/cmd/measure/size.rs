//! A run's size, said before it starts when it is large, and the pace of the last run that
//! times the estimate.

use anyhow::Result;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::run::backend::BackendKind;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How big a run is, said before it starts when it is large ([`RunSize::is_large`]): a run of
/// over an hour used to start with no word of its size (`--layouts 1000`).
pub struct RunSize {
    /// Builds to make or find up to date: plain, probe and twin per (program, variant), and
    /// each layout point's re-link.
    pub builds: usize,
    /// Runs: a case's plain, probe and twin runs, and one per layout point and second-workload
    /// point, on every backend.
    pub runs: usize,
    pub messages: u64,
    /// Seconds, at the last run's pace, if the lab has run anything here before: its builds
    /// at the last run's seconds per build, then its messages at the last run's seconds per
    /// message over every core. Builds found up to date and runs kept make it shorter.
    pub estimate: Option<f64>,
}

impl RunSize {
    /// A run of `builds` builds and `relinks` layout points' re-links, and `runs` (each job's
    /// backend, case and runs), estimated at `pace` over `workers` cores: its builds and
    /// re-links at the last seconds per build and per re-link, each run at the
    /// last seconds per run of its case on its backend (the median over the backend's cases
    /// for a case not timed here yet). No estimate without a pace for the backend.
    pub fn new(
        (builds, relinks): (usize, usize),
        runs: &[(BackendKind, &str, u64)],
        messages: u64,
        pace: Option<Pace>,
        workers: usize,
    ) -> RunSize {
        let estimate = pace.and_then(|p| {
            let mut seconds = builds as f64 * p.per_build + relinks as f64 * p.per_relink;
            for (backend, case, n) in runs {
                seconds += *n as f64 * p.per_run(*backend, case)? / workers.max(1) as f64;
            }
            Some(seconds)
        });
        RunSize {
            builds: builds + relinks,
            runs: runs.iter().map(|r| r.2 as usize).sum(),
            messages,
            estimate,
        }
    }

    /// Large: over 15 minutes at that pace, or, with no pace yet, over 500 runs (about 15
    /// minutes on this 2-core machine's first runs).
    pub fn is_large(&self) -> bool {
        match self.estimate {
            Some(seconds) => seconds > 15.0 * 60.0,
            None => self.runs > 500,
        }
    }
}

impl std::fmt::Display for RunSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "this run: {} builds (made or found up to date), {} runs, {} messages",
            self.builds, self.runs, self.messages
        )?;
        match self.estimate {
            Some(seconds) => write!(
                f,
                "; up to about {} at the pace of the last run here (less for builds up to \
                 date and runs kept in target/lab/cache); Ctrl-C stops it, writing nothing",
                duration(seconds)
            ),
            None => write!(
                f,
                "; no run here yet to time it by (a first run builds the lab's trees too); \
                 Ctrl-C stops it, writing nothing"
            ),
        }
    }
}

/// `seconds` in words a person reads at a glance: minutes, or hours and minutes.
fn duration(seconds: f64) -> String {
    let minutes = (seconds / 60.0).round() as u64;
    match minutes {
        0 => "under a minute".to_owned(),
        m if m < 60 => format!("{m} min"),
        m => format!("{} h {} min", m / 60, m % 60),
    }
}

/// The pace of the runs made here, kept in `target/lab/cache/pace` for the next run's
/// [`RunSize`]: seconds per build (made or found up to date) and per layout point's re-link,
/// and seconds per run of each (backend, case) on one core, as the last run that made any
/// measured them (runs reused from the cache not counted). Runs of one case cost alike across
/// variants; across cases they differ by orders of magnitude (a synthetic case's tens of
/// thousands of messages against nft's three), so one pace for all was days off.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pace {
    pub per_build: f64,
    pub per_relink: f64,
    pub per_run: BTreeMap<(String, String), f64>,
}

impl Pace {
    /// The pace kept under `ws`, if a run has left one.
    pub fn at(ws: &Workspace) -> PaceFile {
        PaceFile(ws.root().join("target/lab/cache/pace"))
    }

    /// Seconds per run of `case` on `backend`; a case not timed yet, the median of the
    /// backend's; `None` when the backend has none.
    fn per_run(&self, backend: BackendKind, case: &str) -> Option<f64> {
        let name = backend.name();
        if let Some(s) = self.per_run.get(&(name.to_owned(), case.to_owned())) {
            return Some(*s);
        }
        let mut known: Vec<f64> = self
            .per_run
            .iter()
            .filter(|((b, _), _)| b == name)
            .map(|(_, s)| *s)
            .collect();
        (!known.is_empty()).then(|| galloc_lab::analyse::layout::median(&mut known))
    }
}

/// Where the pace is kept: lines `build SECONDS` and `relink SECONDS`, then `run BACKEND CASE
/// SECONDS` per case.
pub struct PaceFile(PathBuf);

impl PaceFile {
    pub fn read(&self) -> Option<Pace> {
        let text = std::fs::read_to_string(&self.0).ok()?;
        let mut pace = Pace::default();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let seconds = |w: &str| w.parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0);
            match words[..] {
                ["build", s] => pace.per_build = seconds(s)?,
                ["relink", s] => pace.per_relink = seconds(s)?,
                ["run", backend, case, s] => {
                    pace.per_run
                        .insert((backend.to_owned(), case.to_owned()), seconds(s)?);
                }
                _ => return None,
            }
        }
        Some(pace)
    }

    /// Keeps this run's pace over the last one's: its build pace, and its per-run pace for
    /// each case it ran (the others' as they were). A run that made nothing says nothing.
    pub fn record(&self, timing: &super::jobs::Timing) -> Result<()> {
        if timing.runs.is_empty() {
            return Ok(());
        }
        let mut pace = self.read().unwrap_or_default();
        let per = |s: super::jobs::Spent| (s.count > 0).then(|| s.seconds / s.count as f64);
        pace.per_build = per(timing.builds).unwrap_or(pace.per_build);
        pace.per_relink = per(timing.relinks).unwrap_or(pace.per_relink);
        for ((backend, case), &spent) in &timing.runs {
            if let Some(per_run) = per(spent) {
                pace.per_run
                    .insert((backend.name().to_owned(), (*case).to_owned()), per_run);
            }
        }
        let mut text = format!("build {}\nrelink {}\n", pace.per_build, pace.per_relink);
        for ((backend, case), s) in &pace.per_run {
            text.push_str(&format!("run {backend} {case} {s}\n"));
        }
        if let Some(dir) = self.0.parent() {
            std::fs::create_dir_all(dir)?;
        }
        galloc_lab::results::write_file(&self.0, text.as_bytes())
    }
}
