//! The ship rule's clauses (docs/ship.md, "The rule"): what a variant must show to ship, and
//! why the rule refuses one, each reason with its figure and a one-word code for the table.

use crate::analyse::layout::BAND_PCT;
use crate::analyse::population::Population;

/// What a variant must show to ship (docs/ship.md, "The rule"): its interval's upper bound at
/// or below minus the minimum effect, no program's mean above the minimum effect, at most a
/// tenth of the deployments dearer by more than it, the held-out programs alone and the second
/// workloads alone each with an upper bound below 0, and the lab's own tests passed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    pub upper_bound_pct: f64,
    pub worst_program_pct: f64,
    pub dearer_share: f64,
    pub subset_upper_bound_pct: f64,
}

/// The rule docs/ship.md states.
pub const RULE: Rule = Rule {
    upper_bound_pct: -BAND_PCT,
    worst_program_pct: BAND_PCT,
    dearer_share: 0.10,
    subset_upper_bound_pct: 0.0,
};

/// Why the rule does not admit a variant, each reason with its figure.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// The interval's upper bound is above the rule's.
    Uncertain(f64),
    /// A program's mean is above the minimum effect.
    WorstProgram(String, f64),
    /// Too many deployments are dearer by more than the minimum effect.
    Dearer(f64),
    /// The held-out programs alone: an upper bound not below 0.
    HeldOut(f64),
    /// The second workloads alone: an upper bound not below 0.
    Second(f64),
    /// It fails one of the lab's own tests (the registry's reason).
    Unsafe(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Uncertain(hi) => write!(f, "its interval reaches {hi:+.2} %"),
            Refusal::WorstProgram(p, m) => write!(f, "`{p}` {m:+.2} %"),
            Refusal::Dearer(s) => write!(f, "dearer on {:.1} % of deployments", 100.0 * s),
            Refusal::HeldOut(hi) => write!(f, "held-out programs alone reach {hi:+.2} %"),
            Refusal::Second(hi) => write!(f, "second workloads alone reach {hi:+.2} %"),
            Refusal::Unsafe(why) => write!(f, "{why}"),
        }
    }
}

impl Refusal {
    /// The clause it fails, in a word: what the ship table's last column shows (the figure is
    /// in the table's other columns; [`Refusal::CODES`] says what each word means).
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::Uncertain(_) => "interval",
            Refusal::WorstProgram(..) => "worst",
            Refusal::Dearer(_) => "dearer",
            Refusal::HeldOut(_) => "held out",
            Refusal::Second(_) => "second",
            Refusal::Unsafe(_) => "tests",
        }
    }

    /// Each code ([`Refusal::code`]) and the clause it names, `rule`'s bounds filled in.
    pub fn codes(rule: &Rule) -> [(&'static str, String); 6] {
        [
            (
                Refusal::Uncertain(0.0),
                format!(
                    "the 95 % interval's upper bound is above {:+} %",
                    rule.upper_bound_pct
                ),
            ),
            (
                Refusal::WorstProgram(String::new(), 0.0),
                format!(
                    "a program's mean is above {:+} % (the worst program column)",
                    rule.worst_program_pct
                ),
            ),
            (
                Refusal::Dearer(0.0),
                format!(
                    "more than {:.0} % of deployments are dearer by over the minimum effect",
                    100.0 * rule.dearer_share
                ),
            ),
            (
                Refusal::HeldOut(0.0),
                format!(
                    "the held-out programs alone reach {} or above",
                    rule.subset_upper_bound_pct
                ),
            ),
            (
                Refusal::Second(0.0),
                format!(
                    "the second workloads alone reach {} or above",
                    rule.subset_upper_bound_pct
                ),
            ),
            (
                Refusal::Unsafe(String::new()),
                "it fails one of the lab's own tests (named below)".to_owned(),
            ),
        ]
        .map(|(refusal, clause)| (refusal.code(), clause))
    }
}

impl Rule {
    /// Every reason the rule refuses a variant standing at `all` (and, where measured, at
    /// `held_out` and `second`), failing the lab's own tests for `unsafe_because`; empty when
    /// it is admitted.
    pub fn refusals(
        &self,
        all: &Population,
        held_out: Option<&Population>,
        second: Option<&Population>,
        unsafe_because: Option<&str>,
    ) -> Vec<Refusal> {
        let mut no = Vec::new();
        if all.interval_pct.1 > self.upper_bound_pct {
            no.push(Refusal::Uncertain(all.interval_pct.1));
        }
        if all.worst_program.1 > self.worst_program_pct {
            no.push(Refusal::WorstProgram(
                all.worst_program.0.clone(),
                all.worst_program.1,
            ));
        }
        if all.dearer_share > self.dearer_share {
            no.push(Refusal::Dearer(all.dearer_share));
        }
        if let Some(h) = held_out.filter(|h| h.interval_pct.1 >= self.subset_upper_bound_pct) {
            no.push(Refusal::HeldOut(h.interval_pct.1));
        }
        if let Some(s) = second.filter(|s| s.interval_pct.1 >= self.subset_upper_bound_pct) {
            no.push(Refusal::Second(s.interval_pct.1));
        }
        if let Some(why) = unsafe_because {
            no.push(Refusal::Unsafe(why.to_owned()));
        }
        no
    }
}
