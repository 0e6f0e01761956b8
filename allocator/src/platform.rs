//! dlmalloc's platform boundary ([`dlmalloc::Allocator`]) over any [`PageSource`].
//!
//! dlmalloc asks for regions of at least its granularity. [`PagePlatform`] serves them in whole
//! pages (at dlmalloc's default granularity, one 64 KiB page, or at a smaller one as Gear's next
//! allocator does: dlmalloc then gets the whole pages anyway). The first request also takes the
//! tail of the page holding `__heap_base` (the bytes static data leaves free), as Gear's
//! allocators do: when the pages the source returns begin right after that tail, the two form
//! one region, and when the tail alone is enough no page is taken at all.
//!
//! [`ExactPlatform`] is for a sub-page granularity (the 2025 study's 32, 16 and 8 KiB): each
//! request is served *exactly*, and the rest of the pages taken is kept as a spare run the
//! next request starts from, so consecutive regions are contiguous and dlmalloc grows its top
//! segment in granularity steps. What this can buy on Gear is fewer pages *touched*: dlmalloc
//! writes its segment footer at the end of every region.

use crate::source::{PageSource, WASM_PAGE};
use core::cell::Cell;
use core::ptr;

/// dlmalloc's malloc alignment on the widest target this runs on; the heap-base tail is
/// aligned to it before it is handed out.
const REGION_ALIGN: usize = 2 * core::mem::size_of::<usize>();

/// A dlmalloc platform boundary the lab's heap can be built on.
pub trait Platform: dlmalloc::Allocator {
    /// The granularity dlmalloc is configured with (bytes, a power of two).
    const GRANULARITY: usize;
}

/// Pages for dlmalloc, from a [`PageSource`], in whole pages, with dlmalloc configured for
/// granularity `G` (a page unless said otherwise).
///
/// A region is returned only in whole pages: what dlmalloc gives back is freed from the first
/// page boundary at or after its start. Gear's next allocator frees from the page *holding* the
/// start instead, which on a trim by a sub-page granularity frees a page dlmalloc still uses
/// (`tests/suite/gear_next.rs` shows it; docs/long-runs.md, "Gear's next allocator").
pub struct PagePlatform<S, const G: usize = WASM_PAGE> {
    source: S,
    /// Whether the heap-base tail has been handed out.
    tail_taken: Cell<bool>,
}

impl<S, const G: usize> PagePlatform<S, G> {
    /// A platform that has handed out nothing yet.
    pub const fn new(source: S) -> Self {
        PagePlatform {
            source,
            tail_taken: Cell::new(false),
        }
    }

    /// A platform that leaves the heap-base tail to someone else (the lab's slab front).
    pub const fn without_tail(source: S) -> Self {
        PagePlatform {
            source,
            tail_taken: Cell::new(true),
        }
    }
}

impl<S: PageSource, const G: usize> PagePlatform<S, G> {
    /// The unused tail of `__heap_base`'s page, aligned for dlmalloc: `(start, bytes)`.
    fn heap_tail(&self) -> (*mut u8, usize) {
        crate::source::heap_tail(&self.source, REGION_ALIGN)
    }

    /// Releases the whole pages inside `start..start + len`; `true` if any page went back.
    #[cfg(not(feature = "pr4853"))]
    fn release(&self, start: *mut u8, len: usize) -> bool {
        let first = (start as usize).div_ceil(WASM_PAGE) * WASM_PAGE;
        let end = (start as usize + len) / WASM_PAGE * WASM_PAGE;
        if first >= end {
            return false;
        }
        let first_page = self
            .source
            .page_of(start.wrapping_add(first - start as usize));
        let pages = ((end - first) / WASM_PAGE) as u32;
        self.source.free_range(first_page, first_page + pages - 1)
    }

    /// Gear PR #4853's release, reproduced (`pr4853`): from the page *holding* `start` to the
    /// page before the one holding the end. When `start` is inside a page whose first part is
    /// still in use, that page goes back to Gear with live data on it.
    #[cfg(feature = "pr4853")]
    fn release(&self, start: *mut u8, len: usize) -> bool {
        let first = self.source.page_of(start);
        let end = self.source.page_of(start.wrapping_add(len));
        // The PR calls `free_range(first, end - 1)` whatever the range; Gear refuses an empty
        // one with an error, which the PR reads as `false`.
        first < end && self.source.free_range(first, end - 1)
    }
}

// SAFETY: regions are whole pages from the source (or the heap-base tail, which nobody else
// uses), are handed out once, and are only returned to the source when dlmalloc frees them.
unsafe impl<S: PageSource, const G: usize> dlmalloc::Allocator for PagePlatform<S, G> {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        let (tail, tail_len) = if self.tail_taken.get() {
            (ptr::null_mut(), 0)
        } else {
            self.heap_tail()
        };
        if tail_len >= size {
            self.tail_taken.set(true);
            return (tail, tail_len, 0);
        }
        let Ok(pages) = u32::try_from((size - tail_len).div_ceil(WASM_PAGE)) else {
            return (ptr::null_mut(), 0, 0);
        };
        let Some(first) = self.source.alloc(pages) else {
            return (ptr::null_mut(), 0, 0);
        };
        let start = self.source.page_addr(first);
        let len = pages as usize * WASM_PAGE;
        // Gear hands out the lowest free page, so the first run normally starts right after
        // the heap base's page; the tail then extends it downwards.
        if tail_len > 0 && tail.wrapping_add(tail_len) == start {
            self.tail_taken.set(true);
            return (tail, tail_len + len, 0);
        }
        (start, len, 0)
    }

    fn remap(&self, _ptr: *mut u8, _old: usize, _new: usize, _can_move: bool) -> *mut u8 {
        // Gear cannot grow an allocation in place or move it; dlmalloc then copies.
        ptr::null_mut()
    }

    fn free_part(&self, ptr: *mut u8, oldsize: usize, newsize: usize) -> bool {
        // A `false` keeps the whole region in dlmalloc's hands; a `true` must only be said
        // once the pages are gone, since Gear traps on access to a freed page.
        self.release(ptr.wrapping_add(newsize), oldsize - newsize)
    }

    fn free(&self, ptr: *mut u8, size: usize) -> bool {
        self.release(ptr, size)
    }

    fn can_release_part(&self, _flags: u32) -> bool {
        true
    }

    fn allocates_zeros(&self) -> bool {
        // Gear's `free_range` only forgets pages; a page freed and allocated again within one
        // message keeps its bytes. So `calloc` must always clear.
        false
    }

    fn page_size(&self) -> usize {
        WASM_PAGE
    }
}

impl<S: PageSource, const G: usize> Platform for PagePlatform<S, G> {
    const GRANULARITY: usize = G;
}

/// Pages whose granules [`ExactPlatform`] tracks: all of Gear's memory (512 pages, 32 MiB) on
/// Wasm; on the host, the largest simulated memory the tests use, with room to spare.
#[cfg(target_arch = "wasm32")]
const TRACKED_PAGES: usize = 512;
#[cfg(not(target_arch = "wasm32"))]
const TRACKED_PAGES: usize = 4096;

/// Exact regions for dlmalloc with granularity `G` bytes (below a page), carved from pages of
/// a [`PageSource`].
///
/// Regions start and end on `G` boundaries (the first, from the heap-base tail, ends on one),
/// so one page can hold parts of several regions and of the spare run. Each page's granules
/// (its `WASM_PAGE / G` pieces of `G` bytes) are tracked in a bit mask: a bit is set while
/// dlmalloc or the spare run holds that granule, and the page goes back to Gear when its mask
/// empties. Without this, a page shared by two regions was never freed (each release only
/// freed the pages wholly inside it), and such stranded pages cut Gear's page space into runs
/// too short for a large request while most of the memory was free (docs/long-runs.md, "Long runs on
/// Gear's memory").
pub struct ExactPlatform<S, const G: usize> {
    pages: PagePlatform<S>,
    /// Memory taken from the source (or the heap-base tail) that no region holds yet, as
    /// (start, bytes); it starts on a granule boundary except in the heap-base tail.
    spare: Cell<(*mut u8, usize)>,
    /// Per page, the granules held (bit `i`: bytes `i * G .. (i + 1) * G` of the page).
    held: [Cell<u8>; TRACKED_PAGES],
}

// SAFETY: the spare run and the pages in `held` are memory this platform owns (taken from its
// source, handed to nobody but dlmalloc); moving the platform moves that ownership with it.
unsafe impl<S: Send, const G: usize> Send for ExactPlatform<S, G> {}

impl<S, const G: usize> ExactPlatform<S, G> {
    /// Granules per page; a `u8` mask holds them all for every granularity from 8 KiB up.
    const GRANULES: usize = {
        assert!(G.is_power_of_two() && G < WASM_PAGE && WASM_PAGE / G <= 8);
        WASM_PAGE / G
    };

    /// A platform that has handed out nothing yet.
    pub const fn new(source: S) -> Self {
        ExactPlatform {
            pages: PagePlatform::new(source),
            spare: Cell::new((ptr::null_mut(), 0)),
            held: [const { Cell::new(0) }; TRACKED_PAGES],
        }
    }
}

impl<S: PageSource, const G: usize> ExactPlatform<S, G> {
    /// Whole pages for at least `bytes` bytes, as (start, length), every granule held.
    fn pages_for(&self, bytes: usize) -> Option<(*mut u8, usize)> {
        let source = &self.pages.source;
        let pages = u32::try_from(bytes.div_ceil(WASM_PAGE)).ok()?;
        let first = source.alloc(pages)?;
        let full = (((1u16 << Self::GRANULES) - 1) & 0xff) as u8;
        for page in first..first + pages {
            if let Some(mask) = self.held.get(page as usize) {
                mask.set(full);
            }
        }
        Some((source.page_addr(first), pages as usize * WASM_PAGE))
    }

    /// The first page the source hands out: the pages before it (static data, and the page
    /// the heap-base tail is in) are never returned.
    fn first_source_page(&self) -> u32 {
        let source = &self.pages.source;
        source.page_of(source.heap_base().wrapping_sub(1)) + 1
    }

    /// Gives up `start..start + len` (granule-aligned at the end; the start too unless it is
    /// in the heap-base tail's static page): its granules are no longer held, and every page
    /// left with no granule held goes back to the source, one `free_range` per run of pages.
    fn release(&self, start: *mut u8, len: usize) {
        let source = &self.pages.source;
        let end = start as usize + len;
        let first_source = self.first_source_page();
        // Whole granules only: a partial first one (in the static page) is nobody's to free.
        let mut at = (start as usize).next_multiple_of(G);
        let mut run: Option<(u32, u32)> = None;
        while at < end {
            let addr = start.wrapping_add(at - start as usize);
            let page = source.page_of(addr);
            let page_start = source.page_addr(page) as usize;
            let page_end = (page_start + WASM_PAGE).min(end);
            let emptied = if page < first_source {
                false
            } else if let Some(mask) = self.held.get(page as usize) {
                let first_bit = (at - page_start) / G;
                let bits = (page_end - at) / G;
                let clear = (((1u16 << bits) - 1) << first_bit) as u8;
                mask.set(mask.get() & !clear);
                mask.get() == 0
            } else {
                // Beyond the table (only a host memory larger than any test's): free a page
                // only when the range covers it whole.
                at == page_start && page_end == page_start + WASM_PAGE
            };
            if emptied {
                run = match run {
                    Some((first, last)) if last + 1 == page => Some((first, page)),
                    Some((first, last)) => {
                        source.free_range(first, last);
                        Some((page, page))
                    }
                    None => Some((page, page)),
                };
            }
            at = page_end;
        }
        if let Some((first, last)) = run {
            source.free_range(first, last);
        }
    }

    /// Gives up `start..start + len` and, when it ends where the spare run starts, gives the
    /// spare up too and keeps as the new spare whatever of the first page stays held, so the
    /// next region continues the segment dlmalloc just trimmed instead of opening another.
    fn give_back(&self, start: *mut u8, len: usize) {
        let (spare, spare_len) = self.spare.get();
        if spare_len > 0 && start.wrapping_add(len) == spare {
            self.spare.set((ptr::null_mut(), 0));
            self.release(start, len + spare_len);
            let source = &self.pages.source;
            let page = source.page_of(start);
            let page_end = source.page_addr(page + 1);
            // The page is still ours when something before `start` on it is held, or when it
            // is the heap-base tail's static page (never returned, never tracked).
            let still_held = !(start as usize).is_multiple_of(WASM_PAGE)
                && (page < self.first_source_page()
                    || self.held.get(page as usize).is_some_and(|m| m.get() != 0));
            if still_held {
                let rest = page_end as usize - start as usize;
                self.hold(start, rest);
                self.spare.set((start, rest));
            }
        } else {
            self.release(start, len);
        }
    }

    /// Marks the granules of `start..start + len` (granule-aligned) as held again.
    fn hold(&self, start: *mut u8, len: usize) {
        let source = &self.pages.source;
        let mut at = start as usize;
        let end = at + len;
        while at < end {
            let page = source.page_of(start.wrapping_add(at - start as usize));
            let page_start = source.page_addr(page) as usize;
            let page_end = (page_start + WASM_PAGE).min(end);
            if let Some(mask) = self.held.get(page as usize) {
                let bits = (((1u16 << ((page_end - at) / G)) - 1) << ((at - page_start) / G)) as u8;
                mask.set(mask.get() | bits);
            }
            at = page_end;
        }
    }
}

impl<S: PageSource, const G: usize> Platform for ExactPlatform<S, G> {
    const GRANULARITY: usize = G;
}

// SAFETY: regions are exact, never overlapping slices of the heap-base tail and of pages from
// the source, each handed out once; a page goes back to the source only once no region and
// not the spare run hold any granule of it.
unsafe impl<S: PageSource, const G: usize> dlmalloc::Allocator for ExactPlatform<S, G> {
    /// A region of `size` bytes (a multiple of `G`), rounded up to end on a granule boundary,
    /// from the spare run, extended by fresh pages when they follow it (Gear hands out the
    /// lowest free pages, so they normally do). A spare run too short and not followed by the
    /// new pages is given up (it is less than one request).
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        let fail = (ptr::null_mut(), 0, 0);
        if !self.pages.tail_taken.get() {
            self.pages.tail_taken.set(true);
            self.spare.set(self.pages.heap_tail());
        }
        let (mut start, mut len) = self.spare.get();
        if len < size {
            let Some((fresh, fresh_len)) = self.pages_for(size - len) else {
                return fail;
            };
            if len > 0 && start.wrapping_add(len) == fresh {
                len += fresh_len;
            } else {
                if len > 0 {
                    self.release(start, len);
                }
                if fresh_len >= size {
                    (start, len) = (fresh, fresh_len);
                } else {
                    // Not next to the spare run and short without it: swap for a long
                    // enough run.
                    self.release(fresh, fresh_len);
                    self.spare.set((ptr::null_mut(), 0));
                    let Some(run) = self.pages_for(size) else {
                        return fail;
                    };
                    (start, len) = run;
                }
            }
        }
        // End on a granule boundary (only the heap-base tail's region starts off one).
        let size = (start as usize + size)
            .next_multiple_of(G)
            .min(start as usize + len)
            - start as usize;
        self.spare.set((start.wrapping_add(size), len - size));
        (start, size, 0)
    }

    fn remap(&self, ptr: *mut u8, old: usize, new: usize, can_move: bool) -> *mut u8 {
        self.pages.remap(ptr, old, new, can_move)
    }

    fn free_part(&self, ptr: *mut u8, oldsize: usize, newsize: usize) -> bool {
        // The trimmed granules are no longer dlmalloc's whether or not a page went back.
        self.give_back(ptr.wrapping_add(newsize), oldsize - newsize);
        true
    }

    fn free(&self, ptr: *mut u8, size: usize) -> bool {
        self.give_back(ptr, size);
        true
    }

    fn can_release_part(&self, flags: u32) -> bool {
        self.pages.can_release_part(flags)
    }

    fn allocates_zeros(&self) -> bool {
        self.pages.allocates_zeros()
    }

    fn page_size(&self) -> usize {
        self.pages.page_size()
    }
}

#[cfg(all(test, not(feature = "pr4853")))]
mod tests {
    //! The page platforms on their own, without dlmalloc in front (so that Miri, `just miri`,
    //! checks the lab's code: dlmalloc 0.2.14 itself writes through a pointer made from a
    //! shared reference, docs/tests.md, "Found on the way").
    use super::*;
    use crate::source::{HostConfig, HostPages, WASM_PAGE};
    use dlmalloc::Allocator;

    /// Writes every byte of a region the platform handed out (Miri checks each is ours).
    fn fill((start, len, _): (*mut u8, usize, u32)) -> (*mut u8, usize) {
        assert!(!start.is_null() && len > 0);
        // SAFETY: the region is the caller's, `len` bytes from `start`.
        unsafe { ptr::write_bytes(start, 0xa5, len) };
        (start, len)
    }

    #[test]
    fn whole_pages_come_and_go_and_the_tail_goes_first() {
        let pages = HostPages::new(HostConfig::default());
        let platform = PagePlatform::<_>::new(pages.clone());
        let (tail, tail_len) = fill(platform.alloc(64));
        assert_eq!(
            pages.pages_in_use(),
            0,
            "a small first request takes the tail only"
        );
        assert!(tail_len < WASM_PAGE);
        let (start, len) = fill(platform.alloc(3 * WASM_PAGE));
        assert_eq!((len, pages.pages_in_use()), (3 * WASM_PAGE, 3));
        assert_ne!(start, tail);
        // Keeping half a page frees the two whole pages behind it, not the one it is on.
        assert!(platform.free_part(start, len, WASM_PAGE / 2));
        assert_eq!(pages.pages_in_use(), 1);
        // The page the kept half is on goes back once all of it is freed.
        assert!(platform.free(start, WASM_PAGE));
        assert_eq!(pages.pages_in_use(), 0);
        // The tail is not a page of the source: freeing it gives nothing back.
        assert!(!platform.free(tail, tail_len));
    }

    #[test]
    fn sub_page_regions_give_a_page_back_when_its_last_granule_goes() {
        let pages = HostPages::new(HostConfig::default());
        let platform = ExactPlatform::<_, { 8 * 1024 }>::new(pages.clone());
        let regions: std::vec::Vec<_> = (0..12).map(|_| fill(platform.alloc(20 * 1024))).collect();
        let held = pages.pages_in_use();
        assert!(held >= 3, "{held}");
        for (start, len) in regions {
            assert!(platform.free(start, len));
        }
        // The spare run may keep the page it is on.
        assert!(pages.pages_in_use() <= 1, "{}", pages.pages_in_use());
    }
}
