//! Any front before any allocator: the lab's slabs before talc.
//!
//! [`Heap`](crate::heap::Heap) composes a front with dlmalloc through dlmalloc's own calls;
//! this composes a front with any `GlobalAlloc`. The front stays open (it is meant for fronts
//! with [`Front::STAYS_OPEN`]): every request it can serve, it serves.

use crate::buffer::Front;
use crate::lock::Locked;
use core::alloc::{GlobalAlloc, Layout};
use core::ptr;

/// Front `F` before allocator `A`.
pub struct Fronted<F, A> {
    front: Locked<F>,
    back: A,
}

impl<F: Front, A> Fronted<F, A> {
    /// `back` with an empty front.
    pub const fn new(back: A) -> Self {
        Fronted {
            front: Locked::new(F::NEW),
            back,
        }
    }
}

impl<F: Front, A: GlobalAlloc> Fronted<F, A> {
    /// A block from the front, else from the back.
    #[inline(always)]
    unsafe fn get(&self, layout: Layout, zeroed: bool) -> *mut u8 {
        if let Some(cell) = self.front.with(|f| f.alloc(layout.size(), layout.align())) {
            let cell = cell.as_ptr();
            if zeroed {
                // SAFETY: the slot is at least `layout.size()` bytes; freed slots keep bytes.
                unsafe { ptr::write_bytes(cell, 0, layout.size()) };
            }
            return cell;
        }
        // SAFETY: the caller's layout, forwarded.
        unsafe {
            if zeroed {
                self.back.alloc_zeroed(layout)
            } else {
                self.back.alloc(layout)
            }
        }
    }
}

// The entry points are never inlined, as the heap's are (see `heap.rs`).
// SAFETY: blocks come from the front (each slot handed out once until freed) or from the
// back; frees and reallocs go to whichever owns the pointer, by address.
unsafe impl<F: Front, A: GlobalAlloc> GlobalAlloc for Fronted<F, A> {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        unsafe { self.get(layout, false) }
    }

    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        unsafe { self.get(layout, true) }
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !self.front.with(|f| {
            let owned = f.owns(ptr);
            if owned {
                f.free(ptr);
            }
            owned
        }) {
            // SAFETY: not the front's, so the back's, live with this layout.
            unsafe { self.back.dealloc(ptr, layout) }
        }
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let in_front = self.front.with(|f| f.owns(ptr).then(|| f.cell_size(ptr)));
        let Some(cell) = in_front else {
            // SAFETY: the back's block, live with `layout`.
            return unsafe { self.back.realloc(ptr, layout, new_size) };
        };
        if new_size <= cell {
            return ptr;
        }
        // SAFETY: a fresh block of `new_size > cell >= layout.size()` bytes, then the copy of
        // the old bytes, then the slot is freed.
        unsafe {
            let new = self.get(
                Layout::from_size_align_unchecked(new_size, layout.align()),
                false,
            );
            if !new.is_null() {
                ptr::copy_nonoverlapping(ptr, new, layout.size());
                self.front.with(|f| f.free(ptr));
            }
            new
        }
    }
}

impl<F: Front, A: crate::variant::Composed> crate::variant::Composed for Fronted<F, A> {
    const GRANULARITY: usize = A::GRANULARITY;
    const REUSES: bool = A::REUSES;
    const RETURNS_PAGES: bool = A::RETURNS_PAGES;
    const FRONT_TAKES_TAIL: bool = F::TAKES_TAIL;
    fn in_buffer(&self, ptr: *const u8) -> bool {
        self.front.with(|f| f.owns(ptr))
    }
    fn trim(&self) -> bool {
        self.back.trim()
    }
}
