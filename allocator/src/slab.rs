//! Small-block slabs with out-of-band metadata: the lab's own front.
//!
//! What the measurements showed: on `nft-stress` 95% of `malloc`s are 64 bytes or less, and
//! the allocator's gas is mostly *pages*: a Gear message pays for every 16 KiB page it first
//! touches, and dlmalloc reads and writes chunk headers and free-list links that sit in the
//! heap, next to (or far from) the block asked for. Here small blocks live in 1 KiB runs of
//! one size class each, carved lowest address first from one Wasm page, and which slots are
//! used is recorded in bitmaps kept with the allocator's other state, never in the runs: `malloc` and `free`
//! of a small block touch no heap page at all (the program touches the block's page when it
//! writes the block, as it would anyway), and the slots fill lowest first, so small data
//! stays packed in few pages. Unlike the static buffers of the 2023 study, the front stays
//! open after dlmalloc has memory (see [`Front::STAYS_OPEN`]); what does not fit (a larger
//! or over-aligned request, or full spans) goes to the allocator behind.
//!
//! The runs are the heap-base tail (see [`Slabs::take_runs`]), taken on the first small
//! request; on the host each front allocates its own, so tests can run many heaps at once.

use crate::buffer::Front;
use core::ptr::NonNull;

/// Bytes per span: one Gear page.
pub const SPAN: usize = crate::source::GEAR_PAGE;
/// Slot sizes; a request takes the first class it fits.
const CLASSES: [usize; 3] = [16, 32, 64];
/// Bytes per run: the unit a class is given, so that every class shares the lowest page.
const RUN: usize = 1024;
/// Runs in the spans.
const RUNS: usize = SPANS * SPAN / RUN;

#[cfg(not(target_arch = "wasm32"))]
#[repr(C, align(16384))]
struct Arena([[u8; SPAN]; SPANS]);

/// Spans of the front: 64 KiB at most (a Wasm page, when the heap-base tail is too short).
pub const SPANS: usize = 4;

/// The slab front: `SPANS` spans of [`SPAN`] bytes.
pub struct Slabs {
    /// Class index + 1 of each run; 0 while unassigned.
    class: [u8; RUNS],
    /// Bit `i` of run `r`: slot `i` is used (a run has at most 64 slots).
    used: [u64; RUNS],
    /// Address of the first run; 0 until the first small request takes the runs.
    base: usize,
    /// Runs available from `base` (at most [`RUNS`]).
    runs: usize,
    /// The host's spans (a test runs many heaps at once, so each has its own).
    #[cfg(not(target_arch = "wasm32"))]
    arena: Option<std::boxed::Box<Arena>>,
}

impl Slabs {
    #[inline(always)]
    fn base(&self) -> *mut u8 {
        self.base as *mut u8
    }

    /// Takes the runs. On Gear: the heap-base tail, the rest of the Wasm page static data
    /// ends in, whose first Gear page every message touches anyway (the heap behind is built
    /// to leave it alone); when the tail is under four runs, one page from the `alloc`
    /// syscall. Measured before: a `static` arena (Rust zero-fills `.bss` at start-up with
    /// imported memory, writing every page in `init`, and aligning it split static data over
    /// two pages: one more page per message), and a fresh page per size class (a message
    /// using three classes touched three pages).
    #[cold]
    fn take_runs(&mut self) -> bool {
        #[cfg(target_arch = "wasm32")]
        {
            use crate::source::{heap_tail, GearPages, PageSource};
            let (start, len) = heap_tail(&GearPages, CLASSES[0]);
            if len >= 4 * RUN {
                (self.base, self.runs) = (start as usize, (len / RUN).min(RUNS));
            } else if let Some(page) = GearPages.alloc(1) {
                (self.base, self.runs) = (GearPages.page_addr(page) as usize, RUNS);
            }
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            let arena = std::boxed::Box::new(Arena([[0; SPAN]; SPANS]));
            (self.base, self.runs) = (arena.0.as_ptr() as usize, RUNS);
            self.arena = Some(arena);
        }
        self.base != 0
    }

    /// The class index a request of `size` bytes fits, if any.
    #[inline(always)]
    fn class_for(size: usize) -> Option<usize> {
        CLASSES.iter().position(|&c| size <= c)
    }

    /// A free slot of class `c` in run `r`, marked used.
    #[inline(always)]
    fn take(&mut self, r: usize, c: usize) -> Option<NonNull<u8>> {
        let slots = RUN / CLASSES[c];
        let free = !self.used[r] & (u64::MAX >> (64 - slots));
        if free == 0 {
            return None;
        }
        let slot = free.trailing_zeros() as usize;
        self.used[r] |= 1 << slot;
        NonNull::new(self.base().wrapping_add(r * RUN + slot * CLASSES[c]))
    }
}

impl Front for Slabs {
    const NEW: Self = Slabs {
        class: [0; RUNS],
        used: [0; RUNS],
        base: 0,
        runs: 0,
        #[cfg(not(target_arch = "wasm32"))]
        arena: None,
    };
    const ENABLED: bool = true;
    const STAYS_OPEN: bool = true;
    const TAKES_TAIL: bool = true;

    // Not inlined: the heap calls it from `malloc`, `calloc` and `realloc`, and three copies
    // of the run search cost more code bytes (gas on every message) than a call costs fuel.
    #[inline(never)]
    fn alloc(&mut self, size: usize, align: usize) -> Option<NonNull<u8>> {
        let c = Self::class_for(size)?;
        if align > CLASSES[0] {
            return None;
        }
        if self.base == 0 && !self.take_runs() {
            return None;
        }
        // Lowest address first, whatever the class: small data stays packed in few pages.
        for r in 0..self.runs {
            if self.class[r] as usize == c + 1 {
                if let Some(slot) = self.take(r, c) {
                    return Some(slot);
                }
            } else if self.class[r] == 0 {
                self.class[r] = c as u8 + 1;
                return self.take(r, c);
            }
        }
        None
    }

    #[inline(always)]
    fn owns(&self, ptr: *const u8) -> bool {
        (ptr as usize).wrapping_sub(self.base) < self.runs * RUN
    }

    #[inline(always)]
    fn cell_size(&self, ptr: *const u8) -> usize {
        let r = (ptr as usize - self.base) / RUN;
        CLASSES[self.class[r] as usize - 1]
    }

    #[inline(always)]
    fn free(&mut self, ptr: *const u8) {
        let offset = ptr as usize - self.base;
        let slot = offset % RUN / self.cell_size(ptr);
        self.used[offset / RUN] &= !(1 << slot);
    }
}

// The limits stated at the top, checked when the crate compiles: the spans fit the one Wasm
// page taken when the tail is short; a run's slots of the smallest class fit its `u64` bitmap;
// runs tile the spans and every class tiles a run; a class index (+ 1) fits its `u8`. After the
// code, not beside the constants: a Wasm build embeds the line of every panic it can reach, so
// lines added above the code would change the bytes of every build of `slabs`.
const _: () = assert!(SPANS * SPAN <= crate::source::WASM_PAGE);
const _: () = assert!(RUN / CLASSES[0] <= u64::BITS as usize);
const _: () = assert!(SPAN.is_multiple_of(RUN));
const _: () = {
    let mut i = 0;
    while i < CLASSES.len() {
        assert!(RUN.is_multiple_of(CLASSES[i]) && (i == 0 || CLASSES[i - 1] < CLASSES[i]));
        i += 1;
    }
};
const _: () = assert!(CLASSES.len() < u8::MAX as usize);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_share_the_lowest_page_and_freed_slots_come_back() {
        let mut f = Slabs::NEW;
        let a = f.alloc(1, 1).unwrap().as_ptr() as usize;
        let b = f.alloc(16, 8).unwrap().as_ptr() as usize;
        let c = f.alloc(17, 8).unwrap().as_ptr() as usize; // 32 B class: the next run
        let d = f.alloc(64, 16).unwrap().as_ptr() as usize;
        let base = f.base() as usize;
        assert_eq!(
            (a - base, b - base, c - base, d - base),
            (0, 16, RUN, 2 * RUN)
        );
        assert_eq!(
            (
                f.cell_size(a as _),
                f.cell_size(c as _),
                f.cell_size(d as _)
            ),
            (16, 32, 64)
        );
        f.free(a as _);
        assert_eq!(
            f.alloc(3, 1).unwrap().as_ptr() as usize,
            a,
            "freed slot reused"
        );
    }

    #[test]
    fn large_over_aligned_or_unplaceable_requests_go_behind() {
        let mut f = Slabs::NEW;
        assert!(f.alloc(65, 8).is_none());
        assert!(f.alloc(8, 32).is_none());
        // Every run taken by the 64 B class, 16 slots each, then nothing.
        for _ in 0..SPANS * SPAN / 64 {
            assert!(f.alloc(64, 8).is_some());
        }
        assert!(f.alloc(64, 8).is_none());
        assert!(f.alloc(8, 8).is_none(), "no run left for another class");
        let base = f.base();
        assert!(f.owns(base) && f.owns(base.wrapping_add(SPANS * SPAN - 1)));
        assert!(!f.owns(base.wrapping_add(SPANS * SPAN)) && !f.owns(base.wrapping_sub(1)));
    }
}
