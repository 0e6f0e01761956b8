//! The allocator galloc 2.0 ships: `gear-dlmalloc` 0.2.1's `GlobalDlmalloc`, unchanged.
//!
//! It is the reference every other variant is measured against. It brings its own page
//! backend (Gear's syscalls on Wasm, `mmap` on the host) and its own static buffer.

use core::alloc::{GlobalAlloc, Layout};
use gear_dlmalloc::GlobalDlmalloc;

/// `gear_dlmalloc::GlobalDlmalloc` behind the lab's interface.
pub struct Shipping(GlobalDlmalloc);

impl Shipping {
    /// The (stateless) handle; the state is gear-dlmalloc's own global.
    pub const NEW: Self = Shipping(GlobalDlmalloc);
}

// SAFETY: every call is forwarded unchanged to gear-dlmalloc's `GlobalAlloc`.
unsafe impl GlobalAlloc for Shipping {
    #[inline(always)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.alloc(layout) }
    }
    #[inline(always)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.alloc_zeroed(layout) }
    }
    #[inline(always)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.dealloc(ptr, layout) }
    }
    #[inline(always)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}
