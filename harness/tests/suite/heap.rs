//! `results/heap-skip/` (`just heap-skip`) holds together with the sweep it was drawn from, by
//! relations that are exact: a skip of 0 is the sweep's own build at the linker's layout (same
//! heap base, same gas, as gtest is deterministic), every skip moves the heap base by itself
//! and nothing else, and each page map is drawn at the layout it names, with the probe build's
//! heap base in the plain build's place in its Gear page.

use super::integrity::results;
use galloc_lab::results::{read_csv, LayoutRow, PageMapRow, SkipRow, HEAP_DIR};
use std::collections::{BTreeMap, BTreeSet};

const GEAR_PAGE: u32 = 16 * 1024;

/// Every gtest row of the sweep, default cases and corpus, by (case, variant, offset).
fn sweep() -> BTreeMap<(String, String, u32), LayoutRow> {
    let mut rows = BTreeMap::new();
    for dir in [results(), results().join("corpus")] {
        let layouts: Vec<LayoutRow> = read_csv(&dir.join("gtest/layouts.csv")).unwrap();
        for r in layouts {
            rows.insert((r.case.clone(), r.variant.clone(), r.offset), r);
        }
    }
    rows
}

#[test]
fn the_heap_study_is_the_sweeps_builds_moved() {
    let dir = results().join(HEAP_DIR);
    let skips: Vec<SkipRow> = read_csv(&dir.join("skips.csv")).unwrap();
    let maps: Vec<PageMapRow> = read_csv(&dir.join("pages.csv.zst")).unwrap();
    let sweep = sweep();
    assert!(!skips.is_empty() && !maps.is_empty());
    let mut pairs = BTreeSet::new();
    for s in &skips {
        let what = format!("{}/{} at skip {}", s.case, s.variant, s.skip);
        let at_0 = &sweep[&(s.case.clone(), s.variant.clone(), 0)];
        assert_eq!(
            s.heap_base,
            at_0.heap_base + s.skip,
            "{what}: the heap base moves alone"
        );
        if s.skip == 0 {
            assert_eq!(
                s.total, at_0.total,
                "{what}: the sweep's own build, the same gas"
            );
        }
        assert!(s.skip < GEAR_PAGE && s.skip % 16 == 0, "{what}");
        pairs.insert((s.case.clone(), s.variant.clone()));
    }
    for (case, variant) in &pairs {
        let n = skips
            .iter()
            .filter(|s| &s.case == case && &s.variant == variant)
            .count();
        assert_eq!(n, 16, "{case}/{variant}: 16 skips over one Gear page");
    }
    // Each map at the lab's cheapest and dearest layout, heap bases as the sweep has them.
    let mut panels = BTreeSet::new();
    for m in &maps {
        let what = format!("{}/{} {} layout", m.case, m.variant, m.layout);
        let design: Vec<(u32, u64)> = sweep
            .iter()
            .filter(|((c, v, _), _)| c == &m.case && v == "lab")
            .map(|((_, _, o), r)| (*o, r.total))
            .collect();
        let want = match m.layout.as_str() {
            "cheap" => design.iter().min_by_key(|(_, t)| *t),
            "dear" => design.iter().max_by_key(|(_, t)| *t),
            other => panic!("{what}: {other}"),
        };
        assert_eq!(Some(m.offset), want.map(|(o, _)| *o), "{what}");
        let plain = &sweep[&(m.case.clone(), m.variant.clone(), m.offset)];
        assert_eq!(m.heap_base, plain.heap_base, "{what}");
        assert_eq!(
            m.probe_heap_base % GEAR_PAGE,
            m.heap_base % GEAR_PAGE,
            "{what}"
        );
        panels.insert((m.case.clone(), m.variant.clone(), m.layout.clone()));
    }
    for (case, _) in &pairs {
        for variant in ["shipping", "lab"] {
            for layout in ["cheap", "dear"] {
                assert!(
                    panels.contains(&(case.clone(), variant.into(), layout.into())),
                    "{case}: no map of {variant} at the {layout} layout"
                );
            }
        }
        assert!(
            dir.join(format!("images/pages-{case}.png")).exists(),
            "{case}"
        );
    }
}

/// The study's directory is named for its recipe, as every result set directly under
/// `results/` is (`report::metadata::regenerated_by`): the hints and the report then name a
/// command that exists, and the directory's metadata records the same one.
#[test]
fn the_study_names_the_recipe_that_writes_it() {
    let dir = results().join(HEAP_DIR);
    let root = results().parent().unwrap().to_path_buf();
    let by = galloc_lab::store::metadata::regenerated_by(Some(&root), &dir, None);
    assert_eq!(by.as_deref(), Some("just heap-skip"));
    let justfile = std::fs::read_to_string(root.join("justfile")).unwrap();
    assert!(
        justfile.lines().any(|l| l.starts_with("heap-skip ")),
        "no recipe"
    );
    let recorded = galloc_lab::store::metadata::read(&dir).unwrap();
    assert_eq!(recorded.regenerate_with, "just heap-skip");
}
