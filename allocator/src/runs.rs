//! Small-block runs carved from the heap behind: the lab's front, re-aimed.
//!
//! Placing every page a probe build touches (README, "Where the pages come from") showed why
//! the first slabs lost on programs they were not shaped on: their runs sat in the heap-base
//! tail and the heap behind started on a fresh Wasm page, so a message using both small and
//! larger blocks touched the tail's page *and* the heap's (`synthetic-strings`: one more page
//! a message; `nft`: two). Here a run is an ordinary 1 KiB block of the heap behind, taken
//! when a size class has no free slot, so small blocks sit among the others on the pages the
//! heap already uses, and the heap keeps the tail. Which slots are used is kept in bitmaps
//! with the allocator's state (static data, on the page every message touches), never in the
//! runs; a run's only header is its index in the first word, which `free` reads on the
//! block's own 1 KiB (so on a page the program has just used). Per class, a bit per run says
//! which have a free slot: a request takes the lowest such run in constant time. A run whose
//! slots are all free goes back to any class; beyond a few such runs, they go back to the
//! heap ([`Front::surplus`]), so runs do not pin its pages.

use crate::buffer::Front;
use core::ptr::NonNull;

/// Slot sizes; a request takes the first class it fits.
const CLASSES: [usize; 3] = [16, 32, 64];
/// Bytes per run, and its alignment: a pointer's run is found from its address alone.
pub const RUN: usize = 1024;
/// The run's header: its index, so that `free` finds the run without a search.
const HEADER: usize = 16;
/// Runs at most: 32 KiB of small blocks; beyond that requests go to the heap behind.
pub const MAX_RUNS: usize = 32;

/// The runs front.
pub struct Runs {
    /// Start of each run (the first `count`).
    base: [usize; MAX_RUNS],
    /// Class index of each run with a class.
    class: [u8; MAX_RUNS],
    /// Bit `i` of run `r`: slot `i` is used.
    used: [u64; MAX_RUNS],
    count: usize,
    /// Per class, bit `r`: run `r` has that class and a free slot. A request takes the lowest
    /// such run, so small data stays packed, in constant time.
    open: [u32; CLASSES.len()],
    /// Bit `r`: run `r` is empty and has no class.
    idle: u32,
}

impl Runs {
    /// The class index a request of `size` bytes fits, if any.
    #[inline(always)]
    fn class_for(size: usize) -> Option<usize> {
        CLASSES.iter().position(|&c| size <= c)
    }

    /// The run holding `ptr`, if any: the 1 KiB-aligned word at or below `ptr` names a run,
    /// and the run's recorded start must be exactly there (a word of someone else's data
    /// that happens to look like an index fails that check).
    #[inline(always)]
    fn run_of(&self, ptr: *const u8) -> Option<usize> {
        let start = ptr as usize & !(RUN - 1);
        if ptr as usize - start < HEADER || self.count == 0 {
            return None;
        }
        // SAFETY: `ptr` is a live block, so the memory from its 1 KiB boundary on is mapped
        // (on Gear one linear memory; on the host the same 4 KiB OS page); the word may hold
        // anything, and is only compared. Volatile, so the read is not assumed to be ours.
        let r = unsafe { core::ptr::read_volatile(start as *const u32) } as usize;
        // Both tests, whatever the word: the work (gas) must not depend on what the word
        // holds. It may be static data, which differs between the probe build and its twin
        // (short-circuiting here left 162 `vft-stress` messages a few instructions apart).
        let known = (r < self.count) & (self.base[r % MAX_RUNS] == start);
        known.then_some(r)
    }

    #[inline(always)]
    fn slots(c: usize) -> usize {
        (RUN - HEADER) / CLASSES[c]
    }

    /// A free slot of class `c` in run `r` (which has one), marked used.
    #[inline(always)]
    fn take(&mut self, r: usize, c: usize) -> Option<NonNull<u8>> {
        let all = u64::MAX >> (64 - Self::slots(c));
        let slot = (!self.used[r] & all).trailing_zeros() as usize;
        self.used[r] |= 1 << slot;
        if self.used[r] == all {
            self.open[c] &= !(1 << r);
        }
        NonNull::new((self.base[r] + HEADER + slot * CLASSES[c]) as *mut u8)
    }
}

impl Front for Runs {
    const NEW: Self = Runs {
        base: [0; MAX_RUNS],
        class: [0; MAX_RUNS],
        used: [0; MAX_RUNS],
        count: 0,
        open: [0; CLASSES.len()],
        idle: 0,
    };
    const ENABLED: bool = true;
    const STAYS_OPEN: bool = true;
    const REFILL: usize = RUN;
    const REFILL_ALIGN: usize = RUN;

    // Not inlined: called from `malloc`, `calloc` and `realloc` (code bytes are gas on every
    // message).
    #[inline(never)]
    fn alloc(&mut self, size: usize, align: usize) -> Option<NonNull<u8>> {
        let c = Self::class_for(size)?;
        if align > CLASSES[0] {
            return None;
        }
        let r = if self.open[c] != 0 {
            self.open[c].trailing_zeros() as usize
        } else if self.idle != 0 {
            let r = self.idle.trailing_zeros() as usize;
            self.idle &= !(1 << r);
            self.class[r] = c as u8;
            self.open[c] |= 1 << r;
            r
        } else {
            return None;
        };
        self.take(r, c)
    }

    #[inline(always)]
    fn wants_room(&self, size: usize, align: usize) -> bool {
        self.count < MAX_RUNS && align <= CLASSES[0] && Self::class_for(size).is_some()
    }

    #[inline(always)]
    fn refill(&mut self, block: NonNull<u8>) {
        // SAFETY: `block` is `RUN` bytes, `RUN`-aligned, now this front's.
        unsafe { block.as_ptr().cast::<u32>().write(self.count as u32) };
        self.base[self.count] = block.as_ptr() as usize;
        // The entry may be a given-back run's (or the one moved into its place): clear it.
        self.used[self.count] = 0;
        self.idle |= 1 << self.count;
        self.count += 1;
    }

    #[inline(always)]
    fn owns(&self, ptr: *const u8) -> bool {
        self.run_of(ptr).is_some()
    }

    #[inline(always)]
    fn cell_size(&self, ptr: *const u8) -> usize {
        self.run_of(ptr)
            .map_or(0, |r| CLASSES[self.class[r] as usize])
    }

    #[inline(always)]
    fn free(&mut self, ptr: *const u8) {
        let Some(r) = self.run_of(ptr) else {
            return;
        };
        let c = self.class[r] as usize;
        let slot = (ptr as usize - self.base[r] - HEADER) / CLASSES[c];
        self.used[r] &= !(1 << slot);
        if self.used[r] == 0 {
            // Empty: free for whichever class next needs a run.
            self.open[c] &= !(1 << r);
            self.idle |= 1 << r;
        } else {
            self.open[c] |= 1 << r;
        }
    }

    // `keep` empty runs stay (a class that empties and refills every message would otherwise
    // take and give back a block each time); any other goes back, so runs do not pin the
    // heap's pages (`tests/suite/long_run.rs`: nothing live, every page back after a trim).
    #[inline(always)]
    fn surplus(&mut self, keep: u32) -> Option<NonNull<u8>> {
        if self.idle.count_ones() <= keep {
            return None;
        }
        let r = 31 - self.idle.leading_zeros() as usize;
        self.idle &= !(1 << r);
        let block = self.base[r];
        let last = self.count - 1;
        if r != last {
            // The last run takes the freed index: its table entries, its bits, its header.
            self.base[r] = self.base[last];
            self.class[r] = self.class[last];
            self.used[r] = self.used[last];
            for mask in self.open.iter_mut().chain(core::iter::once(&mut self.idle)) {
                if *mask & (1 << last) != 0 {
                    *mask = (*mask & !(1 << last)) | (1 << r);
                }
            }
            // SAFETY: the moved run is this front's, its header the first word.
            unsafe { (self.base[r] as *mut u32).write(r as u32) };
        }
        self.count = last;
        NonNull::new(block as *mut u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// A `RUN`-aligned block of `RUN` bytes, as the heap behind would give.
    fn run() -> NonNull<u8> {
        let block: &'static mut [u8] = Vec::leak(std::vec![0u8; 2 * RUN]);
        let at = (block.as_mut_ptr() as usize).next_multiple_of(RUN);
        NonNull::new(at as *mut u8).unwrap()
    }

    #[test]
    fn runs_come_from_behind_and_empty_runs_change_class() {
        let mut f = Runs::NEW;
        assert!(f.alloc(8, 8).is_none(), "no room before the first run");
        assert!(f.wants_room(8, 8) && !f.wants_room(65, 8) && !f.wants_room(8, 32));
        let first = run();
        f.refill(first);
        let base = first.as_ptr() as usize;
        let a = f.alloc(8, 8).unwrap().as_ptr() as usize;
        let b = f.alloc(16, 16).unwrap().as_ptr() as usize;
        assert_eq!((a, b), (base + HEADER, base + HEADER + 16));
        assert_eq!(f.cell_size(a as _), 16);
        assert!(!f.owns(base as _), "the header is no slot");
        assert!(f.alloc(17, 8).is_none(), "the only run is the 16 B class's");
        let second = run();
        f.refill(second);
        let c = f.alloc(17, 8).unwrap().as_ptr() as usize;
        assert_eq!(
            (c, f.cell_size(c as _)),
            (second.as_ptr() as usize + HEADER, 32)
        );
        f.free(a as _);
        f.free(b as _);
        // The first run is empty again: it serves the 64 B class now.
        let d = f.alloc(64, 8).unwrap().as_ptr() as usize;
        assert_eq!((d, f.cell_size(d as _)), (base + HEADER, 64));
        // Every 16 B slot of a fresh run: 63 of them, then a new run is wanted.
        let third = run();
        f.refill(third);
        let mut taken = 0;
        while let Some(p) = f.alloc(1, 1) {
            assert!(f.owns(p.as_ptr()));
            taken += 1;
        }
        assert_eq!(taken, (RUN - HEADER) / 16);
    }

    #[test]
    fn one_empty_run_is_kept_and_the_others_go_back() {
        let mut f = Runs::NEW;
        let runs = [run(), run(), run()];
        for r in runs {
            f.refill(r);
        }
        // Three classes, one run each (runs 0, 1, 2).
        let p: Vec<usize> = [8, 24, 40]
            .iter()
            .map(|&n| f.alloc(n, 8).unwrap().as_ptr() as usize)
            .collect();
        f.free(p[0] as _);
        assert_eq!(f.surplus(1), None, "one empty run is kept");
        f.free(p[1] as _);
        // Two empty: the higher index goes back.
        assert_eq!(f.surplus(1), Some(runs[1]));
        assert_eq!(f.surplus(1), None);
        assert!(
            f.owns(p[2] as _),
            "run 2 moved to index 1 and is still found"
        );
        assert_eq!(f.cell_size(p[2] as _), 64);
        // A new run takes index 2, where the moved run's bits were: it starts empty.
        let fresh = run();
        f.refill(fresh);
        let all: Vec<usize> = (0..2 * 15)
            .map(|_| f.alloc(64, 8).unwrap().as_ptr() as usize)
            .collect();
        assert!(
            all.contains(&(fresh.as_ptr() as usize + HEADER)),
            "every slot is free"
        );
        for q in all {
            f.free(q as _);
        }
        while f.surplus(1).is_some() {}
        f.free(p[2] as _);
        assert_eq!(f.surplus(1), Some(runs[2]));
        assert_eq!(f.count, 1);
        // The kept run serves again.
        let q = f.alloc(1, 1).unwrap().as_ptr();
        assert_eq!(q as usize, runs[0].as_ptr() as usize + HEADER);
        // A trim keeps none.
        f.free(q);
        assert_eq!(f.surplus(0), Some(runs[0]));
        assert_eq!((f.count, f.surplus(0)), (0, None));
    }

    #[test]
    fn a_word_that_looks_like_an_index_is_not_a_run() {
        let mut f = Runs::NEW;
        f.refill(run());
        // Someone else's block on another 1 KiB boundary, holding 0 (the first run's index).
        let other = run();
        // SAFETY: a block of our own.
        unsafe { other.as_ptr().cast::<u32>().write(0) };
        assert!(!f.owns(other.as_ptr().wrapping_add(HEADER)));
    }
}
