//! `results/layout-model/` (`just layout-model`) holds together with the sweep it was held
//! against, by relations that are exact: each row's measured total is the sweep's gtest total
//! at its offset, the meter's page charges (and fuel) are the sweep's meter row's, priced at Gear's weights,
//! at offset 0 the prediction is the measurement, and the README's table is the rows' table;
//! the second workloads the layout rules were judged on are the committed sweep's to the unit
//! where it ran them, and the rules' tables (the study's page, the report's) are theirs.

use super::integrity::results;
use galloc_lab::analyse::layout_choice::{judge, ChoiceRule};
use galloc_lab::analyse::layout_model::HEAP_SHIFTS;
use galloc_lab::report::layout_model::{choice_table, error_table, rule_table};
use galloc_lab::results::pages::{page_gas, PageCounts};
use galloc_lab::results::{
    read_csv, LayoutRow, ModelRow, SecondRow, ShiftRow, LAYOUT_MODEL_DIR, SECOND, SHIFTED,
};
use std::collections::BTreeMap;

#[test]
fn the_layout_model_study_is_held_against_the_sweep_as_it_says() {
    let dir = results().join(LAYOUT_MODEL_DIR);
    let rows: Vec<ModelRow> = read_csv(&dir.join("model.csv")).unwrap();
    let mut sweep = BTreeMap::new();
    let mut main = Vec::new();
    let mut committed: Vec<SecondRow> = Vec::new();
    for d in [results(), results().join("corpus")] {
        committed.extend(read_csv::<SecondRow>(&d.join("gtest").join(SECOND)).unwrap());
        for backend in ["gtest", "wasmtime"] {
            let layouts: Vec<LayoutRow> = read_csv(&d.join(backend).join("layouts.csv")).unwrap();
            main.extend(layouts.iter().filter(|r| r.backend == "gtest").cloned());
            for r in layouts {
                sweep.insert((backend, r.case.clone(), r.variant.clone(), r.offset), r);
            }
        }
    }
    assert_eq!(
        rows.len(),
        17 * 2 * 16,
        "17 programs, shipping and lab, 16 layouts"
    );
    let at_zero: BTreeMap<(&str, &str), u64> = rows
        .iter()
        .filter(|r| r.offset == 0)
        .map(|r| ((r.case.as_str(), r.variant.as_str()), r.measured))
        .collect();
    for r in &rows {
        let what = format!("{}/{} at {}", r.case, r.variant, r.offset);
        let key = |b| (b, r.case.clone(), r.variant.clone(), r.offset);
        assert_eq!(r.measured, sweep[&key("gtest")].total, "{what}");
        let m = &sweep[&key("wasmtime")];
        let priced = page_gas(&PageCounts {
            read: m.pages_read.unwrap() as u32,
            write: m.pages_written.unwrap() as u32,
            write_after_read: m.pages_write_after_read.unwrap() as u32,
            loaded: m.pages_loaded.unwrap() as u32,
            ..Default::default()
        });
        assert_eq!(r.meter_pages_gas, Some(priced), "{what}");
        assert_eq!(r.meter_fuel, Some(m.total), "{what}");
        if r.offset == 0 {
            assert_eq!(r.predicted, r.measured, "{what}");
            assert_eq!(r.model_pages_gas, r.model_pages_gas_at_zero, "{what}");
            // The model's charges at the layout it ran are the meter's, exactly.
            assert_eq!(Some(r.model_pages_gas), r.meter_pages_gas, "{what}");
        }
        assert_eq!(
            r.predicted as i128,
            at_zero[&(r.case.as_str(), r.variant.as_str())] as i128 + r.model_pages_gas as i128
                - r.model_pages_gas_at_zero as i128,
            "{what}"
        );
    }
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let mut cases: Vec<&str> = Vec::new();
    for r in &rows {
        if !cases.contains(&r.case.as_str()) {
            cases.push(&r.case);
        }
    }
    assert!(readme.contains(&error_table(&rows, &cases, &["shipping", "lab"])));

    // The second workloads at all 16 layouts; where the committed sweep ran them (4), the same.
    let second: Vec<SecondRow> = read_csv(&dir.join(SECOND)).unwrap();
    assert_eq!(second.len(), 17 * 2 * 16);
    let at: BTreeMap<(&str, &str, u32), u64> = second
        .iter()
        .map(|r| ((r.case.as_str(), r.variant.as_str(), r.offset), r.total))
        .collect();
    let mut shared = 0;
    for c in committed
        .iter()
        .filter(|c| c.variant == "shipping" || c.variant == "lab")
    {
        assert_eq!(
            at.get(&(c.case.as_str(), c.variant.as_str(), c.offset)),
            Some(&c.total),
            "{}/{} at {}",
            c.case,
            c.variant,
            c.offset
        );
        shared += 1;
    }
    assert_eq!(shared, 17 * 2 * 4);
    let shifted: Vec<ShiftRow> = read_csv(&dir.join(SHIFTED)).unwrap();
    assert_eq!(shifted.len(), 17 * 2 * 16 * HEAP_SHIFTS.len());
    let standings = judge(
        &rows,
        &shifted,
        &main,
        &second,
        &cases,
        &["shipping", "lab"],
    );
    assert_eq!(standings.len(), 2 * 5, "5 rules for each allocator");
    assert!(readme.contains(&choice_table(&standings)));
    let report = std::fs::read_to_string(results().join("README.md")).unwrap();
    assert!(report.contains(&rule_table(&standings)));
    // The README's first screen says what the study found, in its figures.
    let front = std::fs::read_to_string(results().join("../README.md")).unwrap();
    let errors = galloc_lab::report::layout_model::errors(&rows);
    let within = |v: &str| {
        errors
            .iter()
            .filter(|((_, var), e)| *var == v && e.within())
            .count()
    };
    let said = format!(
        "within a tenth of the program's own spread on {} of 17 programs with `shipping` and {} \
         with `lab`",
        within("shipping"),
        within("lab")
    );
    assert!(front.replace('\n', " ").contains(&said), "README: {said}");
    // And the model's rule on the second workloads, for both allocators.
    for s in standings.iter().filter(|s| s.rule == ChoiceRule::Model) {
        let p = &s.population;
        let figure = format!(
            "{:+.2} % ({:+.2} … {:+.2})",
            p.expected_pct, p.interval_pct.0, p.interval_pct.1
        );
        assert!(
            front.replace('\n', " ").contains(&figure),
            "README: the model's rule on the second workloads with `{}`: {figure}",
            s.variant
        );
    }
    let recorded = galloc_lab::store::metadata::read(&dir).unwrap();
    assert_eq!(recorded.regenerate_with, "just layout-model");
}
