//! Pages a message touched, in Gear's charging categories, and what Gear charges for them: the
//! wasmtime meter counts them ([`crate::run::backend::wasmtime`]), every row that holds pages
//! sums them, and the fuel-against-gas analysis prices them
//! ([`crate::analyse::agreement`]).

use gear_core::costs::LazyPagesCosts;
use gear_core::gas_metering::Schedule;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Bytes of one Gear page (what gas is charged per): the sweep covers every position in it.
pub const GEAR_PAGE: u32 = 16 * 1024;

/// Bytes of one Wasm page (what the `alloc` syscall hands out): the sweep spans it.
pub const WASM_PAGE: u32 = 64 * 1024;

/// Per-message page accesses above the stack, in Gear's charging categories.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageCounts {
    /// Pages first read (Gear: `lazy_pages_*_read`).
    pub read: u32,
    /// Pages first written (Gear: `lazy_pages_*_write`).
    pub write: u32,
    /// Pages read, then written (Gear: `lazy_pages_*_write_after_read`).
    pub write_after_read: u32,
    /// Pages accessed whose data an earlier message stored (Gear: `load_page_data`).
    pub loaded: u32,
    /// Written pages whose content differs at the end (Gear uploads these).
    pub changed: u32,
    /// Runs of Wasm pages the program held through `alloc` when the message began. Gear loads
    /// them before every message, charging a storage read plus a cost per run (nothing when
    /// there are none): gas that neither fuel nor page accesses show.
    pub allocation_intervals: u32,
    /// Where each page the message touched was touched first; probe builds only (their
    /// counter reads mark where allocator calls begin and end).
    pub first_touch: Option<FirstTouch>,
}

/// Pages a message touched, by where their first touch was: the design question on Gear,
/// where an allocator costs mostly pages. The five add up to `read + write` of the message's
/// [`PageCounts`] exactly (every page is first touched once, by a read or by a write).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstTouch {
    /// Inside an allocator call, in static data: the allocator's own state (its statics,
    /// a static buffer's cells when not the call's block).
    pub allocator_static: u32,
    /// Inside an allocator call, in the heap, outside the blocks the call handled: chunk
    /// headers, free-list links, footers, bitmaps kept in the heap.
    pub allocator_heap: u32,
    /// Inside an allocator call, in a block it handled: the block handed out (`calloc`'s
    /// clearing, `realloc`'s copy) or the one taken back or moved.
    pub allocator_block: u32,
    /// Outside allocator calls, below the heap base: the program's static data (a probe
    /// build's records included: they are statics written after each call).
    pub program_static: u32,
    /// Outside allocator calls, at or above the heap base: blocks the program reads and
    /// writes (and, for host calls, the buffers it hands the host).
    pub program_heap: u32,
    /// Of the pages first touched inside allocator calls, those the program did not touch
    /// outside them in the message either: what the allocator alone added. A header first
    /// touched beside a block the program then writes is the allocator's first touch but
    /// not an added page.
    pub allocator_only: u32,
}

impl PageCounts {
    /// The counts of two executions together: a step whose block ran several (a program and
    /// the programs it called, a reply it handled) costs all of them.
    pub fn plus(&self, other: &PageCounts) -> PageCounts {
        PageCounts {
            read: self.read + other.read,
            write: self.write + other.write,
            write_after_read: self.write_after_read + other.write_after_read,
            loaded: self.loaded + other.loaded,
            changed: self.changed + other.changed,
            allocation_intervals: self.allocation_intervals + other.allocation_intervals,
            first_touch: match (self.first_touch, other.first_touch) {
                (Some(a), Some(b)) => Some(a.plus(&b)),
                (a, b) => a.or(b),
            },
        }
    }
}

impl FirstTouch {
    fn plus(&self, other: &FirstTouch) -> FirstTouch {
        FirstTouch {
            allocator_static: self.allocator_static + other.allocator_static,
            allocator_heap: self.allocator_heap + other.allocator_heap,
            allocator_block: self.allocator_block + other.allocator_block,
            program_static: self.program_static + other.program_static,
            program_heap: self.program_heap + other.program_heap,
            allocator_only: self.allocator_only + other.allocator_only,
        }
    }

    /// Every page counted.
    pub fn total(&self) -> u32 {
        self.allocator_static
            + self.allocator_heap
            + self.allocator_block
            + self.program_static
            + self.program_heap
    }

    /// Pages first touched inside allocator calls.
    pub fn allocator(&self) -> u32 {
        self.allocator_static + self.allocator_heap + self.allocator_block
    }
}

/// What gtest 2.0's default schedule charges per page: a first read, a first write (which
/// includes the page's upload), a write after a read (the upload too), and a load of stored data,
/// in that order. Signal weights: the few first accesses made by syscalls cost 5 % more on Gear.
pub fn page_weights() -> [u64; 4] {
    static COSTS: OnceLock<[u64; 4]> = OnceLock::new();
    *COSTS.get_or_init(|| {
        let costs = LazyPagesCosts::from(Schedule::default().memory_weights);
        [
            costs.signal_read.cost_for_one(),
            costs.signal_write.cost_for_one(),
            costs.signal_write_after_read.cost_for_one(),
            costs.load_page_storage_data.cost_for_one(),
        ]
    })
}

/// What gtest 2.0's default schedule charges for `c`'s page accesses ([`page_weights`]).
pub fn page_gas(c: &PageCounts) -> u64 {
    let [read, write, write_after_read, load] = page_weights();
    c.read as u64 * read
        + c.write as u64 * write
        + c.write_after_read as u64 * write_after_read
        + c.loaded as u64 * load
}

/// What gtest 2.0's default schedule charges a message for loading the program's allocations
/// (core-processor's `charge_for_allocations`) when it holds any: a storage read, and
/// `load_allocations_per_interval` per run of held pages.
pub fn allocation_weights() -> [u64; 2] {
    static COSTS: OnceLock<[u64; 2]> = OnceLock::new();
    *COSTS.get_or_init(|| {
        let costs = Schedule::default().process_costs();
        [
            costs.db.read.cost_for_one(),
            costs.load_allocations_per_interval.cost_for_one(),
        ]
    })
}

/// What a message holding `c`'s runs pays for loading them ([`allocation_weights`]); nothing
/// when there are none.
pub fn allocations_gas(c: &PageCounts) -> u64 {
    let [read, per_interval] = allocation_weights();
    if c.allocation_intervals == 0 {
        0
    } else {
        read + u64::from(c.allocation_intervals) * per_interval
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_gas_uses_gears_weights() {
        let one_read = PageCounts {
            read: 1,
            ..Default::default()
        };
        let one_write = PageCounts {
            write: 1,
            ..Default::default()
        };
        // Schedule defaults: read 28,491,385; write 34,056,454 + upload 102,822,864.
        assert_eq!(page_gas(&one_read), 28_491_385);
        assert_eq!(page_gas(&one_write), 34_056_454 + 102_822_864);
    }

    /// Schedule defaults: a storage read of 25,000,000 and 20,559 per run of held pages, and
    /// nothing for a program holding none.
    #[test]
    fn allocations_gas_uses_gears_weights() {
        let runs = |n| PageCounts {
            allocation_intervals: n,
            ..Default::default()
        };
        assert_eq!(allocations_gas(&runs(0)), 0);
        assert_eq!(allocations_gas(&runs(1)), 25_000_000 + 20_559);
        assert_eq!(allocations_gas(&runs(3)), 25_000_000 + 3 * 20_559);
    }
}
