//! The ship verdict as the report and `lab ship` print it: one sentence to quote, the variant
//! the rule names, and one table, every variant over every deployment ([`crate::analyse::ship`]).

use crate::analyse::layout::{Verdict, BAND_PCT};
use crate::analyse::population::Population;
use crate::analyse::ship::{Refusal, Row, Ship};
use crate::report::tables::thousands;
use galloc_variants::REFERENCE;
use std::fmt::Write;

/// `share` (0 to 1) as "1 deployment in N" (N rounded), or "no deployment".
pub fn one_in(share: f64) -> String {
    if share <= 0.0 {
        "no deployment".to_owned()
    } else {
        format!("1 deployment in {}", (1.0 / share).round())
    }
}

/// An expected change and its interval: `-3.49 % (-6.06 … -1.45)`.
fn with_interval(p: &Population) -> String {
    format!(
        "{:+.2} % ({:+.2} … {:+.2})",
        p.expected_pct, p.interval_pct.0, p.interval_pct.1
    )
}

/// A population's five cells of the ship table: expected (interval), worst program, dearer,
/// worst deployment, own spread.
fn standing(p: &Population) -> String {
    format!(
        "{} | {:+.2} % (`{}`) | {:.2} % | {:+.2} % (`{}` at {}) | {:.2} %",
        with_interval(p),
        p.worst_program.1,
        p.worst_program.0,
        100.0 * p.dearer_share,
        p.worst_deployment.2,
        p.worst_deployment.0,
        thousands(u64::from(p.worst_deployment.1)),
        p.own_spread_pct
    )
}

/// The sentence a maintainer can quote: the named variant's standing, or, when the rule names
/// shipping, the standing of the variant closest to it and why it was not admitted.
pub fn quotable(ship: &Ship) -> String {
    let Some(row) = ship.closest() else {
        return format!("No variant passes the lab's own tests: galloc should ship `{REFERENCE}`.");
    };
    let p = &row.all;
    // The dearer share is in the sentence already: a refusal for it says only the limit.
    let too_many = row.refusals.iter().any(|r| matches!(r, Refusal::Dearer(_)));
    let mut out = format!(
        "`{}`: {:+.2} % expected, 95 % interval {:+.2} … {:+.2} %, dearer than `{REFERENCE}` by \
         more than {} % on {} ({:.1} %{})",
        row.variant,
        p.expected_pct,
        p.interval_pct.0,
        p.interval_pct.1,
        BAND_PCT,
        one_in(p.dearer_share),
        100.0 * p.dearer_share,
        if too_many {
            format!(", over the rule's {:.0} %", 100.0 * ship.rule.dearer_share)
        } else {
            String::new()
        }
    );
    let why: Vec<String> = row
        .refusals
        .iter()
        .filter(|r| !matches!(r, Refusal::Dearer(_)))
        .map(ToString::to_string)
        .collect();
    match (row.admitted(), why.is_empty()) {
        (true, _) => out.push_str("; admitted"),
        (false, true) => out.push_str("; not admitted"),
        (false, false) => {
            let _ = write!(out, "; not admitted: {}", why.join("; "));
        }
    }
    out.push('.');
    out
}

/// The rule's answer for the table, one word per clause failed ([`Refusal::code`]): the
/// figures are in the row's other columns, the codes explained once below the table.
fn reason(ship: &Ship, row: &Row) -> String {
    if row.admitted() {
        return if row.variant == ship.named {
            "**admitted: named**".to_owned()
        } else {
            "admitted".to_owned()
        };
    }
    let codes: Vec<&str> = row.refusals.iter().map(Refusal::code).collect();
    format!("no: {}", codes.join(", "))
}

/// Below the table: what each code means, and which variants fail the lab's own tests and why.
fn codes(out: &mut String, ship: &Ship) {
    let meaning: Vec<String> = Refusal::codes(&ship.rule)
        .iter()
        .map(|(code, clause)| format!("**{code}**: {clause}"))
        .collect();
    let _ = writeln!(
        out,
        "The rule's column names each clause a variant fails: {}.\n",
        meaning.join("; ")
    );
    let failing: Vec<String> = ship
        .rows
        .iter()
        .flat_map(|r| {
            r.refusals.iter().filter_map(move |f| match f {
                Refusal::Unsafe(why) => Some(format!("`{}`: {why}", r.variant)),
                _ => None,
            })
        })
        .collect();
    if !failing.is_empty() {
        let _ = writeln!(
            out,
            "Failing the lab's own tests: {}.\n",
            failing.join("; ")
        );
    }
}

/// The section, heading included.
pub fn markdown(ship: &Ship) -> String {
    let mut out = String::new();
    let n = ship.programs.len();
    let corpus = crate::run::scenario::CASES
        .iter()
        .filter(|c| c.corpus && ship.programs.iter().any(|p| p == c.id))
        .count();
    let deployments = ship.rows.first().map_or(0, |r| r.all.deployments);
    let rule = ship.rule;
    let _ = writeln!(
        out,
        "## What galloc should ship
"
    );
    let _ = writeln!(
        out,
        "> {}
",
        quotable(ship)
    );
    let _ = writeln!(
        out,
        "**What galloc should ship: `{}`**{}.\n",
        ship.named,
        if ship.named == REFERENCE {
            ": the rule admits no variant, so the lab recommends changing nothing"
        } else {
            ""
        }
    );
    let widest = ship.reference_widest();
    let _ = writeln!(
        out,
        "A galloc release meets every Gear program at whatever heap layout its static data \
         gives it. So each variant is judged over the **deployments** the lab measures: all {n} \
         programs ({} default cases, {corpus} corpus programs) at each layout of the sweep \
         ({deployments} in all), gas on gtest, against `{REFERENCE}` at the same layout. Where a \
         program's heap starts moves `{REFERENCE}`'s own gas by a median **{:.1} %** between its \
         cheapest and dearest layout (up to {:.1} %, `{}`).\n",
        n - corpus,
        ship.reference_spread_pct(),
        widest.1,
        widest.0,
    );
    let _ = writeln!(
        out,
        "**Expected** is the geometric mean over programs of each program's mean over its \
         layouts; its **95 % interval** is the two-level bootstrap's (programs resampled, then \
         layouts within each), computed exactly rather than drawn. **Worst program**: the \
         highest program mean. **Dearer**: the share of deployments dearer than `{REFERENCE}` \
         by more than the minimum effect ({BAND_PCT} %). **Own spread**: the variant's own \
         dearest layout over its cheapest, median over programs. **Held out**: the {} programs \
         no design was shaped on (the case registry's `held_out`) alone; **second**: the second workloads alone. **Words**: \
         programs cheaper / same / dearer / uncertain by their own interval over their layouts \
         against the minimum effect, as the second workload repeats (the rule's measures on one \
         program at a time; the rule itself judges the population). The rule (docs/ship.md, \"The rule\"): an upper \
         bound at or below {:+} %, no program mean above {:+} %, at most {:.0} % of deployments \
         dearer, the held-out and second upper bounds below {}, and the lab's own tests \
         passed; of the admitted, the lowest expected change. `just ship` prints this \
         section.\n",
        ship.held_out.len(),
        rule.upper_bound_pct,
        rule.worst_program_pct,
        100.0 * rule.dearer_share,
        rule.subset_upper_bound_pct,
    );
    let limits = ship.explained.limits.as_ref();
    // The distance to the bounds is a column only where they were measured.
    let (distance_head, distance_align) = match limits {
        Some(_) => (" to the oracle / the composite |", " ---: |"),
        None => ("", ""),
    };
    let _ = writeln!(
        out,
        "| variant | expected (95 % interval) | worst program | dearer | worst deployment | \
         own spread | held out | second | words | allocator code bytes |{distance_head} the \
         rule |\n\
         | --- | --- | --- | ---: | --- | ---: | --- | --- | ---: | ---: |{distance_align} --- |"
    );
    let to_limits = |expected: f64| {
        limits.map_or(String::new(), |l| {
            format!(
                " {:+.2} / {:+.2} |",
                expected - l.oracle.expected_pct,
                expected - l.composite.expected_pct
            )
        })
    };
    let _ = writeln!(
        out,
        "| `{REFERENCE}` | | | | | {:.2} % | | | | {} |{} the baseline |",
        ship.reference_spread_pct(),
        ship.reference_code_bytes.map(thousands).unwrap_or_default(),
        to_limits(0.0),
    );
    for row in &ship.rows {
        let p = &row.all;
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} / {} / {} / {} | {} |{} {} |",
            row.variant,
            standing(p),
            row.held_out.as_ref().map(with_interval).unwrap_or_default(),
            row.second.as_ref().map(with_interval).unwrap_or_default(),
            row.count(Verdict::Cheaper),
            row.count(Verdict::Same),
            row.count(Verdict::Dearer),
            row.count(Verdict::Uncertain),
            row.code_bytes.map(thousands).unwrap_or_default(),
            to_limits(p.expected_pct),
            reason(ship, row),
        );
    }
    if let Some(l) = limits {
        for (name, p) in [
            ("per-point oracle", &l.oracle),
            ("composite", &l.composite),
            (
                "composite, no allocator instructions",
                &l.no_allocator_instructions,
            ),
        ] {
            let _ = writeln!(
                out,
                "| *{name}* | {} | | | | |{} a bound over measured designs, not a variant |",
                standing(p),
                to_limits(p.expected_pct),
            );
        }
    }
    out.push('\n');
    codes(&mut out, ship);
    out
}

/// Where each variant's change comes from, in the ship table's order, and what the bounds
/// are over; or one line saying why there is no anatomy. (The report shows it after the ship
/// section's chart, with its own; `lab ship` prints it after the table.)
pub fn anatomy(out: &mut String, ship: &Ship) {
    let e = &ship.explained;
    let _ = writeln!(out, "### Where the gas goes\n");
    // The instructions' prices come from the probe's messages alone: measured whatever the
    // layouts hold.
    let prices: Vec<String> = std::iter::once(REFERENCE)
        .chain(ship.rows.iter().map(|r| r.variant.as_str()))
        .filter_map(|v| {
            let p = e.anatomy.prices.allocator.get(v)?;
            Some(format!("`{v}` {}", thousands(p.round() as u64)))
        })
        .collect();
    if !prices.is_empty() {
        let _ = writeln!(
            out,
            "Allocator instructions cost, in gas per unit of fuel (the median, over the messages \
             of all {} programs whose allocator calls first-touch no page, of gtest's allocator \
             gas over the fuel meter's allocator fuel): {}.\n",
            ship.programs.len(),
            prices.join(", ")
        );
    }
    if e.points.is_empty() {
        let _ = writeln!(
            out,
            "No anatomy: these results lack the fuel meter's page counts and the code charge \
             at each layout (results written before those columns); `just compare` and `just corpus` \
             write them.\n"
        );
        return;
    }
    let _ = writeln!(
        out,
        "Each variant's expected change against `{REFERENCE}`, split by what Gear charges \
         (docs/ship.md, \"Where the gas goes\"). {}\n",
        crate::report::anatomy::LEGEND
    );
    out.push_str(&crate::report::anatomy::header("variant"));
    for row in &ship.rows {
        if let Some(p) = e.points.get(&row.variant) {
            out.push_str(&crate::report::anatomy::row(
                &format!("`{}`", row.variant),
                &p.parts,
                p.expected_pct,
            ));
        }
    }
    let missing: Vec<String> = ship
        .rows
        .iter()
        .filter(|r| !e.points.contains_key(&r.variant))
        .map(|r| format!("`{}`", r.variant))
        .collect();
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "\nNo anatomy for {}: a program where it has no measured price or no layout with \
             page counts.",
            missing.join(", ")
        );
    }
    if e.limits.is_some() {
        let designs: Vec<String> = e.designs.iter().map(|d| format!("`{d}`")).collect();
        let _ = writeln!(
            out,
            "\nThe oracle and the composite (docs/ship.md, \"How far from the best\") are over \
             {}: `{REFERENCE}` and every variant the lab's own tests pass. They are bounds over \
             measured designs, not physics.",
            designs.join(", ")
        );
    }
    out.push('\n');
}

/// Every variant against the design target ([`crate::analyse::target::TARGET`]) over
/// every program, alone on the held-out programs and on the second workloads, and at scale
/// (`ship.scale`, empty where the scale cases were not measured).
/// (The report shows it after the ship section and its chart; `lab ship` prints the section.)
pub fn target(out: &mut String, ship: &Ship) {
    let t = crate::analyse::target::TARGET;
    let rows = ship.against_target(t, &ship.scale);
    let Some(first) = rows.first() else {
        return;
    };
    let n = first.all.programs;
    let h = first.held_out.as_ref().map_or(0, |p| p.programs);
    let _ = writeln!(out, "### The design target\n");
    let _ = writeln!(
        out,
        "What the lab asks of its own design before calling it done (docs/design.md, \
         \"The target\"), over the same deployments as the rule: on all {n} programs an expected \
         change of {:+.1} % or less with its interval's upper bound at or below {:+.1} %, no \
         program's mean above {:+.1} %, at most {:.0} % of deployments dearer by more than \
         {BAND_PCT} %; alone on the {h} held-out programs an upper bound at or below {:+.1} %, \
         and on the second workloads at or below {:+.1} %; allocator code of at most {} bytes; on \
         the scale cases (`just scale`) no checkpoint dearer than shipping by more than {} % and \
         no message refused that shipping serves. Tests hold the rest and fail when it is \
         missed: live bytes at the first refusal on large blocks at least {:.0} % of \
         shipping's (`allocator/tests/suite/capacity.rs`), the long run and the per-variant \
         suite (`just test`), `just miri` and `just fuzz lab 600` (run apart: docs/design.md).\n",
        t.expected_pct,
        t.upper_bound_pct,
        t.worst_program_pct,
        100.0 * t.dearer_share,
        t.held_out_upper_pct,
        t.second_upper_pct,
        thousands(t.code_bytes),
        t.scale_dearer_pct,
        100.0 * t.capacity_share,
    );
    let _ = writeln!(
        out,
        "| variant | expected, all {n} (95 % interval) | worst program | dearer | held out, the \
         {h} (95 % interval) | second workloads (95 % interval) | allocator code bytes | at \
         scale: dearest checkpoint | misses |\n\
         | --- | --- | --- | ---: | --- | --- | ---: | --- | --- |"
    );
    let interval = |p: &Population| {
        format!(
            "{:+.2} % ({:+.2} … {:+.2})",
            p.expected_pct, p.interval_pct.0, p.interval_pct.1
        )
    };
    let subset = |p: &Option<Population>| p.as_ref().map(interval).unwrap_or_default();
    for r in &rows {
        let a = &r.all;
        let scale = r.scale.as_ref().map_or_else(String::new, |s| {
            let (case, offset, live) = &s.dearest_at;
            let refused = if s.refused > 0 {
                format!(", {} refused", s.refused)
            } else {
                String::new()
            };
            format!(
                "{:+.2} % (`{case}` at {offset}, {} live bytes){refused}",
                s.dearest_pct,
                thousands(*live)
            )
        });
        let _ = writeln!(
            out,
            "| `{}` | {} | {:+.2} % (`{}`) | {:.2} % | {} | {} | {} | {} | {} |",
            r.variant,
            interval(a),
            a.worst_program.1,
            a.worst_program.0,
            100.0 * a.dearer_share,
            subset(&r.held_out),
            subset(&r.second),
            r.code_bytes.map(thousands).unwrap_or_default(),
            scale,
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
