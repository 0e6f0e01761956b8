//! Which 16 KiB pages a message touches, counted the way Gear's lazy pages charge for them,
//! and the undo log that lets a failed message leave memory as it found it.
//!
//! Gear charges, per message and per 16 KiB page above the stack: a first read, a first
//! write, a write after a read (an upgrade), loading the page's stored data on first access,
//! and uploading each page whose content changed. Fuel counts none of that; these counts sit
//! beside fuel in every result so the embedded meter is not blind to it.

use serde::{Deserialize, Serialize};

/// Gear's page: the unit lazy pages charge per.
pub const GEAR_PAGE: usize = 16 * 1024;

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
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Untouched,
    Read,
    Written,
}

/// Page accesses of the running message, and what persists between messages.
pub struct PageLog {
    /// First page above the stack: the stack is neither stored nor charged by Gear.
    first_tracked: usize,
    state: Vec<State>,
    /// Pages with data stored by an earlier message.
    stored: Vec<bool>,
    /// Content of each written page before its first write in this message.
    undo: Vec<(usize, Box<[u8]>)>,
    counts: PageCounts,
}

impl PageLog {
    /// A log for a memory of at most `max_bytes`, with the stack ending at `stack_end`.
    pub fn new(max_bytes: usize, stack_end: u32) -> Self {
        let pages = max_bytes / GEAR_PAGE;
        PageLog {
            first_tracked: (stack_end as usize).div_ceil(GEAR_PAGE),
            state: vec![State::Untouched; pages],
            stored: vec![false; pages],
            undo: Vec::new(),
            counts: PageCounts::default(),
        }
    }

    /// Whether an access would change anything: [`PageLog::touch`] is needed only then (the
    /// common case, a page already seen this way, is answered without touching memory).
    #[inline]
    pub fn needs(&self, addr: u64, len: u64, write: bool) -> bool {
        if len == 0 {
            return false;
        }
        let first = (addr / GEAR_PAGE as u64) as usize;
        let last = ((addr + len - 1) / GEAR_PAGE as u64) as usize;
        (first.max(self.first_tracked)..=last.min(self.state.len() - 1)).any(|page| {
            match self.state[page] {
                State::Untouched => true,
                State::Read => write,
                State::Written => false,
            }
        })
    }

    /// Records an access of `len` bytes at `addr`; call it before the access happens, with
    /// `memory` as it is then (a write's page is saved for [`PageLog::rollback`]).
    pub fn touch(&mut self, memory: &[u8], addr: u64, len: u64, write: bool) {
        if len == 0 {
            return;
        }
        let first = (addr / GEAR_PAGE as u64) as usize;
        let last = ((addr + len - 1) / GEAR_PAGE as u64) as usize;
        for page in first.max(self.first_tracked)..=last.min(self.state.len() - 1) {
            let state = self.state[page];
            match (state, write) {
                (State::Untouched, _) => {
                    if self.stored[page] {
                        self.counts.loaded += 1;
                    }
                    if write {
                        self.counts.write += 1;
                    } else {
                        self.counts.read += 1;
                    }
                }
                (State::Read, true) => self.counts.write_after_read += 1,
                _ => {}
            }
            if write && state != State::Written {
                let start = page * GEAR_PAGE;
                // A page past the memory's current end traps before it is written.
                if let Some(bytes) = memory.get(start..start + GEAR_PAGE) {
                    self.undo.push((page, bytes.into()));
                }
                self.state[page] = State::Written;
            } else if state == State::Untouched {
                self.state[page] = State::Read;
            }
        }
    }

    /// Ends a successful message: counts changed pages, marks them stored, and forgets pages
    /// in `freed` byte ranges (Gear drops a freed page's data). Returns the message's counts.
    pub fn commit(&mut self, memory: &[u8], freed: &[std::ops::Range<usize>]) -> PageCounts {
        for (page, before) in self.undo.drain(..) {
            let start = page * GEAR_PAGE;
            if memory[start..start + GEAR_PAGE] != *before {
                self.counts.changed += 1;
                self.stored[page] = true;
            }
        }
        for range in freed {
            for page in range.start / GEAR_PAGE..range.end / GEAR_PAGE {
                self.stored[page] = false;
            }
        }
        self.finish()
    }

    /// Ends a failed (or read-only) message: every written page gets its old content back.
    pub fn rollback(&mut self, memory: &mut [u8]) -> PageCounts {
        for (page, before) in self.undo.drain(..).rev() {
            let start = page * GEAR_PAGE;
            memory[start..start + GEAR_PAGE].copy_from_slice(&before);
        }
        self.finish()
    }

    fn finish(&mut self) -> PageCounts {
        // Which pages, not just how many: the clue to where an allocator costs pages
        // (README, "Reading the results").
        if std::env::var_os("LAB_PAGE_LOG").is_some() {
            let pages: Vec<String> = self
                .state
                .iter()
                .enumerate()
                .filter(|(_, s)| **s != State::Untouched)
                .map(|(p, s)| format!("{p}{}", if *s == State::Written { "w" } else { "r" }))
                .collect();
            eprintln!("pages: {}", pages.join(" "));
        }
        self.state.fill(State::Untouched);
        std::mem::take(&mut self.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_gears_categories() {
        let mut mem = vec![0u8; 8 * GEAR_PAGE];
        let mut log = PageLog::new(mem.len(), GEAR_PAGE as u32); // page 0 is the stack
        log.touch(&mem, 10, 8, true); // stack: not counted
        log.touch(&mem, GEAR_PAGE as u64, 4, false); // page 1: read
        log.touch(&mem, GEAR_PAGE as u64 + 8, 4, true); // page 1: write after read
        log.touch(&mem, 3 * GEAR_PAGE as u64 - 2, 4, true); // pages 2 and 3: written
        mem[2 * GEAR_PAGE] = 7; // page 2 changes; 1 and 3 keep their bytes
        let first = log.commit(&mem, &[]);
        assert_eq!(
            first,
            PageCounts {
                read: 1,
                write: 2,
                write_after_read: 1,
                loaded: 0,
                changed: 1,
                allocation_intervals: 0,
            }
        );
        log.touch(&mem, 2 * GEAR_PAGE as u64, 1, false); // stored last time: loaded
        log.touch(&mem, 2 * GEAR_PAGE as u64, 1, true);
        mem[2 * GEAR_PAGE] = 9;
        let second = log.rollback(&mut mem);
        assert_eq!(
            (second.read, second.write_after_read, second.loaded),
            (1, 1, 1)
        );
        assert_eq!(mem[2 * GEAR_PAGE], 7, "rollback restores the page");
        // Freeing the page's Wasm page forgets its data.
        let wasm_page_0 = 0..4 * GEAR_PAGE;
        log.commit(&mem, std::slice::from_ref(&wasm_page_0));
        log.touch(&mem, 2 * GEAR_PAGE as u64, 1, false);
        assert_eq!(log.commit(&mem, &[]).loaded, 0);
    }
}
