//! The layout model: a program's page charges at a layout it was not run at, from the granules
//! one run touched ([`TouchTrace`]).
//!
//! A layout offset `d` (the sweep's, or an author's `--global-base`) moves every static `d`
//! bytes up, and the heap base with them. The model moves every granule the run touched as
//! the layout would if nothing but addresses changed: statics by `d`; the heap's blocks by `d`
//! too, as an allocator that places blocks at the same distance from its heap base would put
//! them ([`Heap`] says how far that reaches); the end of each of the heap's Wasm pages stays at
//! the page's end. It then counts, per message, the Gear pages the moved granules fall on, in
//! the meter's own categories ([`PageCounts`]). At offset 0 that is exactly the meter's count
//! (`lab layout-model` checks it on every run). Elsewhere it is exact only where the program
//! and its allocator do the same thing at every heap base; `lab layout-model` measures how far
//! that holds against the sweep (docs/layout-rule.md, "Held against the sweep").

use crate::results::pages::{page_gas, PageCounts, GEAR_PAGE, WASM_PAGE};
use crate::results::touches::{Touch, TouchTrace, GRANULE};

/// Bytes at the end of a Wasm page of the heap (from the heap base on) that keep their place
/// at the page's end whatever the offset: an allocator's region ends at a Wasm page's end at
/// every layout, and so does its end marker (seen with `--explain`: dlmalloc's and `lab`'s
/// last 16-32 bytes before the static pages' end stay put when the heap base moves).
pub const END_ANCHORED: u32 = 32;

/// Where the model puts the heap's blocks at another layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Heap {
    /// At the same distance from the heap base, in the static pages' tail and in the Wasm
    /// pages `alloc` hands out after it alike (they follow the tail without a gap): an
    /// allocator that sees one region from the heap base on.
    #[default]
    Moves,
    /// In the tail, at the same distance from the heap base; in the pages `alloc` hands out,
    /// where they were (those pages move only by the Wasm pages the statics grew by).
    Stays,
}

impl Heap {
    /// As `--heap` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Heap::Moves => "moves",
            Heap::Stays => "stays",
        }
    }

    /// Where the model puts the blocks, in words.
    pub fn how(self) -> &'static str {
        match self {
            Heap::Moves => "by the same offset (an allocator that places them at the same distance from its heap base, in the static pages' tail and in the Wasm pages `alloc` hands out after it alike)",
            Heap::Stays => "by the same offset in the static pages' tail, and in the Wasm pages `alloc` hands out only by the Wasm pages the statics grew by",
        }
    }
}

/// Where offset `offset` puts the granules of `trace`: statics move by the offset; the heap's
/// blocks as [`Heap`] says; the last [`END_ANCHORED`] bytes of each of the heap's Wasm pages
/// by the Wasm pages the statics grew by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    heap_base: u32,
    static_end: u32,
    offset: u32,
    grown: u32,
    heap: Heap,
    /// Bytes the heap's blocks move besides (a workload whose blocks fall elsewhere): 0 but in
    /// [`Move::shifted`].
    shift: i32,
}

impl Move {
    pub fn new(trace: &TouchTrace, offset: u32, heap: Heap) -> Move {
        let pages = |base: u32| base.div_ceil(WASM_PAGE);
        Move {
            heap_base: trace.heap_base,
            static_end: trace.static_pages * WASM_PAGE,
            offset,
            grown: (pages(trace.heap_base + offset) - pages(trace.heap_base)) * WASM_PAGE,
            heap,
            shift: 0,
        }
    }

    /// [`Move::new`], with every block of the heap (not a page's anchored end) `shift` bytes
    /// further: where a workload the run did not see would put its blocks, for a rule that must
    /// hold for them ([`HEAP_SHIFTS`]). A block shifted below address 0 stays at 0.
    pub fn shifted(trace: &TouchTrace, offset: u32, heap: Heap, shift: i32) -> Move {
        Move {
            shift,
            ..Move::new(trace, offset, heap)
        }
    }

    /// The address `addr` moves to.
    pub fn address(&self, addr: u32) -> u32 {
        if addr < self.heap_base {
            return addr + self.offset;
        }
        let at_a_page_end = addr % WASM_PAGE + END_ANCHORED >= WASM_PAGE;
        let in_alloc_pages = addr >= self.static_end;
        if at_a_page_end {
            return addr + self.grown;
        }
        let moved = if in_alloc_pages && self.heap == Heap::Stays {
            addr + self.grown
        } else {
            addr + self.offset
        };
        moved.saturating_add_signed(self.shift)
    }

    /// Wasm pages the statics grew by (0 or 1 within one Wasm page's offsets).
    pub fn grown_pages(&self) -> u32 {
        self.grown / WASM_PAGE
    }
}

/// The shifts of the heap's blocks (bytes) a robust choice of layout holds its prediction to,
/// besides none: the heap's working set a little lower or higher than the run put it
/// (docs/layout-rule.md, "What follows", written down before the rule was measured).
pub const HEAP_SHIFTS: [i32; 4] = [-4096, -2048, 2048, 4096];

/// Per message, `init` first, the page counts `trace` has at `offset` (no allocation runs and
/// no first-touch places: neither moves with the layout).
pub fn page_counts(trace: &TouchTrace, offset: u32, heap: Heap) -> Vec<PageCounts> {
    counts_moved(trace, Move::new(trace, offset, heap))
}

fn counts_moved(trace: &TouchTrace, moved: Move) -> Vec<PageCounts> {
    let page_of = |granule: u32| (moved.address(granule * GRANULE) / GEAR_PAGE) as usize;
    let pages = trace
        .messages
        .iter()
        .flat_map(|m| m.touches.iter().map(|t| page_of(t.granule) + 1))
        .chain(trace.messages.iter().flat_map(|m| {
            m.freed
                .iter()
                .map(|r| (moved.address(r.end) / GEAR_PAGE) as usize)
        }))
        .max()
        .unwrap_or(0);
    // Per page, in the running message: 0 untouched, 1 first read, 2 first written; and
    // whether it was written, and whether its bytes changed.
    let mut first = vec![0u8; pages];
    let mut written = vec![false; pages];
    let mut changed = vec![false; pages];
    let mut stored = vec![false; pages];
    let mut touched = Vec::new();
    trace
        .messages
        .iter()
        .map(|m| {
            let mut c = PageCounts::default();
            for t in &m.touches {
                let p = page_of(t.granule);
                if first[p] == 0 {
                    touched.push(p);
                    if stored[p] {
                        c.loaded += 1;
                    }
                    if t.is(Touch::FIRST_WRITE) {
                        first[p] = 2;
                        c.write += 1;
                    } else {
                        first[p] = 1;
                        c.read += 1;
                    }
                }
                written[p] |= t.is(Touch::WRITTEN);
                changed[p] |= t.is(Touch::CHANGED);
            }
            for p in touched.drain(..) {
                if first[p] == 1 && written[p] {
                    c.write_after_read += 1;
                }
                if changed[p] {
                    c.changed += 1;
                    stored[p] = true;
                }
                (first[p], written[p], changed[p]) = (0, false, false);
            }
            for r in &m.freed {
                let (from, to) = (moved.address(r.start), moved.address(r.end));
                for p in (from / GEAR_PAGE)..(to / GEAR_PAGE) {
                    stored[p as usize] = false;
                }
            }
            c
        })
        .collect()
}

/// What Gear charges for `trace`'s page accesses at `offset`, over every message.
pub fn page_charges(trace: &TouchTrace, offset: u32, heap: Heap) -> u64 {
    shifted_charges(trace, offset, heap, 0)
}

/// [`page_charges`] with the heap's blocks shifted `shift` bytes besides ([`Move::shifted`]).
pub fn shifted_charges(trace: &TouchTrace, offset: u32, heap: Heap, shift: i32) -> u64 {
    counts_moved(trace, Move::shifted(trace, offset, heap, shift))
        .iter()
        .map(page_gas)
        .sum()
}

/// A program's total at another layout predicted from its total at the linker's (`measured`,
/// gas on gtest): the same total, with the page charges there (`at_zero`) replaced by those at
/// the other layout (`charges`, [`page_charges`] or [`shifted_charges`]).
pub fn predicted(measured: u64, charges: u64, at_zero: u64) -> u64 {
    (measured as i128 + charges as i128 - at_zero as i128).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::touches::MessageTouches;

    const W: u8 = Touch::FIRST_WRITE | Touch::WRITTEN;

    fn touch(addr: u32, flags: u8) -> Touch {
        Touch {
            granule: addr / GRANULE,
            flags,
        }
    }

    /// Statics from 64 KiB (the stack below), heap base at 64 KiB + 16,000 (one static Wasm
    /// page), a heap page at 128 KiB.
    fn trace(messages: Vec<MessageTouches>) -> TouchTrace {
        TouchTrace {
            stack_end: WASM_PAGE,
            heap_base: WASM_PAGE + 16_000,
            static_pages: 2,
            messages,
        }
    }

    #[test]
    fn statics_move_by_the_offset_and_heap_pages_by_whole_wasm_pages() {
        let t = trace(Vec::new());
        let at = |offset| Move::new(&t, offset, Heap::Stays);
        let base = t.heap_base;
        assert_eq!(at(0).address(WASM_PAGE + 100), WASM_PAGE + 100);
        assert_eq!(at(512).address(WASM_PAGE + 100), WASM_PAGE + 612);
        // A block in the tail moves with the heap base; the tail's last 32 bytes stay.
        assert_eq!(at(512).address(base + 48), base + 560);
        assert_eq!(at(512).address(2 * WASM_PAGE - 32), 2 * WASM_PAGE - 32);
        assert_eq!(at(512).address(2 * WASM_PAGE - 48), 2 * WASM_PAGE + 464);
        assert_eq!(at(512).address(2 * WASM_PAGE + 8), 2 * WASM_PAGE + 8);
        // The heap base passes 128 KiB: the statics take one more Wasm page, the heap follows.
        assert_eq!(at(49_536).grown_pages(), 0);
        assert_eq!(at(49_552).grown_pages(), 1);
        assert_eq!(at(49_552).address(2 * WASM_PAGE + 8), 3 * WASM_PAGE + 8);
        assert_eq!(at(49_552).address(2 * WASM_PAGE - 16), 3 * WASM_PAGE - 16);
        // With the heap moving, a block in `alloc`'s pages moves with the base too; a page's
        // last 32 bytes stay at its end.
        let moving = Move::new(&t, 512, Heap::Moves);
        assert_eq!(moving.address(2 * WASM_PAGE + 8), 2 * WASM_PAGE + 520);
        assert_eq!(moving.address(3 * WASM_PAGE - 16), 3 * WASM_PAGE - 16);
        assert_eq!(moving.address(WASM_PAGE + 100), WASM_PAGE + 612);
        // Shifted, the heap's blocks move further, statics and anchored ends do not.
        let shifted = Move::shifted(&t, 512, Heap::Moves, -2048);
        assert_eq!(shifted.address(WASM_PAGE + 100), WASM_PAGE + 612);
        assert_eq!(shifted.address(base + 48), base + 560 - 2048);
        assert_eq!(shifted.address(3 * WASM_PAGE - 16), 3 * WASM_PAGE - 16);
        assert_eq!(
            Move::shifted(&t, 0, Heap::Moves, 0),
            Move::new(&t, 0, Heap::Moves)
        );
    }

    #[test]
    fn a_message_s_pages_are_counted_as_the_meter_counts_them() {
        let static_page = WASM_PAGE; // Gear page 4
        let m = MessageTouches {
            touches: vec![
                touch(static_page + 16_368, 0),                  // page 4, read first
                touch(static_page + 16_384, W | Touch::CHANGED), // page 5, written first
                touch(static_page + 100, Touch::WRITTEN),        // page 4, read, then written
            ],
            freed: Vec::new(),
            failed: false,
        };
        let t = trace(vec![m.clone(), m]);
        let counts = page_counts(&t, 0, Heap::Moves);
        assert_eq!(
            (counts[0].read, counts[0].write, counts[0].write_after_read),
            (1, 1, 1)
        );
        assert_eq!((counts[0].loaded, counts[0].changed), (0, 1));
        // Page 5 changed in the first message: the second loads it.
        assert_eq!(counts[1].loaded, 1);
        // 16 bytes up, the granule read at 16,368 joins page 5 before the one written there:
        // page 5 is now read first, then written, as page 4 is.
        let moved = page_counts(&t, 16, Heap::Moves);
        assert_eq!(
            (moved[0].read, moved[0].write, moved[0].write_after_read),
            (2, 0, 2)
        );
        // 16,384 up, every static is a page later: the same counts.
        assert_eq!(page_counts(&t, GEAR_PAGE, Heap::Moves), counts);
    }

    #[test]
    fn a_failed_message_stores_nothing_and_a_freed_page_forgets() {
        let heap = 2 * WASM_PAGE;
        let write = MessageTouches {
            touches: vec![touch(heap, W | Touch::CHANGED)],
            freed: Vec::new(),
            failed: false,
        };
        let read = MessageTouches {
            touches: vec![touch(heap, 0)],
            freed: Vec::new(),
            failed: false,
        };
        let failed = MessageTouches {
            failed: true,
            touches: vec![touch(heap, W)],
            ..read.clone()
        };
        let freed = MessageTouches {
            touches: Vec::new(),
            freed: std::iter::once(heap..heap + WASM_PAGE).collect(),
            failed: false,
        };
        let loads = |messages| -> Vec<u32> {
            page_counts(&trace(messages), 0, Heap::Moves)
                .iter()
                .map(|c| c.loaded)
                .collect()
        };
        assert_eq!(loads(vec![failed, read.clone()]), [0, 0]);
        assert_eq!(loads(vec![write.clone(), read.clone()]), [0, 1]);
        assert_eq!(loads(vec![write, freed, read]), [0, 0, 0]);
    }

    /// The prediction at `offset` from the total at the linker's layout.
    fn predicted_total(trace: &TouchTrace, measured: u64, offset: u32, heap: Heap) -> u64 {
        predicted(
            measured,
            page_charges(trace, offset, heap),
            page_charges(trace, 0, heap),
        )
    }

    #[test]
    fn a_prediction_keeps_the_measured_total_but_the_page_charges() {
        let m = MessageTouches {
            touches: vec![touch(WASM_PAGE + 16_368, 0), touch(WASM_PAGE + 16_384, 0)],
            freed: Vec::new(),
            failed: false,
        };
        let t = trace(vec![m]);
        let read = page_gas(&PageCounts {
            read: 1,
            ..Default::default()
        });
        assert_eq!(predicted_total(&t, 10 * read, 0, Heap::Moves), 10 * read);
        // 16 bytes up, both granules share page 5: one read fewer.
        assert_eq!(predicted_total(&t, 10 * read, 16, Heap::Moves), 9 * read);
    }
}
