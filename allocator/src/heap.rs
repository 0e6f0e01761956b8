//! A `GlobalAlloc` made of dlmalloc on a page source, with an optional front.
//!
//! Requests go to the front (the static buffer) while dlmalloc has no memory yet, and to
//! dlmalloc otherwise; pointers are routed back to whichever gave them out by address. The
//! layout-free `c_*` calls of dlmalloc are used on purpose: its layout-taking `free`/`realloc`
//! re-validate the size with assertions on every call, which costs gas and code for a check
//! `GlobalAlloc`'s contract already makes the caller's duty.

use crate::buffer::Front;
use crate::lock::Lock;
use crate::platform::Platform;
use crate::source::WASM_PAGE;
use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr;
use dlmalloc::Dlmalloc;

/// dlmalloc's malloc alignment: twice the pointer size (8 on wasm32).
const MALLOC_ALIGN: usize = 2 * core::mem::size_of::<usize>();

struct State<B, F> {
    dl: Dlmalloc<B>,
    front: F,
    /// The front serves new requests only until dlmalloc has first given out memory, as in
    /// Gear's dlmalloc fork (which checks for "no segment yet").
    front_open: bool,
}

/// The lab's allocator: dlmalloc on platform `B` (pages from a page source, at the platform's
/// granularity), with front `F`.
///
/// A heap must not move once it has served a request (dlmalloc's bins and the buffer's cells
/// point into it): use it as a `static`, or in a `Box`.
pub struct Heap<B, F> {
    lock: Lock,
    state: UnsafeCell<State<B, F>>,
}

// SAFETY: every access to `state` happens under `lock` (a real lock wherever threads exist).
unsafe impl<B: Send, F: Send> Sync for Heap<B, F> {}

impl<B: Platform, F: Front> Heap<B, F> {
    /// A heap that has served nothing yet, with dlmalloc's default configuration apart from
    /// the platform's granularity.
    pub const fn new(platform: B) -> Self {
        let mut dl = Dlmalloc::new_with_allocator(platform);
        if B::GRANULARITY != WASM_PAGE {
            assert!(
                dl.set_granularity(B::GRANULARITY),
                "a granularity must be a power of two dlmalloc accepts"
            );
        }
        Heap {
            lock: Lock::new(),
            state: UnsafeCell::new(State {
                dl,
                front: F::NEW,
                front_open: F::ENABLED,
            }),
        }
    }

    /// The same heap with dlmalloc's periodic release pass off (its "max release check rate"
    /// 0): segments with nothing live then go back only when the heap is trimmed. Gear's next
    /// allocator runs so, trimming at the end of every message instead.
    pub const fn without_release_checks(mut self) -> Self {
        self.state.get_mut().dl.set_max_release_check_rate(0);
        self
    }

    /// Whether `ptr` is a cell of the static buffer.
    pub fn in_buffer(&self, ptr: *const u8) -> bool {
        let _guard = self.lock.lock();
        // SAFETY: shared access under the lock.
        F::ENABLED && unsafe { (*self.state.get()).front.owns(ptr) }
    }
}

impl<B: Platform, F: Front> crate::composed::Composed for Heap<B, F> {
    const GRANULARITY: usize = B::GRANULARITY;
    const FRONT_TAKES_TAIL: bool = F::TAKES_TAIL;
    fn in_buffer(&self, ptr: *const u8) -> bool {
        Heap::in_buffer(self, ptr)
    }
    fn trim(&self) -> bool {
        // SAFETY: dlmalloc's own entry point, under the lock.
        self.with(|s| unsafe { s.dl.trim(0) })
    }
}

impl<B: Platform, F: Front> Heap<B, F> {
    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce(&mut State<B, F>) -> R) -> R {
        let _guard = self.lock.lock();
        // SAFETY: the lock makes this the only live reference to the state.
        f(unsafe { &mut *self.state.get() })
    }
}

impl<B: Platform, F: Front> State<B, F> {
    /// A block from the front while it is open, else from dlmalloc (closing the front once
    /// dlmalloc has given out memory). `zeroed` asks for cleared bytes.
    #[inline(always)]
    unsafe fn get(&mut self, size: usize, align: usize, zeroed: bool) -> *mut u8 {
        if F::ENABLED && self.front_open {
            if let Some(cell) = self.front.alloc(size, align) {
                let cell = cell.as_ptr();
                if zeroed {
                    // SAFETY: the cell is at least `size` bytes; freed cells keep old bytes.
                    unsafe { ptr::write_bytes(cell, 0, size) };
                }
                return cell;
            }
        }
        // SAFETY: forwarded request; dlmalloc accepts any size and power-of-two alignment.
        let block = unsafe {
            if zeroed {
                self.dl.calloc(size, align)
            } else {
                self.dl.malloc(size, align)
            }
        };
        if F::ENABLED && !F::STAYS_OPEN && !block.is_null() {
            self.front_open = false;
        }
        block
    }

    #[inline(always)]
    unsafe fn free(&mut self, ptr: *mut u8) {
        if F::ENABLED && self.front.owns(ptr) {
            self.front.free(ptr);
        } else {
            // SAFETY: the caller passes a live pointer this heap's dlmalloc gave out.
            unsafe { self.dl.c_free(ptr) }
        }
    }

    #[inline(always)]
    unsafe fn realloc(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if F::ENABLED && self.front.owns(ptr) {
            if new_size <= self.front.cell_size(ptr) {
                return ptr;
            }
            // SAFETY: a fresh block of `new_size > old size` bytes; the cell stays valid
            // until freed below, so the copy reads live bytes.
            unsafe {
                let new = self.get(new_size, layout.align(), false);
                if !new.is_null() {
                    ptr::copy_nonoverlapping(ptr, new, layout.size());
                    self.front.free(ptr);
                }
                return new;
            }
        }
        if layout.align() <= MALLOC_ALIGN {
            // SAFETY: `ptr` is a live dlmalloc block; dlmalloc keeps it on failure.
            return unsafe { self.dl.c_realloc(ptr, new_size) };
        }
        // dlmalloc's own realloc only keeps the malloc alignment, so over-aligned blocks move.
        // SAFETY: a fresh block, then the copy of the bytes both blocks hold, then the free.
        unsafe {
            let new = self.dl.malloc(new_size, layout.align());
            if !new.is_null() {
                ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dl.c_free(ptr);
            }
            new
        }
    }
}

// The entry points are never inlined: the allocator is then the same code in a plain build
// and under the gas probe, so what the probe measures is what the plain build runs (inlined
// into different callers, register allocation and so gas would differ slightly).
// SAFETY: blocks come from the front's cells (each handed out once until freed) or from
// dlmalloc, aligned as asked; frees and reallocs are routed to the part that gave them out.
// Size-0 requests are served too (a unique pointer), beyond `GlobalAlloc`'s contract.
unsafe impl<B: Platform, F: Front> GlobalAlloc for Heap<B, F> {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // The gate's test needs a build that is really worse: a few hundred more instructions a call.
        #[cfg(feature = "gate-canary")]
        for i in 0..64u32 {
            core::hint::black_box(i);
        }
        // SAFETY: forwarded under the lock.
        self.with(|s| unsafe { s.get(layout.size(), layout.align(), false) })
    }

    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the lock.
        self.with(|s| unsafe { s.get(layout.size(), layout.align(), true) })
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller's contract: `ptr` is live and came from this allocator.
        self.with(|s| unsafe { s.free(ptr) })
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract: `ptr` is live with `layout`.
        self.with(|s| unsafe { s.realloc(ptr, layout, new_size) })
    }
}
