//! Which 16 KiB pages a message touches, counted the way Gear's lazy pages charge for them,
//! and the undo log that lets a failed message leave memory as it found it.
//!
//! Gear charges, per message and per 16 KiB page above the stack: a first read, a first
//! write, a write after a read (an upgrade), loading the page's stored data on first access,
//! and uploading each page whose content changed. Fuel counts none of that; these counts sit
//! beside fuel in every result so the embedded meter is not blind to it.

use super::granules::Granules;
use super::page_map::{Ages, MappedPage, PageKind};
pub use crate::results::pages::{FirstTouch, PageCounts};
use crate::results::touches::{MessageTouches, GRANULE};

/// Gear's page: the unit lazy pages charge per.
pub const GEAR_PAGE: usize = 16 * 1024;

/// Where a page was first touched (see [`FirstTouch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Where {
    AllocatorStatic,
    AllocatorHeap,
    AllocatorBlock,
    ProgramStatic,
    ProgramHeap,
}

impl Where {
    /// The short tag `LAB_PAGE_LOG` prints after a page.
    fn tag(self) -> &'static str {
        match self {
            Where::AllocatorStatic => "alloc-static",
            Where::AllocatorHeap => "alloc-heap",
            Where::AllocatorBlock => "alloc-block",
            Where::ProgramStatic => "static",
            Where::ProgramHeap => "heap",
        }
    }
}

/// First touches of the running message, for a probe build.
struct Attribution {
    heap_base: u64,
    /// Between a probe bracket's two counter reads: inside an allocator call.
    inside: bool,
    /// Pages first touched inside the current call, with the address touched: a block or
    /// metadata, decided once the call's record says which blocks it handled.
    pending: Vec<(usize, u64)>,
    /// Pages first touched in this message, and where.
    first: Vec<(usize, Where)>,
    /// Per page: first touched inside an allocator call, and not outside one since.
    allocator_only: Vec<bool>,
    /// With a page map only: where each page was first touched (its address), the live
    /// blocks by start (end, the message that got it) and the blocks freed in this message.
    ages: Option<Ages>,
}

impl Attribution {
    fn settle(&mut self, blocks: &[std::ops::Range<u64>]) {
        for (page, addr) in self.pending.drain(..) {
            let place = if blocks.iter().any(|b| b.contains(&addr)) {
                Where::AllocatorBlock
            } else if addr < self.heap_base {
                Where::AllocatorStatic
            } else {
                Where::AllocatorHeap
            };
            self.first.push((page, place));
            if let Some(ages) = &mut self.ages {
                ages.first_at.push((page, addr));
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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
    attribution: Option<Attribution>,
    /// Per message, the pages it touched by kind ([`PageLog::map_pages`]).
    map: Option<Vec<Vec<MappedPage>>>,
    /// Per message, every granule it touched ([`PageLog::trace_granules`]).
    granules: Option<Granules>,
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
            attribution: None,
            map: None,
            granules: None,
        }
    }

    /// Also keeps, per message, every granule above the stack it touched
    /// ([`MessageTouches`]); the counts stay as they are. Read them with
    /// [`PageLog::take_touches`].
    pub fn trace_granules(&mut self) {
        let granules = self.state.len() * GEAR_PAGE / GRANULE as usize;
        self.granules = Some(Granules {
            index: vec![0; granules],
            touches: Vec::new(),
            done: Vec::new(),
        });
    }

    /// The granules of the messages so far, `init` first; empty without
    /// [`PageLog::trace_granules`].
    pub fn take_touches(&mut self) -> Vec<MessageTouches> {
        self.granules
            .as_mut()
            .map(|g| std::mem::take(&mut g.done))
            .unwrap_or_default()
    }

    /// Also keeps, per message, every page it touched with its [`PageKind`] (after
    /// [`PageLog::attribute`]: a probe build), stack pages included; the counts stay as they
    /// are. Read them with [`PageLog::take_map`].
    pub fn map_pages(&mut self) {
        self.map = Some(Vec::new());
        if let Some(a) = &mut self.attribution {
            a.ages = Some(Ages::default());
        }
    }

    /// The page maps of the messages so far, `init` first; empty without [`PageLog::map_pages`].
    pub fn take_map(&mut self) -> Vec<Vec<MappedPage>> {
        self.map.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Drops the last message's map and granules: a read of state, not a message.
    pub fn forget_last_map(&mut self) {
        if let Some(map) = &mut self.map {
            map.pop();
        }
        if let Some(g) = &mut self.granules {
            g.done.pop();
        }
        if let Some(ages) = self.attribution.as_mut().and_then(|a| a.ages.as_mut()) {
            ages.message = ages.message.saturating_sub(1);
        }
    }

    /// Attributes first touches from now on (a probe build, whose heap starts at
    /// `heap_base`): see [`FirstTouch`].
    pub fn attribute(&mut self, heap_base: u32) {
        self.attribution = Some(Attribution {
            heap_base: heap_base.into(),
            inside: false,
            pending: Vec::new(),
            first: Vec::new(),
            allocator_only: vec![false; self.state.len()],
            ages: self.map.is_some().then(Ages::default),
        });
    }

    /// A probe's counter read: a bracket around an allocator call begins or ends. The probe
    /// reads twice per call, before and after it, and its one-time calibration is two reads
    /// back to back, so the reads alternate between entering and leaving a call.
    pub fn counter_read(&mut self) {
        if let Some(a) = &mut self.attribution {
            a.inside = !a.inside;
        }
    }

    /// The call whose bracket just ended took back `freed` and gave out `given` (byte ranges,
    /// either empty): the pages first touched inside it are now attributed.
    pub fn call_done(&mut self, freed: std::ops::Range<u64>, given: std::ops::Range<u64>) {
        if let Some(a) = &mut self.attribution {
            a.settle(&[freed.clone(), given.clone()]);
            if let Some(ages) = &mut a.ages {
                ages.call(freed, given);
            }
        }
    }

    /// The first page accesses are followed on: the stack's too when mapping pages.
    fn from(&self) -> usize {
        if self.map.is_some() {
            0
        } else {
            self.first_tracked
        }
    }

    /// Whether an access would change anything: [`PageLog::touch`] is needed only then (the
    /// common case, a page already seen this way, is answered without touching memory).
    #[inline]
    pub fn needs(&self, addr: u64, len: u64, write: bool) -> bool {
        if len == 0 {
            return false;
        }
        if let Some(g) = &self.granules {
            let tracked = (self.first_tracked * GEAR_PAGE) as u64;
            if g.needs(g.of(tracked, addr, len), write) {
                return true;
            }
        }
        let first = (addr / GEAR_PAGE as u64) as usize;
        let last = ((addr + len - 1) / GEAR_PAGE as u64) as usize;
        let outside_on_allocators_page = |page: usize| {
            self.attribution
                .as_ref()
                .is_some_and(|a| !a.inside && a.allocator_only[page])
        };
        (first.max(self.from())..=last.min(self.state.len() - 1)).any(|page| {
            outside_on_allocators_page(page)
                || match self.state[page] {
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
        if let Some(g) = &mut self.granules {
            let granules = g.of((self.first_tracked * GEAR_PAGE) as u64, addr, len);
            g.touch(granules, write);
        }
        let first = (addr / GEAR_PAGE as u64) as usize;
        let last = ((addr + len - 1) / GEAR_PAGE as u64) as usize;
        for page in first.max(self.from())..=last.min(self.state.len() - 1) {
            let state = self.state[page];
            if page < self.first_tracked {
                // A stack page, for the map only: neither counted nor kept for a rollback.
                if state == State::Untouched || write {
                    self.state[page] = if write {
                        State::Written
                    } else {
                        state.max(State::Read)
                    };
                }
                continue;
            }
            if let Some(a) = &mut self.attribution {
                if !a.inside {
                    a.allocator_only[page] = false;
                }
            }
            match (state, write) {
                (State::Untouched, _) => {
                    if let Some(a) = &mut self.attribution {
                        // Where in the page this access starts (an access may span two).
                        let at = addr.max((page * GEAR_PAGE) as u64);
                        if a.inside {
                            a.pending.push((page, at));
                            a.allocator_only[page] = true;
                        } else {
                            let place = if at < a.heap_base {
                                Where::ProgramStatic
                            } else {
                                Where::ProgramHeap
                            };
                            a.first.push((page, place));
                            if let Some(ages) = &mut a.ages {
                                ages.first_at.push((page, at));
                            }
                        }
                    }
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
        if let Some(g) = &mut self.granules {
            // A written granule changed if its bytes differ from its page's before the message.
            let before: std::collections::HashMap<usize, &[u8]> =
                self.undo.iter().map(|(p, b)| (*p, &b[..])).collect();
            let size = GRANULE as usize;
            g.finish(freed, false, |granule| {
                let at = granule * size;
                let page = at / GEAR_PAGE;
                before.get(&page).is_some_and(|b| {
                    let from = at - page * GEAR_PAGE;
                    memory[at..at + size] != b[from..from + size]
                })
            });
        }
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
        if let Some(g) = &mut self.granules {
            g.finish(&[], true, |_| false);
        }
        for (page, before) in self.undo.drain(..).rev() {
            let start = page * GEAR_PAGE;
            memory[start..start + GEAR_PAGE].copy_from_slice(&before);
        }
        self.finish()
    }

    /// The running message's pages by kind, from where each was first touched (`first`).
    fn mapped(&mut self, first: &[(usize, Where)]) -> Vec<MappedPage> {
        let ages = self.attribution.as_mut().and_then(|a| a.ages.as_mut());
        let mut kinds: Vec<(usize, PageKind)> = Vec::new();
        if let Some(ages) = ages {
            let message = ages.message;
            for ((page, place), (_, at)) in first.iter().zip(&ages.first_at) {
                let kind = match place {
                    Where::ProgramStatic => PageKind::Static,
                    Where::AllocatorStatic | Where::AllocatorHeap => PageKind::AllocatorState,
                    Where::AllocatorBlock | Where::ProgramHeap => match ages.born(*at) {
                        Some(born) if born == message => PageKind::NewBlock,
                        Some(_) => PageKind::OldBlock,
                        None if *place == Where::AllocatorBlock => PageKind::AllocatorState,
                        None => PageKind::Heap,
                    },
                };
                kinds.push((*page, kind));
            }
            ages.first_at.clear();
            ages.freed_now.clear();
            ages.message += 1;
        }
        self.state
            .iter()
            .enumerate()
            .filter(|(_, s)| **s != State::Untouched)
            .map(|(page, s)| MappedPage {
                page: page as u32,
                kind: if page < self.first_tracked {
                    PageKind::Stack
                } else {
                    kinds
                        .iter()
                        .find(|(p, _)| *p == page)
                        .map_or(PageKind::Heap, |(_, k)| *k)
                },
                written: *s == State::Written,
            })
            .collect()
    }

    fn finish(&mut self) -> PageCounts {
        let mut first = Vec::new();
        if let Some(a) = &mut self.attribution {
            // A call still open (a message that failed inside the allocator) handled no block
            // the meter knows of: what it touched is the allocator's.
            a.settle(&[]);
            a.inside = false;
            first = std::mem::take(&mut a.first);
            let mut t = FirstTouch::default();
            for (_, place) in &first {
                *match place {
                    Where::AllocatorStatic => &mut t.allocator_static,
                    Where::AllocatorHeap => &mut t.allocator_heap,
                    Where::AllocatorBlock => &mut t.allocator_block,
                    Where::ProgramStatic => &mut t.program_static,
                    Where::ProgramHeap => &mut t.program_heap,
                } += 1;
            }
            for (page, _) in &first {
                t.allocator_only += u32::from(std::mem::take(&mut a.allocator_only[*page]));
            }
            self.counts.first_touch = Some(t);
        }
        if self.map.is_some() {
            let pages = self.mapped(&first);
            self.map.as_mut().expect("checked").push(pages);
        }
        // Which pages, not just how many, and on a probe build where each was first touched:
        // the clue to where an allocator costs pages (docs/results.md, "Reading the results").
        if std::env::var_os("LAB_PAGE_LOG").is_some() {
            let place = |p: usize| {
                first
                    .iter()
                    .find(|(page, _)| *page == p)
                    .map_or(String::new(), |(_, w)| format!(":{}", w.tag()))
            };
            let pages: Vec<String> = self
                .state
                .iter()
                .enumerate()
                .filter(|(_, s)| **s != State::Untouched)
                .map(|(p, s)| {
                    let kind = if *s == State::Written { "w" } else { "r" };
                    format!("{p}{kind}{}", place(p))
                })
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
    use crate::results::touches::Touch;

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
                first_touch: None,
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

    #[test]
    fn granules_keep_order_first_access_writes_and_changes() {
        let mut mem = vec![0u8; 8 * GEAR_PAGE];
        let mut log = PageLog::new(mem.len(), GEAR_PAGE as u32); // page 0 is the stack
        log.trace_granules();
        let page = GEAR_PAGE as u64;
        let touch = |log: &mut PageLog, mem: &[u8], addr: u64, len: u64, write: bool| {
            // As the hooks call it: only when something would change.
            if log.needs(addr, len, write) {
                log.touch(mem, addr, len, write);
            }
        };
        touch(&mut log, &mem, 8, 8, true); // the stack: not kept
        touch(&mut log, &mem, page + 20, 4, false); // granule page/16 + 1, read
        touch(&mut log, &mem, page + 30, 4, true); // the same granule (and the next), written
        touch(&mut log, &mem, 2 * page, 8, true); // written, will not change
        touch(&mut log, &mem, 2 * page + 40, 4, false); // read only
        mem[page as usize + 30] = 1; // changes the first granule only
        let freed = 3 * GEAR_PAGE..4 * GEAR_PAGE;
        log.commit(&mem, std::slice::from_ref(&freed));
        let g = |addr: u64| (addr / u64::from(GRANULE)) as u32;
        let t = |addr, flags| Touch {
            granule: g(addr),
            flags,
        };
        let w = Touch::FIRST_WRITE | Touch::WRITTEN;
        assert_eq!(
            log.take_touches(),
            [MessageTouches {
                touches: vec![
                    t(page + 20, Touch::WRITTEN | Touch::CHANGED),
                    t(page + 32, w),
                    t(2 * page, w),
                    t(2 * page + 40, 0),
                ],
                freed: std::iter::once(3 * GEAR_PAGE as u32..4 * GEAR_PAGE as u32).collect(),
                failed: false,
            }]
        );
        // A failed message keeps its touches, changes none; a state read is forgotten.
        touch(&mut log, &mem, page + 20, 4, true);
        mem[page as usize + 20] = 2;
        log.rollback(&mut mem);
        touch(&mut log, &mem, page, 4, false);
        log.rollback(&mut mem);
        log.forget_last_map();
        assert_eq!(
            log.take_touches(),
            [MessageTouches {
                touches: vec![t(page + 20, w)],
                freed: Vec::new(),
                failed: true,
            }]
        );
    }

    #[test]
    fn first_touches_are_placed_by_call_and_address() {
        let page = GEAR_PAGE as u64;
        let mem = vec![0u8; 8 * GEAR_PAGE];
        let mut log = PageLog::new(mem.len(), GEAR_PAGE as u32);
        log.attribute(3 * GEAR_PAGE as u32 + 100); // statics: pages 1 to 3
        log.touch(&mem, page + 8, 4, false); // program: static
        log.counter_read(); // calibration: enter ...
        log.counter_read(); // ... and leave at once
        log.counter_read(); // a call begins
        log.touch(&mem, 2 * page, 8, true); // allocator state
        log.touch(&mem, 4 * page + 16, 8, true); // a header beside the block
        log.touch(&mem, 5 * page - 4, 8, true); // the block, over pages 4 and 5
        log.counter_read(); // the call ends
        log.touch(&mem, 6 * page, 8, true); // program: heap (after the call, before its record)
        log.call_done(0..0, 5 * page - 4..5 * page + 60); // its record: `malloc` -> block
        log.touch(&mem, 3 * page + 200, 1, false); // page 3, above the heap base: heap
        log.touch(&mem, 5 * page + 8, 4, true); // the program writes its block's page
        let counts = log.commit(&mem, &[]);
        assert_eq!(
            counts.first_touch,
            Some(FirstTouch {
                allocator_static: 1,
                allocator_heap: 1,
                allocator_block: 1,
                program_static: 1,
                program_heap: 2,
                // Pages 2 and 4: the program touched 5, its block, itself after the call.
                allocator_only: 2,
            })
        );
        assert_eq!(
            counts.first_touch.unwrap().total(),
            counts.read + counts.write,
            "every page is placed once"
        );
        // A call a failed message left open: what it touched is the allocator's.
        log.counter_read();
        log.touch(&mem, 7 * page, 1, true);
        let mut mem = mem;
        let counts = log.rollback(&mut mem);
        assert_eq!(counts.first_touch.unwrap().allocator_heap, 1);
        // Without `attribute` (a plain build) nothing is placed.
        let mut plain = PageLog::new(mem.len(), GEAR_PAGE as u32);
        plain.touch(&mem, page, 1, false);
        assert_eq!(plain.commit(&mem, &[]).first_touch, None);
    }
}
