//! The ship verdict as the report and `lab ship` print it: one table, every variant over every
//! program, and the variant the rule names ([`crate::analyse::ship`]).

use crate::analyse::layout::Verdict;
use crate::analyse::ship::Ship;
use crate::report::tables::thousands;
use galloc_variants::REFERENCE;
use std::fmt::Write;

/// The section, heading included.
pub fn markdown(ship: &Ship) -> String {
    let mut out = String::new();
    let n = ship.programs.len();
    let corpus = crate::run::scenario::CASES
        .iter()
        .filter(|c| c.corpus && ship.programs.iter().any(|p| p == c.id))
        .count();
    let _ = writeln!(out, "## What galloc should ship\n");
    let _ = writeln!(
        out,
        "Every variant against `{REFERENCE}` on all {n} programs the lab runs at once: the {} \
         default cases and the {corpus} corpus programs (docs/cases.md, \"The corpus\"), gas on gtest \
         over the heap-layout sweep. A program counts as **better** (**same**, **worse**) when \
         the variant is cheaper than shipping by more than the minimum effect ({} %) at every \
         layout (within it, dearer) *and* the program's second workload says the same; \
         anything else counts as **noise**. The rule (docs/ship.md, \"What galloc should ship\"): \
         better on at least {:.0} % of the programs, a median more than {} % above shipping's \
         on none, and passing the lab's own tests (neither the floor nor a variant that holds \
         pages with nothing live); of the variants it admits, the lowest geometric mean of \
         medians. `just ship` prints this table.\n",
        n - corpus,
        crate::analyse::layout::BAND_PCT,
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
    target(&mut out, ship);
    out
}

/// Every variant against the design target ([`crate::analyse::ship::TARGET`]) on the programs no
/// design was shaped on.
fn target(out: &mut String, ship: &Ship) {
    let t = crate::analyse::ship::TARGET;
    let programs = crate::analyse::ship::target_programs();
    let rows = ship.against_target(t);
    let Some(n) = rows.first().map(|r| r.programs) else {
        return;
    };
    let _ = writeln!(out, "### The design target\n");
    let _ = writeln!(
        out,
        "What the lab asks of a design of its own (docs/design.md, \"The design, re-aimed\"), on the \
         {n} programs no design was shaped on ({}): better on at least {:.0} % of them, worse \
         at the median (by more than the minimum effect) on none, a geometric mean of medians \
         of {:+.1} % or less, allocator code of at most {} bytes, and a lower geometric mean \
         than `{}`. Each variant is an idea measured against it.\n",
        programs
            .iter()
            .map(|p| format!("`{p}`"))
            .collect::<Vec<_>>()
            .join(", "),
        100.0 * t.better_share,
        t.geomean_pct,
        thousands(t.code_bytes),
        t.rival
    );
    let _ = writeln!(
        out,
        "| variant | better on | worse at the median on | geomean of medians | allocator \
         code bytes | misses |\n| --- | ---: | ---: | ---: | ---: | --- |"
    );
    for r in &rows {
        let _ = writeln!(
            out,
            "| `{}` | {} of {} | {} | {:+.2}% | {} | {} |",
            r.variant,
            r.better,
            r.programs,
            r.worse_at_median.len(),
            r.geomean_pct,
            r.code_bytes.map(thousands).unwrap_or_default(),
            if r.missed.is_empty() {
                "**met**".to_owned()
            } else {
                r.missed.join("; ")
            }
        );
    }
    let met: Vec<&str> = rows
        .iter()
        .filter(|r| r.missed.is_empty())
        .map(|r| r.variant.as_str())
        .collect();
    let _ = writeln!(
        out,
        "\n**The target is {}.**\n",
        if met.is_empty() {
            "met by no variant".to_owned()
        } else {
            format!("met by {}", met.join(", "))
        }
    );
}
