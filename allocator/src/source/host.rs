//! Simulated Gear memory on the host, so the allocator's own code runs in ordinary tests.
//!
//! An arena of `max_pages` 64 KiB pages is reserved up front; the first `static_pages` hold the
//! "program's static data" with `__heap_base` inside the last of them, as a linked Gear program
//! has. `alloc` is first-fit from the lowest free page and `free_range` forgets pages without
//! clearing them, as Gear's allocation context does within a message.

use super::{PageSource, WASM_PAGE};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::cell::Cell;
use std::sync::{Arc, Mutex, MutexGuard};
use std::vec::Vec;

/// The memory of the last arena dropped on this thread, kept for the next one of the same size
/// with the pages it used (`used`), which are cleared before anyone sees them again.
struct Spare {
    raw: *mut u8,
    layout: Layout,
    used: Vec<bool>,
}

impl Drop for Spare {
    fn drop(&mut self) {
        // SAFETY: an arena's allocation, made with this layout, owned by nobody else.
        unsafe { dealloc(self.raw, self.layout) }
    }
}

std::thread_local! {
    /// A fuzzer makes an arena per input: fresh memory from the OS each time cost a page fault
    /// and a page clear for every 4 KiB an input touched, and the unmapping after; a kept one
    /// costs clearing only the 64 KiB pages the last input used, when they are handed out.
    static SPARE: Cell<Option<Spare>> = const { Cell::new(None) };
}

/// The shape of the simulated memory.
#[derive(Clone, Copy, Debug)]
pub struct HostConfig {
    /// Pages in the whole memory (Gear's limit is 512, i.e. 32 MiB).
    pub max_pages: u32,
    /// Pages taken by static data; `alloc` never returns them.
    pub static_pages: u32,
    /// Bytes between `__heap_base` and the end of the last static page: the tail the
    /// allocator may reuse (0 = the heap base is page-aligned).
    pub heap_tail: usize,
}

impl Default for HostConfig {
    fn default() -> Self {
        // Two static pages with the heap base part-way into the second one, as in a small
        // gstd program.
        HostConfig {
            max_pages: 512,
            static_pages: 2,
            heap_tail: 0xa5d0,
        }
    }
}

struct PageMap {
    used: Vec<bool>,
    /// Pages an earlier arena on the same memory used and nobody has cleared since; cleared
    /// as they are handed out, so every page starts zeroed, as a fresh Gear page does.
    stale: Vec<bool>,
    /// Pages handed out at any time (what a next arena on this memory must clear).
    touched: Vec<bool>,
    in_use: u32,
    peak: u32,
    /// Pages `alloc` may hand out in total; lets tests run the source dry.
    budget: u32,
    alloc_calls: u64,
    free_calls: u64,
    /// `free_range` calls refused, as Gear refuses them (a range outside the heap, or
    /// inverted): pages the allocator thinks it gave back stay allocated.
    refused_frees: u64,
}

struct Arena {
    /// The first page, 64 KiB-aligned inside `raw`.
    base: *mut u8,
    /// The allocation itself, and its layout.
    raw: *mut u8,
    layout: Layout,
    config: HostConfig,
    map: Mutex<PageMap>,
}

// SAFETY: the arena memory is owned by this value and freed only on drop; the raw pointer is
// an address, and the page map is behind a mutex.
unsafe impl Send for Arena {}
// SAFETY: as above; shared access only reads `base`, `raw`, `layout` and `config`.
unsafe impl Sync for Arena {}

/// An arena of simulated Gear pages. Clones are handles to the same arena, so a test can
/// inspect the pages an allocator holds.
#[derive(Clone)]
pub struct HostPages(Arc<Arena>);

impl HostPages {
    /// Reserves the arena. Panics if the configuration is impossible or the host is out of
    /// memory (a test set-up error, not an allocator outcome).
    pub fn new(config: HostConfig) -> Self {
        assert!(config.static_pages >= 1 && config.static_pages < config.max_pages);
        assert!(config.heap_tail < WASM_PAGE);
        // One page more than needed, aligned by hand: a 64 KiB-aligned `alloc_zeroed` zeroes
        // all 32 MiB eagerly (~10 ms per arena, which made fuzzing crawl), while an ordinary
        // one gets fresh, lazily zeroed pages from the OS.
        let layout = Layout::from_size_align((config.max_pages as usize + 1) * WASM_PAGE, 16)
            .expect("host arena layout");
        let pages = config.max_pages as usize;
        let statics = config.static_pages as usize;
        let (raw, stale) = match SPARE.take() {
            Some(spare) if spare.layout == layout => {
                // The allocation is this arena's now: not freed with the record.
                let mut spare = std::mem::ManuallyDrop::new(spare);
                let base = spare.raw.wrapping_add(spare.raw.align_offset(WASM_PAGE));
                // Static data (and the heap-base tail in it) starts zeroed too.
                // SAFETY: the first `statics` pages lie inside the kept allocation.
                unsafe { base.write_bytes(0, statics * WASM_PAGE) };
                let mut stale = std::mem::take(&mut spare.used);
                stale[..statics].fill(false);
                (spare.raw, stale)
            }
            other => {
                drop(other);
                // SAFETY: the layout has a non-zero size.
                let raw = unsafe { alloc_zeroed(layout) };
                assert!(!raw.is_null(), "host arena of {} bytes", layout.size());
                (raw, std::vec![false; pages])
            }
        };
        let base = raw.wrapping_add(raw.align_offset(WASM_PAGE));
        let mut used = std::vec![false; pages];
        used[..statics].fill(true);
        let touched = used.clone();
        HostPages(Arc::new(Arena {
            base,
            raw,
            layout,
            config,
            map: Mutex::new(PageMap {
                used,
                stale,
                touched,
                in_use: 0,
                peak: 0,
                budget: u32::MAX,
                alloc_calls: 0,
                free_calls: 0,
                refused_frees: 0,
            }),
        }))
    }

    fn map(&self) -> MutexGuard<'_, PageMap> {
        // A panic while holding the map leaves it consistent (updates are single statements
        // after the checks), so a poisoned lock is still usable.
        self.0
            .map
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Pages currently handed out by `alloc`.
    pub fn pages_in_use(&self) -> u32 {
        self.map().in_use
    }

    /// The most pages handed out at once.
    pub fn peak_pages(&self) -> u32 {
        self.map().peak
    }

    /// The longest run of free pages: the most pages one `alloc` could still get. Beside
    /// [`pages_in_use`](Self::pages_in_use) it tells fragmentation of Gear's page space from
    /// memory really in use.
    pub fn longest_free_run(&self) -> u32 {
        let map = self.map();
        let statics = self.0.config.static_pages as usize;
        let (mut run, mut longest) = (0u32, 0u32);
        for &used in &map.used[statics..] {
            run = if used { 0 } else { run + 1 };
            longest = longest.max(run);
        }
        longest
    }

    /// `free_range` calls refused so far. The allocators ignore `free_range`'s answer on Wasm
    /// (there is nothing to do with a refusal at run time but leak the range), so the tests
    /// hold every allocator to making none ([`PageSource::free_range`]).
    pub fn refused_frees(&self) -> u64 {
        self.map().refused_frees
    }

    /// Calls of `alloc` and `free_range` so far.
    pub fn calls(&self) -> (u64, u64) {
        let map = self.map();
        (map.alloc_calls, map.free_calls)
    }

    /// Limits how many pages may be in use at once from now on (`u32::MAX` = no limit beyond
    /// the memory size), to run the source dry on purpose.
    pub fn set_budget(&self, pages: u32) {
        self.map().budget = pages;
    }

    /// The configuration this arena was made with.
    pub fn config(&self) -> HostConfig {
        self.0.config
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let map = self
            .map
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Pages to clear before reuse: those this arena used and those still stale from before.
        let used = std::mem::take(&mut map.touched)
            .into_iter()
            .zip(&map.stale)
            .map(|(touched, &stale)| touched || stale)
            .collect();
        let kept = Spare {
            raw: self.raw,
            layout: self.layout,
            used,
        };
        // An arena kept before is freed by being replaced.
        SPARE.set(Some(kept));
    }
}

// SAFETY: pages are tracked in `used`; a page is handed out only while unused, addresses are
// inside the arena, and the heap-base tail lies in a static page `alloc` never returns.
unsafe impl PageSource for HostPages {
    fn alloc(&self, count: u32) -> Option<u32> {
        let mut map = self.map();
        map.alloc_calls += 1;
        if count == 0 || map.in_use.checked_add(count)? > map.budget {
            return None;
        }
        let count = count as usize;
        let mut run = 0;
        for page in self.0.config.static_pages as usize..self.0.config.max_pages as usize {
            run = if map.used[page] { 0 } else { run + 1 };
            if run == count {
                let first = page + 1 - count;
                map.used[first..=page].fill(true);
                map.touched[first..=page].fill(true);
                for p in first..=page {
                    if std::mem::replace(&mut map.stale[p], false) {
                        // SAFETY: page `p` lies inside the arena and is nobody's yet.
                        unsafe { self.page_addr(p as u32).write_bytes(0, WASM_PAGE) };
                    }
                }
                map.in_use += count as u32;
                map.peak = map.peak.max(map.in_use);
                return Some(first as u32);
            }
        }
        None
    }

    fn free_range(&self, first: u32, last: u32) -> bool {
        let mut map = self.map();
        map.free_calls += 1;
        if first < self.0.config.static_pages || last >= self.0.config.max_pages || first > last {
            map.refused_frees += 1;
            return false;
        }
        for page in first..=last {
            // As on Gear, freeing a page that is not allocated is not an error.
            if std::mem::replace(&mut map.used[page as usize], false) {
                map.in_use -= 1;
            }
        }
        true
    }

    fn heap_base(&self) -> *mut u8 {
        self.page_addr(self.0.config.static_pages)
            .wrapping_sub(self.0.config.heap_tail)
    }

    fn page_addr(&self, page: u32) -> *mut u8 {
        self.0.base.wrapping_add(page as usize * WASM_PAGE)
    }

    fn page_of(&self, addr: *const u8) -> u32 {
        ((addr as usize - self.0.base as usize) / WASM_PAGE) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirty(pages: &HostPages, page: u32) {
        // SAFETY: a page of the arena (handed out, or static).
        unsafe { pages.page_addr(page).write_bytes(0xee, WASM_PAGE) };
    }

    fn zero(pages: &HostPages, page: u32) -> bool {
        // SAFETY: as above, read only.
        let bytes = unsafe { std::slice::from_raw_parts(pages.page_addr(page), WASM_PAGE) };
        bytes.iter().all(|&b| b == 0)
    }

    #[test]
    fn an_arena_on_kept_memory_starts_as_zeroed_as_a_fresh_one() {
        let config = HostConfig::default();
        let first = HostPages::new(config);
        let a = first.alloc(3).unwrap();
        (a..a + 3).for_each(|p| dirty(&first, p));
        dirty(&first, config.static_pages - 1); // the heap-base tail's page
        let old_base = first.page_addr(0);
        drop(first);

        let second = HostPages::new(config);
        assert_eq!(second.page_addr(0), old_base, "the memory was kept");
        assert!(zero(&second, config.static_pages - 1));
        // A page the last arena used is cleared when handed out, once.
        let b = second.alloc(2).unwrap();
        assert_eq!(b, a);
        assert!((b..b + 2).all(|p| zero(&second, p)));
        dirty(&second, b);
        second.free_range(b, b);
        assert_eq!(second.alloc(1), Some(b));
        assert!(
            !zero(&second, b),
            "within one arena a page keeps its bytes, as on Gear"
        );
        let c = second.alloc(1).unwrap();
        assert_eq!(c, a + 2);
        assert!(
            zero(&second, c),
            "still stale from the first arena: cleared"
        );
    }
}
