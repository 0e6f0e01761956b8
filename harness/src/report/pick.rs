//! `lab pick`'s answer: the variant a program should use among those measured, by the ship rule
//! with the program's layouts as its deployments ([`for_program`]), with the figures
//! behind it (its mean over the layouts, the share dearer, the worst layout, and the gas at
//! the program's own layout today) and what was left out and why.

use crate::analyse::layout::{BAND_PCT, SHIPPING};
use crate::analyse::pick::{for_program, OnOneProgram};
use crate::analyse::population::Totals;
use crate::analyse::ship::{Refusal, RULE};
use crate::report::tables::thousands;
use crate::results::LayoutRow;
use crate::run::backend::BackendKind;
use anyhow::{bail, Result};

/// The answer, and the figures behind it.
#[derive(Debug, PartialEq)]
pub struct Pick {
    /// What to use: a variant id, or `shipping` (change nothing).
    pub variant: String,
    /// Every variant measured but shipping, lowest expected change first.
    pub candidates: Vec<OnOneProgram>,
    /// Variants compared.
    pub compared: usize,
}

impl Pick {
    /// The pick among `variants` (shipping included) on one backend and case, from the sweep's
    /// rows; an error names a variant with no row.
    pub fn of(rows: &[LayoutRow], backend: &str, case: &str, variants: &[&str]) -> Result<Self> {
        let sweep = Totals::of_sweep(rows, backend);
        for v in variants {
            if sweep.of_variant(case, v).is_empty() {
                bail!("no {backend} result for {case} on {v}: the measurement is incomplete");
            }
        }
        let (candidates, variant) = for_program(RULE, &sweep, &Totals::default(), case, variants);
        Ok(Pick {
            variant,
            candidates,
            compared: variants.len(),
        })
    }

    /// What `lab pick` prints; `allocator` is the lab's galloc, for the patch line.
    pub fn answer(
        &self,
        case: &str,
        backend: BackendKind,
        layouts: u32,
        allocator: &std::path::Path,
    ) -> String {
        let unit = match backend {
            BackendKind::Gtest => "gas",
            _ => "fuel",
        };
        let mut out = format!(
            "pick for {case}: {} variants, {unit} on {}, {layouts} heap layout{}, minimum effect \
             {BAND_PCT} %\n  (each layout is a deployment: after its next change the program's \
             heap may start at any of them; docs/ship.md, \"One program\")\n",
            self.compared,
            backend.name(),
            if layouts == 1 { "" } else { "s" }
        );
        let unsafe_ = |c: &OnOneProgram| c.refusals.iter().any(|r| matches!(r, Refusal::Unsafe(_)));
        if self.variant == SHIPPING {
            out.push_str(
                "  use shipping (gstd's own galloc): the rule admits no variant on this program\n",
            );
            // The closest: the cheapest the lab's own tests pass, else the cheapest.
            let closest = self
                .candidates
                .iter()
                .find(|c| !unsafe_(c))
                .or(self.candidates.first());
            if let Some(c) = closest {
                let why: Vec<String> = c.refusals.iter().map(ToString::to_string).collect();
                out.push_str(&format!(
                    "  closest: {}, {}\n    not admitted: {}\n",
                    c.variant,
                    standing(c, unit),
                    why.join("; ")
                ));
            }
            self.push_unsafe(&mut out, closest.map(|c| c.variant.as_str()));
            out.push_str("  Cargo.toml: nothing to change\n");
        } else {
            if let Some(c) = self.candidates.iter().find(|c| c.variant == self.variant) {
                out.push_str(&format!("  use {}: {}\n", c.variant, standing(c, unit)));
            }
            self.push_unsafe(&mut out, None);
            out.push_str(&format!(
                "  Cargo.toml, both lines (docs/your-program.md, \"Using a variant in your program\"):\n    \
                 [dependencies] galloc = {{ version = \"=2.0.0\", features = [\"{}\"] }}\n    \
                 [patch.crates-io] galloc = {{ path = {:?} }}\n",
                self.variant,
                allocator.display().to_string()
            ));
        }
        out
    }

    /// The lines naming what was measured but fails the lab's own tests, and why (but `said`,
    /// whose reason the answer already gave).
    fn push_unsafe(&self, out: &mut String, said: Option<&str>) {
        for c in self
            .candidates
            .iter()
            .filter(|c| Some(c.variant.as_str()) != said)
        {
            for r in &c.refusals {
                if let Refusal::Unsafe(why) = r {
                    out.push_str(&format!("  not recommended: {} ({why})\n", c.variant));
                }
            }
        }
    }
}

/// A variant's standing on the program, in one line: mean over the layouts and its interval,
/// the layouts dearer, the worst, and the program's own layout.
fn standing(c: &OnOneProgram, unit: &str) -> String {
    let p = &c.all;
    let dearer = (p.dearer_share * p.deployments as f64).round() as usize;
    let mut line = format!(
        "{:+.2} % vs shipping on average over the layouts (95 % interval {:+.2} … {:+.2} %), \
         dearer by more than {BAND_PCT} % at {dearer} of {}, worst {:+.2} % at offset {}",
        p.expected_pct,
        p.interval_pct.0,
        p.interval_pct.1,
        p.deployments,
        p.worst_deployment.2,
        thousands(u64::from(p.worst_deployment.1)),
    );
    if let Some((v, s)) = c.own_layout {
        line.push_str(&format!(
            "; at its own layout (offset 0) {:+.2} %: {} {unit} against shipping's {}",
            100.0 * (v as f64 / s as f64 - 1.0),
            thousands(v),
            thousands(s)
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(variant: &str, offset: u32, total: u64) -> LayoutRow {
        LayoutRow {
            case: "c".into(),
            ..crate::analyse::layout::tests::r(variant, offset, total)
        }
    }

    /// When the closest variant is one the lab never recommends, its reason is given once
    /// (beside it), not again in the list of what was left out; the answer gives the mean,
    /// the layouts dearer, the worst and the program's own layout.
    #[test]
    fn each_reason_is_given_once_and_the_own_layout_is_shown() {
        let rows = vec![
            row("shipping", 0, 1000),
            row("shipping", 4096, 1000),
            row("bump", 0, 940),
            row("bump", 4096, 1020),
            row("gear-next", 0, 1000),
            row("gear-next", 4096, 1000),
        ];
        let pick = Pick::of(&rows, "gtest", "c", &["shipping", "bump", "gear-next"]).unwrap();
        assert_eq!(pick.variant, "shipping");
        let text = pick.answer("c", BackendKind::Gtest, 2, std::path::Path::new("/a"));
        assert_eq!(text.matches("the floor").count(), 1, "{text}");
        assert_eq!(text.matches("per-message trims").count(), 1, "{text}");
        assert!(
            text.contains("  closest: bump, -2.08 % vs shipping on average over the layouts")
                && text
                    .contains("dearer by more than 1 % at 1 of 2, worst +2.00 % at offset 4,096")
                && text.contains(
                    "at its own layout (offset 0) -6.00 %: 940 gas against shipping's 1,000"
                )
                && text.contains("  not recommended: gear-next (")
                && text.contains("  Cargo.toml: nothing to change"),
            "{text}"
        );
        let err = Pick::of(&rows, "gtest", "c", &["shipping", "talc"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no gtest result for c on talc: the measurement is incomplete"
        );
    }
}
