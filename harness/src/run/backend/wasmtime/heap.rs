//! Gear's page allocations as the meter keeps them: which Wasm pages above the static ones a
//! program holds, first fit as Gear allocates, rolled back with a failed message.

use super::{MAX_PAGES, WASM_PAGE};

/// Gear's page allocations: which Wasm pages above the static ones the program holds.
pub(super) struct Heap {
    static_pages: u32,
    allocated: Vec<bool>,
    /// At the start of the message, to roll back to.
    at_start: Vec<bool>,
    /// Allocated at any time during the message (a freed one must lose its data).
    held: Vec<bool>,
}

impl Heap {
    pub(super) fn new(static_pages: u32) -> Self {
        let none = vec![false; MAX_PAGES as usize];
        Heap {
            static_pages,
            allocated: none.clone(),
            at_start: none.clone(),
            held: none,
        }
    }

    pub(super) fn begin(&mut self) {
        self.at_start.clone_from(&self.allocated);
        self.held.clone_from(&self.allocated);
    }

    /// First fit, as Gear's `AllocationsContext::alloc`.
    pub(super) fn alloc(&mut self, pages: u32) -> Option<u32> {
        if pages == 0 {
            return Some(self.static_pages);
        }
        let (lo, pages) = (self.static_pages as usize, pages as usize);
        let mut start = lo;
        while start + pages <= MAX_PAGES as usize {
            match self.allocated[start..start + pages]
                .iter()
                .rposition(|a| *a)
            {
                Some(taken) => start += taken + 1,
                None => {
                    self.allocated[start..start + pages].fill(true);
                    self.held[start..start + pages].fill(true);
                    return Some(start as u32);
                }
            }
        }
        None
    }

    /// Gear's `free`: one page the program holds; any other page is an error.
    pub(super) fn free(&mut self, page: u32) -> bool {
        match self.allocated.get_mut(page as usize) {
            Some(held) if *held && page >= self.static_pages => {
                *held = false;
                true
            }
            _ => false,
        }
    }

    /// Gear's `free_range`: inclusive; pages not held are fine, a range outside the heap is not.
    pub(super) fn free_range(&mut self, start: u32, end: u32) -> bool {
        if start < self.static_pages || end >= MAX_PAGES || start > end {
            return false;
        }
        self.allocated[start as usize..=end as usize].fill(false);
        true
    }

    /// Byte ranges of pages held during the message and free at its end.
    pub(super) fn freed(&self) -> Vec<std::ops::Range<usize>> {
        (0..MAX_PAGES as usize)
            .filter(|&p| self.held[p] && !self.allocated[p])
            .map(|p| p * WASM_PAGE..(p + 1) * WASM_PAGE)
            .collect()
    }

    pub(super) fn rollback(&mut self) {
        self.allocated.clone_from(&self.at_start);
    }

    /// Runs of held pages when the message began: the intervals of Gear's allocations tree.
    pub(super) fn intervals_at_start(&self) -> u32 {
        let starts = self
            .at_start
            .iter()
            .enumerate()
            .filter(|&(p, held)| *held && (p == 0 || !self.at_start[p - 1]))
            .count();
        starts as u32
    }
}
