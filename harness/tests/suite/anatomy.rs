//! The gas anatomy held to gtest (docs/ship.md, "Where the gas goes"), on a run measured here:
//! three programs on four variants at two layouts, gtest and the fuel meter.
//!
//! - **Code**: on messages that differ only in code (the same fuel, the same page counts of
//!   every kind, the same held runs, no allocator call), gtest's gas differs by exactly the
//!   difference of the builds' code charges ([`galloc_lab::build::charge::code_gas`]).
//! - **Pages**: gtest's gas per message, regressed on the page charges the fuel meter's counts
//!   give at gear-core's weights with one intercept per message (only the variant changes),
//!   has a weight of 1.00 ± 0.01.
//! - **The rest**: every run's parts sum to its gas, and what no part names (syscalls, fixed
//!   charges) is the same on every variant of a program to 0.05 % of a message's gas, a message
//!   on average: whatever an allocator moves, a named part holds. A charge every variant of a
//!   program pays alike cancels in these differences: the code charge's sections are checked
//!   only where builds differ in them.

use galloc_lab::analyse::anatomy::{Anatomy, Part};
use galloc_lab::results::pages::{allocations_gas, page_gas, PageCounts};
use galloc_lab::results::{read_csv, LayoutRow, MessageRow, OpRow};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const CASES: [&str; 3] = ["ft-stress", "nft-stress", "synthetic-map"];
const VARIANTS: [&str; 4] = ["shipping", "lab", "talc", "bump"];

/// Every row of `file` on both backends in `dir`.
fn both<T: serde::de::DeserializeOwned>(dir: &Path, file: &str) -> Vec<T> {
    ["gtest", "wasmtime"]
        .iter()
        .flat_map(|b| read_csv::<T>(&dir.join(b).join(file)).unwrap())
        .collect()
}

fn counts(m: &MessageRow) -> PageCounts {
    PageCounts {
        read: m.pages_read.unwrap(),
        write: m.pages_written.unwrap(),
        write_after_read: m.pages_write_after_read.unwrap(),
        loaded: m.pages_loaded.unwrap(),
        allocation_intervals: m.allocation_intervals.unwrap(),
        ..Default::default()
    }
}

#[test]
fn the_anatomy_holds_to_gtest() {
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_lab"))
        .args([
            "measure",
            "--quiet",
            "--no-second-workload",
            "--layouts",
            "2",
            "--fuel-stride",
            "1",
            "--cases",
            &CASES.join(","),
            "--variants",
            &VARIANTS.join(","),
            "--out",
        ])
        .arg(out.path())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let layouts: Vec<LayoutRow> = both(out.path(), "layouts.csv");
    let messages: Vec<MessageRow> = both(out.path(), "messages.csv.zst");
    let ops: Vec<OpRow> = both(out.path(), "ops.csv");

    // Code: messages that differ only in code.
    let code: BTreeMap<(&str, &str), u64> = layouts
        .iter()
        .filter(|r| r.backend == "gtest" && r.offset == 0)
        .map(|r| ((r.case.as_str(), r.variant.as_str()), r.code_gas.unwrap()))
        .collect();
    let by = |backend: &str| -> BTreeMap<(&str, &str, u64), &MessageRow> {
        messages
            .iter()
            .filter(|m| m.backend == backend)
            .map(|m| ((m.case.as_str(), m.variant.as_str(), m.message), m))
            .collect()
    };
    let (gas, fuel) = (by("gtest"), by("wasmtime"));
    let calls = |m: &MessageRow| m.malloc_calls + m.calloc_calls + m.realloc_calls + m.free_calls;
    let mut code_only = BTreeMap::new();
    for (&(case, variant, n), f) in &fuel {
        let Some(s) = fuel.get(&(case, "shipping", n)) else {
            continue;
        };
        if variant == "shipping" || calls(f) + calls(s) > 0 || f.cost != s.cost {
            continue;
        }
        if counts(f) != counts(s) {
            continue;
        }
        let difference =
            gas[&(case, variant, n)].cost as i64 - gas[&(case, "shipping", n)].cost as i64;
        let charged = code[&(case, variant)] as i64 - code[&(case, "shipping")] as i64;
        assert_eq!(
            difference, charged,
            "{case} message {n}, {variant} against shipping"
        );
        *code_only.entry(variant).or_insert(0) += 1;
    }
    // ft-stress has thousands for talc and bump (their calls never happen after `init`'s).
    for v in ["talc", "bump"] {
        assert!(
            code_only.get(v).copied().unwrap_or(0) > 1_000,
            "{v}: {code_only:?}"
        );
    }

    // Pages: one intercept per message, the page charges' weight fitted within messages, on
    // what gtest charged less the code, the held runs and the allocator's instructions (its
    // fuel at the variant's measured price).
    let anatomy = Anatomy::of(&layouts, &messages, &ops);
    for case in CASES {
        let (mut sxy, mut sxx) = (0.0, 0.0);
        let mut groups: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
        for (&(c, v, n), f) in &fuel {
            let g = gas[&(c, v, n)];
            // bump's calls here all take fresh pages: it has no price on these two programs.
            if c != case || f.failed || g.failed || v == "bump" {
                continue;
            }
            let x = page_gas(&counts(f)) as f64;
            let y = g.cost as f64
                - code[&(c, v)] as f64
                - allocations_gas(&counts(f)) as f64
                - f.allocator_cost as f64
                    * anatomy
                        .prices
                        .allocator
                        .get(v)
                        .unwrap_or_else(|| panic!("{v}: {:?}", anatomy.prices));
            groups.entry(n).or_default().push((x, y));
        }
        for points in groups.values().filter(|p| p.len() > 1) {
            let mx = points.iter().map(|p| p.0).sum::<f64>() / points.len() as f64;
            let my = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
            for (x, y) in points {
                sxy += (x - mx) * (y - my);
                sxx += (x - mx) * (x - mx);
            }
        }
        assert!(
            sxx > 0.0,
            "{case}: no message whose pages differ between variants"
        );
        let weight = sxy / sxx;
        assert!((weight - 1.0).abs() <= 0.01, "{case}: page weight {weight}");
    }

    // The rest: the parts sum to the gas, and no variant moves what no part names.
    for case in CASES {
        let reference = anatomy.run(case, "shipping", 0).unwrap();
        let messages = code_count(&layouts, case) as f64;
        let per_message = reference.total as f64 / messages;
        for v in ["shipping", "lab", "talc"] {
            let run = anatomy.run(case, v, 0).unwrap();
            let sum: f64 = run.parts.iter().sum();
            assert!((sum - run.total as f64).abs() < 1.0, "{case} {v}");
            // Per message, on average. The issue asks 0.5 % of a message's gas; it holds to a
            // tenth of that (0.02 % at most here), so a part of a few hundredths of a point left
            // unnamed fails.
            let moved = (run.part(Part::Rest) - reference.part(Part::Rest)) / messages;
            assert!(
                moved.abs() < 0.0005 * per_message,
                "{case} {v}: the rest moved by {moved:.0} gas a message, {:.3} % of one",
                100.0 * moved / per_message
            );
        }
    }
}

/// The messages of `case`'s runs.
fn code_count(layouts: &[LayoutRow], case: &str) -> u64 {
    layouts
        .iter()
        .find(|r| r.case == case)
        .and_then(|r| r.messages)
        .unwrap()
}
