//! Where the gas goes: every run's gtest gas split into what Gear charges it for, and a
//! variant's change against shipping split the same way (docs/ship.md, "Where the gas goes").
//!
//! A verdict says which variant is cheaper; an allocator maintainer needs to know which charge
//! a change moved. Gear charges a message for its code, its instructions, the 16 KiB pages it
//! touches (a first read, a first write, a write after a read, a load of stored data), the runs
//! of pages the program holds, and syscalls and fixed charges. Each part here is measured:
//! - **code**: [`crate::build::charge::code_gas`] of each build at each layout (gear-core's own
//!   schedule on the module as gtest instruments it), times the messages;
//! - **pages and held runs**: the fuel meter's counts at the same layout, times the schedule's
//!   weights ([`page_weights`], [`allocation_weights`]);
//! - **allocator instructions**: the probe's allocator fuel at the linker's layout times the
//!   variant's price per unit of fuel, measured on the probe: gtest's allocator gas over the
//!   fuel meter's allocator fuel, the median over messages whose allocator calls first-touch no
//!   page (a median: such a message can still pay inside a call for a page the program had read,
//!   or a syscall, which the message's counts cannot exclude);
//! - **program instructions**: the plain build's fuel less the allocator's, at the same layout,
//!   times the program's price (a least-squares slope over its messages at the linker's layout
//!   of the gas the parts above leave, on that fuel);
//! - **rest**: gtest's gas less every part above: the program's syscalls and the fixed charges
//!   of a message, which no allocator moves (the anatomy test holds it to the same figure on
//!   every variant of a program).
//!
//! The instructions' split is the one assumption: allocator fuel is taken at the linker's
//! layout for every layout (the probe build runs there only). Everything else is measured at
//! each layout where both gtest and the fuel meter ran.

use crate::results::pages::{allocation_weights, page_weights};
use crate::results::{LayoutRow, MessageRow, OpRow};
use std::collections::BTreeMap;

pub mod fates;
pub mod lifetimes;
pub mod limits;
pub mod points;
mod prices;

pub use fates::Fates;
pub use lifetimes::Lifetimes;
pub use limits::Limits;
pub use points::{Points, ProgramPoints};
use prices::{allocator_prices, program_prices};

/// What Gear charges a run for, in the order tables show them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Code,
    AllocatorInstructions,
    ProgramInstructions,
    FirstReads,
    FirstWrites,
    WritesAfterRead,
    Loads,
    Held,
    Rest,
}

/// How many parts there are.
pub const PARTS: usize = 9;

impl Part {
    pub const ALL: [Part; PARTS] = [
        Part::Code,
        Part::AllocatorInstructions,
        Part::ProgramInstructions,
        Part::FirstReads,
        Part::FirstWrites,
        Part::WritesAfterRead,
        Part::Loads,
        Part::Held,
        Part::Rest,
    ];

    /// Its name in tables and charts.
    pub fn name(self) -> &'static str {
        match self {
            Part::Code => "code",
            Part::AllocatorInstructions => "allocator instructions",
            Part::ProgramInstructions => "program instructions",
            Part::FirstReads => "first reads",
            Part::FirstWrites => "first writes",
            Part::WritesAfterRead => "writes after read",
            Part::Loads => "loads",
            Part::Held => "held",
            Part::Rest => "rest",
        }
    }

    /// The page charges (what the heap's place moves).
    pub fn is_page(self) -> bool {
        matches!(
            self,
            Part::FirstReads | Part::FirstWrites | Part::WritesAfterRead | Part::Loads
        )
    }
}

/// One run's gas, by part ([`Part::ALL`]'s order), and its gtest total (the parts sum to it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    pub total: u64,
    pub parts: [f64; PARTS],
}

impl Run {
    pub fn part(&self, p: Part) -> f64 {
        self.parts[p as usize]
    }
}

/// The prices the anatomy measures: gas per unit of fuel of each variant's allocator, and of
/// each program's own instructions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prices {
    pub allocator: BTreeMap<String, f64>,
    pub program: BTreeMap<String, f64>,
}

/// Every run's anatomy, by (program, variant, offset), and the prices it used.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Anatomy {
    pub runs: BTreeMap<(String, String, u32), Run>,
    pub prices: Prices,
    /// Each program's calls per op (the same on every variant: the program makes them), from
    /// the fuel meter's per-op rows, for the composite limit.
    calls: BTreeMap<String, [u64; 4]>,
    /// Each (program, variant)'s allocator instruction gas per call of each op (fuel per call
    /// times the variant's price).
    per_call: BTreeMap<(String, String), [f64; 4]>,
}

/// The ops in the per-op rows' names, in [`Anatomy::calls`]' order.
pub(crate) const OPS: [&str; 4] = ["malloc", "calloc", "realloc", "free"];

pub(crate) fn key(case: &str, variant: &str, message: u64) -> (String, String, u64) {
    (case.to_owned(), variant.to_owned(), message)
}

impl Anatomy {
    /// The anatomy of every run both gtest (`layouts`, `messages` with backend `gtest`) and the
    /// fuel meter (`wasmtime`) measured at the same layout, with page counts and code charges
    /// (results written before the anatomy's columns have neither: their runs are left out); `ops` are the
    /// fuel meter's per-op rows. Runs without the allocator's price or the probe's messages at
    /// the linker's layout are left out too.
    pub fn of(layouts: &[LayoutRow], messages: &[MessageRow], ops: &[OpRow]) -> Self {
        Self::of_with(layouts, messages, ops, &BTreeMap::new())
    }

    /// [`Anatomy::of`], with `fallback`'s price for a variant whose messages here price none
    /// (none of its calls ran without first-touching a page: a program that allocates once, or
    /// only into fresh pages): the price is the allocator's, measured on other programs.
    pub fn of_with(
        layouts: &[LayoutRow],
        messages: &[MessageRow],
        ops: &[OpRow],
        fallback: &BTreeMap<String, f64>,
    ) -> Self {
        let gas: BTreeMap<_, &MessageRow> = messages
            .iter()
            .filter(|m| m.backend == "gtest")
            .map(|m| (key(&m.case, &m.variant, m.message), m))
            .collect();
        let fuel: Vec<&MessageRow> = messages
            .iter()
            .filter(|m| m.backend == "wasmtime")
            .collect();
        let mut allocator_fuel: BTreeMap<(String, String), u64> = BTreeMap::new();
        for m in &fuel {
            *allocator_fuel
                .entry((m.case.clone(), m.variant.clone()))
                .or_default() += m.allocator_cost;
        }
        let mut allocator = fallback.clone();
        allocator.extend(allocator_prices(&gas, &fuel));
        let prices = Prices {
            allocator,
            program: BTreeMap::new(),
        };
        let fuel_at: BTreeMap<(String, String, u32), &LayoutRow> = layouts
            .iter()
            .filter(|r| r.backend == "wasmtime")
            .map(|r| ((r.case.clone(), r.variant.clone(), r.offset), r))
            .collect();
        let code_at_linker: BTreeMap<(String, String), u64> = layouts
            .iter()
            .filter(|r| r.backend == "gtest" && r.offset == 0)
            .filter_map(|r| Some(((r.case.clone(), r.variant.clone()), r.code_gas?)))
            .collect();
        let mut anatomy = Anatomy {
            prices,
            ..Default::default()
        };
        anatomy.prices.program =
            program_prices(&gas, &fuel, &code_at_linker, &anatomy.prices.allocator);
        for g in layouts.iter().filter(|r| r.backend == "gtest") {
            let k = (g.case.clone(), g.variant.clone());
            let Some(f) = fuel_at.get(&(g.case.clone(), g.variant.clone(), g.offset)) else {
                continue;
            };
            let (Some(price), Some(program_price), Some(&alloc_fuel)) = (
                anatomy.prices.allocator.get(&g.variant),
                anatomy.prices.program.get(&g.case),
                allocator_fuel.get(&k),
            ) else {
                continue;
            };
            if let Some(parts) = parts(g, f, alloc_fuel, *price, *program_price) {
                anatomy
                    .runs
                    .insert((g.case.clone(), g.variant.clone(), g.offset), parts);
            }
        }
        for o in ops.iter().filter(|o| o.backend == "wasmtime") {
            let Some(i) = OPS.iter().position(|op| *op == o.op) else {
                continue;
            };
            anatomy.calls.entry(o.case.clone()).or_default()[i] = o.count;
            if let Some(price) = anatomy.prices.allocator.get(&o.variant) {
                let per = if o.count == 0 {
                    0.0
                } else {
                    o.total as f64 / o.count as f64 * price
                };
                anatomy
                    .per_call
                    .entry((o.case.clone(), o.variant.clone()))
                    .or_default()[i] = per;
            }
        }
        anatomy
    }

    /// `variant`'s run on `program` at `offset`, where measured.
    pub fn run(&self, program: &str, variant: &str, offset: u32) -> Option<&Run> {
        self.runs
            .get(&(program.to_owned(), variant.to_owned(), offset))
    }

    /// The offsets at which both `variant` and `reference` have an anatomy on `program`.
    pub fn shared(&self, program: &str, variant: &str, reference: &str) -> Vec<u32> {
        self.runs
            .keys()
            .filter(|(p, v, _)| p == program && v == variant)
            .map(|(_, _, o)| *o)
            .filter(|o| self.run(program, reference, *o).is_some())
            .collect()
    }
}

/// Each variant's change against shipping by charge, over the rule's deployments, and the
/// bounds over the designs measured (docs/ship.md, "Where the gas goes", "How far from the
/// best"): what the ship table shows beside its verdicts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Explained {
    /// Each variant's points, where every program has an anatomy.
    pub points: BTreeMap<String, Points>,
    /// The bounds, over [`Explained::designs`].
    pub limits: Option<Limits>,
    /// The designs the bounds are over.
    pub designs: Vec<String>,
    /// Every run's anatomy the figures come from (the case pages show each program's).
    pub anatomy: Anatomy,
}

impl Explained {
    /// `variants` against shipping on `programs`, and the bounds over `designs` (shipping
    /// among them).
    pub fn of(anatomy: Anatomy, programs: &[&str], variants: &[&str], designs: &[&str]) -> Self {
        let reference = galloc_variants::REFERENCE;
        Explained {
            points: variants
                .iter()
                .filter_map(|v| Some(((*v).to_owned(), anatomy.against(v, reference, programs)?)))
                .collect(),
            limits: anatomy.limits(designs, reference, programs),
            designs: designs.iter().map(|d| (*d).to_owned()).collect(),
            anatomy,
        }
    }
}

/// One run's parts from its gtest row `g` and the fuel meter's row `f` at the same layout, with
/// the probe's allocator fuel at the linker's layout and the two prices; `None` when either row
/// lacks the counts or the code charge.
fn parts(
    g: &LayoutRow,
    f: &LayoutRow,
    allocator_fuel: u64,
    price: f64,
    program_price: f64,
) -> Option<Run> {
    let [read, write, write_after_read, load] = page_weights().map(|w| w as f64);
    let [storage_read, per_interval] = allocation_weights().map(|w| w as f64);
    let code = g.code_gas? as f64 * g.messages? as f64;
    let allocator = allocator_fuel as f64 * price;
    let program = f.total.saturating_sub(allocator_fuel) as f64 * program_price;
    let mut parts = [
        code,
        allocator,
        program,
        f.pages_read? as f64 * read,
        f.pages_written? as f64 * write,
        f.pages_write_after_read? as f64 * write_after_read,
        f.pages_loaded? as f64 * load,
        f.holding_messages? as f64 * storage_read + f.allocation_intervals? as f64 * per_interval,
        0.0,
    ];
    parts[Part::Rest as usize] = g.total as f64 - parts.iter().sum::<f64>();
    Some(Run {
        total: g.total,
        parts,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const CODE: u64 = 50_000_000;
    /// Fixed charges and syscalls per message: the rest.
    const FIXED: u64 = 80_000_000;
    const MESSAGES: u64 = 2;
    const ALLOCATOR_FUEL: u64 = 1_000;
    const PROGRAM_FUEL: u64 = 10_000;

    /// What `variant` is made of on program "p" at one layout: page counts (read, written,
    /// written after read, loaded), held runs, code gas, the allocator's price.
    pub(crate) struct Made {
        pub(crate) pages: [u64; 4],
        pub(crate) runs: u64,
        pub(crate) code: u64,
        pub(crate) price: u64,
    }

    /// gtest's total for `m`: the parts at their weights, at program price 4,000.
    fn total(m: &Made) -> u64 {
        let w = page_weights();
        let [read, per_run] = allocation_weights();
        let pages: u64 = m.pages.iter().zip(w).map(|(n, w)| n * w).sum();
        m.code * MESSAGES
            + pages
            + (read + m.runs * per_run)
            + ALLOCATOR_FUEL * m.price
            + PROGRAM_FUEL * 4_000
            + FIXED * MESSAGES
    }

    /// The rows of one run of `variant` at `offset` on both backends, and its messages at the
    /// linker's layout: message 1 calls the allocator and first-touches nothing (it prices the
    /// allocator), message 2 does no allocator work (its fuel prices the program, with 1).
    fn rows(variant: &str, offset: u32, m: &Made) -> (Vec<LayoutRow>, Vec<MessageRow>) {
        let layout = |backend: &str, total: u64| LayoutRow {
            backend: backend.into(),
            case: "p".into(),
            variant: variant.into(),
            offset,
            total,
            pages_read: Some(m.pages[0]),
            pages_written: Some(m.pages[1]),
            pages_write_after_read: Some(m.pages[2]),
            pages_loaded: Some(m.pages[3]),
            allocation_intervals: Some(m.runs),
            holding_messages: Some(1),
            messages: Some(MESSAGES),
            code_gas: Some(m.code),
            ..Default::default()
        };
        let layouts = vec![
            layout("gtest", total(m)),
            layout("wasmtime", ALLOCATOR_FUEL + PROGRAM_FUEL),
        ];
        let mut messages = Vec::new();
        if offset == 0 {
            let message = |backend: &str, n: u64, cost: u64, allocator: u64| MessageRow {
                backend: backend.into(),
                case: "p".into(),
                variant: variant.into(),
                message: n,
                cost,
                allocator_cost: allocator,
                malloc_calls: u64::from(allocator > 0),
                probe_first_allocator_static: Some(0),
                probe_first_allocator_heap: Some(0),
                probe_first_allocator_block: Some(0),
                ..Default::default()
            };
            let gas = |fuel: u64| m.code + FIXED + fuel * 4_000;
            messages.extend([
                message("wasmtime", 1, 3_000, ALLOCATOR_FUEL),
                message(
                    "gtest",
                    1,
                    gas(2_000) + ALLOCATOR_FUEL * m.price,
                    ALLOCATOR_FUEL * m.price,
                ),
                message("wasmtime", 2, 1_000, 0),
                message("gtest", 2, gas(1_000), 0),
                message("wasmtime", 3, 5_000, 0),
                message("gtest", 3, gas(5_000), 0),
            ]);
        }
        (layouts, messages)
    }

    pub(crate) fn anatomy(runs: &[(&str, u32, Made)]) -> Anatomy {
        let (mut layouts, mut messages) = (Vec::new(), Vec::new());
        for (v, o, m) in runs {
            let (l, msgs) = rows(v, *o, m);
            layouts.extend(l);
            messages.extend(msgs);
        }
        Anatomy::of(&layouts, &messages, &[])
    }

    /// Made-up runs whose gas is their parts at Gear's weights: the anatomy gives back each
    /// part to the unit, the prices it was made with, and a rest of exactly the fixed charges.
    #[test]
    fn parts_are_given_back_exactly() {
        let made = Made {
            pages: [3, 2, 1, 4],
            runs: 5,
            code: CODE,
            price: 3_000,
        };
        let a = anatomy(&[("shipping", 0, made)]);
        assert_eq!(a.prices.allocator["shipping"], 3_000.0);
        assert!((a.prices.program["p"] - 4_000.0).abs() < 1e-6);
        let run = a.run("p", "shipping", 0).unwrap();
        let w = page_weights();
        let [read, per_run] = allocation_weights();
        let want = [
            (Part::Code, CODE * MESSAGES),
            (Part::AllocatorInstructions, ALLOCATOR_FUEL * 3_000),
            (Part::ProgramInstructions, PROGRAM_FUEL * 4_000),
            (Part::FirstReads, 3 * w[0]),
            (Part::FirstWrites, 2 * w[1]),
            (Part::WritesAfterRead, w[2]),
            (Part::Loads, 4 * w[3]),
            (Part::Held, read + 5 * per_run),
            (Part::Rest, FIXED * MESSAGES),
        ];
        for (part, gas) in want {
            assert!((run.part(part) - gas as f64).abs() < 1e-3, "{part:?}");
        }
        assert_eq!(run.parts.iter().sum::<f64>(), run.total as f64);
    }
}
