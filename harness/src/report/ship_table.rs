//! The ship verdict as the report and `lab ship` print it: one table, every variant over every
//! program, and the variant the rule names ([`crate::ship`]).

use crate::layout::Verdict;
use crate::report::thousands;
use crate::ship::Ship;
use galloc_variants::REFERENCE;
use std::fmt::Write;

/// The section, heading included.
pub fn markdown(ship: &Ship) -> String {
    let mut out = String::new();
    let n = ship.programs.len();
    let corpus = crate::scenario::CASES
        .iter()
        .filter(|c| c.corpus && ship.programs.iter().any(|p| p == c.id))
        .count();
    let _ = writeln!(out, "## What galloc should ship\n");
    let _ = writeln!(
        out,
        "Every variant against `{REFERENCE}` on all {n} programs the lab runs at once: the {} \
         default cases and the {corpus} corpus programs (README, \"The corpus\"), gas on gtest \
         over the heap-layout sweep. A program counts as **better** (**same**, **worse**) when \
         the variant is cheaper than shipping by more than the minimum effect ({} %) at every \
         layout (within it, dearer) *and* the program's second workload says the same; \
         anything else counts as **noise**. The rule (README, \"What galloc should ship\"): \
         better on at least {:.0} % of the programs, a median more than {} % above shipping's \
         on none, and passing the lab's own tests (neither the floor nor a variant that holds \
         pages with nothing live); of the variants it admits, the lowest geometric mean of \
         medians. `just ship` prints this table.\n",
        n - corpus,
        crate::layout::BAND_PCT,
        100.0 * ship.rule.better_share,
        ship.rule.worst_median_pct,
    );
    let _ = writeln!(
        out,
        "| variant | better | same | worse | noise | geomean of medians | worst median | \
         allocator code bytes | the rule |\n| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |"
    );
    let _ = writeln!(
        out,
        "| `{REFERENCE}` | | | | | | | {} | the baseline |",
        ship.reference_code_bytes.map(thousands).unwrap_or_default()
    );
    for row in &ship.rows {
        let worst = row
            .worst()
            .map(|p| format!("{:+.2}% (`{}`)", p.median, p.case))
            .unwrap_or_default();
        let rule = match &row.refused {
            None if row.variant == ship.named => "**admitted: named**".to_owned(),
            None => "admitted".to_owned(),
            Some(why) => why.clone(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {:+.2}% | {worst} | {} | {rule} |",
            row.variant,
            row.count(Verdict::Better),
            row.count(Verdict::Same),
            row.count(Verdict::Worse),
            row.count(Verdict::Noise),
            row.geomean_pct(),
            row.code_bytes.map(thousands).unwrap_or_default(),
        );
    }
    let _ = writeln!(
        out,
        "\n**What galloc should ship: `{}`**{}.\n",
        ship.named,
        if ship.named == REFERENCE {
            ": the rule admits no variant, so the lab recommends changing nothing"
        } else {
            ""
        }
    );
    out
}
