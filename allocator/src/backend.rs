//! dlmalloc's platform boundary ([`dlmalloc::Allocator`]) over any [`PageSource`].
//!
//! dlmalloc asks for regions of at least its granularity. [`PageBackend`] (dlmalloc's default
//! granularity, one 64 KiB page) serves them in whole pages. The first request also takes the
//! tail of the page holding `__heap_base` (the bytes static data leaves free), as Gear's
//! allocators do: when the pages the source returns begin right after that tail, the two form
//! one region, and when the tail alone is enough no page is taken at all.
//!
//! [`ExactBackend`] is for a sub-page granularity (the 2025 study's 32, 16 and 8 KiB): each
//! request is served *exactly*, and the rest of the pages taken is kept as a spare run the
//! next request starts from, so consecutive regions are contiguous and dlmalloc grows its top
//! segment in granularity steps. What this can buy on Gear is fewer pages *touched*: dlmalloc
//! writes its segment footer at the end of every region.

use crate::source::{PageSource, PAGE_SIZE};
use core::cell::Cell;
use core::ptr;

/// dlmalloc's malloc alignment on the widest target this runs on; the heap-base tail is
/// aligned to it before it is handed out.
const REGION_ALIGN: usize = 2 * core::mem::size_of::<usize>();

/// A dlmalloc platform boundary the lab's heap can be built on.
pub trait Backend: dlmalloc::Allocator {
    /// The granularity dlmalloc is configured with (bytes, a power of two).
    const GRANULARITY: usize;
}

/// Pages for dlmalloc, from a [`PageSource`], in whole pages.
pub struct PageBackend<S> {
    source: S,
    /// Whether the heap-base tail has been handed out.
    tail_taken: Cell<bool>,
}

impl<S> PageBackend<S> {
    /// A backend that has handed out nothing yet.
    pub const fn new(source: S) -> Self {
        PageBackend {
            source,
            tail_taken: Cell::new(false),
        }
    }

    /// A backend that leaves the heap-base tail to someone else (the lab's slab front).
    pub const fn without_tail(source: S) -> Self {
        PageBackend {
            source,
            tail_taken: Cell::new(true),
        }
    }
}

impl<S: PageSource> PageBackend<S> {
    /// The unused tail of `__heap_base`'s page, aligned for dlmalloc: `(start, bytes)`.
    fn heap_tail(&self) -> (*mut u8, usize) {
        crate::source::heap_tail(&self.source, REGION_ALIGN)
    }

    /// Releases the whole pages inside `start..start + len`; `true` if any page went back.
    fn release(&self, start: *mut u8, len: usize) -> bool {
        let first = (start as usize).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let end = (start as usize + len) / PAGE_SIZE * PAGE_SIZE;
        if first >= end {
            return false;
        }
        let first_page = self
            .source
            .page_of(start.wrapping_add(first - start as usize));
        let pages = ((end - first) / PAGE_SIZE) as u32;
        self.source.free_range(first_page, first_page + pages - 1)
    }
}

// SAFETY: regions are whole pages from the source (or the heap-base tail, which nobody else
// uses), are handed out once, and are only returned to the source when dlmalloc frees them.
unsafe impl<S: PageSource> dlmalloc::Allocator for PageBackend<S> {
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
        let Ok(pages) = u32::try_from((size - tail_len).div_ceil(PAGE_SIZE)) else {
            return (ptr::null_mut(), 0, 0);
        };
        let Some(first) = self.source.alloc(pages) else {
            return (ptr::null_mut(), 0, 0);
        };
        let start = self.source.page_addr(first);
        let len = pages as usize * PAGE_SIZE;
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
        PAGE_SIZE
    }
}

impl<S: PageSource> Backend for PageBackend<S> {
    const GRANULARITY: usize = PAGE_SIZE;
}

/// Exact regions for dlmalloc with granularity `G` bytes (below a page), carved from pages of
/// a [`PageSource`].
pub struct ExactBackend<S, const G: usize> {
    pages: PageBackend<S>,
    /// Memory taken from the source (or the heap-base tail) that no region holds yet, as
    /// (start, bytes).
    spare: Cell<(*mut u8, usize)>,
}

// SAFETY: the spare run is memory this backend owns (taken from its source, handed to nobody);
// moving the backend to another thread moves that ownership with it.
unsafe impl<S: Send, const G: usize> Send for ExactBackend<S, G> {}

impl<S, const G: usize> ExactBackend<S, G> {
    /// A backend that has handed out nothing yet.
    pub const fn new(source: S) -> Self {
        ExactBackend {
            pages: PageBackend::new(source),
            spare: Cell::new((ptr::null_mut(), 0)),
        }
    }
}

impl<S: PageSource, const G: usize> ExactBackend<S, G> {
    /// Whole pages for at least `bytes` bytes, as (start, length).
    fn pages_for(&self, bytes: usize) -> Option<(*mut u8, usize)> {
        let source = &self.pages.source;
        let pages = u32::try_from(bytes.div_ceil(PAGE_SIZE)).ok()?;
        let first = source.alloc(pages)?;
        Some((source.page_addr(first), pages as usize * PAGE_SIZE))
    }
}

impl<S: PageSource, const G: usize> Backend for ExactBackend<S, G> {
    const GRANULARITY: usize = G;
}

// SAFETY: regions are exact, never overlapping slices of the heap-base tail and of pages from
// the source, each handed out once; only whole pages inside a region dlmalloc frees go back.
unsafe impl<S: PageSource, const G: usize> dlmalloc::Allocator for ExactBackend<S, G> {
    /// A region of exactly `size` bytes from the spare run, extended by fresh pages when they
    /// follow it (Gear hands out the lowest free pages, so they normally do). A spare run too
    /// short and not followed by the new pages is left unused (it is less than one request).
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
            } else if fresh_len >= size {
                (start, len) = (fresh, fresh_len);
            } else {
                // Not next to the spare run and short without it: swap for a long enough run.
                self.pages.release(fresh, fresh_len);
                let Some(run) = self.pages_for(size) else {
                    return fail;
                };
                (start, len) = run;
            }
        }
        self.spare.set((start.wrapping_add(size), len - size));
        (start, size, 0)
    }

    fn remap(&self, ptr: *mut u8, old: usize, new: usize, can_move: bool) -> *mut u8 {
        self.pages.remap(ptr, old, new, can_move)
    }

    fn free_part(&self, ptr: *mut u8, oldsize: usize, newsize: usize) -> bool {
        self.pages.free_part(ptr, oldsize, newsize)
    }

    fn free(&self, ptr: *mut u8, size: usize) -> bool {
        self.pages.free(ptr, size)
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
