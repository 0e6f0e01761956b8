//! Gear's next allocator (Gear PR #4853, feature `new-allocator`) gives its pages back with
//! page arithmetic that is wrong for a sub-page granularity, and the lab's `gear-next` variant
//! differs from it there on purpose. This test shows why, on the simulated Gear memory.
//!
//! Gear's page platform frees `floor(ptr / 64 KiB) ..= floor((ptr + size) / 64 KiB) - 1` for a range
//! dlmalloc gives up. A trim at granularity 16 KiB gives up the top's end in 16 KiB steps, so
//! `ptr` is often inside a page whose first part dlmalloc keeps; the floor then frees that page
//! too. Gear drops a freed page's data and may hand the page out again, while dlmalloc still
//! has live blocks (and its top's header and fences) on it. The lab's `PagePlatform` frees from
//! the first page boundary at or after `ptr` instead.

use dlmalloc::{Allocator, Dlmalloc};
use galloc::platform::PagePlatform;
use galloc::source::{HostConfig, HostPages, PageSource, WASM_PAGE};
use std::ptr;

const GRANULARITY: usize = 16 * 1024;

/// The PR's page platform, as its source reads: whole pages for every request, and the
/// floor arithmetic above for every release (heap-base tail left out: the heap base here is
/// page-aligned, so Gear's has none either).
struct Pr4853Pages(HostPages);

// SAFETY: whole pages from the source; releases are what this test is about.
unsafe impl Allocator for Pr4853Pages {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        let pages = size.div_ceil(WASM_PAGE) as u32;
        match self.0.alloc(pages) {
            Some(first) => (self.0.page_addr(first), pages as usize * WASM_PAGE, 0),
            None => (ptr::null_mut(), 0, 0),
        }
    }
    fn remap(&self, _: *mut u8, _: usize, _: usize, _: bool) -> *mut u8 {
        ptr::null_mut()
    }
    fn free_part(&self, ptr: *mut u8, oldsize: usize, newsize: usize) -> bool {
        oldsize == newsize || self.free(ptr.wrapping_add(newsize), oldsize - newsize)
    }
    fn free(&self, ptr: *mut u8, size: usize) -> bool {
        let first = self.0.page_of(ptr);
        let last = self.0.page_of(ptr.wrapping_add(size)) - 1;
        self.0.free_range(first, last)
    }
    fn can_release_part(&self, _: u32) -> bool {
        true
    }
    fn allocates_zeros(&self) -> bool {
        true
    }
    fn page_size(&self) -> usize {
        WASM_PAGE
    }
}

/// Page-aligned heap base: every region comes from `alloc`.
fn memory() -> HostPages {
    HostPages::new(HostConfig {
        heap_tail: 0,
        ..HostConfig::default()
    })
}

/// One 100-byte block live, then the message-end `trim(0)`: returns the block, the page it is
/// on, whether the trim said it released something, and the pages Gear still counts as held.
fn block_then_trim<A: Allocator>(dl: &mut Dlmalloc<A>, pages: &HostPages) -> (u32, bool, u32) {
    assert!(dl.set_granularity(GRANULARITY));
    dl.set_max_release_check_rate(0);
    // SAFETY: a fresh block, written within its size; trim is dlmalloc's own entry point.
    unsafe {
        let block = dl.malloc(100, 8);
        assert!(!block.is_null());
        block.write_bytes(0xab, 100);
        let trimmed = dl.trim(0);
        (pages.page_of(block), trimmed, pages.pages_in_use())
    }
}

#[test]
fn the_prs_trim_frees_the_page_a_live_block_is_on_and_the_labs_does_not() {
    let pages = memory();
    let mut gear = Dlmalloc::new_with_allocator(Pr4853Pages(pages.clone()));
    let (page, trimmed, held) = block_then_trim(&mut gear, &pages);
    // dlmalloc asked for 16 KiB, got the whole page, and trimmed its top back to 16 KiB: Gear's
    // arithmetic freed page `page` itself, with the block still on it.
    assert!(trimmed);
    assert_eq!(held, 0, "the page holding a live block went back to Gear");
    // ... and Gear hands it to the next request, which now shares it with that block.
    assert_eq!(pages.alloc(1), Some(page));

    let pages = memory();
    let mut lab = Dlmalloc::new_with_allocator(PagePlatform::<_, GRANULARITY>::new(pages.clone()));
    let (_, trimmed, held) = block_then_trim(&mut lab, &pages);
    // The kept 16 KiB end inside the page: no whole page to give back, so nothing goes and
    // dlmalloc keeps its region whole.
    assert!(!trimmed);
    assert_eq!(held, 1);
}
