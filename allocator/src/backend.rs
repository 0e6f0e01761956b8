//! dlmalloc's platform boundary ([`dlmalloc::Allocator`]) over any [`PageSource`].
//!
//! dlmalloc asks for regions of at least its granularity; they are served in whole 64 KiB
//! pages. The first request also takes the tail of the page holding `__heap_base` (the bytes
//! static data leaves free), as Gear's allocators do: when the pages the source returns begin
//! right after that tail, the two form one region, and when the tail alone is enough (a small
//! granularity) no page is taken at all.

use crate::source::{PageSource, PAGE_SIZE};
use core::cell::Cell;
use core::ptr;

/// dlmalloc's malloc alignment on the widest target this runs on; the heap-base tail is
/// aligned to it before it is handed out.
const REGION_ALIGN: usize = 2 * core::mem::size_of::<usize>();

/// Pages for dlmalloc, from a [`PageSource`].
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
}

impl<S: PageSource> PageBackend<S> {
    /// The unused tail of `__heap_base`'s page, aligned for dlmalloc: `(start, bytes)`.
    fn heap_tail(&self) -> (*mut u8, usize) {
        let base = self.source.heap_base();
        let start = base.wrapping_add(base.align_offset(REGION_ALIGN));
        let page_end = self.source.page_addr(self.source.page_of(base) + 1);
        if (base as usize).is_multiple_of(PAGE_SIZE) || start >= page_end {
            return (ptr::null_mut(), 0);
        }
        (start, page_end as usize - start as usize)
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
