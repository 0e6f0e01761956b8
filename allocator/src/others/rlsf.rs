//! `rlsf` (TLSF: two-level segregated fit, constant-time operations) on Gear pages, through
//! its own memory-source hook (`rlsf::FlexSource`).
//!
//! rlsf's WebAssembly source calls `memory.grow`, which Gear rejects; this source asks the
//! page source instead. The first pool is the heap-base tail plus the first pages when they
//! follow it; a pool grows in place when the next pages follow it (Gear hands out the lowest
//! free page). Pools are never given back (rlsf only returns them when it is dropped).

use crate::lock::Locked;
use crate::source::{PageSource, WASM_PAGE};
use ::rlsf::{FlexSource, FlexTlsf, GRANULARITY};
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{self, NonNull};

/// rlsf's memory source over a [`PageSource`].
pub struct Pages<S> {
    source: S,
    tail_taken: bool,
}

impl<S: PageSource> Pages<S> {
    /// `count` fresh pages, as (start, bytes).
    fn pages(&self, bytes: usize) -> Option<(*mut u8, usize)> {
        let count = u32::try_from(bytes.div_ceil(WASM_PAGE)).ok()?;
        let first = self.source.alloc(count)?;
        Some((self.source.page_addr(first), count as usize * WASM_PAGE))
    }
}

// SAFETY: every block handed out is the heap-base tail or pages the page source gave this
// source, each handed out once; an in-place growth only adds pages that follow the block.
unsafe impl<S: PageSource> FlexSource for Pages<S> {
    unsafe fn alloc(&mut self, min_size: usize) -> Option<NonNull<[u8]>> {
        let (tail, tail_len) = if self.tail_taken {
            (ptr::null_mut(), 0)
        } else {
            self.tail_taken = true;
            crate::source::heap_tail(&self.source, GRANULARITY)
        };
        let (start, len) = if tail_len >= min_size {
            (tail, tail_len)
        } else {
            let (start, len) = self.pages(min_size - tail_len)?;
            if tail_len > 0 && tail.wrapping_add(tail_len) == start {
                (tail, tail_len + len)
            } else if len >= min_size {
                (start, len)
            } else {
                let last = self.source.page_of(start.wrapping_add(len - 1));
                self.source.free_range(self.source.page_of(start), last);
                self.pages(min_size)?
            }
        };
        NonNull::new(ptr::slice_from_raw_parts_mut(start, len))
    }

    unsafe fn realloc_inplace_grow(
        &mut self,
        block: NonNull<[u8]>,
        min_new_len: usize,
    ) -> Option<usize> {
        let (start, len) = (block.as_ptr() as *mut u8, block.len());
        let (more, more_len) = self.pages(min_new_len - len)?;
        if more == start.wrapping_add(len) {
            return Some(len + more_len);
        }
        let last = self.source.page_of(more.wrapping_add(more_len - 1));
        self.source.free_range(self.source.page_of(more), last);
        None
    }

    fn supports_realloc_inplace_grow(&self) -> bool {
        true
    }

    fn min_align(&self) -> usize {
        GRANULARITY
    }
}

/// rlsf's TLSF with the bitmap sizes of its own global allocator, over pages of `S`.
type Inner<S> =
    FlexTlsf<Pages<S>, usize, usize, { usize::BITS as usize }, { usize::BITS as usize }>;

/// Makes the TLSF state sendable: its pointers are into memory it owns.
struct Owned<S: PageSource>(Inner<S>);

// SAFETY: the raw pointers inside are into memory this allocator owns; moving it to another
// thread moves that ownership with it.
unsafe impl<S: PageSource> Send for Owned<S> {}

/// rlsf over pages of `S`.
pub struct Rlsf<S: PageSource>(Locked<Owned<S>>);

impl<S: PageSource> Rlsf<S> {
    /// An allocator that has taken nothing yet.
    pub const fn new(source: S) -> Self {
        Rlsf(Locked::new(Owned(FlexTlsf::new(Pages {
            source,
            tail_taken: false,
        }))))
    }
}

// The entry points are never inlined, as the heap's are (see `heap.rs`).
// SAFETY: every call is rlsf's own, under the lock, with the caller's guarantees.
unsafe impl<S: PageSource> GlobalAlloc for Rlsf<S> {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.0
            .with(|t| t.0.allocate(layout))
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded; then the block's bytes are cleared (freed blocks keep theirs).
        unsafe {
            let block = self.alloc(layout);
            if !block.is_null() {
                ptr::write_bytes(block, 0, layout.size());
            }
            block
        }
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if let Some(ptr) = NonNull::new(ptr) {
            // SAFETY: the caller's: `ptr` is live and was allocated with this alignment.
            self.0
                .with(|t| unsafe { t.0.deallocate(ptr, layout.align()) })
        }
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(ptr) = NonNull::new(ptr) else {
            return ptr::null_mut();
        };
        // SAFETY: the caller's: `ptr` is live with `layout`; `new_size` with its alignment
        // is a valid layout. rlsf keeps the block when it fails.
        self.0.with(|t| unsafe {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            t.0.reallocate(ptr, new_layout)
                .map_or(ptr::null_mut(), NonNull::as_ptr)
        })
    }
}

impl<S: PageSource> crate::composed::Composed for Rlsf<S> {
    const GRANULARITY: usize = 1;
    const RETURNS_PAGES: bool = false;
}
