//! The ship question asked of the deployments a release will meet (issue 49's rule, its first
//! part: the measures; the rule that uses them and the table come next).
//!
//! A galloc release is linked by every Gear program, each at whatever heap layout its static
//! data gives it: nobody chooses the layout, and it moves with every code change. So a
//! *deployment* is a (program, layout) pair of the sweep, and a variant is judged by what it
//! costs over them against shipping at the same layout:
//! - **expected change**: the geometric mean over programs of each program's mean log-ratio over
//!   its layouts (every program weighs the same, however many layouts it ran);
//! - its **95 % interval**, from a two-level bootstrap (programs resampled, then layouts within
//!   each), seeded, so the same rows give the same bounds;
//! - the **worst program** (the highest per-program mean), the share of deployments **dearer**
//!   than shipping by more than the minimum effect, the **worst deployment**, and the
//!   variant's **own spread** (its dearest layout over its cheapest, median over programs).
//!
//! Per-layout dominance (better at *every* layout) asked a variant to beat shipping's luck at
//! its best layout: shipping's own gas moves by a median 23 % across the sweep.

use crate::analyse::layout::BAND_PCT;
use crate::results::LayoutRow;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// One program's deployments of a variant: at each layout both it and shipping ran, the
/// variant's total and shipping's.
#[derive(Clone, Debug, PartialEq)]
pub struct Deployments {
    pub program: String,
    /// (offset, the variant's total, shipping's total), by offset.
    pub points: Vec<(u32, u64, u64)>,
}

impl Deployments {
    /// `ln(variant / shipping)` at each layout.
    fn logs(&self) -> Vec<f64> {
        self.points
            .iter()
            .map(|(_, v, s)| (*v as f64 / *s as f64).ln())
            .collect()
    }
}

/// Every program's deployments of `variant` on `backend` among `rows` (the sweep's
/// `layouts.csv`), in the order of `programs`; a program where the pair shares no layout is
/// left out.
pub fn deployments(
    rows: &[LayoutRow],
    backend: &str,
    variant: &str,
    reference: &str,
    programs: &[&str],
) -> Vec<Deployments> {
    let of = |case: &str, v: &str| -> BTreeMap<u32, u64> {
        rows.iter()
            .filter(|r| r.backend == backend && r.case == case && r.variant == v)
            .map(|r| (r.offset, r.total))
            .collect()
    };
    programs
        .iter()
        .filter_map(|case| {
            let (v, s) = (of(case, variant), of(case, reference));
            let points: Vec<(u32, u64, u64)> = v
                .iter()
                .filter_map(|(o, tv)| s.get(o).map(|ts| (*o, *tv, *ts)))
                .collect();
            (!points.is_empty()).then(|| Deployments {
                program: (*case).to_owned(),
                points,
            })
        })
        .collect()
}

/// A variant's standing over a population of deployments; every figure in percent against
/// shipping at the same layout unless said.
#[derive(Clone, Debug, PartialEq)]
pub struct Population {
    pub programs: usize,
    pub deployments: usize,
    pub expected_pct: f64,
    /// The 95 % interval of the expected change (2.5th and 97.5th percentiles).
    pub interval_pct: (f64, f64),
    /// The program with the highest mean, and that mean.
    pub worst_program: (String, f64),
    /// The share (0 to 1) of deployments dearer than shipping by more than the minimum effect.
    pub dearer_share: f64,
    /// The dearest deployment: program, offset, change.
    pub worst_deployment: (String, u32, f64),
    /// The variant's own dearest layout over its cheapest, in percent, median over programs.
    pub own_spread_pct: f64,
}

/// Resamples of the bootstrap: enough that the bounds printed at two decimals do not move
/// between seeds (checked on the committed results by the ship test).
pub const RESAMPLES: usize = 20_000;

/// The bootstrap's seed: fixed, so the same rows always give the same bounds.
pub const SEED: u64 = 0x6761_6c6c_6f63;

/// `exp(mean log) - 1` in percent.
fn pct_of_log(log: f64) -> f64 {
    100.0 * (log.exp() - 1.0)
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The `q`-quantile of sorted `values`, linear between the two nearest ranks.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let at = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo as f64)
}

impl Population {
    /// The standing over `programs`, its interval from `resamples` two-level bootstrap
    /// resamples drawn from `seed`; `None` for no deployment at all.
    pub fn of(programs: &[Deployments], seed: u64, resamples: usize) -> Option<Population> {
        let logs: Vec<Vec<f64>> = programs.iter().map(Deployments::logs).collect();
        if logs.is_empty() || logs.iter().any(Vec::is_empty) {
            return None;
        }
        let means: Vec<f64> = logs.iter().map(|l| mean(l)).collect();
        let expected_pct = pct_of_log(mean(&means));

        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut draws: Vec<f64> = (0..resamples.max(1))
            .map(|_| {
                let total: f64 = (0..logs.len())
                    .map(|_| {
                        let l = &logs[rng.gen_range(0..logs.len())];
                        (0..l.len())
                            .map(|_| l[rng.gen_range(0..l.len())])
                            .sum::<f64>()
                            / l.len() as f64
                    })
                    .sum();
                total / logs.len() as f64
            })
            .collect();
        draws.sort_by(f64::total_cmp);
        let interval_pct = (
            pct_of_log(quantile(&draws, 0.025)),
            pct_of_log(quantile(&draws, 0.975)),
        );

        // Ties go to the first, in the programs' order: the same rows name the same program.
        let (worst, worst_mean) =
            means
                .iter()
                .copied()
                .enumerate()
                .fold(
                    (0, f64::NEG_INFINITY),
                    |w, (i, m)| if m > w.1 { (i, m) } else { w },
                );
        let all: Vec<(usize, u32, f64)> = programs
            .iter()
            .enumerate()
            .flat_map(|(i, p)| {
                p.points
                    .iter()
                    .map(move |(o, v, s)| (i, *o, 100.0 * (*v as f64 / *s as f64 - 1.0)))
            })
            .collect();
        let dearer = all.iter().filter(|(_, _, pct)| *pct > BAND_PCT).count();
        let (wi, wo, wpct) =
            all.iter().copied().fold(
                (0, 0, f64::NEG_INFINITY),
                |w, d| if d.2 > w.2 { d } else { w },
            );
        let mut spreads: Vec<f64> = programs
            .iter()
            .map(|p| {
                let (lo, hi) = p.points.iter().fold((u64::MAX, 0), |(lo, hi), (_, v, _)| {
                    (lo.min(*v), hi.max(*v))
                });
                100.0 * (hi as f64 / lo as f64 - 1.0)
            })
            .collect();
        Some(Population {
            programs: programs.len(),
            deployments: all.len(),
            expected_pct,
            interval_pct,
            worst_program: (programs[worst].program.clone(), pct_of_log(worst_mean)),
            dearer_share: dearer as f64 / all.len() as f64,
            worst_deployment: (programs[wi].program.clone(), wo, wpct),
            own_spread_pct: crate::analyse::layout::median(&mut spreads),
        })
    }
}

/// What a variant must show to ship (issue 49): its interval's upper bound at or below minus
/// the minimum effect, no program's mean above the minimum effect, at most a tenth of the
/// deployments dearer by more than it, and the held-out programs alone and the second
/// workloads alone each with an upper bound below 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PopulationRule {
    pub upper_bound_pct: f64,
    pub worst_program_pct: f64,
    pub dearer_share: f64,
    pub subset_upper_bound_pct: f64,
}

/// The rule as issue 49 states it.
pub const POPULATION_RULE: PopulationRule = PopulationRule {
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

impl PopulationRule {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` programs, each at `layouts` layouts, the variant's total at `change(program,
    /// layout)` percent from shipping's, shipping's own total moving with the layout.
    fn made_up(n: usize, layouts: u32, change: impl Fn(usize, u32) -> f64) -> Vec<Deployments> {
        (0..n)
            .map(|p| Deployments {
                program: format!("p{p}"),
                points: (0..layouts)
                    .map(|l| {
                        let shipping = 1_000_000_000 + 50_000_000 * u64::from(l % 5);
                        let v = (shipping as f64 * (1.0 + change(p, l) / 100.0)).round() as u64;
                        (l * 1024, v, shipping)
                    })
                    .collect(),
            })
            .collect()
    }

    /// A variant 2 % cheaper at every deployment: −2 % expected with an interval of exactly
    /// that (every resample is the same), no program or deployment dearer; admitted.
    #[test]
    fn a_variant_cheaper_everywhere_is_admitted_with_a_tight_interval() {
        let pop = Population::of(&made_up(10, 16, |_, _| -2.0), SEED, 2_000).unwrap();
        assert_eq!((pop.programs, pop.deployments), (10, 160));
        assert!((pop.expected_pct + 2.0).abs() < 1e-6, "{pop:?}");
        assert!((pop.interval_pct.0 + 2.0).abs() < 1e-6 && (pop.interval_pct.1 + 2.0).abs() < 1e-6);
        assert!((pop.worst_program.1 + 2.0).abs() < 1e-6);
        assert_eq!(pop.dearer_share, 0.0);
        // Its own gas moves as shipping's does: 1.2 G over 1.0 G, 20 %.
        assert!((pop.own_spread_pct - 20.0).abs() < 1e-6, "{pop:?}");
        let held = Population::of(&made_up(4, 16, |_, _| -2.0), SEED, 2_000).unwrap();
        assert!(POPULATION_RULE
            .refusals(&pop, Some(&held), Some(&held), None)
            .is_empty());
    }

    /// −10 % on half the programs and +5 % on the rest: about −2.7 % expected, yet refused,
    /// for its worst program (+5 %) and for being dearer on half the deployments; its interval
    /// is wide (resampling programs draws all of one kind or the other).
    #[test]
    fn a_variant_dearer_on_some_programs_is_refused_for_its_worst_program() {
        let pop = Population::of(
            &made_up(10, 16, |p, _| if p % 2 == 0 { -10.0 } else { 5.0 }),
            SEED,
            5_000,
        )
        .unwrap();
        let expected = 100.0 * (((0.9f64).ln() + (1.05f64).ln()) / 2.0).exp() - 100.0;
        assert!((pop.expected_pct - expected).abs() < 1e-4, "{pop:?}");
        assert_eq!(pop.worst_program.0, "p1");
        assert!((pop.worst_program.1 - 5.0).abs() < 1e-4);
        assert_eq!(pop.dearer_share, 0.5);
        assert!(pop.interval_pct.0 < expected - 2.0 && pop.interval_pct.1 > expected + 2.0);
        let no = POPULATION_RULE.refusals(&pop, None, None, None);
        assert!(no.contains(&Refusal::WorstProgram("p1".into(), pop.worst_program.1)));
        assert!(no.contains(&Refusal::Dearer(0.5)));
        assert_eq!(no[1].to_string(), "`p1` +5.00 %");
    }

    /// The same rows and seed give the same bounds, bit for bit; the worst deployment is the
    /// dearest point, named by program and offset; the lab's own tests refuse on their own.
    #[test]
    fn the_bootstrap_is_deterministic_and_the_worst_deployment_is_named() {
        let rows = made_up(8, 16, |p, l| {
            (p as f64 - 4.0) * 0.5 + f64::from(l % 3) - 1.0
        });
        let a = Population::of(&rows, 7, 3_000).unwrap();
        let b = Population::of(&rows, 7, 3_000).unwrap();
        assert_eq!(a, b);
        let c = Population::of(&rows, 8, 3_000).unwrap();
        assert_eq!(
            a.expected_pct, c.expected_pct,
            "the point estimate has no randomness"
        );
        assert_eq!(a.worst_deployment.0, "p7");
        assert_eq!(
            (a.worst_deployment.1 / 1024) % 3,
            2,
            "a layout 2 of 3: {a:?}"
        );
        assert!((a.worst_deployment.2 - 2.5).abs() < 1e-3, "{a:?}");
        let no = POPULATION_RULE.refusals(&a, None, None, Some("never frees"));
        assert_eq!(no.last(), Some(&Refusal::Unsafe("never frees".into())));
    }

    /// Deployments pair the variant with shipping at the same offsets only, per program.
    #[test]
    fn deployments_pair_the_same_offsets() {
        // The layout tests' gtest row, under another case.
        let row = |case: &str, variant: &str, offset: u32, total: u64| LayoutRow {
            case: case.into(),
            ..crate::analyse::layout::tests::r(variant, offset, total)
        };
        let rows = vec![
            row("a", "v", 0, 90),
            row("a", "v", 16, 95),
            row("a", "shipping", 0, 100),
            row("a", "shipping", 32, 100),
            row("b", "shipping", 0, 100),
        ];
        let d = deployments(&rows, "gtest", "v", "shipping", &["a", "b"]);
        assert_eq!(
            d,
            vec![Deployments {
                program: "a".into(),
                points: vec![(0, 90, 100)]
            }]
        );
    }
}
