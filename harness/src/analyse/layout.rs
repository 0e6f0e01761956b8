//! Verdicts that survive where the heap begins, from the layout sweep's rows.
//!
//! Gear charges per 16 KiB page a message touches, so a total depends on which pages a
//! program's objects straddle, and that depends on where `__heap_base` lands: on how much
//! static data the program has, which differs in every program. One layout can flip a
//! comparison (docs/verdicts.md, "Verdicts across heap layouts", has the figures). Gas is
//! deterministic, so instead of sampling layouts the lab sweeps them ([`crate::run::plan`]), and
//! here every variant is compared with `shipping` *at the same offset*. A variant is better
//! (worse) than shipping on a case only if it is cheaper (dearer) by more than [`BAND_PCT`] at
//! every offset.

use crate::results::{round, LayoutRow, SecondRow, TotalRow};
use std::collections::BTreeMap;

/// The minimum effect, in percent of shipping's total: a variant is better (worse) only when
/// it is cheaper (dearer) by more than this at every layout, and the same when it is within it
/// at every layout. criterion's default noise threshold, and what the committed sweep shows
/// layout luck alone does: docs/verdicts.md, "The minimum effect".
pub const BAND_PCT: f64 = 1.0;

/// The variant every other is paired with.
pub const SHIPPING: &str = "shipping";

/// One variant's layouts against shipping's, on one backend and case.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Layouts run.
    pub points: usize,
    /// The total: median, lowest, highest.
    pub median: f64,
    pub min: u64,
    pub max: u64,
    /// Percent difference to shipping at each shared offset: median, lowest, highest (`None`
    /// for shipping itself or without shipping's points).
    pub vs_shipping: Option<(f64, f64, f64)>,
    /// What those differences say.
    pub verdict: Verdict,
}

/// A variant against shipping across layouts, with the minimum effect [`BAND_PCT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Cheaper by more than the band at every layout.
    Better,
    /// Within the band at every layout: too small a difference to act on.
    Same,
    /// Neither: beyond the band at some layouts and not at others, or beyond it both ways. The
    /// layout decides, not the allocator.
    Noise,
    /// Dearer by more than the band at every layout.
    Worse,
    /// Shipping itself.
    Baseline,
    /// No shipping run at any of its layouts.
    Unpaired,
}

impl Verdict {
    /// How `totals.csv` and the report write it.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Same => "same",
            Verdict::Noise => "noise",
            Verdict::Worse => "worse",
            Verdict::Baseline => "baseline",
            Verdict::Unpaired => "",
        }
    }

    /// A comparison of `a` and `b` (any pair, not only against shipping) from their totals
    /// at the same layouts, `band_pct` the minimum effect in percent of `b`.
    pub fn of_pairs(pairs: &[(u64, u64)], band_pct: f64) -> Verdict {
        let pcts: Vec<f64> = pairs.iter().copied().map(pct).collect();
        if pcts.is_empty() {
            Verdict::Unpaired
        } else if pcts.iter().all(|p| *p < -band_pct) {
            Verdict::Better
        } else if pcts.iter().all(|p| *p > band_pct) {
            Verdict::Worse
        } else if pcts.iter().all(|p| p.abs() <= band_pct) {
            Verdict::Same
        } else {
            Verdict::Noise
        }
    }
}

/// `a`'s total against `b`'s, in percent of `b`'s.
pub fn pct((a, b): (u64, u64)) -> f64 {
    100.0 * (a as f64 - b as f64) / b as f64
}

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

/// `(a's total, b's total)` at every offset both were run at, on one backend and case.
pub fn pairs(rows: &[LayoutRow], backend: &str, case: &str, a: &str, b: &str) -> Vec<(u64, u64)> {
    let of = |variant: &str| -> BTreeMap<u32, u64> {
        rows.iter()
            .filter(|r| r.backend == backend && r.case == case && r.variant == variant)
            .map(|r| (r.offset, r.total))
            .collect()
    };
    let (a, b) = (of(a), of(b));
    a.iter()
        .filter_map(|(o, ta)| b.get(o).map(|tb| (*ta, *tb)))
        .collect()
}

/// Every (backend, case, variant)'s [`Summary`].
pub fn summarise(rows: &[LayoutRow]) -> BTreeMap<(String, String, String), Summary> {
    let mut groups: BTreeMap<(String, String, String), Vec<u64>> = BTreeMap::new();
    for r in rows {
        groups
            .entry((r.backend.clone(), r.case.clone(), r.variant.clone()))
            .or_default()
            .push(r.total);
    }
    groups
        .into_iter()
        .map(|(key, totals)| {
            let (backend, case, variant) = (&key.0, &key.1, &key.2);
            let paired = pairs(rows, backend, case, variant, SHIPPING);
            let vs_shipping = (variant != SHIPPING && !paired.is_empty()).then(|| {
                let mut d: Vec<f64> = paired.iter().copied().map(pct).collect();
                let m = median(&mut d);
                (m, d[0], d[d.len() - 1])
            });
            let verdict = if variant == SHIPPING {
                Verdict::Baseline
            } else {
                Verdict::of_pairs(&paired, BAND_PCT)
            };
            let summary = Summary {
                points: totals.len(),
                median: median(&mut totals.iter().map(|t| *t as f64).collect::<Vec<_>>()),
                min: totals.iter().copied().min().unwrap_or(0),
                max: totals.iter().copied().max().unwrap_or(0),
                vs_shipping,
                verdict,
            };
            (key, summary)
        })
        .collect()
}

/// What layout luck alone does on `backend`: over the variant–case pairs whose difference to
/// shipping changes sign across the layouts, how many there are and the median of the smaller
/// excursion (percent): a difference that size, in either direction, is the heap's place and
/// not the allocator. The report gives it beside [`BAND_PCT`]; `None` without such a pair.
pub fn layout_luck(
    summaries: &BTreeMap<(String, String, String), Summary>,
    backend: &str,
) -> Option<(usize, f64)> {
    let mut smaller: Vec<f64> = summaries
        .iter()
        .filter(|((b, _, _), _)| b == backend)
        .filter_map(|(_, s)| s.vs_shipping)
        .filter(|(_, lo, hi)| *lo < 0.0 && *hi > 0.0)
        .map(|(_, lo, hi)| (-lo).min(hi))
        .collect();
    (!smaller.is_empty()).then(|| (smaller.len(), median(&mut smaller)))
}

/// Whether a verdict on a case holds under the case's second workload (its own sweep,
/// [`second_on`], with the same band).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    /// The second workload reaches the same verdict.
    Yes,
    /// It reaches another.
    No,
    /// There is no verdict to hold (noise, or shipping itself).
    Nothing,
    /// The second workload did not run for this pair (the fuel meter, another program).
    Untested,
}

impl Holds {
    /// How the report writes it.
    pub fn name(self) -> &'static str {
        match self {
            Holds::Yes => "holds",
            Holds::No => "does not hold",
            Holds::Nothing => "",
            Holds::Untested => "untested",
        }
    }
}

/// Whether `first` (a verdict over the case's sweep) holds given the second workload's summary
/// of the same pair.
pub fn holds(first: Verdict, second: Option<&Summary>) -> Holds {
    match (first, second) {
        (Verdict::Noise | Verdict::Baseline | Verdict::Unpaired, _) => Holds::Nothing,
        (_, None) => Holds::Untested,
        (v, Some(s)) if s.verdict == v => Holds::Yes,
        _ => Holds::No,
    }
}

/// Every (backend, case, variant)'s [`Summary`] under the case's second workload.
pub fn summarise_second(rows: &[SecondRow]) -> BTreeMap<(String, String, String), Summary> {
    summarise(&rows.iter().map(SecondRow::as_layout).collect::<Vec<_>>())
}

/// Fills the layout columns of `totals` from `rows`.
pub fn fill(totals: &mut [TotalRow], rows: &[LayoutRow]) {
    let summaries = summarise(rows);
    for t in totals {
        let key = (t.backend.clone(), t.case.clone(), t.variant.clone());
        let Some(s) = summaries.get(&key) else {
            continue;
        };
        t.layouts = s.points as u64;
        t.total_median = round(s.median, 1);
        t.total_min = s.min;
        t.total_max = s.max;
        t.vs_shipping_median_pct = s.vs_shipping.map(|d| round(d.0, 4));
        t.vs_shipping_min_pct = s.vs_shipping.map(|d| round(d.1, 4));
        t.vs_shipping_max_pct = s.vs_shipping.map(|d| round(d.2, 4));
        t.verdict = s.verdict.name().into();
    }
}

/// The lab's design ([`galloc_variants::DESIGN`]) against shipping on one backend: per case,
/// whether the case was held out from design, and its median, lowest and highest difference
/// with the verdict; then the geometric mean of the medians.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    pub variant: &'static str,
    /// Per case, in the order given.
    pub cases: Vec<CaseStanding>,
    /// `100 * (prod (1 + median/100))^(1/n) - 100` over the cases.
    pub geomean_pct: f64,
}

/// The design on one case.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseStanding {
    pub case: String,
    /// Held out from design (confirmed only).
    pub held_out: bool,
    /// Percent against shipping at the same layout: median, lowest, highest.
    pub median: f64,
    pub lowest: f64,
    pub highest: f64,
    pub verdict: Verdict,
}

impl Standing {
    /// Cases whose median is below shipping's.
    pub fn below(&self) -> usize {
        self.cases.iter().filter(|c| c.median < 0.0).count()
    }
}

/// The geometric mean of `pcts` as ratios (`-2` is 0.98), back as a percent.
pub fn geomean_pct(pcts: impl IntoIterator<Item = f64>) -> f64 {
    let (mut log_sum, mut n) = (0.0, 0usize);
    for p in pcts {
        log_sum += (1.0 + p / 100.0).ln();
        n += 1;
    }
    if n == 0 {
        return f64::NAN;
    }
    100.0 * ((log_sum / n as f64).exp() - 1.0)
}

/// The design's [`Standing`] on `backend` over `cases` (each with whether it is held out);
/// `None` when it or shipping was not swept on one of them.
pub fn standing(
    summaries: &BTreeMap<(String, String, String), Summary>,
    backend: &str,
    cases: &[(&str, bool)],
) -> Option<Standing> {
    let variant = galloc_variants::DESIGN;
    let rows = cases
        .iter()
        .map(|(case, held_out)| {
            let s = summaries.get(&(backend.into(), (*case).into(), variant.into()))?;
            let (median, lowest, highest) = s.vs_shipping?;
            Some(CaseStanding {
                case: (*case).to_owned(),
                held_out: *held_out,
                median,
                lowest,
                highest,
                verdict: s.verdict,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Standing {
        variant,
        geomean_pct: geomean_pct(rows.iter().map(|r| r.median)),
        cases: rows,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A gtest row of case `c` (the unit tests' own).
    pub(crate) fn r(variant: &str, offset: u32, total: u64) -> LayoutRow {
        LayoutRow {
            backend: "gtest".into(),
            case: "c".into(),
            variant: variant.into(),
            unit: "gas".into(),
            offset,
            heap_base: 0,
            total,
            ..Default::default()
        }
    }

    /// Better only if cheaper by more than the band at every layout; one layout the other way,
    /// or within the band, makes it noise; within the band everywhere is the same.
    #[test]
    fn a_verdict_needs_every_layout_beyond_the_band() {
        assert_eq!(BAND_PCT, 1.0);
        let rows = [
            r("shipping", 0, 100),
            r("shipping", 2048, 200),
            r("a", 0, 90),
            r("a", 2048, 190),
            r("b", 0, 90),
            r("b", 2048, 210),
            r("c", 0, 100),
            r("c", 2048, 200),
            r("d", 0, 102),
            r("d", 2048, 203),
            r("e", 4096, 1),
            // +1 % and -1 %: at the band's edge, inside it.
            r("f", 0, 101),
            r("f", 2048, 198),
            // -2 % and -0.5 %: cheaper everywhere, beyond the band at one layout only.
            r("g", 0, 98),
            r("g", 2048, 199),
        ];
        let s = summarise(&rows);
        let get = |v: &str| s[&("gtest".into(), "c".into(), v.into())].clone();
        assert_eq!(get("a").verdict, Verdict::Better);
        assert_eq!(get("b").verdict, Verdict::Noise);
        assert_eq!(get("c").verdict, Verdict::Same);
        assert_eq!(get("d").verdict, Verdict::Worse);
        assert_eq!(get("shipping").verdict, Verdict::Baseline);
        assert_eq!(get("e").verdict, Verdict::Unpaired, "no shared offset");
        assert_eq!(get("f").verdict, Verdict::Same);
        assert_eq!(get("g").verdict, Verdict::Noise);
        let a = get("a");
        assert_eq!((a.points, a.median, a.min, a.max), (2, 140.0, 90, 190));
        // -10 % at 0, -5 % at 2048.
        assert_eq!(a.vs_shipping, Some((-7.5, -10.0, -5.0)));
    }

    #[test]
    fn the_geomean_is_of_ratios_and_below_counts_medians_under_shipping() {
        // 0.9 * 1.1 = 0.99: the mean of logs, not of percents.
        assert!((geomean_pct([-10.0, 10.0]) - 100.0 * (0.99f64.sqrt() - 1.0)).abs() < 1e-12);
        let standing = |medians: &[f64]| Standing {
            variant: galloc_variants::DESIGN,
            cases: medians
                .iter()
                .map(|m| CaseStanding {
                    case: "c".to_owned(),
                    held_out: false,
                    median: *m,
                    lowest: *m,
                    highest: *m,
                    verdict: Verdict::Better,
                })
                .collect(),
            geomean_pct: geomean_pct(medians.iter().copied()),
        };
        let one_above = standing(&[-20.0, 0.5]);
        assert!((one_above.geomean_pct - 100.0 * ((0.8f64 * 1.005).sqrt() - 1.0)).abs() < 1e-12);
        assert_eq!(one_above.below(), 1);
    }
}
