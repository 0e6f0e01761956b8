//! The report's tables other than the verdicts ([`super::verdicts`]): each renders the rows
//! it is given, so the main report takes them over every case and a case's page over its own
//! ([`Inputs::of_case`]).

use super::inputs::Inputs;
use crate::analyse::layout::Verdict;
use crate::results::{AgreementRow, OpRow, PagesRow, TotalRow};
use galloc_variants::{FLOOR, REFERENCE};
use std::fmt::Write;

const OPS: [&str; 4] = ["malloc", "calloc", "realloc", "free"];

/// `n` things, singular for one: "1 case", "9 cases".
pub fn count(n: usize, thing: &str) -> String {
    match n {
        1 => format!("1 {thing}"),
        n => format!("{n} {thing}s"),
    }
}

/// A percentage with its sign, 2 decimals.
pub fn signed(p: f64) -> String {
    format!("{p:+.2}%")
}

/// Where each probe-build page was first touched, per message, from `pages.csv` (wasmtime).
pub fn first_touches(pages: &[PagesRow]) -> String {
    let mut out = String::new();
    if pages.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n## Where the pages come from (wasmtime, probe build)\n"
    );
    let _ = writeln!(
        out,
        "Per message, the 16 KiB pages the probe build's messages touched above the stack, each \
         placed where it was first touched. The probe's counter reads bracket every allocator \
         call, so the meter knows when one runs; the call's record then says which blocks it \
         handled. *Inside a call*: in static data (the allocator's state), in the heap outside \
         the call's blocks (headers, free-list links, footers), or in a block the call handed \
         out or took back (`calloc`'s clearing, `realloc`'s copy). *Outside*: the program's \
         static data (the probe's records included), or the heap (blocks the program uses). \
         The five add up to the pages (first read plus first written) exactly. `allocator \
         only`: pages first touched in a call that the program did not touch outside calls in \
         that message, the pages the allocator alone added; each costs at least a first read \
         (28.5M gas) and, written, its upload. The probe build's heap base is ~1.2 KiB above \
         the plain build's, so its pages are those of one more layout, not of the plain \
         build.\n"
    );
    let _ = writeln!(
        out,
        "| case | variant | pages | in a call: static | in a call: heap | in a call: block | static | heap | allocator only |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for p in pages {
        let per = |n: u64| format!("{:.2}", n as f64 / p.messages.max(1) as f64);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.case,
            p.variant,
            per(p.probe_pages),
            per(p.first_allocator_static),
            per(p.first_allocator_heap),
            per(p.first_allocator_block),
            per(p.first_program_static),
            per(p.first_program_heap),
            per(p.allocator_only)
        );
    }
    out
}

/// Allocator calls per message per case (each case linked to its page by `page`, when given):
/// the allocator's workload differs by an order of magnitude between programs, which is why a
/// verdict on one case does not carry to another.
pub fn calls(inputs: &Inputs, page: Option<&dyn Fn(&str) -> String>) -> String {
    let mut out = String::new();
    let Some(lead) = crate::results::headline_backend(&inputs.totals) else {
        return out;
    };
    // What the lab knows of its own cases is said only where they are in the table.
    let cases = crate::report::inputs::cases_on(&inputs.totals, lead);
    let has = |prefix: &str| cases.iter().any(|c| c.starts_with(prefix));
    let mut about = format!(
        "Calls the probe build of `{REFERENCE}` recorded on `{lead}`, per message sent \
         (`init` included)."
    );
    if has("ft") || has("nft") {
        about.push_str(
            " The gstd cases (`ft*`, `nft*`) decode and encode messages on the stack (gstd 2.0), \
             so they call the allocator only where their state grows;",
        );
        if has("vft-stress") || has("vnft-stress") {
            about.push_str(
                " Sails programs (`vft-stress`, `vnft-stress`) decode every call's arguments into \
                 owned values (`String`, `Vec`) and encode every reply and event into a `Vec`, so \
                 each message allocates and frees, as the 2023 study's programs did (~7 calls a \
                 message).",
            );
        } else {
            about.pop();
            about.push('.');
        }
    }
    about.push_str(
        " `failed`: messages the program refused by throwing (Gear rolls their changes back and \
         still charges their gas). These counts are of the messages that succeeded: on gtest a \
         failed message's calls roll back with the probe's records; the wasmtime meter sees them \
         (per message, `messages.csv`).",
    );
    let _ = writeln!(out, "{about}\n");
    let _ = writeln!(
        out,
        "| case | messages | malloc | calloc | realloc | free | calls per message | allocator share | failed |"
    );
    let _ = writeln!(
        out,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let reference: Vec<&TotalRow> = inputs
        .totals
        .iter()
        .filter(|t| t.backend == lead && t.variant == REFERENCE)
        .collect();
    for t in &reference {
        let count = |op: &str| {
            inputs
                .ops
                .iter()
                .find(|r| {
                    (&r.backend, &r.case, &r.variant, r.op.as_str())
                        == (&t.backend, &t.case, &t.variant, op)
                })
                .map_or("-".into(), |r| thousands(r.count))
        };
        let share = match inputs.unvalidated(&t.backend, &t.case, &t.variant) {
            Some(_) => UNVALIDATED.to_owned(),
            None => format!("{:.2}%", t.allocator_share_pct),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {:.2} | {share} | {} |",
            page.map_or_else(
                || t.case.clone(),
                |p| format!("[{}]({})", t.case, p(&t.case))
            ),
            thousands(t.messages),
            count("malloc"),
            count("calloc"),
            count("realloc"),
            count("free"),
            t.calls_per_message,
            thousands(t.failed_messages)
        );
    }
    out
}

/// What refused (failed) messages cost, per case and variant; empty when none failed.
pub fn refused(inputs: &Inputs) -> String {
    let mut out = String::new();
    let Some(lead) = crate::results::headline_backend(&inputs.totals) else {
        return out;
    };
    let refused: Vec<&TotalRow> = inputs
        .totals
        .iter()
        .filter(|t| t.backend == lead && t.failed_messages > 0)
        .collect();
    if refused.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\n## Refused operations ({lead})\n");
    let _ = writeln!(
        out,
        "What a refused (failed) message costs on average, beside a message that succeeded, at \
         the linker's layout; a refusal is paid for by its sender, so an allocator that makes \
         it dearer costs users even though its work is rolled back.\n"
    );
    let _ = writeln!(
        out,
        "| case | variant | failed | mean per failed message | vs {REFERENCE} | mean per other message |"
    );
    let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: | ---: |");
    let mean_failed = |t: &TotalRow| t.failed_total / t.failed_messages.max(1);
    for (i, t) in refused.iter().enumerate() {
        let shipping = refused
            .iter()
            .find(|r| r.case == t.case && r.variant == REFERENCE)
            .map(|r| mean_failed(r));
        let others = (t.total - t.failed_total) / (t.messages - t.failed_messages).max(1);
        let first = i == 0 || refused[i - 1].case != t.case;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            if first { t.case.as_str() } else { "" },
            t.variant,
            thousands(t.failed_messages),
            thousands(mean_failed(t)),
            if t.variant == REFERENCE {
                "baseline".into()
            } else {
                versus(mean_failed(t), shipping)
            },
            thousands(others)
        );
    }
    out
}

/// How a verdict reads in the report.
pub fn mark(v: Verdict) -> String {
    match v {
        Verdict::Cheaper | Verdict::Dearer => format!("**{}**", v.name()),
        Verdict::Baseline => "baseline".into(),
        Verdict::Unpaired => "-".into(),
        _ => v.name().into(),
    }
}

pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `value` as a multiple of `floor`: 1.0× is the floor itself.
fn times(value: u64, floor: Option<u64>) -> String {
    match floor {
        Some(base) if base > 0 => {
            let x = value as f64 / base as f64;
            if x < 100.0 {
                format!("{x:.1}×")
            } else {
                format!("{x:.0}×")
            }
        }
        _ => "n/a".into(),
    }
}

fn versus(value: u64, reference: Option<u64>) -> String {
    match reference {
        Some(base) if base > 0 => format!("{:+.2}%", 100.0 * (value as f64 / base as f64 - 1.0)),
        _ => "n/a".into(),
    }
}

/// Why fuel and gas rank a case's variants differently, from the numbers: fuel counts
/// instructions only, so the allocator's gas per unit of its fuel shows where page charges
/// (first touches inside allocator calls) or syscalls (`alloc`, `free_range`) weigh.
pub fn disagreement(a: &AgreementRow, totals: &[TotalRow]) -> String {
    if a.rank_by_fuel == a.rank_by_gas {
        let ties = if a.spearman < 1.0 {
            " (rho is below 1 only because ties differ: variants equal under one meter are \
             not under the other)"
        } else {
            ""
        };
        return format!(
            "- **{}**: fuel and gas rank the variants alike{ties}.\n",
            a.case
        );
    }
    let of = |backend: &str, variant: &str| {
        totals
            .iter()
            .find(|t| t.backend == backend && t.case == a.case && t.variant == variant)
            .map(|t| t.allocator)
    };
    let ratios: Vec<String> = a
        .rank_by_fuel
        .split(" < ")
        .filter_map(|v| {
            let (fuel, gas) = (of("wasmtime", v)?, of("gtest", v)?);
            (fuel > 0).then(|| format!("{v} {}", thousands(gas / fuel)))
        })
        .collect();
    format!(
        "- **{}**: the ranks differ (rho {:.2}). Allocator gas per unit of allocator fuel: {}. \
         Fuel counts the allocator's instructions alone; where this ratio is higher, more of \
         the variant's gas is page charges for memory its calls touch first in a message, or \
         the `alloc`/`free_range` syscalls, which fuel prices at one unit.\n",
        a.case,
        a.spearman,
        ratios.join(", ")
    )
}

/// A row of the per-op table: its name and how a cell is drawn from an op's row.
type Line<'a> = (&'a str, &'a dyn Fn(&OpRow) -> String);

/// The seed study's table for one case and variant: rows avg/min/max/count/total/share,
/// columns malloc/calloc/realloc/free.
fn op_table(out: &mut String, rows: &[&OpRow]) {
    let cell = |op: &str, f: &dyn Fn(&OpRow) -> String| {
        rows.iter()
            .find(|r| r.op == op)
            .map(|r| f(r))
            .unwrap_or_else(|| "-".into())
    };
    let _ = writeln!(out, "| | {} |", OPS.join(" | "));
    let _ = writeln!(out, "| --- |{}", " ---: |".repeat(OPS.len()));
    let pct = |p: Option<u64>| p.map_or_else(|| "-".into(), thousands);
    let lines: [Line; 9] = [
        ("avg", &|r| thousands(r.avg)),
        ("min", &|r| thousands(r.min)),
        ("p50", &|r| pct(r.p50)),
        ("p95", &|r| pct(r.p95)),
        ("p99", &|r| pct(r.p99)),
        ("max", &|r| thousands(r.max)),
        ("count", &|r| thousands(r.count)),
        ("total", &|r| thousands(r.total)),
        ("% of total", &|r| format!("{:.4}%", r.share_pct)),
    ];
    let exact = rows.iter().any(|r| r.p50.is_some());
    for (name, f) in lines {
        if name.starts_with('p') && !exact {
            continue;
        }
        let cells: Vec<String> = OPS.iter().map(|op| cell(op, f)).collect();
        let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
    }
}

/// One line per backend, case and variant at the linker's layout: total, allocator part,
/// pages, code, and the change of each cost against the reference, each in the backend's unit.
pub fn summary(inputs: &Inputs) -> String {
    let totals = &inputs.totals;
    let mut out = String::new();
    let _ = writeln!(out, "## Summary at the linker's layout\n");
    let _ = writeln!(
        out,
        "`pages`: 16 KiB pages the plain build's messages touched above the stack (first read, \
         first written, read then written; counted by the wasmtime meter), summed over the \
         case. `allocator vs {FLOOR}`: the distance to the floor, as a multiple of the allocator \
         cost of a bump allocator that never frees (the least allocator work per call; what it \
         costs instead is pages, in `total`).\n"
    );
    let _ = writeln!(
        out,
        "| backend | case | variant | messages | total | total vs {REFERENCE} | allocator | allocator vs {REFERENCE} | allocator vs {FLOOR} | unit | share | pages | code bytes |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"
    );
    for t in totals {
        let of = |variant: &str| {
            totals
                .iter()
                .find(|r| r.backend == t.backend && r.case == t.case && r.variant == variant)
        };
        let (reference, floor) = (of(REFERENCE), of(FLOOR));
        // The allocator's part rests on the probe: where its validation fails, not measured.
        let allocator = match inputs.unvalidated(&t.backend, &t.case, &t.variant) {
            Some(_) => [UNVALIDATED; 4].map(str::to_owned),
            None => [
                thousands(t.allocator),
                versus(t.allocator, reference.map(|r| r.allocator)),
                times(t.allocator, floor.map(|r| r.allocator)),
                format!("{:.2}%", t.allocator_share_pct),
            ],
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            t.backend,
            t.case,
            t.variant,
            t.messages,
            thousands(t.total),
            versus(t.total, reference.map(|r| r.total)),
            allocator[0],
            allocator[1],
            allocator[2],
            t.unit,
            allocator[3],
            inputs
                .pages_touched(&t.case, &t.variant)
                .map_or("n/a".into(), thousands),
            thousands(t.code_bytes)
        );
    }
    out
}

/// Fuel against gas: per case, the two meters' ranks of the variants and how much of gas fuel
/// and pages explain; `reasons`: with, under the table, why the ranks differ where they do.
pub fn agreement(inputs: &Inputs, reasons: bool) -> String {
    let mut out = String::new();
    if inputs.agreement.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\n## Fuel against gas\n");
    let _ = writeln!(
        out,
        "Variants ranked by allocator cost under each meter (cheapest first) and Spearman's \
         rank correlation; then, over every message of the case (all variants, plain \
         builds), how much of gtest's gas fuel explains (R², with an intercept), and how \
         much fuel plus the page gas of the pages each message touched (priced at gtest's \
         lazy-page weights) explains, with the fitted gas per fuel and page-gas weight; \
         then the full model, which adds what Gear charges before every message for \
         loading the pages the program holds through `alloc` (a storage read of 25M gas and \
         20,559 per run of pages, nothing when it holds none: gas fuel and page accesses do \
         not show) and the code's size, with that term's fitted weight, the fitted gas per \
         code byte and the largest residual of a message.\n"
    );
    let _ = writeln!(
        out,
        "| case | by fuel | by gas | rho | messages | R² fuel | R² fuel + pages | gas/fuel | page weight | R² full | allocations weight | gas/code byte | largest residual |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for a in &inputs.agreement {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.4} | {} | {:.4} | {:.4} | {:.1} | {:.4} | {:.4} | {:.4} | {:.1} | {} |",
            a.case,
            a.rank_by_fuel,
            a.rank_by_gas,
            a.spearman,
            a.messages,
            a.r2_fuel,
            a.r2_fuel_pages,
            a.gas_per_fuel,
            a.page_gas_weight,
            a.r2_fuel_pages_allocations,
            a.allocations_gas_weight,
            a.gas_per_code_byte,
            thousands(a.max_residual)
        );
    }
    if reasons {
        out.push('\n');
        for a in &inputs.agreement {
            out.push_str(&disagreement(a, &inputs.totals));
        }
    }
    out
}

/// The pages each case's messages touched, in Gear's charging categories (wasmtime).
pub fn pages(inputs: &Inputs) -> String {
    let mut out = String::new();
    if inputs.pages.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\n## Pages touched (wasmtime)\n");
    let _ = writeln!(
        out,
        "16 KiB pages above the stack each case's messages touched on the plain build, in \
         Gear's charging categories, summed over the case; `page gas` prices them at gtest's \
         lazy-page weights (a first write includes the page's upload).\n"
    );
    let _ = writeln!(
        out,
        "| case | variant | messages | read | written | write after read | loaded | page gas |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for p in &inputs.pages {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            p.case,
            p.variant,
            p.messages,
            thousands(p.read),
            thousands(p.written),
            thousands(p.write_after_read),
            thousands(p.loaded),
            thousands(p.page_gas)
        );
    }
    out
}

/// The seed study's per-op table for every backend and variant of the rows, one section per
/// (backend, case).
pub fn op_tables(inputs: &Inputs) -> String {
    let mut out = String::new();
    let mut cases: Vec<(&str, &str, &str)> = Vec::new();
    for t in &inputs.totals {
        if !cases
            .iter()
            .any(|c| (c.0, c.1) == (t.backend.as_str(), t.case.as_str()))
        {
            cases.push((&t.backend, &t.case, &t.unit));
        }
    }
    for (backend, case, unit) in cases {
        let _ = writeln!(out, "\n## Per op: {case} ({backend}, {unit})\n");
        for t in inputs
            .totals
            .iter()
            .filter(|t| t.backend == backend && t.case == case)
        {
            let _ = writeln!(out, "### {} ({backend})\n", t.variant);
            if let Some(v) = inputs.unvalidated(backend, case, &t.variant) {
                let _ = writeln!(
                    out,
                    "Not measured: the probe validation failed on this build ({} of {} messages \
                     matched its fit), so its per-call costs are not shown.\n",
                    v.exact_messages,
                    v.messages.saturating_sub(1)
                );
                continue;
            }
            let rows: Vec<&OpRow> = inputs
                .ops
                .iter()
                .filter(|r| r.backend == backend && r.case == case && r.variant == t.variant)
                .collect();
            op_table(&mut out, &rows);
            out.push('\n');
        }
    }
    out
}

/// What was asked for and not done, said where the figures are: each case a backend was asked
/// for and did not run (and why), and each case the deciding backend did not measure (its
/// page, `page` linking it, has what the others did); empty when every case ran everywhere.
pub fn left_out(inputs: &Inputs, page: Option<&dyn Fn(&str) -> String>) -> String {
    let mut out = String::new();
    let name = |c: &str| page.map_or_else(|| format!("`{c}`"), |p| format!("[`{c}`]({})", p(c)));
    if !inputs.left_out.is_empty() {
        let items: Vec<String> = inputs
            .left_out
            .iter()
            .map(|r| format!("{} on {}: {}", name(&r.case), r.backend, r.why))
            .collect();
        let _ = writeln!(
            out,
            "**Asked for and not run**: {}. What that backend alone gives (fuel, pages, the \
             anatomy) is missing there; the other backends' figures stand.\n",
            items.join("; ")
        );
    }
    if let Some(lead) = crate::results::headline_backend(&inputs.totals) {
        let on_lead = crate::report::inputs::cases_on(&inputs.totals, lead);
        let others: Vec<String> = crate::report::inputs::every_case(&inputs.totals)
            .into_iter()
            .filter(|c| !on_lead.contains(c))
            .map(name)
            .collect();
        if !others.is_empty() && page.is_some() {
            let _ = writeln!(
                out,
                "Not measured on {lead}, which decides here, so in no table below: {} (each \
                 case's page has what was measured).\n",
                others.join(", ")
            );
        }
    }
    out
}

/// What a table shows where the probe validation failed, instead of a figure resting on it.
pub const UNVALIDATED: &str = "unvalidated";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(148_000_123), "148,000,123");
    }
}
