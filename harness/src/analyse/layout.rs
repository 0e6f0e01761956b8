//! Verdicts that survive where the heap begins, from the layout sweep's rows.
//!
//! Gear charges per 16 KiB page a message touches, so a total depends on which pages a
//! program's objects straddle, and that depends on where `__heap_base` lands: on how much
//! static data the program has, which differs in every program. One layout can flip a
//! comparison (docs/verdicts.md, "Verdicts across heap layouts", has the figures). Gas is
//! deterministic, so instead of sampling layouts the lab sweeps them ([`crate::run::plan`]), and
//! here every variant is compared with `shipping` *at the same offset*. Its word on a case is
//! the ship rule's, with the case's layouts as its deployments ([`Verdict::of_pairs`]): the
//! mean over them and its 95 % interval against the minimum effect [`BAND_PCT`].

use crate::analyse::population::{Deployments, Population};
use crate::results::{round, LayoutRow, SecondRow, TotalRow};
use std::collections::BTreeMap;

pub use crate::analyse::population::{median, BAND_PCT};

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
    /// The mean difference to shipping over the shared offsets and its 95 % interval (percent,
    /// [`Verdict::interval`]; `None` for shipping itself or without shipping's points).
    pub interval: Option<(f64, (f64, f64))>,
    /// What that interval says.
    pub verdict: Verdict,
}

/// A variant against shipping on one program, by the ship rule's measures with the program's
/// layouts as its deployments: the 95 % interval of its mean change over them, against the
/// minimum effect [`BAND_PCT`]. The same words in `totals.csv`, the reports, `lab verdict` and
/// `lab pick`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// The interval at or below minus the band: cheaper by at least the minimum effect, as the
    /// rule asks of a variant it admits.
    Cheaper,
    /// The interval within the band on both sides: too small a difference to act on.
    Same,
    /// The interval reaches past the band on one side and not the other, or both: the layouts
    /// disagree too much for the program's mean to say.
    Uncertain,
    /// The interval at or above the band: dearer by at least the minimum effect.
    Dearer,
    /// Shipping itself.
    Baseline,
    /// No shipping run at any of its layouts.
    Unpaired,
}

impl Verdict {
    /// How `totals.csv` and the report write it.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Cheaper => "cheaper",
            Verdict::Same => "same",
            Verdict::Uncertain => "uncertain",
            Verdict::Dearer => "dearer",
            Verdict::Baseline => "baseline",
            Verdict::Unpaired => "",
        }
    }

    /// What the words mean, for every table that uses them; `band` the minimum effect.
    pub fn legend(band: f64) -> String {
        format!(
            "each program's mean change over its heap layouts, with its 95 % interval (layouts \
             resampled, as the ship rule judges), against the minimum effect of {band} %: \
             **cheaper** (**dearer**) when the whole interval is at or below -{band} % (at or \
             above +{band} %), **same** when it lies within ±{band} %, **uncertain** otherwise \
             (and always at one layout, which is a point and no interval)"
        )
    }

    /// A comparison of `a` and `b` (any pair, not only against shipping) from their totals
    /// at the same layouts, `band_pct` the minimum effect in percent of `b`: the word for
    /// [`Verdict::interval`]'s interval.
    pub fn of_pairs(pairs: &[(u64, u64)], band_pct: f64) -> Verdict {
        Verdict::of_measured(Verdict::interval(pairs), pairs.len(), band_pct)
    }

    /// The word for `interval` (from [`Verdict::interval`]) over `layouts` paired layouts. One
    /// layout is a point, not an interval: nothing in it says what the next place of the heap
    /// does (the sweep exists because one layout can flip a comparison), so it is `uncertain`
    /// whatever its difference, never `same`, `cheaper` or `dearer`.
    pub fn of_measured(
        interval: Option<(f64, (f64, f64))>,
        layouts: usize,
        band_pct: f64,
    ) -> Verdict {
        match interval {
            None => Verdict::Unpaired,
            Some(_) if layouts < 2 => Verdict::Uncertain,
            Some((_, (lo, hi))) => Verdict::of_interval(lo, hi, band_pct),
        }
    }

    /// The word for an interval `lo … hi` (percent), `band_pct` the minimum effect.
    pub fn of_interval(lo: f64, hi: f64, band_pct: f64) -> Verdict {
        if hi <= -band_pct {
            Verdict::Cheaper
        } else if lo >= band_pct {
            Verdict::Dearer
        } else if lo >= -band_pct && hi <= band_pct {
            Verdict::Same
        } else {
            Verdict::Uncertain
        }
    }

    /// `a`'s mean change against `b` over the layouts of `pairs` (percent, the mean of the
    /// log-ratios as the rule takes it) and its 95 % interval; `None` without a pair.
    pub fn interval(pairs: &[(u64, u64)]) -> Option<(f64, (f64, f64))> {
        let program = Deployments {
            program: String::new(),
            points: pairs.iter().map(|&(a, b)| (0, a, b)).collect(),
        };
        Population::of(&[program]).map(|p| (p.expected_pct, p.interval_pct))
    }
}

/// `a`'s total against `b`'s, in percent of `b`'s.
pub fn pct((a, b): (u64, u64)) -> f64 {
    100.0 * (a as f64 - b as f64) / b as f64
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
            let interval = (variant != SHIPPING)
                .then(|| Verdict::interval(&paired))
                .flatten();
            let verdict = match interval {
                _ if variant == SHIPPING => Verdict::Baseline,
                _ => Verdict::of_measured(interval, paired.len(), BAND_PCT),
            };
            let summary = Summary {
                points: totals.len(),
                median: median(&mut totals.iter().map(|t| *t as f64).collect::<Vec<_>>()),
                min: totals.iter().copied().min().unwrap_or(0),
                max: totals.iter().copied().max().unwrap_or(0),
                vs_shipping,
                interval,
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
    /// There is no word to hold (uncertain, or shipping itself).
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
        (Verdict::Uncertain | Verdict::Baseline | Verdict::Unpaired, _) => Holds::Nothing,
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
/// whether the case was held out from design, its mean difference over the layouts with the
/// 95 % interval (the rule's statistic, which the verdict reads), and its median, lowest and
/// highest; then the geometric mean of the means.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    pub variant: &'static str,
    /// Per case, in the order given.
    pub cases: Vec<CaseStanding>,
    /// `100 * (prod (1 + mean/100))^(1/n) - 100` over the cases' means.
    pub geomean_pct: f64,
}

/// The design on one case.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseStanding {
    pub case: String,
    /// Held out from design (confirmed only).
    pub held_out: bool,
    /// Percent against shipping at the same layout: the mean over the layouts and its 95 %
    /// interval ([`Verdict::interval`]).
    pub mean: f64,
    pub interval: (f64, f64),
    /// The same, as median, lowest, highest.
    pub median: f64,
    pub lowest: f64,
    pub highest: f64,
    pub verdict: Verdict,
}

impl Standing {
    /// Cases whose mean is below shipping's.
    pub fn below(&self) -> usize {
        self.cases.iter().filter(|c| c.mean < 0.0).count()
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
            let (mean, interval) = s.interval?;
            Some(CaseStanding {
                case: (*case).to_owned(),
                held_out: *held_out,
                mean,
                interval,
                median,
                lowest,
                highest,
                verdict: s.verdict,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Standing {
        variant,
        geomean_pct: geomean_pct(rows.iter().map(|r| r.mean)),
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

    /// The word is the interval's against the band: cheaper (dearer) when all of it is beyond
    /// the band, the same within it, uncertain across it. With two layouts the interval is
    /// their range; with sixteen, one layout the other way no longer decides alone, as it
    /// does not for the rule.
    #[test]
    fn a_word_is_the_interval_of_the_mean_against_the_band() {
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
            // 0 % and -0.5 %: within the band.
            r("f", 0, 100),
            r("f", 2048, 199),
            // -2 % and -0.5 %: cheaper everywhere, beyond the band at one layout only.
            r("g", 0, 98),
            r("g", 2048, 199),
        ];
        let mut rows = rows.to_vec();
        // h: -5 % at fifteen layouts, +2 % at one (a per-layout rule called that noise); i:
        // -5 % at eight layouts, +2 % at eight.
        for k in 0..16u32 {
            let o = 8192 + 1024 * k;
            rows.push(r("shipping", o, 1000));
            rows.push(r("h", o, if k == 7 { 1020 } else { 950 }));
            rows.push(r("i", o, if k % 2 == 0 { 1020 } else { 950 }));
        }
        let s = summarise(&rows);
        let get = |v: &str| s[&("gtest".into(), "c".into(), v.into())].clone();
        let h = Verdict::interval(&pairs(&rows, "gtest", "c", "h", "shipping")).unwrap();
        assert!(h.1 .0 < -4.0 && h.1 .1 < -3.0, "{h:?}");
        assert_eq!(get("h").verdict, Verdict::Cheaper);
        assert_eq!(get("i").verdict, Verdict::Uncertain);
        assert_eq!(get("a").verdict, Verdict::Cheaper);
        assert_eq!(get("b").verdict, Verdict::Uncertain);
        assert_eq!(get("c").verdict, Verdict::Same);
        assert_eq!(get("d").verdict, Verdict::Dearer);
        assert_eq!(get("shipping").verdict, Verdict::Baseline);
        assert_eq!(get("e").verdict, Verdict::Unpaired, "no shared offset");
        assert_eq!(get("f").verdict, Verdict::Same);
        assert_eq!(get("g").verdict, Verdict::Uncertain);
        let a = get("a");
        assert_eq!((a.points, a.median, a.min, a.max), (2, 140.0, 90, 190));
        // -10 % at 0, -5 % at 2048.
        assert_eq!(a.vs_shipping, Some((-7.5, -10.0, -5.0)));
    }

    /// One layout is a point: `uncertain` however small or large its difference (it was
    /// called `same` at -0.99 %); two layouts that agree give the word their interval gives.
    #[test]
    fn one_layout_is_never_a_verdict() {
        for (a, b) in [(9_901, 10_000), (5_000, 10_000), (20_000, 10_000)] {
            assert_eq!(Verdict::of_pairs(&[(a, b)], BAND_PCT), Verdict::Uncertain);
        }
        assert_eq!(
            Verdict::of_pairs(&[(9_901, 10_000), (9_901, 10_000)], BAND_PCT),
            Verdict::Same
        );
        assert_eq!(
            Verdict::of_pairs(&[(5_000, 10_000), (5_000, 10_000)], BAND_PCT),
            Verdict::Cheaper
        );
        let rows = [r("shipping", 0, 10_000), r("a", 0, 9_901)];
        let s = &summarise(&rows)[&("gtest".into(), "c".into(), "a".into())];
        assert_eq!((s.points, s.verdict), (1, Verdict::Uncertain));
    }

    #[test]
    fn the_geomean_is_of_ratios_and_below_counts_means_under_shipping() {
        // 0.9 * 1.1 = 0.99: the mean of logs, not of percents.
        assert!((geomean_pct([-10.0, 10.0]) - 100.0 * (0.99f64.sqrt() - 1.0)).abs() < 1e-12);
        let standing = |means: &[f64]| Standing {
            variant: galloc_variants::DESIGN,
            cases: means
                .iter()
                .map(|m| CaseStanding {
                    case: "c".to_owned(),
                    held_out: false,
                    mean: *m,
                    interval: (*m, *m),
                    // The median on the other side of shipping: `below` reads the mean.
                    median: -*m,
                    lowest: *m,
                    highest: *m,
                    verdict: Verdict::Cheaper,
                })
                .collect(),
            geomean_pct: geomean_pct(means.iter().copied()),
        };
        let one_above = standing(&[-20.0, 0.5]);
        assert!((one_above.geomean_pct - 100.0 * ((0.8f64 * 1.005).sqrt() - 1.0)).abs() < 1e-12);
        assert_eq!(one_above.below(), 1);
    }
}
