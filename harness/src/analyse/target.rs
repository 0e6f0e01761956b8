//! The design target set for the lab's own design (docs/design.md, "The target"): the
//! ship rule's population measures ([`crate::analyse::population`]) with stricter bounds, on
//! every program and, alone, on the registry's held-out programs and on the second workloads;
//! a code-size cap; and, at scale, no checkpoint of the growing cases dearer than shipping by
//! more than the minimum effect and nothing refused that shipping serves. It asks more than the
//! rule ([`crate::analyse::ship::RULE`]): the rule decides what galloc ships, the target says
//! when the lab's design is done. The clauses held by tests (the allocator suite's capacity
//! and long runs, Miri, the fuzzer) are the tests' to fail; the report names them.

use crate::analyse::layout;
use crate::analyse::population::Population;
pub use crate::analyse::scale::AtScale;
use crate::analyse::ship::Ship;
use std::collections::BTreeMap;

/// What the lab asks of its own design before calling it done.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Target {
    /// The expected change over every program, at most (percent).
    pub expected_pct: f64,
    /// Its 95 % interval's upper bound, at most (percent).
    pub upper_bound_pct: f64,
    /// No program's mean above this (percent).
    pub worst_program_pct: f64,
    /// At most this share (0 to 1) of deployments dearer than shipping by more than the
    /// minimum effect.
    pub dearer_share: f64,
    /// The held-out programs alone: the interval's upper bound, at most (percent).
    pub held_out_upper_pct: f64,
    /// The second workloads alone: the interval's upper bound, at most (percent).
    pub second_upper_pct: f64,
    /// Its allocator code, at most (bytes).
    pub code_bytes: u64,
    /// At no checkpoint of the scale cases dearer than shipping by more than this (percent).
    pub scale_dearer_pct: f64,
    /// Live bytes at its first refusals on large blocks, at least this share of shipping's
    /// (asserted by `allocator/tests/suite/capacity.rs`, which holds the same figure).
    pub capacity_share: f64,
}

/// The target. An earlier one (-6 %, upper bound -4 %, a spread over layouts half of
/// shipping's) was replaced: no measured design moved the spread, and the per-point oracle of
/// the measured designs is -4.95 %, so -5 % asks for a design better than all of them at once.
pub const TARGET: Target = Target {
    expected_pct: -5.0,
    upper_bound_pct: -3.0,
    worst_program_pct: 0.0,
    dearer_share: 0.05,
    held_out_upper_pct: -1.5,
    second_upper_pct: -2.0,
    code_bytes: 4_000,
    scale_dearer_pct: layout::BAND_PCT,
    capacity_share: 0.9,
};

/// A variant against [`Target`].
#[derive(Clone, Debug, PartialEq)]
pub struct AgainstTarget {
    pub variant: String,
    /// Over every program the ship table judges.
    pub all: Population,
    /// Over the registry's held-out programs alone, where it ran.
    pub held_out: Option<Population>,
    /// Over the second workloads alone, where measured.
    pub second: Option<Population>,
    pub code_bytes: Option<u64>,
    /// On the scale cases, where measured.
    pub scale: Option<AtScale>,
    /// Every clause it misses, by name (empty: the target is met, the tests' clauses aside).
    pub missed: Vec<String>,
}

impl Target {
    /// The clauses `r` misses, by name.
    fn misses(
        &self,
        all: &Population,
        held_out: Option<&Population>,
        second: Option<&Population>,
        code_bytes: Option<u64>,
        scale: Option<&AtScale>,
    ) -> Vec<String> {
        let mut missed: Vec<String> = [
            (all.expected_pct > self.expected_pct, "expected"),
            (all.interval_pct.1 > self.upper_bound_pct, "upper bound"),
            (
                all.worst_program.1 > self.worst_program_pct,
                "worst program",
            ),
            (all.dearer_share > self.dearer_share, "dearer"),
        ]
        .into_iter()
        .filter(|(missed, _)| *missed)
        .map(|(_, clause)| clause.to_owned())
        .collect();
        let mut subset = |p: Option<&Population>, bound: f64, name: &str| match p {
            None => missed.push(format!("{name} not measured")),
            Some(p) if p.interval_pct.1 > bound => missed.push(name.to_owned()),
            Some(_) => {}
        };
        subset(held_out, self.held_out_upper_pct, "held out");
        subset(second, self.second_upper_pct, "second workloads");
        match code_bytes {
            Some(b) if b > self.code_bytes => missed.push("code bytes".into()),
            None => missed.push("code bytes not measured".into()),
            _ => {}
        }
        match scale {
            None => missed.push("scale not measured".into()),
            Some(s) if s.refused > 0 => missed.push("refuses at scale".into()),
            Some(s) if s.dearest_pct > self.scale_dearer_pct => missed.push("scale".into()),
            Some(_) => {}
        }
        missed
    }
}

impl Ship {
    /// Every variant the ship table judges against `target`, with its standing on the scale
    /// cases where `scale` has one, in the ship table's order (lowest expected change first).
    pub fn against_target(
        &self,
        target: Target,
        scale: &BTreeMap<String, AtScale>,
    ) -> Vec<AgainstTarget> {
        self.rows
            .iter()
            .map(|row| {
                let at_scale = scale.get(&row.variant);
                let mut missed = target.misses(
                    &row.all,
                    row.held_out.as_ref(),
                    row.second.as_ref(),
                    row.code_bytes,
                    at_scale,
                );
                if let Some(why) = galloc_variants::never_recommended(&row.variant) {
                    missed.push(why);
                }
                AgainstTarget {
                    variant: row.variant.clone(),
                    all: row.all.clone(),
                    held_out: row.held_out.clone(),
                    second: row.second.clone(),
                    code_bytes: row.code_bytes,
                    scale: at_scale.cloned(),
                    missed,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::ship::tests::{layout_row, second_row};
    use crate::analyse::ship::{judge, RULE};

    /// The target holds a variant to every clause on all programs, alone on the held-out ones
    /// and on the second workloads, its code and its standing at scale: each clause it misses
    /// is named, and meeting every one reads as met.
    #[test]
    fn the_design_target_names_every_clause_a_variant_misses() {
        let mut l = Vec::new();
        let mut s = Vec::new();
        // `lab` is 10 % cheaper than shipping everywhere, its second workloads too;
        // `gear-next` is 10 % cheaper on `dex` only, 2 % dearer on `vesting`, and 4 % dearer
        // on every second workload.
        for (case, variant, cheap, dear, again) in [
            ("nft", "shipping", 1000, 1200, 1000),
            ("vesting", "shipping", 1000, 1200, 1000),
            ("dex", "shipping", 1000, 1200, 1000),
            ("nft", "lab", 900, 1080, 900),
            ("vesting", "lab", 900, 1080, 900),
            ("dex", "lab", 900, 1080, 900),
            ("nft", "gear-next", 1000, 1200, 1040),
            ("vesting", "gear-next", 1020, 1224, 1040),
            ("dex", "gear-next", 900, 1080, 1040),
        ] {
            for (offset, total) in [(0, cheap), (4096, dear)] {
                l.push(layout_row(case, variant, offset, total));
            }
            for offset in [0, 4096] {
                s.push(second_row(case, variant, offset, again));
            }
        }
        let sizes = BTreeMap::from([("lab".to_owned(), 3_900), ("gear-next".to_owned(), 9_201)]);
        let programs = ["nft", "vesting", "dex"];
        let held_out = ["nft", "vesting"];
        let ship = judge(RULE, "gtest", &programs, &held_out, &l, &s, &sizes).unwrap();
        let at = |pct: f64, refused: usize| AtScale {
            dearest_pct: pct,
            dearest_at: ("nft-scale".into(), 0, 4 << 20),
            refused,
        };
        let scale = BTreeMap::from([
            ("lab".to_owned(), at(0.5, 0)),
            ("gear-next".to_owned(), at(1.5, 2)),
        ]);
        let t = ship.against_target(TARGET, &scale);
        let lab = t.iter().find(|r| r.variant == "lab").unwrap();
        assert_eq!(lab.all.programs, 3);
        assert_eq!(lab.held_out.as_ref().unwrap().programs, 2);
        assert!(lab.missed.is_empty(), "{lab:?}");
        let next = t.iter().find(|r| r.variant == "gear-next").unwrap();
        let dex_mean = 0.9f64;
        let expected = 100.0 * ((dex_mean.ln() + 1.02f64.ln()) / 3.0).exp_m1();
        assert!((next.all.expected_pct - expected).abs() < 1e-9);
        assert_eq!(
            next.missed,
            [
                "expected".to_owned(),
                "upper bound".to_owned(),
                "worst program".to_owned(),
                "dearer".to_owned(),
                "held out".to_owned(),
                "second workloads".to_owned(),
                "code bytes".to_owned(),
                "refuses at scale".to_owned(),
                galloc_variants::never_recommended("gear-next").unwrap(),
            ]
        );
        // Dearer at a checkpoint, refusing nothing: the scale clause alone.
        let scale = BTreeMap::from([("lab".to_owned(), at(1.01, 0))]);
        let t = ship.against_target(TARGET, &scale);
        assert_eq!(t[0].variant, "lab", "the ship table's order: lowest first");
        assert_eq!(t[0].missed, ["scale"]);
        // Not measured at scale: said so, never met.
        let t = ship.against_target(TARGET, &BTreeMap::new());
        assert_eq!(t[0].missed, ["scale not measured"]);
        // The figures the names stand for.
        assert_eq!(next.all.worst_program.0, "vesting");
        assert!((next.all.dearer_share - 2.0 / 6.0).abs() < 1e-12);
        let second = next.second.as_ref().unwrap();
        assert!((second.expected_pct - 4.0).abs() < 1e-9, "{second:?}");
    }
}
