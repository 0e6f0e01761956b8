//! The ship verdict: which allocator galloc should ship, judged on every program the lab runs
//! (the default cases and the corpus) at once, not case by case.
//!
//! Per program, a variant's standing against shipping is its gas verdict over the layout sweep
//! with the minimum effect ([`layout::Verdict`]) **if the program's second workload reaches the
//! same verdict**; a verdict the second workload does not repeat, and a verdict of noise, count
//! as noise. The rule ([`Rule`]) then asks of a variant: better on at least
//! [`Rule::better_share`] of the programs, its median difference above the minimum effect on
//! none (worse at the median nowhere), and passing the lab's own tests, which the floor and
//! a variant holding pages with nothing live do not ([`galloc_variants::never_recommended`]).
//! Of the variants the rule admits, the lab names the one with the lowest geometric mean of
//! medians; shipping when it admits none.

use crate::analyse::layout::{self, Holds, Summary, Verdict, BAND_PCT};
use crate::report::inputs::Inputs;
use crate::results::{read_csv, CodeSizeRow, LayoutRow, SecondRow};
use anyhow::{bail, Context, Result};
use galloc_variants::REFERENCE;
use std::collections::BTreeMap;
use std::path::Path;

/// Where the corpus's results live, beside the default cases' (`results/corpus/`).
pub const CORPUS_DIR: &str = "corpus";

/// The programs the verdict is judged on: every default case, then the corpus, in the
/// registry's order.
pub fn programs() -> Vec<&'static str> {
    let cases = crate::run::scenario::CASES.iter();
    cases
        .filter(|c| c.default || c.corpus)
        .map(|c| c.id)
        .collect()
}

/// The ship verdict from the committed results: the default cases' sweep and second workloads
/// in `results`, the corpus's in `corpus`, and the allocator's code bytes in
/// `results/code-size.csv`. The caller holds both directories' locks and has verified them.
pub fn from_results(results: &Path, corpus: &Path) -> Result<Ship> {
    if !corpus.join(crate::results::MANIFEST).exists() {
        bail!(
            "{}: no corpus results; `just corpus` measures the corpus there",
            corpus.display()
        );
    }
    let mut layouts = Vec::new();
    let mut second = Vec::new();
    for dir in [results, corpus] {
        let inputs = Inputs::read_for_verdicts(dir)
            .with_context(|| format!("reading the sweep in {}", dir.display()))?;
        layouts.extend(inputs.layouts);
        second.extend(inputs.second);
    }
    let sizes_file = results.join("code-size.csv");
    let sizes: Vec<CodeSizeRow> = read_csv(&sizes_file)?;
    let code_bytes = sizes
        .into_iter()
        .filter(|r| r.package == "galloc-wasm-size" && !r.probe)
        .map(|r| (r.variant, r.code_bytes))
        .collect();
    judge(RULE, "gtest", &programs(), &layouts, &second, &code_bytes)
}

/// What the lab asks of a variant before it names it for galloc to ship.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    /// Of the programs, the share on which it must be better (verdict and second workload).
    pub better_share: f64,
    /// Percent above shipping's median that no program's median may be: the minimum effect.
    pub worst_median_pct: f64,
}

/// The rule docs/ship.md states.
pub const RULE: Rule = Rule {
    better_share: 0.8,
    worst_median_pct: BAND_PCT,
};

/// A variant on one program, against shipping, on gas.
#[derive(Clone, Debug, PartialEq)]
pub struct OnProgram {
    pub case: String,
    /// Median percent difference over the program's layouts.
    pub median: f64,
    /// The sweep's verdict, and whether the second workload repeats it.
    pub verdict: Verdict,
    pub holds: Holds,
}

impl OnProgram {
    /// The verdict that counts: the sweep's when the second workload repeats it, else noise.
    pub fn standing(&self) -> Verdict {
        match (self.verdict, self.holds) {
            (v @ (Verdict::Better | Verdict::Same | Verdict::Worse), Holds::Yes) => v,
            _ => Verdict::Noise,
        }
    }
}

/// One variant over every program.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub variant: String,
    /// Per program, in the order given.
    pub programs: Vec<OnProgram>,
    /// Bytes of the allocator's code alone (`results/code-size.csv`), where measured.
    pub code_bytes: Option<u64>,
    /// Why the rule does not admit it (`None`: admitted).
    pub refused: Option<String>,
}

impl Row {
    /// Programs on which its standing is `v`.
    pub fn count(&self, v: Verdict) -> usize {
        self.programs.iter().filter(|p| p.standing() == v).count()
    }

    pub fn geomean_pct(&self) -> f64 {
        layout::geomean_pct(self.programs.iter().map(|p| p.median))
    }

    /// The program with the highest median, and that median.
    pub fn worst(&self) -> Option<&OnProgram> {
        self.programs
            .iter()
            .max_by(|a, b| a.median.total_cmp(&b.median))
    }
}

/// The table and the variant it names.
#[derive(Clone, Debug, PartialEq)]
pub struct Ship {
    pub rule: Rule,
    /// The programs judged, in the order given.
    pub programs: Vec<String>,
    /// Every variant measured on all of them but shipping, lowest geometric mean first.
    pub rows: Vec<Row>,
    /// The variant the rule names: the admitted one with the lowest geometric mean, or
    /// shipping.
    pub named: String,
    /// Shipping's allocator code bytes (it has no row of its own), where measured.
    pub reference_code_bytes: Option<u64>,
}

/// Judges every variant measured on all `programs` against shipping on `backend`, from the
/// layout sweep (`layouts`) and the second workloads (`second`) of every program, with each
/// variant's allocator code bytes from `code_bytes`. An error names the programs without
/// shipping's sweep (nothing to judge against); a variant missing on some program is left out.
pub fn judge(
    rule: Rule,
    backend: &str,
    programs: &[&str],
    layouts: &[LayoutRow],
    second: &[SecondRow],
    code_bytes: &BTreeMap<String, u64>,
) -> Result<Ship> {
    let sweep = layout::summarise(layouts);
    let again = layout::summarise_second(second);
    let key = |case: &str, variant: &str| (backend.to_owned(), case.to_owned(), variant.to_owned());
    let unswept: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| !sweep.contains_key(&key(p, REFERENCE)))
        .collect();
    if !unswept.is_empty() {
        bail!(
            "no {REFERENCE} sweep on {backend} for {}: nothing to judge against",
            unswept.join(", ")
        );
    }
    let on = |s: &Summary, case: &str, variant: &str| -> Option<OnProgram> {
        let (median, _, _) = s.vs_shipping?;
        Some(OnProgram {
            case: case.to_owned(),
            median,
            verdict: s.verdict,
            holds: layout::holds(s.verdict, again.get(&key(case, variant))),
        })
    };
    let mut rows: Vec<Row> = galloc_variants::VARIANTS
        .iter()
        .filter(|v| v.id != REFERENCE && v.reproduces.is_none())
        .filter_map(|v| {
            let programs = programs
                .iter()
                .map(|p| on(sweep.get(&key(p, v.id))?, p, v.id))
                .collect::<Option<Vec<_>>>()?;
            let mut row = Row {
                variant: v.id.to_owned(),
                programs,
                code_bytes: code_bytes.get(v.id).copied(),
                refused: None,
            };
            row.refused = refusal(rule, &row);
            Some(row)
        })
        .collect();
    rows.sort_by(|a, b| {
        a.geomean_pct()
            .total_cmp(&b.geomean_pct())
            .then_with(|| a.variant.cmp(&b.variant))
    });
    let named = rows
        .iter()
        .find(|r| r.refused.is_none())
        .map_or(REFERENCE.to_owned(), |r| r.variant.clone());
    Ok(Ship {
        rule,
        programs: programs.iter().map(|p| (*p).to_owned()).collect(),
        rows,
        named,
        reference_code_bytes: code_bytes.get(REFERENCE).copied(),
    })
}

/// What the lab asks of its own design before calling it done (docs/design.md, "The design, re-aimed"),
/// on the programs it was not shaped on: every default case and the held-out corpus programs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    /// Of those programs, the share on which it must be better (verdict and second workload).
    pub better_share: f64,
    /// The geometric mean of its medians, at most (percent).
    pub geomean_pct: f64,
    /// Its allocator code, at most (bytes): less than talc's 4,130, about half shipping's.
    pub code_bytes: u64,
    /// The candidate it must beat (a lower geometric mean on the same programs).
    pub rival: &'static str,
}

/// The target issue 37 set.
pub const TARGET: Target = Target {
    better_share: 0.8,
    geomean_pct: layout::TARGET_GEOMEAN_PCT,
    code_bytes: 4_000,
    rival: "gear-next",
};

/// The programs the target is judged on: the default cases and the held-out corpus programs.
pub fn target_programs() -> Vec<&'static str> {
    crate::run::scenario::CASES
        .iter()
        .filter(|c| c.default || (c.corpus && c.held_out))
        .map(|c| c.id)
        .collect()
}

/// A variant against [`Target`].
#[derive(Clone, Debug, PartialEq)]
pub struct AgainstTarget {
    pub variant: String,
    /// Programs judged, and those it is better on.
    pub programs: usize,
    pub better: usize,
    /// Programs whose median is more than the minimum effect above shipping's.
    pub worse_at_median: Vec<String>,
    pub geomean_pct: f64,
    pub code_bytes: Option<u64>,
    /// The clauses it misses, in words (empty: the target is met).
    pub missed: Vec<String>,
}

impl Ship {
    /// Every variant against `target` on the [`target_programs`] among those judged, lowest
    /// geometric mean first.
    pub fn against_target(&self, target: Target) -> Vec<AgainstTarget> {
        let wanted = target_programs();
        let restricted = |row: &Row| -> Vec<OnProgram> {
            row.programs
                .iter()
                .filter(|p| wanted.contains(&p.case.as_str()))
                .cloned()
                .collect()
        };
        let geomean = |ps: &[OnProgram]| layout::geomean_pct(ps.iter().map(|p| p.median));
        let rival = self
            .rows
            .iter()
            .find(|r| r.variant == target.rival)
            .map(|r| geomean(&restricted(r)));
        let mut out: Vec<AgainstTarget> = self
            .rows
            .iter()
            .map(|row| {
                let ps = restricted(row);
                let better = ps
                    .iter()
                    .filter(|p| p.standing() == Verdict::Better)
                    .count();
                let worse_at_median: Vec<String> = ps
                    .iter()
                    .filter(|p| p.median > BAND_PCT)
                    .map(|p| p.case.clone())
                    .collect();
                let g = geomean(&ps);
                let mut missed = Vec::new();
                if (better as f64) < target.better_share * ps.len() as f64 {
                    missed.push(format!("better on {better} of {}", ps.len()));
                }
                if !worse_at_median.is_empty() {
                    missed.push(format!("worse at the median on {}", worse_at_median.len()));
                }
                if g > target.geomean_pct {
                    missed.push(format!("geomean {g:+.2} %"));
                }
                match row.code_bytes {
                    Some(b) if b > target.code_bytes => missed.push(format!(
                        "{} code bytes",
                        crate::report::tables::thousands(b)
                    )),
                    None => missed.push("code bytes not measured".into()),
                    _ => {}
                }
                if let Some(r) = rival.filter(|r| row.variant != target.rival && g >= *r) {
                    missed.push(format!("not below {}'s {r:+.2} %", target.rival));
                }
                AgainstTarget {
                    variant: row.variant.clone(),
                    programs: ps.len(),
                    better,
                    worse_at_median,
                    geomean_pct: g,
                    code_bytes: row.code_bytes,
                    missed,
                }
            })
            .collect();
        out.sort_by(|a, b| a.geomean_pct.total_cmp(&b.geomean_pct));
        out
    }
}

/// Why `rule` does not admit `row`, or `None`.
fn refusal(rule: Rule, row: &Row) -> Option<String> {
    if let Some(why) = galloc_variants::never_recommended(&row.variant) {
        return Some(why);
    }
    let n = row.programs.len();
    let better = row.count(Verdict::Better);
    if (better as f64) < rule.better_share * n as f64 {
        return Some(format!(
            "better on {better} of {n} programs, under {:.0} %",
            100.0 * rule.better_share
        ));
    }
    let over: Vec<&str> = row
        .programs
        .iter()
        .filter(|p| p.median > rule.worst_median_pct)
        .map(|p| p.case.as_str())
        .collect();
    if !over.is_empty() {
        return Some(format!(
            "median more than {} % above shipping on {}",
            rule.worst_median_pct,
            over.join(", ")
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout_row(case: &str, variant: &str, offset: u32, total: u64) -> LayoutRow {
        LayoutRow {
            case: case.into(),
            ..crate::analyse::layout::tests::r(variant, offset, total)
        }
    }

    fn second_row(case: &str, variant: &str, offset: u32, total: u64) -> SecondRow {
        SecondRow::of(
            layout_row(case, variant, offset, total),
            &format!("{case}-2"),
        )
    }

    /// Two programs at two layouts: `talc` 5 % cheaper everywhere (both workloads) on `a`,
    /// 5 % cheaper on `b`'s sweep but 5 % dearer under its second workload (so noise);
    /// `rlsf` 3 % cheaper on both, both workloads; `slabs` cheaper on `a` and 2 % dearer
    /// on `b`.
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

    #[test]
    fn counts_a_verdict_only_where_the_second_workload_repeats_it() {
        let (l, s) = rows(&[
            ("shipping", [1000, 1000], [1000, 1000]),
            ("talc", [950, 950], [950, 1050]),
            ("rlsf", [970, 970], [970, 970]),
            ("slabs", [950, 1020], [950, 1020]),
        ]);
        let sizes = BTreeMap::from([("rlsf".to_owned(), 3000), ("talc".to_owned(), 4130)]);
        let ship = judge(RULE, "gtest", &["a", "b"], &l, &s, &sizes).unwrap();
        let row = |v: &str| ship.rows.iter().find(|r| r.variant == v).unwrap();
        assert_eq!(row("talc").count(Verdict::Better), 1);
        assert_eq!(row("talc").count(Verdict::Noise), 1);
        assert_eq!(row("rlsf").count(Verdict::Better), 2);
        assert_eq!(row("slabs").count(Verdict::Worse), 1);
        assert_eq!(row("slabs").worst().unwrap().case, "b");
        assert_eq!(row("rlsf").code_bytes, Some(3000));
        assert_eq!(row("slabs").code_bytes, None);
        // talc and slabs: better on 1 of 2 (under 80 %); rlsf admitted.
        for v in ["talc", "slabs"] {
            let why = row(v).refused.clone().unwrap();
            assert!(why.contains("better on 1 of 2"), "{v}: {why}");
        }
        assert_eq!(row("rlsf").refused, None);
        assert_eq!(ship.named, "rlsf");
        // Lowest geometric mean first: talc (-5, -5), rlsf (-3, -3), slabs (-5, +2).
        let order: Vec<&str> = ship.rows.iter().map(|r| r.variant.as_str()).collect();
        assert_eq!(order, ["talc", "rlsf", "slabs"]);
        assert!((row("rlsf").geomean_pct() + 3.0).abs() < 1e-9);
        // Asking for better on half: talc is admitted and cheapest; slabs is still out, for
        // its +2 % median on b.
        let half = Rule {
            better_share: 0.5,
            ..RULE
        };
        let ship = judge(half, "gtest", &["a", "b"], &l, &s, &sizes).unwrap();
        let row = |v: &str| ship.rows.iter().find(|r| r.variant == v).unwrap();
        assert_eq!(
            row("slabs").refused.as_deref(),
            Some("median more than 1 % above shipping on b")
        );
        assert_eq!(ship.named, "talc");
    }

    /// The target is judged on default cases and held-out corpus programs only (`dex` was
    /// designed on): each clause it misses is named, and meeting every one reads as met.
    #[test]
    fn the_design_target_counts_only_programs_no_design_was_shaped_on() {
        let mut l = Vec::new();
        let mut s = Vec::new();
        for (case, variant, total) in [
            ("nft", "shipping", 1000),
            ("vesting", "shipping", 1000),
            ("dex", "shipping", 1000),
            ("nft", "lab", 900),
            ("vesting", "lab", 920),
            ("dex", "lab", 1500),
            ("nft", "gear-next", 990),
            ("vesting", "gear-next", 1020),
            ("dex", "gear-next", 900),
        ] {
            for offset in [0, 4096] {
                l.push(layout_row(case, variant, offset, total));
                s.push(second_row(case, variant, offset, total));
            }
        }
        let sizes = BTreeMap::from([("lab".to_owned(), 3_900), ("gear-next".to_owned(), 9_201)]);
        let ship = judge(RULE, "gtest", &["nft", "vesting", "dex"], &l, &s, &sizes).unwrap();
        let t = ship.against_target(TARGET);
        let lab = t.iter().find(|r| r.variant == "lab").unwrap();
        assert_eq!((lab.programs, lab.better), (2, 2));
        assert!(
            lab.worse_at_median.is_empty() && lab.missed.is_empty(),
            "{lab:?}"
        );
        let next = t.iter().find(|r| r.variant == "gear-next").unwrap();
        assert_eq!(next.worse_at_median, ["vesting"]);
        assert_eq!(
            next.missed,
            [
                "better on 0 of 2",
                "worse at the median on 1",
                "geomean +0.49 %",
                "9,201 code bytes"
            ]
        );
        // Lowest geometric mean first.
        assert_eq!(t[0].variant, "lab");
    }

    #[test]
    fn names_shipping_when_the_rule_admits_none_and_nothing_without_its_sweep() {
        let (l, s) = rows(&[
            ("shipping", [1000, 1000], [1000, 1000]),
            ("talc", [950, 1000], [950, 1000]),
        ]);
        let ship = judge(RULE, "gtest", &["a", "b"], &l, &s, &BTreeMap::new()).unwrap();
        assert_eq!(ship.named, "shipping");
        let e = judge(RULE, "gtest", &["a", "c", "d"], &l, &s, &BTreeMap::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "no shipping sweep on gtest for c, d: nothing to judge against"
        );
        // The floor is never named, however cheap.
        let (l, s) = rows(&[
            ("shipping", [1000, 1000], [1000, 1000]),
            ("bump", [500, 500], [500, 500]),
        ]);
        let ship = judge(RULE, "gtest", &["a", "b"], &l, &s, &BTreeMap::new()).unwrap();
        assert_eq!(ship.named, "shipping");
        assert!(ship.rows[0].refused.is_some());
    }
}
