//! The report's findings: one paragraph written from the numbers, so it can never disagree
//! with the tables it sits above.

use crate::report::{thousands, Inputs};
use crate::results::{headline_backend, TotalRow};
use galloc_variants::{FLOOR, REFERENCE};

fn pct(value: u64, base: u64) -> f64 {
    100.0 * (value as f64 / base as f64 - 1.0)
}

/// Gas as people say it: 1.10T, 128.6G.
fn amount(v: u64) -> String {
    let v = v as f64;
    for (scale, suffix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if v >= scale {
            return format!("{:.2}{suffix}", v / scale);
        }
    }
    format!("{v}")
}

/// The findings paragraph (ends with a newline); empty results give a line saying so.
pub fn paragraph(inputs: &Inputs) -> String {
    let totals = &inputs.totals;
    let Some(backend) = headline_backend(totals) else {
        return "No results yet: run `just compare`.\n".into();
    };
    let mut sentences: Vec<String> = Vec::new();
    let mut cases: Vec<&str> = Vec::new();
    for t in totals.iter().filter(|t| t.backend == backend) {
        if !cases.contains(&t.case.as_str()) {
            cases.push(&t.case);
        }
    }
    for case in cases {
        let rows: Vec<&TotalRow> = totals
            .iter()
            .filter(|t| t.backend == backend && t.case == case)
            .collect();
        let Some(reference) = rows.iter().find(|t| t.variant == REFERENCE) else {
            continue;
        };
        let unit = &reference.unit;
        let others: Vec<&&TotalRow> = rows.iter().filter(|t| t.variant != REFERENCE).collect();
        if others.is_empty() {
            continue;
        }
        let cheapest = rows.iter().min_by_key(|t| t.total).expect("non-empty");
        let changes: Vec<f64> = others
            .iter()
            .map(|t| pct(t.total, reference.total))
            .collect();
        let (lo, hi) = changes
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &c| (lo.min(c), hi.max(c)));
        let total = if cheapest.variant == REFERENCE {
            format!(
                "On **{case}** ({backend}) {REFERENCE} costs least in total ({} {unit} over {} \
                 messages); the other variants cost {lo:+.2}% to {hi:+.2}%",
                amount(reference.total),
                reference.messages
            )
        } else {
            format!(
                "On **{case}** ({backend}) **{}** costs least in total, {:+.2}% against \
                 {REFERENCE}'s {} {unit} (the variants range {lo:+.2}% to {hi:+.2}%)",
                cheapest.variant,
                pct(cheapest.total, reference.total),
                amount(reference.total)
            )
        };
        let alloc = rows.iter().min_by_key(|t| t.allocator).expect("non-empty");
        let (share_lo, share_hi) = rows.iter().fold((f64::MAX, f64::MIN), |(lo, hi), t| {
            (lo.min(t.allocator_share_pct), hi.max(t.allocator_share_pct))
        });
        let allocator = if reference.allocator == 0 {
            String::new()
        } else {
            format!(
                "; the allocator's own calls are {share_lo:.2}–{share_hi:.2}% of it, cheapest \
                 in {} ({:+.2}% allocator {unit} against {REFERENCE})",
                alloc.variant,
                pct(alloc.allocator, reference.allocator)
            )
        };
        let floor = rows
            .iter()
            .find(|t| t.variant == FLOOR)
            .filter(|_| reference.allocator > 0)
            .map(|f| {
                format!(
                    "; the floor ({FLOOR}, never frees) spends {:+.2}% allocator {unit} and \
                     {:+.2}% total against {REFERENCE}",
                    pct(f.allocator, reference.allocator),
                    pct(f.total, reference.total)
                )
            })
            .unwrap_or_default();
        let pages = inputs
            .pages
            .iter()
            .find(|p| p.case == case && p.variant == REFERENCE)
            .filter(|_| unit == "gas" && reference.total > 0)
            .map(|p| {
                format!(
                    "; page charges (the wasmtime meter's page counts at gtest's weights) are {:.0}% \
                     of {REFERENCE}'s gas",
                    100.0 * p.page_gas as f64 / reference.total as f64
                )
            })
            .unwrap_or_default();
        let agreement = inputs
            .agreement
            .iter()
            .find(|a| a.case == case && a.rank_by_fuel != a.rank_by_gas)
            .map(|a| {
                format!(
                    "; fuel ranks the allocators differently (rho {:.2}), so read gas for this case",
                    a.spearman
                )
            })
            .unwrap_or_default();
        let (code_lo, code_hi) = rows.iter().fold((u64::MAX, 0), |(lo, hi), t| {
            (lo.min(t.code_bytes), hi.max(t.code_bytes))
        });
        let code = format!(
            "; deployed code is {}–{} bytes ({REFERENCE} {})",
            thousands(code_lo),
            thousands(code_hi),
            thousands(reference.code_bytes)
        );
        sentences.push(format!(
            "{total}{allocator}{floor}{pages}{agreement}{code}."
        ));
    }
    if sentences.is_empty() {
        return format!("No case has a {REFERENCE} row to compare with.\n");
    }
    sentences.join(" ") + "\n"
}
