//! The regression gate: a run's totals, and its totals at every heap layout the baseline also
//! ran, against the committed baseline (the results of `main`). Gas and fuel are
//! deterministic, so by default any rise fails.

use crate::results::{LayoutRow, TotalRow};
use std::collections::BTreeSet;
use std::fmt::Write;

/// One (backend, case, variant) whose cost moved, or that has no baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct Moved {
    pub backend: String,
    pub case: String,
    pub variant: String,
    pub unit: String,
    /// The heap layout (bytes the statics were moved up) of a row of the sweep; `None` for
    /// the total at the linker's layout.
    pub offset: Option<u32>,
    /// Baseline and current total; `None` baseline for a row the baseline lacks.
    pub total: (Option<u64>, u64),
    /// Baseline and current allocator cost.
    pub allocator: (Option<u64>, u64),
    /// Whether either rose beyond the tolerance.
    pub regressed: bool,
}

/// Every row of `current` whose total or allocator cost differs from `baseline`, marked
/// regressed when either rose by more than `tolerance_pct` percent (0: any rise).
pub fn compare(baseline: &[TotalRow], current: &[TotalRow], tolerance_pct: f64) -> Vec<Moved> {
    let rose = |base: u64, now: u64| now as f64 > base as f64 * (1.0 + tolerance_pct / 100.0);
    current
        .iter()
        .filter_map(|c| {
            let base = baseline.iter().find(|b| {
                (&b.backend, &b.case, &b.variant, &b.unit)
                    == (&c.backend, &c.case, &c.variant, &c.unit)
            });
            let (total, allocator) = match base {
                Some(b) if (b.total, b.allocator) == (c.total, c.allocator) => return None,
                Some(b) => ((Some(b.total), c.total), (Some(b.allocator), c.allocator)),
                None => ((None, c.total), (None, c.allocator)),
            };
            let regressed =
                base.is_some_and(|b| rose(b.total, c.total) || rose(b.allocator, c.allocator));
            Some(Moved {
                backend: c.backend.clone(),
                case: c.case.clone(),
                variant: c.variant.clone(),
                unit: c.unit.clone(),
                offset: None,
                total,
                allocator,
                regressed,
            })
        })
        .collect()
}

/// Every row of the sweep at a heap layout other than the linker's that both sets ran and
/// whose total differs, marked regressed when it rose by more than `tolerance_pct` percent:
/// the verdicts are read from these rows, so an unjudged one would let a verdict move.
/// (Offset 0 is the total [`compare`] judges.)
pub fn compare_layouts(
    baseline: &[LayoutRow],
    current: &[LayoutRow],
    tolerance_pct: f64,
) -> Vec<Moved> {
    let base: std::collections::BTreeMap<_, u64> =
        baseline.iter().map(|r| (layout_key(r), r.total)).collect();
    current
        .iter()
        .filter(|c| c.offset != 0)
        .filter_map(|c| {
            let &b = base.get(&layout_key(c))?;
            (b != c.total).then(|| Moved {
                backend: c.backend.clone(),
                case: c.case.clone(),
                variant: c.variant.clone(),
                unit: c.unit.clone(),
                offset: Some(c.offset),
                total: (Some(b), c.total),
                allocator: (None, 0),
                regressed: c.total as f64 > b as f64 * (1.0 + tolerance_pct / 100.0),
            })
        })
        .collect()
}

/// How many rows of the sweep [`compare_layouts`] judges.
pub fn layout_rows(baseline: &[LayoutRow], current: &[LayoutRow]) -> usize {
    let base: BTreeSet<_> = baseline.iter().map(layout_key).collect();
    current
        .iter()
        .filter(|c| c.offset != 0 && base.contains(&layout_key(c)))
        .count()
}

/// A row of the sweep's place: backend, case, variant, unit and heap layout.
fn layout_key(r: &LayoutRow) -> (&str, &str, &str, &str, u32) {
    (&r.backend, &r.case, &r.variant, &r.unit, r.offset)
}

/// Rows one set has and the other lacks, one line each: a current row with no baseline (a new
/// variant or case), and a baseline row of a backend, case and variant the run measured that
/// the run lacks. The gate judges neither, so it must not pass with them.
pub fn unmatched(baseline: &[TotalRow], current: &[TotalRow]) -> Vec<String> {
    let id = |r: &TotalRow| {
        (
            r.backend.clone(),
            r.case.clone(),
            r.variant.clone(),
            r.unit.clone(),
        )
    };
    let base: BTreeSet<_> = baseline.iter().map(id).collect();
    let now: BTreeSet<_> = current.iter().map(id).collect();
    let ran =
        |f: fn(&TotalRow) -> &String| -> BTreeSet<&String> { current.iter().map(f).collect() };
    let (backends, cases, variants) = (ran(|r| &r.backend), ran(|r| &r.case), ran(|r| &r.variant));
    let mut out: Vec<String> = now
        .difference(&base)
        .map(|(b, c, v, _)| format!("{b}/{c}/{v}: measured, but the baseline has no row"))
        .collect();
    out.extend(
        base.difference(&now)
            .filter(|(b, c, v, _)| {
                backends.contains(b) && cases.contains(c) && variants.contains(v)
            })
            .map(|(b, c, v, _)| format!("{b}/{c}/{v}: in the baseline, but not measured")),
    );
    out
}

/// The table of what moved, for the terminal and CI logs.
pub fn table(moved: &[Moved]) -> String {
    let pct = |(base, now): (Option<u64>, u64)| match base {
        Some(b) if b > 0 => format!("{:+.4}%", 100.0 * (now as f64 / b as f64 - 1.0)),
        Some(_) => "n/a".into(),
        None => "new".into(),
    };
    let num = |v: Option<u64>| v.map_or_else(|| "-".into(), |v| v.to_string());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| backend | case | variant | layout | unit | total before | total now | change | allocator before | allocator now | change | verdict |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    );
    for m in moved {
        let (layout, allocator) = match m.offset {
            None => (
                "linker's".to_owned(),
                format!(
                    "{} | {} | {}",
                    num(m.allocator.0),
                    m.allocator.1,
                    pct(m.allocator)
                ),
            ),
            // The sweep records totals only.
            Some(o) => (format!("+{o} B"), "- | - | -".to_owned()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {layout} | {} | {} | {} | {} | {allocator} | {} |",
            m.backend,
            m.case,
            m.variant,
            m.unit,
            num(m.total.0),
            m.total.1,
            pct(m.total),
            if m.regressed {
                "REGRESSED"
            } else if m.total.0.is_none() {
                "no baseline"
            } else {
                "ok"
            }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(variant: &str, total: u64, allocator: u64) -> TotalRow {
        TotalRow {
            backend: "gtest".into(),
            case: "nft".into(),
            variant: variant.into(),
            unit: "gas".into(),
            messages: 3,
            total,
            allocator,
            code_bytes: 1,
            ..TotalRow::default()
        }
    }

    #[test]
    fn any_rise_fails_by_default_and_a_tolerance_lets_small_ones_pass() {
        let base = [
            row("a", 1_000, 100),
            row("b", 1_000, 100),
            row("c", 1_000, 100),
        ];
        let now = [
            row("a", 1_000, 100),
            row("b", 1_001, 100),
            row("c", 990, 90),
        ];
        let moved = compare(&base, &now, 0.0);
        assert_eq!(moved.len(), 2, "unchanged rows are not listed");
        assert!(moved[0].variant == "b" && moved[0].regressed);
        assert!(
            moved[1].variant == "c" && !moved[1].regressed,
            "a fall is fine"
        );
        assert!(!compare(&base, &now, 0.5)[0].regressed);
        // The allocator's cost is gated on its own.
        let worse_allocator = [row("a", 1_000, 101)];
        assert!(compare(&base, &worse_allocator, 0.0)[0].regressed);
    }

    #[test]
    fn rows_in_one_set_only_are_named() {
        let base = [row("a", 1, 1), row("b", 1, 1)];
        // `b` was measured in the run's selection (its variants: only `a`): not required.
        assert!(unmatched(&base, &[row("a", 1, 1)]).is_empty());
        let mut other_case = row("b", 1, 1);
        other_case.case = "nft-stress".into();
        let u = unmatched(&base, &[row("a", 1, 1), other_case]);
        assert_eq!(
            u,
            [
                "gtest/nft-stress/b: measured, but the baseline has no row",
                "gtest/nft/b: in the baseline, but not measured"
            ]
        );
    }

    fn at(variant: &str, offset: u32, total: u64) -> LayoutRow {
        LayoutRow {
            backend: "gtest".into(),
            case: "nft".into(),
            variant: variant.into(),
            unit: "gas".into(),
            offset,
            heap_base: 65_536 + offset,
            total,
            ..Default::default()
        }
    }

    /// A layout both ran is judged like a total; one only either ran, or offset 0 (the total
    /// itself), is not.
    #[test]
    fn the_sweep_is_gated_where_both_ran() {
        let base = [at("a", 0, 10), at("a", 1024, 1_000), at("a", 2048, 1_000)];
        let now = [
            at("a", 0, 99),
            at("a", 1024, 1_001),
            at("a", 2048, 999),
            at("a", 4096, 5_000),
        ];
        let moved = compare_layouts(&base, &now, 0.0);
        assert_eq!(moved.len(), 2);
        assert_eq!((moved[0].offset, moved[0].regressed), (Some(1024), true));
        assert_eq!((moved[1].offset, moved[1].regressed), (Some(2048), false));
        assert!(!compare_layouts(&base, &now, 0.2)[0].regressed);
        assert_eq!(layout_rows(&base, &now), 2);
        assert!(table(&moved).contains(
            "| nft | a | +1024 B | gas | 1000 | 1001 | +0.1000% | - | - | - | REGRESSED |"
        ));
    }

    #[test]
    fn a_row_without_baseline_is_listed_not_failed() {
        let moved = compare(&[], &[row("new", 5, 1)], 0.0);
        assert_eq!(moved[0].total, (None, 5));
        assert!(!moved[0].regressed);
        assert!(table(&moved).contains("no baseline"));
    }
}
