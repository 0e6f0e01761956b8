//! Rules that choose a program's layout, judged out of sample (docs/layout-rule.md, "Judged out
//! of sample").
//!
//! A rule sees a program's main workload (or nothing) and chooses one of the layouts its second
//! workload also ran at; it is then judged on the second workload alone, at the layout it
//! chose against the linker's own (offset 0), with the ship rule's measures
//! ([`Population`]): expected change, its interval, the worst program, the share dearer. The
//! choice is limited to those layouts because only there is the second workload measured: a
//! rule judged anywhere else would be judged on a guess.
//!
//! The rules are those an author could apply, and one no author can:
//! - [`ChoiceRule::Model`]: the layout model's cheapest prediction for the main workload, from
//!   its one run at the linker's layout (`results/layout-model/model.csv`);
//! - [`ChoiceRule::Robust`]: the same model, asked for the layout that stays cheap when the
//!   heap's blocks fall elsewhere: cheaper than the linker's at every shift of
//!   [`crate::analyse::layout_model::HEAP_SHIFTS`] and none (`shifted.csv`), and of those the
//!   one whose dearest prediction is lowest; the linker's where none is (written down in
//!   docs/layout-rule.md before it was measured);
//! - [`ChoiceRule::Measured`]: the main workload's cheapest measured layout (fitted to it);
//! - [`ChoiceRule::EarliestInPage`]: the layout whose heap base is earliest in its Gear page
//!   (from nothing);
//! - [`ChoiceRule::Hindsight`]: the second workload's own cheapest: what choosing among these
//!   layouts could give at best, not a rule.

use crate::analyse::population::{Deployments, Population, BAND_PCT};
use crate::results::pages::GEAR_PAGE;
use crate::results::{LayoutRow, ModelRow, SecondRow, ShiftRow};
use std::collections::BTreeMap;

/// What the issue asks of a rule on the second workloads, for both allocators: an expected
/// change at or below this (percent, against the linker's layout)...
pub const TARGET_EXPECTED_PCT: f64 = -4.0;
/// ...with the interval's upper bound below this...
pub const TARGET_UPPER_PCT: f64 = -1.0;
/// ...and no program dearer than this (its change at the chosen layout).
pub const TARGET_WORST_PCT: f64 = BAND_PCT;

/// How a rule chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChoiceRule {
    Model,
    Robust,
    Measured,
    EarliestInPage,
    Hindsight,
}

impl ChoiceRule {
    pub const ALL: [ChoiceRule; 5] = [
        ChoiceRule::Model,
        ChoiceRule::Robust,
        ChoiceRule::Measured,
        ChoiceRule::EarliestInPage,
        ChoiceRule::Hindsight,
    ];

    /// Its short name, a column's heading.
    pub fn name(self) -> &'static str {
        match self {
            ChoiceRule::Model => "model",
            ChoiceRule::Robust => "robust model",
            ChoiceRule::Measured => "main workload",
            ChoiceRule::EarliestInPage => "heap base",
            ChoiceRule::Hindsight => "hindsight",
        }
    }

    /// What it chooses from, as the report says it.
    pub fn describe(self) -> &'static str {
        match self {
            ChoiceRule::Model => "the model's cheapest for the main workload (one run)",
            ChoiceRule::Robust => {
                "the model's cheapest with the heap's blocks shifted, cheaper than the linker's at every shift (one run)"
            }
            ChoiceRule::Measured => "the main workload's cheapest, measured",
            ChoiceRule::EarliestInPage => "the heap base earliest in its Gear page",
            ChoiceRule::Hindsight => "the second workload's own cheapest (hindsight, not a rule)",
        }
    }

    /// Whether an author could apply it before the second workload runs.
    pub fn is_rule(self) -> bool {
        self != ChoiceRule::Hindsight
    }
}

/// One rule's choice for one program and allocator.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub program: String,
    pub offset: u32,
    /// How many layouts it chose among.
    pub offered: usize,
    /// The second workload's total at the chosen layout and at the linker's.
    pub chosen: u64,
    pub linker: u64,
}

impl Choice {
    /// The change the choice made on the second workload, percent.
    pub fn change_pct(&self) -> f64 {
        100.0 * (self.chosen as f64 / self.linker as f64 - 1.0)
    }
}

/// One rule's standing for one allocator over the programs.
#[derive(Clone, Debug, PartialEq)]
pub struct Standing {
    pub rule: ChoiceRule,
    pub variant: String,
    pub choices: Vec<Choice>,
    pub population: Population,
}

impl Standing {
    /// Whether it meets the target: expected change, upper bound and worst program.
    pub fn meets_target(&self) -> bool {
        let p = &self.population;
        p.expected_pct <= TARGET_EXPECTED_PCT
            && p.interval_pct.1 < TARGET_UPPER_PCT
            && p.worst_program.1 <= TARGET_WORST_PCT
    }

    /// How many programs it moved off the linker's layout.
    pub fn moved(&self) -> usize {
        self.choices.iter().filter(|c| c.offset != 0).count()
    }
}

/// The layout study as the report reads it: the model's rows and the rules' standings.
#[derive(Clone, Debug, PartialEq)]
pub struct Study {
    pub models: Vec<ModelRow>,
    pub standings: Vec<Standing>,
}

/// How many layouts `standings`' rules chose among: the most any program offered.
pub fn layouts(standings: &[Standing]) -> usize {
    standings
        .iter()
        .flat_map(|s| &s.choices)
        .map(|c| c.offered)
        .max()
        .unwrap_or(0)
}

/// The robust rule's score for the layout at `offset`, from its predictions (`here`: unshifted
/// first, then at each of [`crate::analyse::layout_model::HEAP_SHIFTS`]) and the linker's
/// (`linker`, in the same order): `Some(Some(dearest))` where every prediction is below the
/// linker's at the same shift (the linker's own always qualifies), `Some(None)` where some is
/// not, `None` where the two do not pair up (no shifted predictions).
pub fn robust_score(offset: u32, here: &[u64], linker: &[u64]) -> Option<Option<u64>> {
    if here.len() != linker.len() || here.len() < 2 {
        return None;
    }
    let cheaper = offset == 0 || here.iter().zip(linker).all(|(h, l)| h < l);
    Some(cheaper.then(|| *here.iter().max().expect("two or more")))
}

/// The robust rule's choice among `predicted`'s layouts (offset: its predictions, as
/// [`robust_score`] takes them; the linker's, 0, among them): the qualifying layout whose
/// dearest prediction is lowest, ties to the smallest offset, so the linker's where none
/// qualifies. `None` where the linker's layout has no predictions or some layout's do not pair
/// up with them. What `lab layout` applies to an author's program, and [`judge`] to the 17.
pub fn robust_choice(predicted: &BTreeMap<u32, Vec<u64>>) -> Option<u32> {
    let linker = predicted.get(&0)?;
    predicted
        .iter()
        .map(|(&offset, here)| {
            let score = robust_score(offset, here, linker)?.unwrap_or(u64::MAX);
            Some((score, offset))
        })
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .min()
        .map(|(_, offset)| offset)
}

/// Every rule's standing, per variant in the order given, over `programs` (those with a second
/// workload at the linker's layout and a prediction at each of its layouts; gtest's rows only).
/// Ties go to the smallest offset: a rule that cannot tell layouts apart keeps the linker's.
pub fn judge(
    models: &[ModelRow],
    shifted: &[ShiftRow],
    layouts: &[LayoutRow],
    second: &[SecondRow],
    programs: &[&str],
    variants: &[&str],
) -> Vec<Standing> {
    type Key<'a> = (&'a str, &'a str);
    let mut again: BTreeMap<Key, BTreeMap<u32, (u32, u64)>> = BTreeMap::new();
    for r in second.iter().filter(|r| r.backend == "gtest") {
        again
            .entry((r.case.as_str(), r.variant.as_str()))
            .or_default()
            .insert(r.offset, (r.heap_base, r.total));
    }
    let mut main: BTreeMap<Key, BTreeMap<u32, u64>> = BTreeMap::new();
    for r in layouts.iter().filter(|r| r.backend == "gtest") {
        main.entry((r.case.as_str(), r.variant.as_str()))
            .or_default()
            .insert(r.offset, r.total);
    }
    // Each layout's predictions, unshifted first, then at every shift.
    let mut predicted: BTreeMap<Key, BTreeMap<u32, Vec<u64>>> = BTreeMap::new();
    for r in models {
        predicted
            .entry((r.case.as_str(), r.variant.as_str()))
            .or_default()
            .insert(r.offset, vec![r.predicted]);
    }
    for r in shifted {
        if let Some(p) = predicted
            .get_mut(&(r.case.as_str(), r.variant.as_str()))
            .and_then(|by| by.get_mut(&r.offset))
        {
            p.push(r.predicted);
        }
    }
    let robust = |key: &Key, offset: u32| -> Option<Option<u64>> {
        let by = predicted.get(key)?;
        robust_score(offset, by.get(&offset)?, by.get(&0)?)
    };
    let mut out = Vec::new();
    for variant in variants {
        for rule in ChoiceRule::ALL {
            let choices: Vec<Choice> = programs
                .iter()
                .filter_map(|program| {
                    let key = (*program, *variant);
                    let at = again.get(&key)?;
                    let linker = at.get(&0)?.1;
                    // The score each layout of the second workload gets; the lowest is chosen.
                    // `u64::MAX`: a layout the rule may not choose.
                    let score = |offset: u32, (heap_base, total): (u32, u64)| -> Option<u64> {
                        match rule {
                            ChoiceRule::Model => {
                                predicted.get(&key)?.get(&offset)?.first().copied()
                            }
                            ChoiceRule::Robust => Some(robust(&key, offset)?.unwrap_or(u64::MAX)),
                            ChoiceRule::Measured => main.get(&key)?.get(&offset).copied(),
                            ChoiceRule::EarliestInPage => Some(u64::from(heap_base % GEAR_PAGE)),
                            ChoiceRule::Hindsight => Some(total),
                        }
                    };
                    let scored = at
                        .iter()
                        .map(|(o, v)| Some((score(*o, *v)?, *o)))
                        .collect::<Option<Vec<_>>>()?;
                    let offered = scored.len();
                    let (_, offset) = scored.into_iter().min()?;
                    Some(Choice {
                        program: (*program).to_owned(),
                        offset,
                        offered,
                        chosen: at[&offset].1,
                        linker,
                    })
                })
                .collect();
            let deployed: Vec<Deployments> = choices
                .iter()
                .map(|c| Deployments {
                    program: c.program.clone(),
                    points: vec![(c.offset, c.chosen, c.linker)],
                })
                .collect();
            if let Some(population) = Population::of(&deployed) {
                out.push(Standing {
                    rule,
                    variant: (*variant).to_owned(),
                    choices,
                    population,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::ship::tests::{layout_row, second_row};

    fn model(case: &str, variant: &str, offset: u32, predicted: u64) -> ModelRow {
        ModelRow {
            case: case.into(),
            variant: variant.into(),
            offset,
            measured: 0,
            predicted,
            model_pages_gas: 0,
            model_pages_gas_at_zero: 0,
            meter_pages_gas: None,
            meter_fuel: None,
        }
    }

    fn second(case: &str, offset: u32, heap_base: u32, total: u64) -> SecondRow {
        SecondRow {
            heap_base,
            ..second_row(case, "v", offset, total)
        }
    }

    #[test]
    fn each_rule_chooses_by_its_own_score_and_is_judged_on_the_second_workload() {
        // Program a: the model says 100 is cheapest, the main workload says 200, the heap base
        // is earliest in its page at 300, and the second workload is cheapest at 200.
        let models = [
            model("a", "v", 0, 1_000),
            model("a", "v", 100, 900),
            model("a", "v", 200, 950),
            model("a", "v", 300, 990),
        ];
        let layouts = [
            layout_row("a", "v", 0, 1_000),
            layout_row("a", "v", 100, 990),
            layout_row("a", "v", 200, 800),
            layout_row("a", "v", 300, 1_000),
        ];
        let seconds = [
            second("a", 0, GEAR_PAGE + 40, 2_000),
            second("a", 100, GEAR_PAGE + 140, 2_100),
            second("a", 200, GEAR_PAGE + 240, 1_800),
            second("a", 300, 2 * GEAR_PAGE + 16, 1_900),
        ];
        let standings = judge(&models, &[], &layouts, &seconds, &["a"], &["v"]);
        let chosen: Vec<(ChoiceRule, u32, f64)> = standings
            .iter()
            .map(|s| (s.rule, s.choices[0].offset, s.choices[0].change_pct()))
            .collect();
        assert_eq!(
            chosen,
            [
                (ChoiceRule::Model, 100, 5.000000000000004),
                (ChoiceRule::Measured, 200, -9.999999999999998),
                (ChoiceRule::EarliestInPage, 300, -5.000000000000004),
                (ChoiceRule::Hindsight, 200, -9.999999999999998),
            ]
        );
        // One program, one point: its change is the expected one, and its worst.
        let model_rule = &standings[0];
        assert!((model_rule.population.expected_pct - 5.0).abs() < 1e-9);
        assert_eq!(model_rule.population.worst_program.0, "a");
        assert_eq!(model_rule.moved(), 1);
        assert!(!model_rule.meets_target());
        assert!(standings[1].meets_target());
        assert_eq!(super::layouts(&standings), 4);
    }

    #[test]
    fn a_rule_that_cannot_tell_layouts_apart_keeps_the_linkers() {
        let models = [model("a", "v", 0, 1_000), model("a", "v", 100, 1_000)];
        let seconds = [second("a", 0, 40, 2_000), second("a", 100, 140, 1_000)];
        let standings = judge(&models, &[], &[], &seconds, &["a"], &["v"]);
        let by_model = &standings[0];
        assert_eq!(by_model.rule, ChoiceRule::Model);
        assert_eq!(by_model.choices[0].offset, 0);
        assert_eq!(by_model.moved(), 0);
        // Without the main workload's sweep the fitted rule has no standing at all, nor the
        // robust one without shifted predictions.
        assert!(standings
            .iter()
            .all(|s| s.rule != ChoiceRule::Measured && s.rule != ChoiceRule::Robust));
    }

    fn shift(offset: u32, shift: i32, predicted: u64) -> ShiftRow {
        ShiftRow {
            case: "a".into(),
            variant: "v".into(),
            offset,
            shift,
            predicted,
        }
    }

    #[test]
    fn the_robust_rule_moves_only_where_every_shift_is_cheaper() {
        // Unshifted, 100 is cheapest; shifted, it is dearer than the linker's once. 200 is
        // cheaper at every shift, its dearest prediction 980.
        let models = [
            model("a", "v", 0, 1_000),
            model("a", "v", 100, 800),
            model("a", "v", 200, 950),
        ];
        let shifted = [
            shift(0, -16, 1_000),
            shift(0, 16, 1_100),
            shift(100, -16, 1_200),
            shift(100, 16, 700),
            shift(200, -16, 980),
            shift(200, 16, 900),
        ];
        let seconds = [
            second("a", 0, 40, 2_000),
            second("a", 100, 140, 1_000),
            second("a", 200, 240, 1_900),
        ];
        let by = |shifted: &[ShiftRow]| {
            judge(&models, shifted, &[], &seconds, &["a"], &["v"])
                .into_iter()
                .find(|s| s.rule == ChoiceRule::Robust)
                .map(|s| s.choices[0].offset)
        };
        assert_eq!(by(&shifted), Some(200));
        // Where no layout is cheaper at every shift, the linker's stays, though 200's dearest
        // prediction (1,001) is still below the linker's (1,100).
        let mut worse = shifted.to_vec();
        worse[4].predicted = 1_001;
        assert_eq!(by(&worse), Some(0));
        // The same choices from the predictions alone, as `lab layout` makes them.
        let alone = |shifted: &[ShiftRow]| {
            let mut by: BTreeMap<u32, Vec<u64>> = models
                .iter()
                .map(|m| (m.offset, vec![m.predicted]))
                .collect();
            for s in shifted {
                by.get_mut(&s.offset).expect("a layout").push(s.predicted);
            }
            robust_choice(&by)
        };
        assert_eq!(alone(&shifted), Some(200));
        assert_eq!(alone(&worse), Some(0));
        // No shifted predictions: no choice, rather than the unshifted cheapest.
        assert_eq!(alone(&[]), None);
    }
}
