//! `talc` 5 on Gear pages, through its own memory-source hook (`talc::source::Source`).
//!
//! Talc's WebAssembly sources call `memory.grow`, which Gear rejects; this source asks the
//! page source instead. Its first heap is the heap-base tail; later pages extend the heap when
//! they follow it (Gear hands out the lowest free page) and start a new heap otherwise. Talc
//! never gives memory back to a source that does not track its heap end, and this one does
//! not: pages once taken stay taken, as talc's own WebAssembly sources do.

use crate::lock::Locked;
use crate::source::{PageSource, WASM_PAGE};
use ::talc::base::binning::Binning;
use ::talc::base::{Talc as Base, CHUNK_UNIT};
use ::talc::wasm::WasmBinning;
use core::alloc::{GlobalAlloc, Layout};
use core::fmt;
use core::ptr::{self, NonNull};

/// Talc's memory source over a [`PageSource`].
pub struct Pages<S> {
    source: S,
    /// Whether the heap-base tail has been claimed.
    tail_taken: bool,
    /// The end of the newest heap, which the next pages extend when they follow it.
    end: Option<NonNull<u8>>,
}

impl<S> fmt::Debug for Pages<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pages").field("end", &self.end).finish()
    }
}

// SAFETY: `acquire` only claims or extends memory this source owns (the heap-base tail and
// pages the page source handed to it) and never allocates.
unsafe impl<S: PageSource> ::talc::source::Source for Pages<S> {
    fn acquire<B: Binning>(talc: &mut Base<Self, B>, layout: Layout) -> Result<(), ()> {
        // Enough for the chunk, its tag and alignment padding.
        let needed = layout
            .size()
            .checked_add(layout.align().max(CHUNK_UNIT))
            .and_then(|n| n.checked_add(4 * CHUNK_UNIT))
            .ok_or(())?;
        if !talc.source.tail_taken {
            talc.source.tail_taken = true;
            let (start, len) = crate::source::heap_tail(&talc.source.source, CHUNK_UNIT);
            if len > 0 {
                // SAFETY: the tail is memory nobody else uses, owned by talc from now on.
                talc.source.end = unsafe { talc.claim(start, len) };
                if len >= needed && talc.source.end.is_some() {
                    return Ok(());
                }
            }
        }
        let count = u32::try_from(needed.div_ceil(WASM_PAGE)).map_err(|_| ())?;
        let first = talc.source.source.alloc(count).ok_or(())?;
        let base = talc.source.source.page_addr(first);
        let len = count as usize * WASM_PAGE;
        talc.source.end = match talc.source.end {
            // SAFETY: the new pages start where the newest heap ends and are talc's alone.
            Some(end) if end.as_ptr() == base => {
                Some(unsafe { talc.extend(end, base.wrapping_add(len)) })
            }
            // SAFETY: fresh pages, owned by talc from now on.
            _ => unsafe { talc.claim(base, len) },
        };
        talc.source.end.map(|_| ()).ok_or(())
    }
}

/// Talc with the bins its authors chose for WebAssembly, over pages of `S`.
pub struct Talc<S: PageSource>(Locked<Base<Pages<S>, WasmBinning>>);

// SAFETY: the raw pointers inside are into memory this allocator owns; moving it to another
// thread moves that ownership with it.
unsafe impl<S: Send> Send for Pages<S> {}

impl<S: PageSource> Talc<S> {
    /// An allocator that has claimed nothing yet.
    pub const fn new(source: S) -> Self {
        Talc(Locked::new(Base::new(Pages {
            source,
            tail_taken: false,
            end: None,
        })))
    }
}

// The entry points are never inlined, as the heap's are (see `heap.rs`).
// SAFETY: every call is talc's own, under the lock, with the caller's guarantees; size-0
// requests take one byte so that each gets its own pointer.
unsafe impl<S: PageSource> GlobalAlloc for Talc<S> {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let layout = nonzero(layout);
        // SAFETY: a non-zero size.
        self.0
            .with(|t| unsafe { t.allocate(layout) })
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded; then the block's bytes are cleared (freed chunks keep theirs).
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
        // SAFETY: the caller's: `ptr` is live with this layout (as allocated, non-zero).
        self.0
            .with(|t| unsafe { t.deallocate(ptr, nonzero(layout)) })
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let layout = nonzero(layout);
        let new_size = new_size.max(1);
        self.0.with(|t| {
            // SAFETY: `ptr` is live with `layout`; a failed move keeps it live.
            unsafe {
                if t.try_realloc_in_place(ptr, layout, new_size) {
                    return ptr;
                }
                let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                let Some(new) = t.allocate(new_layout) else {
                    return ptr::null_mut();
                };
                ptr::copy_nonoverlapping(ptr, new.as_ptr(), layout.size());
                t.deallocate(ptr, layout);
                new.as_ptr()
            }
        })
    }
}

/// `layout` with at least one byte: talc serves only non-zero sizes.
#[inline(always)]
fn nonzero(layout: Layout) -> Layout {
    // SAFETY: the alignment is `layout`'s, and one byte rounded up to it cannot overflow.
    unsafe { Layout::from_size_align_unchecked(layout.size().max(1), layout.align()) }
}

impl<S: PageSource> crate::composed::Composed for Talc<S> {
    const GRANULARITY: usize = 1;
    const RETURNS_PAGES: bool = false;
}
