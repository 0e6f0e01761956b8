//! The ship verdict: which allocator galloc should ship, decided over the deployments a release
//! will meet (docs/ship.md): every program the lab runs (the default cases and the corpus), each
//! at every heap layout of the sweep, against shipping at the same layout.
//!
//! The measures are [`crate::analyse::population`]'s; the [`Rule`] asks of a variant a certain
//! gain (its interval's upper bound at or below minus the minimum effect), no program dearer on
//! average, few deployments dearer, the same direction on the programs no design was shaped on
//! and on the second workloads, and the lab's own tests passed, which the floor and a variant
//! holding pages with nothing live do not ([`galloc_variants::never_recommended`]). Of the
//! variants it admits, the lab names the one with the lowest expected change; shipping when it
//! admits none. The per-program words (cheaper / same / dearer / uncertain: each program's own
//! interval over its layouts, repeated by the second workload) describe one program at a time;
//! the rule decides over them all.

use crate::analyse::anatomy::{Anatomy, Explained};
use crate::analyse::layout::{self, Holds, Summary, Verdict};
use crate::analyse::population::{spread_pct, Population, Totals};
use crate::results::{LayoutRow, SecondRow};
use anyhow::{bail, Result};
use galloc_variants::REFERENCE;
use std::collections::BTreeMap;

pub use crate::analyse::rule::{Refusal, Rule, RULE};

/// Orders `rows` by expected change, lowest first (then by variant, so the same rows give the
/// same order), and names the first the rule admits, or shipping. `of` gives a row's standing,
/// variant and whether it is admitted.
pub fn rank<T>(rows: &mut [T], of: impl Fn(&T) -> (&Population, &String, bool)) -> String {
    rows.sort_by(|a, b| {
        let (a, b) = (of(a), of(b));
        a.0.expected_pct
            .total_cmp(&b.0.expected_pct)
            .then_with(|| a.1.cmp(b.1))
    });
    rows.iter()
        .map(&of)
        .find(|(_, _, admitted)| *admitted)
        .map_or(REFERENCE.to_owned(), |(_, v, _)| v.clone())
}

/// A variant on one program, against shipping, on gas: the words that describe it.
#[derive(Clone, Debug, PartialEq)]
pub struct OnProgram {
    pub case: String,
    /// Median percent difference over the program's layouts.
    pub median: f64,
    /// Mean percent difference over the program's layouts (the rule's, which its word is read
    /// from).
    pub mean: f64,
    /// The sweep's verdict, and whether the second workload repeats it.
    pub verdict: Verdict,
    pub holds: Holds,
}

impl OnProgram {
    /// The word that describes it: the sweep's when the second workload repeats it, else
    /// uncertain.
    pub fn standing(&self) -> Verdict {
        match (self.verdict, self.holds) {
            (v @ (Verdict::Cheaper | Verdict::Same | Verdict::Dearer), Holds::Yes) => v,
            _ => Verdict::Uncertain,
        }
    }
}

/// One variant over every deployment.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub variant: String,
    /// Over every program at every layout.
    pub all: Population,
    /// Over the programs no design was shaped on (the registry's `held_out`), where it ran.
    pub held_out: Option<Population>,
    /// Over the programs' second workloads, where measured.
    pub second: Option<Population>,
    /// Per program, in the order given: the words.
    pub programs: Vec<OnProgram>,
    /// Bytes of the allocator's code alone (`results/code-size.csv`), where measured.
    pub code_bytes: Option<u64>,
    /// Why the rule does not admit it (empty: admitted).
    pub refusals: Vec<Refusal>,
}

impl Row {
    /// Programs on which its word is `v`.
    pub fn count(&self, v: Verdict) -> usize {
        self.programs.iter().filter(|p| p.standing() == v).count()
    }

    pub fn admitted(&self) -> bool {
        self.refusals.is_empty()
    }

    /// Whether the lab's own tests refuse it, whatever it costs.
    pub fn is_unsafe(&self) -> bool {
        self.refusals
            .iter()
            .any(|r| matches!(r, Refusal::Unsafe(_)))
    }
}

/// The table and the variant it names.
#[derive(Clone, Debug, PartialEq)]
pub struct Ship {
    pub rule: Rule,
    /// The programs judged, in the order given.
    pub programs: Vec<String>,
    /// Those no design was shaped on.
    pub held_out: Vec<String>,
    /// Every variant measured on all of them but shipping, lowest expected change first.
    pub rows: Vec<Row>,
    /// The variant the rule names: the admitted one with the lowest expected change, or
    /// shipping.
    pub named: String,
    /// Shipping's allocator code bytes (it has no row of its own), where measured.
    pub reference_code_bytes: Option<u64>,
    /// Every total of the sweep the verdict is judged on (drawn by `images/layouts.png`).
    pub sweep: Totals,
    /// Where each change comes from, and the bounds ([`Ship::explain`]); empty until then.
    pub explained: Explained,
    /// Each variant's standing on the scale cases (`results/scale/`, the design target's scale
    /// clause); empty where they were not measured.
    pub scale: std::collections::BTreeMap<String, crate::analyse::scale::AtScale>,
    /// The layout model held against the sweep and the layout rules judged on the second
    /// workloads (`results/layout-model/`, `just layout-model`), which the report shows beside
    /// the verdict (read by `store::publish`); `None` where not measured or not read.
    pub layout: Option<crate::analyse::layout_choice::Study>,
}

impl Ship {
    /// Shipping's own spread over the layouts (its dearest over its cheapest, percent) on each
    /// program, in the programs' order.
    fn reference_spreads(&self) -> Vec<(&str, f64)> {
        self.programs
            .iter()
            .map(|p| {
                let totals = self.sweep.of_variant(p, REFERENCE).values().copied();
                (p.as_str(), spread_pct(totals))
            })
            .collect()
    }

    /// Shipping's own spread, median over the programs.
    pub fn reference_spread_pct(&self) -> f64 {
        let all: Vec<&str> = self.programs.iter().map(String::as_str).collect();
        self.reference_spread_over(&all)
    }

    /// Shipping's own spread over the layouts, median over `programs` (the design target's
    /// held-out set, or all of them).
    pub fn reference_spread_over(&self, programs: &[&str]) -> f64 {
        let mut spreads: Vec<f64> = self
            .reference_spreads()
            .into_iter()
            .filter(|(p, _)| programs.contains(p))
            .map(|s| s.1)
            .collect();
        layout::median(&mut spreads)
    }

    /// The program where shipping's own spread is widest (the first, on a tie), and that spread.
    pub fn reference_widest(&self) -> (String, f64) {
        self.reference_spreads()
            .into_iter()
            .fold(None::<(&str, f64)>, |w, s| match w {
                Some(w) if w.1 >= s.1 => Some(w),
                _ => Some(s),
            })
            .map_or_else(Default::default, |(p, s)| (p.to_owned(), s))
    }

    /// Fills [`Ship::explained`] from `anatomy`: each row against shipping over the programs
    /// judged, and the bounds over shipping and the rows the lab's own tests pass.
    pub fn explain(&mut self, anatomy: Anatomy) {
        let programs: Vec<&str> = self.programs.iter().map(String::as_str).collect();
        let variants: Vec<&str> = self.rows.iter().map(|r| r.variant.as_str()).collect();
        let safe = self.rows.iter().filter(|r| !r.is_unsafe());
        let designs: Vec<&str> = std::iter::once(REFERENCE)
            .chain(safe.map(|r| r.variant.as_str()))
            .collect();
        self.explained = Explained::of(anatomy, &programs, &variants, &designs);
    }

    /// The variant the quotable sentence is about: the named one, or, when the rule names
    /// shipping, the one the lab's own tests pass with the lowest expected change.
    pub fn closest(&self) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.variant == self.named)
            .or_else(|| self.rows.iter().find(|r| !r.is_unsafe()))
    }
}

/// Judges every variant measured on all `programs` against shipping on `backend`, from the
/// layout sweep (`layouts`) and the second workloads (`second`) of every program, with each
/// variant's allocator code bytes from `code_bytes`; `held_out` names the programs no design
/// was shaped on (the case registry's). An error names the programs without
/// shipping's sweep (nothing to judge against); a variant missing on some program is left out.
pub fn judge(
    rule: Rule,
    backend: &str,
    programs: &[&str],
    held_out: &[&str],
    layouts: &[LayoutRow],
    second: &[SecondRow],
    code_bytes: &BTreeMap<String, u64>,
) -> Result<Ship> {
    let sweep_totals = Totals::of_sweep(layouts, backend);
    let second_totals = Totals::of_second(second, backend);
    let unswept: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| sweep_totals.of_variant(p, REFERENCE).is_empty())
        .collect();
    if !unswept.is_empty() {
        bail!(
            "no {REFERENCE} sweep on {backend} for {}: nothing to judge against",
            unswept.join(", ")
        );
    }
    let held_out: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| held_out.contains(p))
        .collect();
    let sweep = layout::summarise(layouts);
    let again = layout::summarise_second(second);
    let key = |case: &str, variant: &str| (backend.to_owned(), case.to_owned(), variant.to_owned());
    let on = |s: &Summary, case: &str, variant: &str| -> Option<OnProgram> {
        let (median, _, _) = s.vs_shipping?;
        let (mean, _) = s.interval?;
        Some(OnProgram {
            case: case.to_owned(),
            median,
            mean,
            verdict: s.verdict,
            holds: layout::holds(s.verdict, again.get(&key(case, variant))),
        })
    };
    let mut rows: Vec<Row> = galloc_variants::VARIANTS
        .iter()
        .filter(|v| v.id != REFERENCE && v.reproduces.is_none())
        .filter_map(|v| {
            let words = programs
                .iter()
                .map(|p| on(sweep.get(&key(p, v.id))?, p, v.id))
                .collect::<Option<Vec<_>>>()?;
            let deployed = sweep_totals.deployments(v.id, REFERENCE, programs);
            if deployed.len() != programs.len() {
                return None;
            }
            let all = Population::of(&deployed)?;
            let held = Population::of(&sweep_totals.deployments(v.id, REFERENCE, &held_out));
            let again = Population::of(&second_totals.deployments(v.id, REFERENCE, programs));
            let refusals = rule.refusals(
                &all,
                held.as_ref(),
                again.as_ref(),
                galloc_variants::never_recommended(v.id).as_deref(),
            );
            Some(Row {
                variant: v.id.to_owned(),
                all,
                held_out: held,
                second: again,
                programs: words,
                code_bytes: code_bytes.get(v.id).copied(),
                refusals,
            })
        })
        .collect();
    let named = rank(&mut rows, |r| (&r.all, &r.variant, r.admitted()));
    Ok(Ship {
        rule,
        programs: programs.iter().map(|p| (*p).to_owned()).collect(),
        held_out: held_out.iter().map(|p| (*p).to_owned()).collect(),
        rows,
        named,
        reference_code_bytes: code_bytes.get(REFERENCE).copied(),
        sweep: sweep_totals,
        explained: Explained::default(),
        scale: std::collections::BTreeMap::new(),
        layout: None,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The layout tests' gtest row, under case `case`.
    pub(crate) fn layout_row(case: &str, variant: &str, offset: u32, total: u64) -> LayoutRow {
        LayoutRow {
            case: case.into(),
            ..crate::analyse::layout::tests::r(variant, offset, total)
        }
    }

    /// [`layout_row`] as the case's second workload (`<case>-2`).
    pub(crate) fn second_row(case: &str, variant: &str, offset: u32, total: u64) -> SecondRow {
        SecondRow::of(
            layout_row(case, variant, offset, total),
            &format!("{case}-2"),
        )
    }

    /// Two programs at two layouts, each variant's sweep and second-workload totals per
    /// program (shipping's: 1,000 everywhere).
    fn rows(variants: &[(&str, [u64; 2], [u64; 2])]) -> (Vec<LayoutRow>, Vec<SecondRow>) {
        let (mut l, mut s) = (Vec::new(), Vec::new());
        for (v, sweep, again) in variants {
            for (case, i) in [("a", 0), ("b", 1)] {
                for offset in [0, 4096] {
                    l.push(layout_row(case, v, offset, sweep[i]));
                    s.push(second_row(case, v, offset, again[i]));
                }
            }
        }
        (l, s)
    }

    /// `talc` 5 % cheaper on both sweeps but 5 % dearer on `b`'s second workload: its words
    /// are one cheaper and one uncertain, and the rule refuses it for the second workloads alone
    /// (their expected change is about 0). `rlsf` 3 % cheaper everywhere is admitted and
    /// named. `slabs`, 5 % cheaper on `a` and 2 % dearer on `b`, is refused for `b`.
    #[test]
    fn the_rule_reads_the_population_and_the_words_only_describe() {
        let (l, s) = rows(&[
            ("shipping", [1000, 1000], [1000, 1000]),
            ("talc", [950, 950], [950, 1050]),
            ("rlsf", [970, 970], [970, 970]),
            ("slabs", [950, 1020], [950, 1020]),
        ]);
        let sizes = BTreeMap::from([("rlsf".to_owned(), 3000), ("talc".to_owned(), 4130)]);
        let ship = judge(RULE, "gtest", &["a", "b"], &["a", "b"], &l, &s, &sizes).unwrap();
        let row = |v: &str| ship.rows.iter().find(|r| r.variant == v).unwrap();
        assert_eq!(row("talc").count(Verdict::Cheaper), 1);
        assert_eq!(row("talc").count(Verdict::Uncertain), 1);
        assert_eq!(row("rlsf").count(Verdict::Cheaper), 2);
        assert_eq!(row("slabs").count(Verdict::Dearer), 1);
        assert_eq!(row("rlsf").code_bytes, Some(3000));
        assert_eq!(row("slabs").code_bytes, None);
        let talc = row("talc");
        assert!((talc.all.expected_pct + 5.0).abs() < 1e-9);
        assert_eq!(talc.refusals.len(), 1, "{:?}", talc.refusals);
        assert!(matches!(talc.refusals[0], Refusal::Second(hi) if hi > 4.9));
        assert!(row("rlsf").admitted());
        assert_eq!(
            row("slabs").refusals[1..3],
            [
                Refusal::WorstProgram("b".into(), row("slabs").all.worst_program.1),
                Refusal::Dearer(0.5)
            ]
        );
        assert_eq!(
            row("slabs").refusals[2].to_string(),
            "dearer on 50.0 % of deployments"
        );
        assert_eq!(ship.named, "rlsf");
        assert_eq!(ship.closest().unwrap().variant, "rlsf");
        // Lowest expected change first: talc (-5, -5), rlsf (-3, -3), slabs (-5, +2).
        let order: Vec<&str> = ship.rows.iter().map(|r| r.variant.as_str()).collect();
        assert_eq!(order, ["talc", "rlsf", "slabs"]);
        assert_eq!(
            ship.held_out,
            ["a", "b"],
            "programs outside the registry were never designed on"
        );
        assert_eq!(ship.reference_spread_pct(), 0.0);
    }

    /// A made-up variant's change against shipping on program `p`, in percent.
    type Change = fn(usize) -> f64;

    /// `n` programs at 16 layouts, shipping's gas moving with the layout, each variant's at
    /// `change(program)` percent from it, both workloads.
    fn population(
        variants: &[(&str, Change)],
        n: usize,
    ) -> (Vec<String>, Vec<LayoutRow>, Vec<SecondRow>) {
        let programs: Vec<String> = (0..n).map(|p| format!("p{p}")).collect();
        let (mut l, mut s) = (Vec::new(), Vec::new());
        for (p, case) in programs.iter().enumerate() {
            for offset in (0..16).map(|i| i * 4096) {
                let base = 1_000_000_000 + 40_000_000 * u64::from(offset / 4096 % 7);
                let mut push = |v: &str, pct: f64| {
                    let total = (base as f64 * (1.0 + pct / 100.0)).round() as u64;
                    l.push(layout_row(case, v, offset, total));
                    s.push(second_row(case, v, offset, total));
                };
                push("shipping", 0.0);
                for (v, change) in variants {
                    push(v, change(p));
                }
            }
        }
        (programs, l, s)
    }

    /// The two made-up answers: a variant 2 % cheaper at every deployment is admitted
    /// with an interval of exactly −2 %; one 10 % cheaper on half the programs and 5 % dearer on
    /// the rest (about −2.7 % expected) is refused for its worst program, and named nowhere.
    #[test]
    fn a_known_answer_either_way() {
        let (programs, l, s) = population(
            &[
                ("rlsf", |_| -2.0),
                ("talc", |p| if p % 2 == 0 { -10.0 } else { 5.0 }),
            ],
            10,
        );
        let programs: Vec<&str> = programs.iter().map(String::as_str).collect();
        let ship = judge(
            RULE,
            "gtest",
            &programs,
            &programs,
            &l,
            &s,
            &BTreeMap::new(),
        )
        .unwrap();
        let row = |v: &str| ship.rows.iter().find(|r| r.variant == v).unwrap();
        let rlsf = &row("rlsf").all;
        for x in [rlsf.expected_pct, rlsf.interval_pct.0, rlsf.interval_pct.1] {
            assert!((x + 2.0).abs() < 1e-6, "{rlsf:?}");
        }
        assert!(row("rlsf").admitted());
        let talc = row("talc");
        assert!(
            talc.all.expected_pct < rlsf.expected_pct,
            "talc is cheaper on average"
        );
        // Its upper bound is the binomial one: 2 of the 10 programs drawn at −10 %, 8 at +5 %.
        assert_eq!(talc.refusals[0].to_string(), "its interval reaches +1.81 %");
        assert_eq!(
            talc.refusals[1],
            Refusal::WorstProgram("p1".into(), talc.all.worst_program.1)
        );
        assert_eq!(talc.refusals[1].to_string(), "`p1` +5.00 %");
        assert_eq!(ship.named, "rlsf");
        // Shipping's own gas moves 24 % over the layouts (1.24 G over 1.0 G).
        assert!((ship.reference_spread_pct() - 24.0).abs() < 1e-9);
    }

    #[test]
    fn names_shipping_when_the_rule_admits_none_and_nothing_without_its_sweep() {
        let (l, s) = rows(&[
            ("shipping", [1000, 1000], [1000, 1000]),
            ("talc", [995, 1000], [995, 1000]),
        ]);
        let ship = judge(
            RULE,
            "gtest",
            &["a", "b"],
            &["a", "b"],
            &l,
            &s,
            &BTreeMap::new(),
        )
        .unwrap();
        assert_eq!(ship.named, "shipping");
        assert_eq!(
            ship.closest().unwrap().variant,
            "talc",
            "the quotable sentence's subject"
        );
        assert_eq!(
            ship.rows[0].refusals[0].to_string(),
            "its interval reaches +0.00 %"
        );
        let e = judge(
            RULE,
            "gtest",
            &["a", "c", "d"],
            &["a", "c", "d"],
            &l,
            &s,
            &BTreeMap::new(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "no shipping sweep on gtest for c, d: nothing to judge against"
        );
        // The floor is never named, however cheap, nor the subject of the sentence.
        let (l, s) = rows(&[
            ("shipping", [1000, 1000], [1000, 1000]),
            ("bump", [500, 500], [500, 500]),
        ]);
        let ship = judge(
            RULE,
            "gtest",
            &["a", "b"],
            &["a", "b"],
            &l,
            &s,
            &BTreeMap::new(),
        )
        .unwrap();
        assert_eq!(ship.named, "shipping");
        assert!(ship.rows[0].is_unsafe());
        assert_eq!(ship.closest(), None);
    }
}
