//! The prices the anatomy measures on the runs: gas per unit of fuel of each variant's
//! allocator (from the probe) and of each program's own instructions.

use super::key;
use crate::analyse::fit::least_squares;
use crate::analyse::layout::median;
use crate::results::pages::{allocations_gas, page_gas};
use crate::results::MessageRow;
use std::collections::BTreeMap;

/// Whether a message's allocator calls first-touched no page (probe builds on the fuel meter).
fn touched_nothing(m: &MessageRow) -> bool {
    [
        m.probe_first_allocator_static,
        m.probe_first_allocator_heap,
        m.probe_first_allocator_block,
    ]
    .iter()
    .all(|t| *t == Some(0))
}

/// Each variant's allocator gas per unit of allocator fuel: the median, over the messages that
/// succeeded, made allocator calls and first-touched no page inside them, of gtest's allocator
/// gas over the fuel meter's allocator fuel.
pub(super) fn allocator_prices(
    gas: &BTreeMap<(String, String, u64), &MessageRow>,
    fuel: &[&MessageRow],
) -> BTreeMap<String, f64> {
    let mut ratios: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for f in fuel {
        let Some(g) = gas.get(&key(&f.case, &f.variant, f.message)) else {
            continue;
        };
        if f.failed || g.failed || f.allocator_cost == 0 || !touched_nothing(f) {
            continue;
        }
        ratios
            .entry(f.variant.clone())
            .or_default()
            .push(g.allocator_cost as f64 / f.allocator_cost as f64);
    }
    ratios
        .into_iter()
        .map(|(v, mut r)| (v, median(&mut r)))
        .collect()
}

/// Each program's gas per unit of its own fuel: the least-squares slope, over its messages at
/// the linker's layout on every variant (`init` and failed messages left out), of what gtest
/// charged less the code, page, held and allocator-instruction charges, on the plain build's
/// fuel less the allocator's, with an intercept (the message's fixed charges).
pub(super) fn program_prices(
    gas: &BTreeMap<(String, String, u64), &MessageRow>,
    fuel: &[&MessageRow],
    code: &BTreeMap<(String, String), u64>,
    allocator: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    let mut by_program: BTreeMap<String, (Vec<Vec<f64>>, Vec<f64>)> = BTreeMap::new();
    for f in fuel {
        let (Some(g), Some(code), Some(price)) = (
            gas.get(&key(&f.case, &f.variant, f.message)),
            code.get(&(f.case.clone(), f.variant.clone())),
            allocator.get(&f.variant),
        ) else {
            continue;
        };
        if f.message == 0 || f.failed || g.failed {
            continue;
        }
        let counts = f.page_counts();
        let named = *code as f64
            + page_gas(&counts) as f64
            + allocations_gas(&counts) as f64
            + f.allocator_cost as f64 * price;
        let entry = by_program.entry(f.case.clone()).or_default();
        entry
            .0
            .push(vec![1.0, f.cost.saturating_sub(f.allocator_cost) as f64]);
        entry.1.push(g.cost as f64 - named);
    }
    by_program
        .into_iter()
        .filter(|(_, (x, _))| x.len() >= 2)
        .filter_map(|(p, (x, y))| {
            let (coef, _) = least_squares(&x, &y);
            let slope = *coef.get(1)?;
            slope.is_finite().then_some((p, slope.max(0.0)))
        })
        .collect()
}
