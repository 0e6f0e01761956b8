//! A run's size, said before it starts when it is large, and the pace of the last run that
//! times the estimate.

use anyhow::Result;
use galloc_lab::build::workspace::Workspace;
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
    /// Seconds, at the last run's pace, if the lab has run anything here before; kept runs
    /// make it shorter.
    pub estimate: Option<f64>,
}

impl RunSize {
    /// Large: over 15 minutes at the last pace, or, with no pace yet, over 500 runs (about 15
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
                "; about {} at the pace of the last run here (less for runs kept in \
                 target/lab/cache); Ctrl-C stops it, writing nothing",
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

/// Seconds a job (a case's three runs, or one layout point's) took in the last run that ran
/// any, kept in `target/lab/cache/pace` for the next run's [`RunSize`].
pub struct Pace(PathBuf);

impl Pace {
    pub fn at(ws: &Workspace) -> Pace {
        Pace(ws.root().join("target/lab/cache/pace"))
    }

    pub fn read(&self) -> Option<f64> {
        std::fs::read_to_string(&self.0)
            .ok()?
            .trim()
            .parse()
            .ok()
            .filter(|s: &f64| s.is_finite() && *s > 0.0)
    }

    pub fn write(&self, seconds_per_job: f64) -> Result<()> {
        if let Some(dir) = self.0.parent() {
            std::fs::create_dir_all(dir)?;
        }
        galloc_lab::results::write_file(&self.0, format!("{seconds_per_job}\n").as_bytes())
    }
}
