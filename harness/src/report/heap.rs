//! `results/heap-skip/README.md`: where the heap starts, rendered from the rows
//! `lab heap-skip` wrote: what share of each program's layout spread the heap base alone
//! reproduces, each variant's gas at every skip, and the page maps.

use crate::analyse::layout::median;
use crate::analyse::population::{spread_pct, Totals};
use crate::results::pages::GEAR_PAGE;
use crate::results::{PageMapRow, SkipRow};
use crate::run::backend::wasmtime::PageKind;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The image of `case`'s page map, under the directory's `images/`.
pub fn page_map_file(case: &str) -> String {
    format!("pages-{case}.png")
}

/// How many messages `case`'s page maps cover (`init` included), if it has any.
fn messages_of(maps: &[PageMapRow], case: &str) -> Option<u32> {
    maps.iter()
        .filter(|r| r.case == case)
        .map(|r| r.message + 1)
        .max()
}

/// Each (case, variant)'s totals over the skips, in skip order.
fn by_pair(skips: &[SkipRow]) -> BTreeMap<(&str, &str), Vec<(u32, u64)>> {
    let mut by: BTreeMap<(&str, &str), Vec<(u32, u64)>> = BTreeMap::new();
    for r in skips {
        by.entry((r.case.as_str(), r.variant.as_str()))
            .or_default()
            .push((r.skip, r.total));
    }
    for v in by.values_mut() {
        v.sort_unstable();
    }
    by
}

/// The spread over the skips beside the spread over the sweep's layouts, per (case, variant)
/// in the order given; and the median share per variant.
pub fn spread_table(
    skips: &[SkipRow],
    sweep: &Totals,
    cases: &[&str],
    variants: &[&str],
) -> String {
    let by = by_pair(skips);
    let mut out = String::from(
        "| case | variant | spread over the skips | spread over the layouts | share |\n\
         | --- | --- | ---: | ---: | ---: |\n",
    );
    let mut shares: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for case in cases {
        for variant in variants {
            let Some(totals) = by.get(&(*case, *variant)) else {
                continue;
            };
            let over_skips = spread_pct(totals.iter().map(|(_, t)| *t));
            let layouts = sweep.of_variant(case, variant);
            if layouts.is_empty() {
                let _ = writeln!(
                    out,
                    "| {case} | {variant} | {over_skips:.2} % | not swept | |"
                );
                continue;
            }
            let over_layouts = spread_pct(layouts.values().copied());
            let share = 100.0 * over_skips / over_layouts;
            shares.entry(variant).or_default().push(share);
            let _ = writeln!(
                out,
                "| {case} | {variant} | {over_skips:.2} % | {over_layouts:.2} % | {share:.0} % |"
            );
        }
    }
    for variant in variants {
        if let Some(s) = shares.get_mut(variant) {
            let median = median(s);
            let _ = writeln!(
                out,
                "\nThe heap base alone reproduces a median **{median:.1} %** of `{variant}`'s \
                 layout spread ({} programs).",
                s.len()
            );
        }
    }
    out
}

/// Gas of a first write to a 16 KiB Gear page with its upload (Gear's schedule: signal write
/// 34,056,454 + `upload_page_data` 102,822,864): the unit a dear layout's extra page costs.
pub const PAGE_WRITE_GAS: f64 = 136_879_318.0;

/// Per program: what a dear layout adds over a cheap one, in gas a message and in written
/// pages a message, for shipping and `design`, over the sweep's layouts; beside each, the
/// spread (the same difference over the cheapest). `messages` per case from the page maps.
pub fn dear_minus_cheap(
    sweep: &Totals,
    maps: &[PageMapRow],
    cases: &[&str],
    reference: &str,
    design: &str,
) -> String {
    let mut out = format!(
        "| program | messages | `{reference}`: dear − cheap, gas a message (pages) | spread | \
         `{design}`: dear − cheap, gas a message (pages) | spread | `{design}` / `{reference}` \
         |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    );
    let mut ratios = Vec::new();
    for case in cases {
        let (Some(messages), false, false) = (
            messages_of(maps, case),
            sweep.of_variant(case, reference).is_empty(),
            sweep.of_variant(case, design).is_empty(),
        ) else {
            continue;
        };
        let of = |variant: &str| {
            let totals = sweep.of_variant(case, variant);
            let (lo, hi) = totals
                .values()
                .fold((u64::MAX, 0), |(lo, hi), t| (lo.min(*t), hi.max(*t)));
            (
                (hi - lo) as f64 / f64::from(messages),
                spread_pct(totals.values().copied()),
            )
        };
        let ((r, r_spread), (d, d_spread)) = (of(reference), of(design));
        ratios.push(d / r);
        let _ = writeln!(
            out,
            "| {case} | {messages} | {:.1}M ({:.2}) | {r_spread:.2} % | {:.1}M ({:.2}) | \
             {d_spread:.2} % | {:.2} |",
            r / 1e6,
            r / PAGE_WRITE_GAS,
            d / 1e6,
            d / PAGE_WRITE_GAS,
            d / r
        );
    }
    if !ratios.is_empty() {
        let n = ratios.len();
        let median = median(&mut ratios);
        let _ = writeln!(
            out,
            "\nMedian `{design}` / `{reference}`: **{median:.2}** ({n} programs). A first-written \
             page costs {:.1}M gas (signal write and upload, Gear's schedule).",
            PAGE_WRITE_GAS / 1e6
        );
    }
    out
}

/// Each (case, variant)'s gas at every skip, in percent above its own at skip 0.
pub fn per_skip_table(skips: &[SkipRow], cases: &[&str], variants: &[&str]) -> String {
    let by = by_pair(skips);
    let Some(points) = by
        .values()
        .next()
        .map(|v| v.iter().map(|(s, _)| *s).collect::<Vec<_>>())
    else {
        return String::new();
    };
    let mut out = String::from("| case | variant |");
    for s in &points {
        let _ = write!(out, " {:.1} |", f64::from(*s) / 1024.0);
    }
    out.push_str("\n| --- | --- |");
    out.push_str(&" ---: |".repeat(points.len()));
    out.push('\n');
    for case in cases {
        for variant in variants {
            let Some(totals) = by.get(&(*case, *variant)) else {
                continue;
            };
            let base = totals[0].1 as f64;
            let _ = write!(out, "| {case} | {variant} |");
            for (_, t) in totals {
                let _ = write!(out, " {:+.1} |", 100.0 * (*t as f64 / base - 1.0));
            }
            out.push('\n');
        }
    }
    out
}

/// Per case, variant and layout: the gas there (gtest, from the sweep), charged pages a message
/// (the stack is not charged), and how many of them each kind first touched.
pub fn page_map_table(maps: &[PageMapRow], case: &str, sweep: &Totals) -> String {
    // Per (layout, variant): the layout's offset, the heap base, and pages by kind.
    type Panel<'a> = (u32, u32, BTreeMap<&'a str, u32>);
    let mut panels: BTreeMap<(&str, &str), Panel> = BTreeMap::new();
    let messages = messages_of(maps, case).unwrap_or(1);
    for r in maps.iter().filter(|r| r.case == case) {
        let e = panels
            .entry((r.layout.as_str(), r.variant.as_str()))
            .or_insert((r.offset, r.heap_base, BTreeMap::new()));
        *e.2.entry(r.kind.as_str()).or_default() += 1;
    }
    let charged: Vec<PageKind> = PageKind::ALL
        .into_iter()
        .filter(|k| *k != PageKind::Stack)
        .collect();
    let mut out = String::from(
        "| layout | variant | heap base (in its page) | gas (gtest) | charged pages a message |",
    );
    for k in &charged {
        let _ = write!(out, " {} |", k.name());
    }
    out.push_str("\n| --- | --- | ---: | ---: | ---: |");
    out.push_str(&" ---: |".repeat(charged.len()));
    out.push('\n');
    // Cheap before dear.
    let mut keys: Vec<_> = panels.keys().copied().collect();
    keys.sort_by_key(|(l, v)| (*l != "cheap", *v != galloc_variants::REFERENCE, *v));
    for key in keys {
        let (offset, heap_base, kinds) = &panels[&key];
        let total: u32 = charged
            .iter()
            .map(|k| kinds.get(k.name()).copied().unwrap_or(0))
            .sum();
        let gas = sweep
            .of_variant(case, key.1)
            .get(offset)
            .map_or("not swept".to_owned(), |g| g.to_string());
        let _ = write!(
            out,
            "| {} (+{} KiB) | {} | {} ({} B) | {gas} | {:.2} |",
            key.0,
            offset / 1024,
            key.1,
            heap_base,
            heap_base % GEAR_PAGE,
            f64::from(total) / f64::from(messages)
        );
        for k in &charged {
            let n = kinds.get(k.name()).copied().unwrap_or(0);
            let _ = write!(out, " {:.2} |", f64::from(n) / f64::from(messages));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::LayoutRow;

    fn skip(case: &str, skip: u32, total: u64) -> SkipRow {
        SkipRow {
            backend: "gtest".into(),
            case: case.into(),
            variant: "lab".into(),
            unit: "gas".into(),
            skip,
            heap_base: 1_000_000 + skip,
            total,
        }
    }

    fn layout(case: &str, offset: u32, total: u64) -> LayoutRow {
        LayoutRow {
            backend: "gtest".into(),
            case: case.into(),
            variant: "lab".into(),
            unit: "gas".into(),
            offset,
            heap_base: 1_000_000 + offset,
            total,
            ..Default::default()
        }
    }

    #[test]
    fn the_share_is_the_skips_spread_over_the_layouts() {
        let skips = [
            skip("a", 0, 100),
            skip("a", 8192, 110),
            skip("b", 0, 200),
            skip("b", 8192, 200),
        ];
        let sweep = Totals::of_sweep(
            &[
                layout("a", 0, 100),
                layout("a", 4096, 120),
                layout("b", 0, 200),
                layout("b", 4096, 250),
            ],
            "gtest",
        );
        let table = spread_table(&skips, &sweep, &["a", "b", "c"], &["lab"]);
        assert!(
            table.contains("| a | lab | 10.00 % | 20.00 % | 50 % |"),
            "{table}"
        );
        assert!(
            table.contains("| b | lab | 0.00 % | 25.00 % | 0 % |"),
            "{table}"
        );
        assert!(
            !table.contains("| c |"),
            "a case not run is left out: {table}"
        );
        assert!(
            table.contains("a median **25.0 %** of `lab`'s layout spread (2 programs)"),
            "{table}"
        );
        let per_skip = per_skip_table(&skips, &["a", "b"], &["lab"]);
        assert!(
            per_skip.contains("| a | lab | +0.0 | +10.0 |"),
            "{per_skip}"
        );
    }

    #[test]
    fn a_dear_layout_adds_the_same_page_to_both_and_the_cheaper_spreads_wider() {
        let page = PAGE_WRITE_GAS as u64;
        let row = |variant: &str, offset: u32, total: u64| LayoutRow {
            variant: variant.into(),
            ..layout("a", offset, total)
        };
        let sweep = Totals::of_sweep(
            &[
                row("shipping", 0, 1_000_000_000),
                row("shipping", 4096, 1_000_000_000 + 2 * page),
                row("lab", 0, 500_000_000),
                row("lab", 4096, 500_000_000 + 2 * page),
            ],
            "gtest",
        );
        let map = |message: u32| PageMapRow {
            case: "a".into(),
            variant: "lab".into(),
            layout: "cheap".into(),
            offset: 0,
            heap_base: 0,
            probe_heap_base: 0,
            message,
            page: 70,
            kind: "static".into(),
            written: true,
        };
        let table = dear_minus_cheap(&sweep, &[map(0), map(1)], &["a"], "shipping", "lab");
        assert!(
            table.contains("| a | 2 | 136.9M (1.00) | 27.38 % | 136.9M (1.00) | 54.75 % | 1.00 |"),
            "{table}"
        );
        assert!(table.contains("**1.00** (1 programs)"), "{table}");
    }
}
