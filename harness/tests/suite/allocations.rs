//! Holding pages is charged on every message, exactly at the schedule's price.
//!
//! Two variants of a case run the same messages. Where a message calls no allocator on
//! either, executes as many instructions (fuel) and touches the same pages on both, the only differences gtest can charge are the
//! code's size (a constant per pair of programs) and the load of the program's allocations
//! before the message ([`allocations_gas`]). So over all such messages, gtest's gas difference
//! minus the difference in allocations' gas must be one constant. This checks it on the
//! committed results, for every pair, with gtest's own gas and the wasmtime meter's counts.

use galloc_lab::results::pages::allocations_gas;
use galloc_lab::results::{read_csv, MessageRow};
use galloc_lab::run::backend::PageCounts;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn results() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results")
}

type Key = (String, String, u64);

fn by_message(backend: &str) -> BTreeMap<Key, MessageRow> {
    read_csv::<MessageRow>(&results().join(backend).join("messages.csv.zst"))
        .unwrap()
        .into_iter()
        .map(|r| ((r.case.clone(), r.variant.clone(), r.message), r))
        .collect()
}

fn calls(r: &MessageRow) -> u64 {
    r.malloc_calls + r.calloc_calls + r.realloc_calls + r.free_calls
}

fn counts(r: &MessageRow) -> PageCounts {
    PageCounts {
        read: r.pages_read.unwrap(),
        write: r.pages_written.unwrap(),
        write_after_read: r.pages_write_after_read.unwrap(),
        loaded: r.pages_loaded.unwrap(),
        allocation_intervals: r.allocation_intervals.unwrap(),
        ..PageCounts::default()
    }
}

#[test]
fn holding_pages_costs_exactly_the_schedules_price() {
    let gas = by_message("gtest");
    let fuel = by_message("wasmtime");
    let cases: BTreeSet<&String> = gas.keys().map(|k| &k.0).collect();
    let mut pairs_checked = 0;
    let mut messages_where_holding_differs = 0;
    for case in cases {
        let variants: Vec<&String> = gas
            .keys()
            .filter(|k| &k.0 == case && k.2 == 0)
            .map(|k| &k.1)
            .collect();
        for (i, a) in variants.iter().enumerate() {
            for b in &variants[i + 1..] {
                let mut constant: Option<i128> = None;
                let mut differing = 0;
                for m in 0.. {
                    let key = |v: &String| (case.clone(), v.clone(), m);
                    let (Some(ga), Some(gb)) = (gas.get(&key(a)), gas.get(&key(b))) else {
                        break;
                    };
                    let (fa, fb) = (&fuel[&key(a)], &fuel[&key(b)]);
                    let (ca, cb) = (counts(fa), counts(fb));
                    let same_pages = (ca.read, ca.write, ca.write_after_read, ca.loaded)
                        == (cb.read, cb.write, cb.write_after_read, cb.loaded);
                    if m == 0 || calls(ga) + calls(gb) != 0 || fa.cost != fb.cost || !same_pages {
                        continue;
                    }
                    let rest = (gb.cost as i128 - ga.cost as i128)
                        - (allocations_gas(&cb) as i128 - allocations_gas(&ca) as i128);
                    if ca.allocation_intervals != cb.allocation_intervals {
                        differing += 1;
                    }
                    match constant {
                        None => constant = Some(rest),
                        Some(c) => assert_eq!(
                            c, rest,
                            "{case} {a} → {b}, message {m}: gas difference less the allocations' \
                             gas is {rest}, not {c} as on the pair's other such messages"
                        ),
                    }
                }
                if constant.is_some() {
                    pairs_checked += 1;
                    messages_where_holding_differs += differing;
                }
            }
        }
    }
    // The relation is only a test if it was exercised: many pairs, and messages where the
    // two variants hold different runs (ft-stress: shipping holds none for its first 621).
    assert!(pairs_checked > 100, "{pairs_checked} pairs checked");
    assert!(
        messages_where_holding_differs > 1_000,
        "{messages_where_holding_differs} messages where the runs held differ"
    );
}

/// Every committed page placement adds up: per case and variant, the five places are the probe
/// build's pages (counted apart, as first reads plus first writes), the pages the allocator
/// alone added are among those it first touched, and the per-message columns sum to the case's.
#[test]
fn first_touches_add_up_to_the_probe_builds_pages() {
    let rows: Vec<galloc_lab::results::PagesRow> =
        read_csv(&results().join("wasmtime").join("pages.csv")).unwrap();
    let messages = by_message("wasmtime");
    assert!(!rows.is_empty());
    for p in &rows {
        let what = format!("{}/{}", p.case, p.variant);
        let inside = p.first_allocator_static + p.first_allocator_heap + p.first_allocator_block;
        assert_eq!(
            inside + p.first_program_static + p.first_program_heap,
            p.probe_pages,
            "{what}"
        );
        assert!(p.allocator_only <= inside, "{what}");
        let of = |f: fn(&MessageRow) -> Option<u32>| -> u64 {
            messages
                .values()
                .filter(|m| m.case == p.case && m.variant == p.variant)
                .map(|m| u64::from(f(m).unwrap()))
                .sum()
        };
        assert_eq!(
            of(|m| m.probe_first_allocator_heap),
            p.first_allocator_heap,
            "{what}"
        );
        assert_eq!(
            of(|m| m.probe_first_program_heap),
            p.first_program_heap,
            "{what}"
        );
        assert_eq!(of(|m| m.probe_allocator_only), p.allocator_only, "{what}");
    }
}
