//! The design target issue 37 set for a design of the lab's own (docs/design.md, "The design,
//! re-aimed"): better at every layout on most programs the design was not chosen on, a
//! geometric mean of medians, a code-size cap and a rival. It came before the ship rule
//! ([`crate::analyse::ship`]) and is kept beside it as the record of what each idea was
//! measured against.

use crate::analyse::layout::{self, Verdict, BAND_PCT};
use crate::analyse::ship::{OnProgram, Row, Ship};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::ship::tests::{layout_row, second_row};
    use crate::analyse::ship::{judge, RULE};
    use std::collections::BTreeMap;

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
}
