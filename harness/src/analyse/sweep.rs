//! Whether the default sweep is enough: its verdicts and medians held against a dense grid.
//!
//! `just compare` runs every case at [`plan::default_on`] its backend, a stratified handful of
//! the places a heap can start in its Wasm page. `just sweep-check` runs a few cases at every 1 KiB
//! of the page instead ([`plan::grid`], which holds every default point), and this module
//! says, per variant and case, whether the default points alone reach the verdict the whole
//! grid reaches and a median within [`TOLERANCE_PP`] of the grid's.

use crate::analyse::layout::{self, Verdict, SHIPPING};
use crate::results::LayoutRow;
use anyhow::{bail, Result};
use std::collections::BTreeSet;

/// How far the default points' median difference to shipping may lie from the grid's
/// (percentage points): the minimum effect itself, as a median shift smaller than it cannot
/// move a variant across it by itself.
pub const TOLERANCE_PP: f64 = layout::BAND_PCT;

/// One variant on one backend and case: the grid's figures and the default points'.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub backend: String,
    pub case: String,
    pub variant: String,
    /// Layouts in the grid, and in the default sweep.
    pub dense_points: usize,
    pub chosen_points: usize,
    /// Median, lowest and highest difference to shipping (percent) and the verdict.
    pub dense: (f64, f64, f64, Verdict),
    pub chosen: (f64, f64, f64, Verdict),
}

impl Row {
    /// Same verdict, and medians within [`TOLERANCE_PP`].
    pub fn agrees(&self) -> bool {
        self.dense.3 == self.chosen.3 && (self.dense.0 - self.chosen.0).abs() <= TOLERANCE_PP
    }
}

/// The figures of `pairs` (variant, shipping) against shipping.
fn figures(pairs: &[(u64, u64)]) -> (f64, f64, f64, Verdict) {
    let mut pct: Vec<f64> = pairs.iter().copied().map(layout::pct).collect();
    let median = layout::median(&mut pct);
    (
        median,
        pct[0],
        pct[pct.len() - 1],
        Verdict::of_pairs(pairs, layout::BAND_PCT),
    )
}

/// Every variant's [`Row`] in `rows` (a dense run), with `chosen` the default sweep's offsets
/// on a backend; an error if the run does not hold every chosen offset for a variant and
/// shipping.
pub fn check(rows: &[LayoutRow], chosen: impl Fn(&str) -> Vec<u32>) -> Result<Vec<Row>> {
    let keys: BTreeSet<(String, String, String)> = rows
        .iter()
        .filter(|r| r.variant != SHIPPING)
        .map(|r| (r.backend.clone(), r.case.clone(), r.variant.clone()))
        .collect();
    let mut out = Vec::new();
    for (backend, case, variant) in keys {
        let dense = layout::pairs(rows, &backend, &case, &variant, SHIPPING);
        let chosen = chosen(&backend);
        let at_chosen: Vec<LayoutRow> = rows
            .iter()
            .filter(|r| chosen.contains(&r.offset))
            .cloned()
            .collect();
        let chosen_pairs = layout::pairs(&at_chosen, &backend, &case, &variant, SHIPPING);
        if chosen_pairs.len() != chosen.len() {
            bail!(
                "{backend}/{case}: {variant} or shipping was not run at every offset of the sweep \
                 ({chosen:?}); run the dense grid with `just sweep-check`"
            );
        }
        out.push(Row {
            dense_points: dense.len(),
            chosen_points: chosen_pairs.len(),
            dense: figures(&dense),
            chosen: figures(&chosen_pairs),
            backend,
            case,
            variant,
        });
    }
    if out.is_empty() {
        bail!("no variant beside shipping in the dense run: give `--variants shipping,A,B`");
    }
    Ok(out)
}

/// The table `lab sweep-check` prints, and its conclusion.
pub fn render(rows: &[Row]) -> String {
    let pct = |x: f64| format!("{x:+.2}%");
    let mut out = String::from(
        "| backend | case | variant | grid: median | lowest … highest | verdict | sweep: \
         median | lowest … highest | verdict | agrees |\n\
         | --- | --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- |\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} … {} | {} | {} | {} … {} | {} | {} |\n",
            r.backend,
            r.case,
            r.variant,
            pct(r.dense.0),
            pct(r.dense.1),
            pct(r.dense.2),
            r.dense.3.name(),
            pct(r.chosen.0),
            pct(r.chosen.1),
            pct(r.chosen.2),
            r.chosen.3.name(),
            if r.agrees() { "yes" } else { "**no**" }
        ));
    }
    let agree = rows.iter().filter(|r| r.agrees()).count();
    out.push_str(&format!(
        "\n{agree} of {} agree: the sweep gives the grid's verdict (minimum effect {} %) \
         and a median within {TOLERANCE_PP} percentage points of it.\n",
        rows.len(),
        layout::BAND_PCT
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::layout::tests::r;

    /// The default points agree when they see what the grid sees, and not when the grid holds
    /// a layout that reverses them.
    #[test]
    fn the_default_points_are_held_to_the_grid() {
        let mut rows = Vec::new();
        for o in [0, 1024, 2048, 3072] {
            rows.push(r("shipping", o, 1000));
            rows.push(r("a", o, 900));
            // b: -10 % at the chosen points, +5 % at one the default sweep skips.
            rows.push(r("b", o, if o == 3072 { 1050 } else { 900 }));
        }
        let checked = check(&rows, |_| vec![0, 2048]).unwrap();
        assert_eq!(checked.len(), 2);
        let (a, b) = (&checked[0], &checked[1]);
        assert_eq!((a.dense_points, a.chosen_points), (4, 2));
        assert_eq!(a.dense, (-10.0, -10.0, -10.0, Verdict::Cheaper));
        assert!(a.agrees());
        assert_eq!(b.dense.3, Verdict::Uncertain);
        assert_eq!(b.chosen.3, Verdict::Cheaper);
        assert!(!b.agrees());
        let table = render(&checked);
        assert!(table.contains("| gtest | c | b | -10.00% | -10.00% … +5.00% | uncertain | -10.00% | -10.00% … -10.00% | cheaper | **no** |"), "{table}");
        assert!(table.contains("1 of 2 agree"), "{table}");
        assert!(
            check(&rows, |_| vec![0, 4096]).is_err(),
            "a default point missing"
        );
    }
}
