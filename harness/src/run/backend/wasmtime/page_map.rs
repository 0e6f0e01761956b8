//! Page maps: per message, every page touched with what touched it first, blocks dated by the
//! message that got them ([`super::pages::PageLog::map_pages`]; drawn by `lab heap-skip`). Kept
//! apart from the counting: a map is for reading where pages go, never part of a count.

use serde::{Deserialize, Serialize};

/// What a page map colours a page by: who touched the page first in the message, and for a
/// heap block, whether it was given out in this message or an earlier one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PageKind {
    /// Below the stack's end: touched, never charged (Gear keeps no stack pages).
    Stack,
    /// The program's static data, first touched outside allocator calls.
    Static,
    /// First touched by the allocator outside any block it handled: its statics, headers,
    /// free-list links, bitmaps.
    AllocatorState,
    /// A block given out in this message.
    NewBlock,
    /// A block given out in an earlier message.
    OldBlock,
    /// At or above the heap base, in no block the probe reported (memory the program uses
    /// without asking the allocator).
    Heap,
}

impl PageKind {
    /// Every kind, in the order a page map's legend lists them.
    pub const ALL: [PageKind; 6] = [
        PageKind::Stack,
        PageKind::Static,
        PageKind::AllocatorState,
        PageKind::NewBlock,
        PageKind::OldBlock,
        PageKind::Heap,
    ];

    /// Its name in CSVs and legends.
    pub fn name(self) -> &'static str {
        match self {
            PageKind::Stack => "stack",
            PageKind::Static => "static",
            PageKind::AllocatorState => "allocator-state",
            PageKind::NewBlock => "new-block",
            PageKind::OldBlock => "old-block",
            PageKind::Heap => "heap",
        }
    }
}

/// One page a message touched, for a page map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MappedPage {
    /// The 16 KiB Gear page's index in memory.
    pub page: u32,
    pub kind: PageKind,
    /// Whether the message wrote it (else it only read it).
    pub written: bool,
}

/// The blocks a page map dates pages by.
#[derive(Default)]
pub(super) struct Ages {
    pub(super) message: u32,
    pub(super) first_at: Vec<(usize, u64)>,
    live: std::collections::BTreeMap<u64, (u64, u32)>,
    pub(super) freed_now: Vec<(std::ops::Range<u64>, u32)>,
}

impl Ages {
    /// The message that got the block holding `addr`: a live one first (a block freed and its
    /// place given out again in one message dates as the new one), then one freed in this
    /// message.
    pub(super) fn born(&self, addr: u64) -> Option<u32> {
        self.live
            .range(..=addr)
            .next_back()
            .filter(|(_, (end, _))| addr < *end)
            .map(|(_, (_, born))| *born)
            .or_else(|| {
                self.freed_now
                    .iter()
                    .find(|(r, _)| r.contains(&addr))
                    .map(|(_, born)| *born)
            })
    }

    /// A call took back `freed` and gave out `given` (either may be empty).
    pub(super) fn call(&mut self, freed: std::ops::Range<u64>, given: std::ops::Range<u64>) {
        let mut born = self.message;
        if !freed.is_empty() {
            if let Some((end, b)) = self.live.remove(&freed.start) {
                // A block grown or shrunk in place keeps its age.
                if given.start == freed.start {
                    born = b;
                }
                self.freed_now.push((freed.start..end, b));
            }
        }
        if !given.is_empty() {
            self.live.insert(given.start, (given.end, born));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::pages::{PageLog, GEAR_PAGE};
    use super::*;

    #[test]
    fn a_page_map_dates_blocks_by_the_message_that_got_them() {
        let page = GEAR_PAGE as u64;
        let mem = vec![0u8; 8 * GEAR_PAGE];
        let mut log = PageLog::new(mem.len(), GEAR_PAGE as u32); // page 0 is the stack
        log.map_pages();
        log.attribute(2 * GEAR_PAGE as u32); // statics: page 1
        let kinds = |map: &[MappedPage]| -> Vec<(u32, PageKind, bool)> {
            map.iter().map(|m| (m.page, m.kind, m.written)).collect()
        };
        // Message 0: a block on page 3 given out and written; the allocator's state on page 2.
        log.touch(&mem, 100, 4, true); // the stack
        log.touch(&mem, page + 8, 4, false); // a static
        log.counter_read();
        log.counter_read(); // calibration
        log.counter_read();
        log.touch(&mem, 2 * page, 8, true); // the allocator's header
        log.counter_read();
        log.call_done(0..0, 3 * page..3 * page + 64);
        log.touch(&mem, 3 * page + 8, 4, true); // the program writes its block
        let first = log.commit(&mem, &[]);
        // Message 1: a new block on page 4, the old one on page 3 read, then freed.
        log.counter_read();
        log.counter_read();
        log.call_done(0..0, 4 * page..4 * page + 32);
        log.touch(&mem, 4 * page, 4, true);
        log.touch(&mem, 3 * page + 8, 4, false);
        log.counter_read();
        log.counter_read();
        log.call_done(3 * page..3 * page + 64, 0..0);
        log.touch(&mem, 5 * page, 4, false); // heap no block covers
        let second = log.commit(&mem, &[]);
        let maps = log.take_map();
        assert_eq!(
            kinds(&maps[0]),
            [
                (0, PageKind::Stack, true),
                (1, PageKind::Static, false),
                (2, PageKind::AllocatorState, true),
                (3, PageKind::NewBlock, true),
            ]
        );
        assert_eq!(
            kinds(&maps[1]),
            [
                (3, PageKind::OldBlock, false),
                (4, PageKind::NewBlock, true),
                (5, PageKind::Heap, false),
            ]
        );
        // The map changes no count: every page above the stack is in it once.
        for (counts, map) in [(first, &maps[0]), (second, &maps[1])] {
            let above = map.iter().filter(|m| m.kind != PageKind::Stack).count() as u32;
            assert_eq!(above, counts.read + counts.write);
            assert_eq!(counts.first_touch.unwrap().total(), above);
        }
        assert!(log.take_map().is_empty(), "taken once");
    }
}
