//! The ship question asked of the deployments a release will meet (docs/ship.md).
//!
//! A galloc release is linked by every Gear program, each at whatever heap layout its static
//! data gives it: nobody chooses the layout, and it moves with every code change. So a
//! *deployment* is a (program, layout) pair of the sweep, and a variant is judged by what it
//! costs over them against shipping at the same layout:
//! - **expected change**: the geometric mean over programs of each program's mean log-ratio over
//!   its layouts (every program weighs the same, however many layouts it ran);
//! - its **95 % interval**, from a two-level bootstrap (programs resampled, then layouts within
//!   each). The bootstrap's distribution is computed exactly ([`ideal_bootstrap`]), not drawn:
//!   no seed and no resample count moves its bounds;
//! - the **worst program** (the highest per-program mean), the share of deployments **dearer**
//!   than shipping by more than the minimum effect, the **worst deployment**, and the
//!   variant's **own spread** (its dearest layout over its cheapest, median over programs).
//!
//! Per-layout dominance (better at *every* layout) asked a variant to beat shipping's luck at
//! its best layout, and shipping's own gas moves a good deal across the sweep (docs/ship.md,
//! "What the lab found"). This module
//! measures; the rule that uses the measures is [`crate::analyse::ship`].

use crate::results::{LayoutRow, SecondRow};
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

/// The minimum effect, in percent of shipping's total: the rule asks a variant's interval to
/// lie at or below minus this, and a program's words ([`crate::analyse::layout::Verdict`]) put
/// an interval within it on both sides as the same. criterion's default noise threshold, and
/// what the committed sweep shows layout luck alone does: docs/verdicts.md, "The minimum
/// effect".
pub const BAND_PCT: f64 = 1.0;

/// The median of `values` (sorted here): the middle one, or the mean of the middle two.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

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

/// Every total of one backend, by (program, variant) and then offset: the sweep
/// (`layouts.csv`) or the second workloads (`second.csv`), whose rows carry the same keys.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals(BTreeMap<(String, String), BTreeMap<u32, u64>>);

impl Totals {
    /// The sweep's totals on `backend`.
    pub fn of_sweep(rows: &[LayoutRow], backend: &str) -> Self {
        Self::of(
            rows.iter()
                .filter(|r| r.backend == backend)
                .map(|r| (&r.case, &r.variant, r.offset, r.total)),
        )
    }

    /// The second workloads' totals on `backend`, each under its program's id.
    pub fn of_second(rows: &[SecondRow], backend: &str) -> Self {
        Self::of(
            rows.iter()
                .filter(|r| r.backend == backend)
                .map(|r| (&r.case, &r.variant, r.offset, r.total)),
        )
    }

    fn of<'a>(rows: impl Iterator<Item = (&'a String, &'a String, u32, u64)>) -> Self {
        let mut t = Totals::default();
        for (case, variant, offset, total) in rows {
            t.0.entry((case.clone(), variant.clone()))
                .or_default()
                .insert(offset, total);
        }
        t
    }

    /// `variant`'s totals on `program`, by offset (empty when it did not run there).
    pub fn of_variant(&self, program: &str, variant: &str) -> &BTreeMap<u32, u64> {
        static NONE: BTreeMap<u32, u64> = BTreeMap::new();
        self.0
            .get(&(program.to_owned(), variant.to_owned()))
            .unwrap_or(&NONE)
    }

    /// Every program's deployments of `variant` against `reference`, in the order of
    /// `programs`; a program where the pair shares no layout is left out.
    pub fn deployments(
        &self,
        variant: &str,
        reference: &str,
        programs: &[&str],
    ) -> Vec<Deployments> {
        programs
            .iter()
            .filter_map(|case| {
                let s = self.of_variant(case, reference);
                let points: Vec<(u32, u64, u64)> = self
                    .of_variant(case, variant)
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
}

/// A variant's standing over a population of deployments; every figure in percent against
/// shipping at the same layout unless said.
#[derive(Clone, Debug, PartialEq)]
pub struct Population {
    pub programs: usize,
    pub deployments: usize,
    pub expected_pct: f64,
    /// The 95 % interval of the expected change (the bootstrap's 2.5th and 97.5th percentiles).
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

/// The interval's coverage: 95 %.
pub const LEVEL: f64 = 0.95;

/// `exp(log) - 1` in percent.
pub fn pct_of_log(log: f64) -> f64 {
    100.0 * (log.exp() - 1.0)
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Its dearest value over its cheapest, in percent.
pub fn spread_pct(totals: impl IntoIterator<Item = u64>) -> f64 {
    let (lo, hi) = totals
        .into_iter()
        .fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
    100.0 * (hi as f64 / lo as f64 - 1.0)
}

/// Cells of the grid [`ideal_bootstrap`] lays the log-ratios on, over their range. 8,191 keeps a
/// program's 16-layout sum within 2^17 points (its transform) and the 17-program sum within 2^18.
const CELLS: usize = 8_191;

/// The `quantiles` of the two-level bootstrap of the grand mean of `logs` (one list per program):
/// draw as many programs as there are, with replacement; for each, draw as many of its values as
/// it has, with replacement, and take their mean; then the mean of those means.
///
/// A Monte Carlo bootstrap estimates these quantiles from resamples and moves with its seed
/// (its error falls as one over the square root of their number). This is the limit of infinitely many resamples (Efron's *ideal* bootstrap), computed instead: a
/// resampled program's mean is the mean of independent draws from its values, so its
/// distribution is their distribution convolved with itself; the grand mean is the mean of
/// independent draws from the mixture of those, convolved again. Convolutions are powers of a
/// Fourier transform. Each value is split between its two neighbours on a grid of [`CELLS`]
/// cells over the range of `logs` (which keeps every mean), so the bounds are exact to about a
/// cell: for the lab's design on the committed results, a range of 0.35 in log, 0.004
/// percentage points. The ship test's plain bootstrap (50,000 resamples) lands within 0.03
/// points of every bound of the committed table.
pub fn ideal_bootstrap(logs: &[Vec<f64>], quantiles: [f64; 2]) -> [f64; 2] {
    // A report asks for the same population many times (the ship table, the verdicts, the
    // per-program pages, each backend's and workload's view): rendering the committed results
    // took 50 s here, nine tenths of it in this function and a third in planning transforms
    // afresh. The answer is a function of the bits given, so it is kept by them.
    type Key = (Vec<Vec<u64>>, [u64; 2]);
    static ANSWERS: OnceLock<Mutex<HashMap<Key, [f64; 2]>>> = OnceLock::new();
    let key: Key = (
        logs.iter()
            .map(|l| l.iter().map(|v| v.to_bits()).collect())
            .collect(),
        quantiles.map(f64::to_bits),
    );
    let answers = ANSWERS.get_or_init(Default::default);
    if let Some(known) = answers.lock().expect("bootstrap answers").get(&key) {
        return *known;
    }
    let answer = ideal_bootstrap_computed(logs, quantiles);
    answers
        .lock()
        .expect("bootstrap answers")
        .insert(key, answer);
    answer
}

/// The transform of `size` points, forward or inverse, planned once per process (planning
/// computes every twiddle factor, which cost as much as the transforms themselves).
fn fft(size: usize, inverse: bool) -> Arc<dyn rustfft::Fft<f64>> {
    static PLANNER: OnceLock<Mutex<FftPlanner<f64>>> = OnceLock::new();
    let mut planner = PLANNER
        .get_or_init(|| Mutex::new(FftPlanner::new()))
        .lock()
        .expect("fft planner");
    if inverse {
        planner.plan_fft_inverse(size)
    } else {
        planner.plan_fft_forward(size)
    }
}

/// [`ideal_bootstrap`], computed.
fn ideal_bootstrap_computed(logs: &[Vec<f64>], quantiles: [f64; 2]) -> [f64; 2] {
    let all = || logs.iter().flatten().copied();
    let lo = all().fold(f64::INFINITY, f64::min);
    let hi = all().fold(f64::NEG_INFINITY, f64::max);
    if hi - lo < 1e-12 {
        return [lo, lo];
    }
    let step = (hi - lo) / CELLS as f64;
    // The `n`-fold convolution of `pmf` (mass by cell), by the transform's `n`-th power.
    let power = |pmf: &[f64], n: usize| -> Vec<f64> {
        let size = ((pmf.len() - 1) * n + 1).next_power_of_two();
        let mut buf: Vec<Complex<f64>> = pmf
            .iter()
            .map(|m| Complex::new(*m, 0.0))
            .chain(std::iter::repeat(Complex::new(0.0, 0.0)))
            .take(size)
            .collect();
        fft(size, false).process(&mut buf);
        for c in &mut buf {
            *c = c.powu(n as u32);
        }
        fft(size, true).process(&mut buf);
        buf.iter()
            .take((pmf.len() - 1) * n + 1)
            .map(|c| c.re / size as f64)
            .collect()
    };
    // Mass `m` at position `at` (in cells), split between the two cells around it.
    let split = |pmf: &mut [f64], at: f64, m: f64| {
        // Rounding can put the top value a hair past the last cell.
        let at = at.clamp(0.0, (pmf.len() - 1) as f64);
        let cell = at.floor() as usize;
        let frac = at - cell as f64;
        pmf[cell] += m * (1.0 - frac);
        if frac > 0.0 {
            pmf[cell + 1] += m * frac;
        }
    };
    // One drawn program's mean, whichever program is drawn.
    let mut mixture = vec![0.0; CELLS + 1];
    for values in logs {
        let n = values.len();
        let mut pmf = vec![0.0; CELLS + 1];
        for v in values {
            split(&mut pmf, (v - lo) / step, 1.0 / n as f64);
        }
        for (sum, m) in power(&pmf, n).into_iter().enumerate() {
            split(&mut mixture, sum as f64 / n as f64, m / logs.len() as f64);
        }
    }
    let p = logs.len();
    let grand = power(&mixture, p);
    // The smallest mean whose cumulative mass reaches `q`: the bootstrap's distribution has
    // atoms (a program drawn every time is one), and a quantile of atoms is one of them.
    quantiles.map(|q| {
        let mut below = 0.0;
        for (sum, m) in grand.iter().enumerate() {
            below += m;
            if below >= q - 1e-12 {
                return lo + step * sum as f64 / p as f64;
            }
        }
        hi
    })
}

impl Population {
    /// The standing over `programs`; `None` for no deployment at all.
    pub fn of(programs: &[Deployments]) -> Option<Population> {
        let logs: Vec<Vec<f64>> = programs.iter().map(Deployments::logs).collect();
        if logs.is_empty() || logs.iter().any(Vec::is_empty) {
            return None;
        }
        let means: Vec<f64> = logs.iter().map(|l| mean(l)).collect();
        let expected_pct = pct_of_log(mean(&means));
        let tail = (1.0 - LEVEL) / 2.0;
        let [low, high] = ideal_bootstrap(&logs, [tail, 1.0 - tail]);
        let interval_pct = (pct_of_log(low), pct_of_log(high));

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
            .map(|p| spread_pct(p.points.iter().map(|(_, v, _)| *v)))
            .collect();
        Some(Population {
            programs: programs.len(),
            deployments: all.len(),
            expected_pct,
            interval_pct,
            worst_program: (programs[worst].program.clone(), pct_of_log(worst_mean)),
            dearer_share: dearer as f64 / all.len() as f64,
            worst_deployment: (programs[wi].program.clone(), wo, wpct),
            own_spread_pct: median(&mut spreads),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// `n` programs, each at `layouts` layouts, the variant's total at `change(program,
    /// layout)` percent from shipping's, shipping's own total moving with the layout.
    pub(crate) fn made_up(
        n: usize,
        layouts: u32,
        change: impl Fn(usize, u32) -> f64,
    ) -> Vec<Deployments> {
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
    /// that (every resample is the same), no program or deployment dearer.
    #[test]
    fn a_variant_cheaper_everywhere_has_a_tight_interval() {
        let pop = Population::of(&made_up(10, 16, |_, _| -2.0)).unwrap();
        assert_eq!((pop.programs, pop.deployments), (10, 160));
        assert!((pop.expected_pct + 2.0).abs() < 1e-6, "{pop:?}");
        assert!((pop.interval_pct.0 + 2.0).abs() < 1e-6 && (pop.interval_pct.1 + 2.0).abs() < 1e-6);
        assert!((pop.worst_program.1 + 2.0).abs() < 1e-6);
        assert_eq!(pop.dearer_share, 0.0);
        // Its own gas moves as shipping's does: 1.2 G over 1.0 G, 20 %.
        assert!((pop.own_spread_pct - 20.0).abs() < 1e-6, "{pop:?}");
    }

    /// −10 % on half the programs and +5 % on the rest: about −2.7 % expected, the worst
    /// program +5 %, dearer on half the deployments; its interval is wide (resampling programs
    /// draws all of one kind or the other). Here the bootstrap is a binomial one: the grand
    /// mean is `(k ln 0.9 + (10 - k) ln 1.05) / 10` with `k ~ B(10, 1/2)`, so its 2.5th and
    /// 97.5th percentiles are known: k = 8 and k = 2 (P(k ≤ 1) = 1.1 %, P(k ≤ 2) = 5.5 %).
    #[test]
    fn a_variant_dearer_on_some_programs_has_a_wide_interval_and_a_worst_program() {
        let pop = Population::of(&made_up(
            10,
            16,
            |p, _| if p % 2 == 0 { -10.0 } else { 5.0 },
        ))
        .unwrap();
        let at = |k: f64| pct_of_log((k * 0.9f64.ln() + (10.0 - k) * 1.05f64.ln()) / 10.0);
        assert!((pop.expected_pct - at(5.0)).abs() < 1e-4, "{pop:?}");
        assert_eq!(pop.worst_program.0, "p1");
        assert!((pop.worst_program.1 - 5.0).abs() < 1e-4);
        assert_eq!(pop.dearer_share, 0.5);
        // Each bound lies within one step of k of its binomial percentile (the grid spreads
        // each atom over a cell).
        assert!(
            pop.interval_pct.0 <= at(7.0) && pop.interval_pct.0 >= at(8.0) - 0.01,
            "{pop:?}"
        );
        assert!(
            pop.interval_pct.1 >= at(3.0) && pop.interval_pct.1 <= at(2.0) + 0.01,
            "{pop:?}"
        );
    }

    /// The same two-level bootstrap drawn the plain way, `resamples` times from `seed`.
    fn drawn(logs: &[Vec<f64>], seed: u64, resamples: usize) -> [f64; 2] {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut draws: Vec<f64> = (0..resamples)
            .map(|_| {
                (0..logs.len())
                    .map(|_| {
                        let l = &logs[rng.gen_range(0..logs.len())];
                        (0..l.len())
                            .map(|_| l[rng.gen_range(0..l.len())])
                            .sum::<f64>()
                            / l.len() as f64
                    })
                    .sum::<f64>()
                    / logs.len() as f64
            })
            .collect();
        draws.sort_by(f64::total_cmp);
        [0.025, 0.975].map(|q| draws[(q * (resamples - 1) as f64).round() as usize])
    }

    /// The computed bootstrap is the limit the drawn one tends to: on uneven programs (sizes
    /// 16, 4 and 9 layouts, skewed values) 200,000 draws land within 0.0015 in log (0.15 pp)
    /// of it, and the computed one is the same at every call, kept or computed again.
    #[test]
    fn the_computed_bootstrap_is_what_resampling_tends_to() {
        let logs: Vec<Vec<f64>> = (0..7)
            .map(|p| {
                let n = [16, 4, 9][p % 3];
                (0..n)
                    .map(|l| {
                        0.01 * (p as f64 - 3.0) + 0.004 * ((l * l + p) % 7) as f64
                            - 0.02 * f64::from(l == 0)
                    })
                    .collect()
            })
            .collect();
        let exact = ideal_bootstrap(&logs, [0.025, 0.975]);
        // Computed afresh (the planner then reused), and from the answers kept.
        assert_eq!(exact, ideal_bootstrap_computed(&logs, [0.025, 0.975]));
        assert_eq!(exact, ideal_bootstrap(&logs, [0.025, 0.975]));
        // What is kept answers only the very question: other quantiles, or one value moved,
        // are computed.
        let other = [0.1, 0.9];
        assert_eq!(
            ideal_bootstrap(&logs, other),
            ideal_bootstrap_computed(&logs, other)
        );
        assert_ne!(ideal_bootstrap(&logs, other), exact);
        let mut moved = logs.clone();
        moved[0][0] -= 0.05;
        let answer = ideal_bootstrap(&moved, [0.025, 0.975]);
        assert_eq!(answer, ideal_bootstrap_computed(&moved, [0.025, 0.975]));
        assert_ne!(answer, exact);
        let drawn = drawn(&logs, 11, 200_000);
        for (e, d) in exact.iter().zip(drawn) {
            assert!(
                (e - d).abs() < 0.0015,
                "computed {exact:?}, drawn {drawn:?}"
            );
        }
        assert!(exact[0] < exact[1]);
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
        let d = Totals::of_sweep(&rows, "gtest").deployments("v", "shipping", &["a", "b"]);
        assert_eq!(
            d,
            vec![Deployments {
                program: "a".into(),
                points: vec![(0, 90, 100)]
            }]
        );
        assert!(Totals::of_sweep(&rows, "wasmtime")
            .deployments("v", "shipping", &["a"])
            .is_empty());
    }
}
