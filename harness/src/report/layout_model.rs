//! `results/layout-model/README.md`: the layout model held against the sweep, rendered from the rows
//! `lab layout-model` wrote, and the report's "Choosing a layout": the layout rules judged on
//! the second workloads, read back from those rows ([`study`]).

use crate::analyse::layout::median;
use crate::analyse::layout_choice::{
    ChoiceRule, Standing, Study, TARGET_EXPECTED_PCT, TARGET_UPPER_PCT, TARGET_WORST_PCT,
};
use crate::analyse::population::{spread_pct, BAND_PCT};
use crate::results::ModelRow;
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

/// How well a model must predict a program's sweep: its largest error within this share of the
/// program's own spread over the layouts (the dearest over the cheapest).
pub const SHARE_OF_SPREAD: f64 = 0.1;

/// One program's prediction errors over the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Errors {
    pub points: usize,
    /// The measured spread, percent.
    pub spread: f64,
    /// The largest and the mean error, percent of the measured total (signed: the largest keeps
    /// its sign).
    pub largest: f64,
    pub mean_abs: f64,
    /// Where the meter ran: offsets whose page charges the model matched exactly, of how many.
    pub meter_exact: (usize, usize),
    /// Of the error at the offset of the largest, the part that is the model's page charges
    /// against the meter's there (percent of the measured total; `None` where the meter did
    /// not run); the rest is what moved other than pages (instructions: a hash seeded by a
    /// static's address hashes differently at every layout).
    pub largest_pages: Option<f64>,
    /// The meter's fuel spread over the layouts (percent), where it ran at more than one.
    pub fuel_spread: Option<f64>,
}

impl Errors {
    /// The largest error over the spread.
    pub fn share(&self) -> f64 {
        if self.spread == 0.0 {
            if self.largest == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            self.largest.abs() / self.spread
        }
    }

    pub fn within(&self) -> bool {
        self.share() <= SHARE_OF_SPREAD
    }
}

/// Each (case, variant)'s errors.
pub fn errors(rows: &[ModelRow]) -> BTreeMap<(&str, &str), Errors> {
    let mut by: BTreeMap<(&str, &str), Vec<&ModelRow>> = BTreeMap::new();
    for r in rows {
        by.entry((r.case.as_str(), r.variant.as_str()))
            .or_default()
            .push(r);
    }
    by.into_iter()
        .map(|(key, rs)| {
            let error = |r: &ModelRow| 100.0 * (r.predicted as f64 / r.measured as f64 - 1.0);
            let worst = rs
                .iter()
                .copied()
                .max_by(|a, b| error(a).abs().total_cmp(&error(b).abs()))
                .expect("a pair has rows");
            let largest = error(worst);
            let largest_pages = worst
                .meter_pages_gas
                .map(|m| 100.0 * (worst.model_pages_gas as f64 - m as f64) / worst.measured as f64);
            let mean_abs = rs.iter().map(|r| error(r).abs()).sum::<f64>() / rs.len() as f64;
            let metered: Vec<_> = rs
                .iter()
                .filter_map(|r| r.meter_pages_gas.map(|m| (m, r)))
                .collect();
            let exact = metered
                .iter()
                .filter(|(m, r)| *m == r.model_pages_gas)
                .count();
            (
                key,
                Errors {
                    points: rs.len(),
                    spread: spread_pct(rs.iter().map(|r| r.measured)),
                    largest,
                    mean_abs,
                    meter_exact: (exact, metered.len()),
                    largest_pages,
                    fuel_spread: {
                        let fuel: Vec<u64> = rs.iter().filter_map(|r| r.meter_fuel).collect();
                        (fuel.len() > 1).then(|| spread_pct(fuel))
                    },
                },
            )
        })
        .collect()
}

/// Per program and variant, in the order given: the spread, the largest and mean error, their
/// share of the spread, and the meter check; then per variant how many are within a tenth.
pub fn error_table(rows: &[ModelRow], cases: &[&str], variants: &[&str]) -> String {
    let errors = errors(rows);
    let mut out = String::from(
        "| case | variant | layouts | measured spread | largest error | of it, pages | mean error \
         | largest over spread | meter's page charges matched | meter's fuel spread |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for case in cases {
        for variant in variants {
            let Some(e) = errors.get(&(*case, *variant)) else {
                continue;
            };
            let _ = writeln!(
                out,
                "| {case} | {variant} | {} | {:.2} % | {:+.2} % | {} | {:.2} % | {:.2}{} | {} of {} | {} |",
                e.points,
                e.spread,
                e.largest,
                e.largest_pages
                    .map_or("no meter".to_owned(), |p| format!("{p:+.2} %")),
                e.mean_abs,
                e.share(),
                if e.within() { "" } else { " ✘" },
                e.meter_exact.0,
                e.meter_exact.1,
                e.fuel_spread.map_or("no meter".to_owned(), |f| format!("{f:.3} %")),
            );
        }
    }
    for variant in variants {
        let mine: Vec<&Errors> = cases
            .iter()
            .filter_map(|c| errors.get(&(*c, *variant)))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let mut shares: Vec<f64> = mine.iter().map(|e| e.share()).collect();
        // Every layout but the one the model ran at: each error, and its part in pages.
        let moved: Vec<&ModelRow> = rows
            .iter()
            .filter(|r| r.variant == *variant && r.offset != 0 && cases.contains(&r.case.as_str()))
            .collect();
        let mut abs: Vec<f64> = moved
            .iter()
            .map(|r| 100.0 * (r.predicted as f64 / r.measured as f64 - 1.0).abs())
            .collect();
        let (pages, all) = moved.iter().fold((0.0, 0.0), |(p, a), r| {
            let error = r.predicted as f64 - r.measured as f64;
            let in_pages = r
                .meter_pages_gas
                .map_or(0.0, |m| r.model_pages_gas as f64 - m as f64);
            (
                p + in_pages.abs(),
                a + in_pages.abs() + (error - in_pages).abs(),
            )
        });
        let _ = writeln!(
            out,
            "\n`{variant}`: the largest error is within a tenth of the measured spread on **{} of \
             {}** programs (median share {:.2}); the meter's page charges matched exactly at {} \
             of {} offsets. Over the {} layouts the model did not run at, the median error is \
             {:.2} %, and {:.0} % of the absolute error is the model's page charges against the \
             meter's (the rest moved other than pages).",
            mine.iter().filter(|e| e.within()).count(),
            mine.len(),
            median(&mut shares),
            mine.iter().map(|e| e.meter_exact.0).sum::<usize>(),
            mine.iter().map(|e| e.meter_exact.1).sum::<usize>(),
            moved.len(),
            median(&mut abs),
            if all > 0.0 { 100.0 * pages / all } else { 0.0 },
        );
    }
    out
}

/// What the out-of-sample table is, said once for the study's page and the report: the rules
/// chose among `layouts` layouts.
pub fn out_of_sample(layouts: usize) -> String {
    format!(
        "each rule chooses, per program and allocator, one of the {layouts} layouts its second \
         workload ran at (`just layout-model` runs it at all 16 of the sweep; the committed sweep \
         at 4), and is judged on the second workload alone at the layout it chose against the \
         linker's own (offset 0), with the ship rule's measures over the programs. The model's \
         rules read only its one run at the linker's layout (the robust one also moves the heap's \
         blocks -4 to +4 KiB further, for blocks a workload puts elsewhere, and moves a program \
         only where every such prediction is cheaper than the linker's); the main workload's cheapest is \
         fitted to the main workload; the earliest heap base reads nothing; hindsight reads the \
         second workload itself, and shows what choosing a layout could give at best."
    )
}

/// The rules judged out of sample ([`crate::analyse::layout_choice`]): per rule and variant
/// the ship rule's measures on the second workloads at the chosen layout against the linker's,
/// whether the target holds, and then every program's choice and change.
pub fn choice_table(standings: &[Standing]) -> String {
    format!(
        "{}\n{}\n{}\n",
        rule_table(standings),
        program_table(standings),
        target_sentence(standings)
    )
}

/// Per rule and variant: the ship rule's measures on the second workloads, and the target.
pub fn rule_table(standings: &[Standing]) -> String {
    let mut out = format!(
        "| rule | variant | programs | moved off the linker's layout | expected change (95 % \
         interval) | worst program | dearer than {band:+.0} % | target |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
        band = BAND_PCT
    );
    for s in standings {
        let p = &s.population;
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {:+.2} % ({:+.2} … {:+.2}) | {} {:+.2} % | {} of {} | {} |",
            s.rule.describe(),
            s.variant,
            p.programs,
            s.moved(),
            p.expected_pct,
            p.interval_pct.0,
            p.interval_pct.1,
            p.worst_program.0,
            p.worst_program.1,
            (p.dearer_share * p.deployments as f64).round() as usize,
            p.deployments,
            match (s.rule.is_rule(), s.meets_target()) {
                (_, true) => "met",
                (true, false) => "✘",
                (false, false) => "✘ (out of reach)",
            },
        );
    }
    out
}

/// Every program's choices, one column per rule and variant: the offset chosen and the second
/// workload's change there.
pub fn program_table(standings: &[Standing]) -> String {
    let mut out = String::from("| program |");
    for s in standings {
        let _ = write!(out, " {}, `{}` |", s.rule.name(), s.variant);
    }
    out.push_str("\n| --- |");
    for _ in standings {
        out.push_str(" ---: |");
    }
    out.push('\n');
    let programs = in_order(
        standings
            .iter()
            .flat_map(|s| &s.choices)
            .map(|c| c.program.as_str()),
    );
    for program in programs {
        let _ = write!(out, "| {program} |");
        for s in standings {
            match s.choices.iter().find(|c| c.program == program) {
                Some(c) => {
                    let _ = write!(out, " +{}: {:+.2} % |", c.offset, c.change_pct());
                }
                None => out.push_str(" – |"),
            }
        }
        out.push('\n');
    }
    out.push_str(
        "\nEach cell: the offset the rule chose (bytes every static moved up) and the second \
         workload's change there against offset 0.\n",
    );
    out
}

/// The layout study measured beside the results in `results` (`results/layout-model/model.csv`,
/// `just layout-model`), its rules judged on the second workloads of `sweeps` (the directories
/// whose sweep the report reads); `None` where it was not measured.
pub fn study(
    results: &Path,
    sweeps: &[&Path],
) -> Result<Option<crate::analyse::layout_choice::Study>> {
    let file = results
        .join(crate::results::LAYOUT_MODEL_DIR)
        .join("model.csv");
    if !file.is_file() {
        return Ok(None);
    }
    let models: Vec<crate::results::ModelRow> = crate::results::read_csv(&file)?;
    let (layouts, committed) = crate::report::inputs::read_sweeps(sweeps)?;
    // The second workloads the study judged its rules on, where it kept them.
    let kept = file.with_file_name(crate::results::SECOND);
    let second = if kept.is_file() {
        crate::results::read_csv(&kept)?
    } else {
        committed
    };
    let programs = in_order(models.iter().map(|r| r.case.as_str()));
    let variants = in_order(models.iter().map(|r| r.variant.as_str()));
    let shifted_file = file.with_file_name(crate::results::SHIFTED);
    let shifted: Vec<crate::results::ShiftRow> = if shifted_file.is_file() {
        crate::results::read_csv(&shifted_file)?
    } else {
        Vec::new()
    };
    let standings = crate::analyse::layout_choice::judge(
        &models, &shifted, &layouts, &second, &programs, &variants,
    );
    Ok(Some(crate::analyse::layout_choice::Study {
        standings,
        models,
    }))
}

/// Each of `names` once, in the order first met.
fn in_order<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    names.into_iter().fold(Vec::new(), |mut seen, n| {
        if !seen.contains(&n) {
            seen.push(n);
        }
        seen
    })
}

/// The variants `standings` judge, in their order.
fn variants_of(standings: &[Standing]) -> Vec<&str> {
    in_order(standings.iter().map(|s| s.variant.as_str()))
}

/// The target, and which rule (an author could apply) meets it for every variant, if any.
pub fn target_sentence(standings: &[Standing]) -> String {
    let variants = variants_of(standings);
    let meeting: Vec<&str> = ChoiceRule::ALL
        .iter()
        .filter(|r| r.is_rule())
        .filter(|r| {
            variants.iter().all(|v| {
                standings
                    .iter()
                    .any(|s| s.rule == **r && s.variant == *v && s.meets_target())
            })
        })
        .map(|r| r.describe())
        .collect();
    let target = format!(
        "an expected change at or below {TARGET_EXPECTED_PCT:+.0} % against the linker's layout, \
         the interval's upper bound below {TARGET_UPPER_PCT:+.0} %, and no program dearer than \
         {TARGET_WORST_PCT:+.0} %, for every allocator"
    );
    if meeting.is_empty() {
        format!(
            "The target ({target}) is met by **no rule**: a layout cannot be chosen reliably \
             from a program's main workload, and the lab recommends none.\n"
        )
    } else {
        format!("The target ({target}) is met by: {}.\n", meeting.join("; "))
    }
}

/// The report's section on choosing a layout, its links relative to the report: `study` the
/// model's page, `docs` the repository's `docs/`.
pub fn report_section(study: &Study, page: &str, docs: &str) -> String {
    let errors = errors(&study.models);
    let mut within = String::new();
    let variants = variants_of(&study.standings);
    for (i, v) in variants.iter().enumerate() {
        let mine: Vec<&Errors> = errors
            .iter()
            .filter(|((_, var), _)| var == v)
            .map(|(_, e)| e)
            .collect();
        let held = mine.iter().filter(|e| e.within()).count();
        let _ = match i {
            0 => write!(within, "{held} of {} programs with `{v}`", mine.len()),
            _ => write!(within, " and {held} with `{v}`"),
        };
    }
    format!(
        "### Choosing a layout\n\n\
         Where statics and heap fall moves gas more than any allocator, so the lab asks whether a \
         program's layout can be chosen ([docs/layout-rule.md]({docs}/layout-rule.md), \
         `just layout-model`). The layout model predicts a program's gas at every layout from \
         one run at the linker's; its largest error over the sweep is within a tenth of the \
         program's own spread over the layouts, the bar a rule needs, on {within} \
         ([the model against the sweep]({page})). Judged out of sample: {}\n\n\
         {}\n{}\n",
        out_of_sample(crate::analyse::layout_choice::layouts(&study.standings)),
        rule_table(&study.standings),
        target_sentence(&study.standings),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(offset: u32, measured: u64, predicted: u64, meter: Option<u64>) -> ModelRow {
        ModelRow {
            case: "c".into(),
            variant: "v".into(),
            offset,
            measured,
            predicted,
            model_pages_gas: 7,
            model_pages_gas_at_zero: 7,
            meter_pages_gas: meter,
            meter_fuel: meter.map(|m| 1000 + m),
        }
    }

    #[test]
    fn errors_are_held_to_a_tenth_of_the_spread() {
        // Spread 20 %; largest error -1 % (at 120: 118.8), a twentieth of it.
        let rows = [
            row(0, 100_000, 100_000, Some(7)),
            row(16, 120_000, 118_800, Some(8)),
        ];
        let e = &errors(&rows)[&("c", "v")];
        assert_eq!(e.points, 2);
        assert!((e.spread - 20.0).abs() < 1e-9);
        assert!((e.largest + 1.0).abs() < 1e-9);
        assert!((e.mean_abs - 0.5).abs() < 1e-9);
        assert!((e.share() - 0.05).abs() < 1e-9 && e.within());
        assert_eq!(e.meter_exact, (1, 2));
        // There the model's pages (7) are the meter's (8) less one gas: of the -1 %, that much.
        assert!((e.largest_pages.unwrap() + 100.0 / 120_000.0).abs() < 1e-12);
        // Fuel 1,007 and 1,008.
        assert!((e.fuel_spread.unwrap() - 100.0 / 1007.0).abs() < 1e-9);
        // An error of 3 % is more than a tenth of 20 %.
        let rows = [
            row(0, 100_000, 100_000, None),
            row(16, 120_000, 123_600, None),
        ];
        assert!(!errors(&rows)[&("c", "v")].within());
    }
}
