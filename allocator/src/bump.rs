//! The floor: a bump allocator that never frees, as ink! contracts and most other chains ship.
//!
//! Each request takes the next aligned bytes after the last block; nothing is ever reused.
//! It is the least work an allocator can do per call, so every other variant's per-op cost is
//! reported as a distance to it; what it pays instead is pages, since memory only grows.
//! Two things a plain bump would waste are not wasted: a shrinking `realloc` keeps its block,
//! and a growing `realloc` of the last block grows it in place (the `Vec::push` pattern), as
//! both are cheaper than moving and free nothing.
//!
//! Memory starts in the heap-base tail and continues in pages from the source, asked for as
//! needed; Gear hands out the lowest free page, so they normally continue the current run.

use crate::lock::Locked;
use crate::source::{PageSource, WASM_PAGE};
use core::alloc::{GlobalAlloc, Layout};
use core::ptr;

/// The run being carved: `next..end` is free, and `last` is where the newest block starts.
struct Run {
    next: usize,
    end: usize,
    last: usize,
    started: bool,
}

/// A bump allocator over pages of `S`.
pub struct Bump<S> {
    source: S,
    run: Locked<Run>,
}

impl<S> Bump<S> {
    /// An allocator that has handed out nothing yet.
    pub const fn new(source: S) -> Self {
        Bump {
            source,
            run: Locked::new(Run {
                next: 0,
                end: 0,
                last: 0,
                started: false,
            }),
        }
    }
}

impl<S: PageSource> Bump<S> {
    /// `size` bytes aligned to `align` (zero-size requests still take a byte, so every
    /// pointer is distinct), or null when the source has no pages left.
    fn take(&self, run: &mut Run, size: usize, align: usize) -> *mut u8 {
        if !run.started {
            run.started = true;
            let (start, len) = crate::source::heap_tail(&self.source, 1);
            (run.next, run.end) = (start as usize, start as usize + len);
        }
        loop {
            let Some(start) = run.next.checked_next_multiple_of(align) else {
                return ptr::null_mut();
            };
            let Some(end) = start.checked_add(size.max(1)) else {
                return ptr::null_mut();
            };
            if end <= run.end {
                (run.last, run.next) = (start, end);
                return start as *mut u8;
            }
            if !self.grow(run, end - run.end, size, align) {
                return ptr::null_mut();
            }
        }
    }

    /// More pages: at least `short` bytes past the run when they continue it, else a new run
    /// long enough for `size` bytes at `align` on its own.
    fn grow(&self, run: &mut Run, short: usize, size: usize, align: usize) -> bool {
        let pages = |bytes: usize| u32::try_from(bytes.div_ceil(WASM_PAGE)).ok();
        let Some(count) = pages(short) else {
            return false;
        };
        let Some(first) = self.source.alloc(count) else {
            return false;
        };
        let start = self.source.page_addr(first) as usize;
        if start == run.end {
            run.end += count as usize * WASM_PAGE;
            return true;
        }
        // Not contiguous (something else freed pages below): a new run, big enough alone,
        // where the newest block can no longer grow in place.
        run.last = usize::MAX;
        let alone = size.max(1).saturating_add(align.saturating_sub(WASM_PAGE));
        if count as usize * WASM_PAGE < alone {
            self.source.free_range(first, first + count - 1);
            let Some(count) = pages(alone) else {
                return false;
            };
            let Some(first) = self.source.alloc(count) else {
                return false;
            };
            let start = self.source.page_addr(first) as usize;
            (run.next, run.end) = (start, start + count as usize * WASM_PAGE);
            return true;
        }
        (run.next, run.end) = (start, start + count as usize * WASM_PAGE);
        true
    }
}

// The entry points are never inlined, as the heap's are (see `heap.rs`): the probe then
// measures the very code a plain build runs.
// SAFETY: each block is a distinct, aligned range of the heap-base tail or of pages the
// source gave this allocator, never handed out twice (nothing is ever freed); an in-place
// `realloc` only extends the newest block over free bytes of the run.
unsafe impl<S: PageSource> GlobalAlloc for Bump<S> {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.run
            .with(|run| self.take(run, layout.size(), layout.align()))
    }

    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let block = self
            .run
            .with(|run| self.take(run, layout.size(), layout.align()));
        // Pages freed and taken again within a message keep their bytes on Gear, and the host
        // arena's likewise: the bytes are cleared, not assumed.
        if !block.is_null() {
            // SAFETY: a fresh block of `layout.size()` bytes.
            unsafe { ptr::write_bytes(block, 0, layout.size()) };
        }
        block
    }

    #[inline(never)]
    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.run.with(|run| {
            if new_size <= layout.size() {
                return ptr;
            }
            let at = ptr as usize;
            if at == run.last {
                let end = at.saturating_add(new_size);
                if end <= run.end || self.grow(run, end - run.end, new_size, layout.align()) {
                    // A run that did not continue (`last` is then reset) moves the block.
                    if at == run.last && end <= run.end {
                        run.next = end;
                        return ptr;
                    }
                }
            }
            let new = self.take(run, new_size, layout.align());
            if !new.is_null() {
                // SAFETY: `ptr` is live for `layout.size()` bytes; `new` is a fresh block
                // past every live one, so they do not overlap.
                unsafe { ptr::copy_nonoverlapping(ptr, new, layout.size()) };
            }
            new
        })
    }
}

impl<S: PageSource> crate::composed::Composed for Bump<S> {
    const GRANULARITY: usize = 1;
    const REUSES: bool = false;
    const RETURNS_PAGES: bool = false;
}
