//! What the lab reads off every allocator it composes, beyond `GlobalAlloc`: each allocator
//! module implements it, and `variant` selects among them, so the trait lives apart from both
//! (the modules depend on it, not on the selection).

use core::alloc::GlobalAlloc;

/// What the lab reads off every allocator it composes, beyond `GlobalAlloc`.
pub trait Composed: GlobalAlloc {
    /// The smallest step its memory grows by, in bytes (a power of two): dlmalloc's
    /// granularity; 1 for the allocators that take just what a request needs (the heap-base
    /// tail first, then whole pages).
    const GRANULARITY: usize;
    /// Whether freed memory is handed out again (`false` only for the never-freeing floor).
    const REUSES: bool = true;
    /// Whether pages go back to Gear once the memory on them is freed.
    const RETURNS_PAGES: bool = true;
    /// Whether a front has the heap-base tail on Gear (the slabs), not the heap behind it.
    const FRONT_TAKES_TAIL: bool = false;
    /// Whether `ptr` is a cell of a static buffer in front of the allocator.
    fn in_buffer(&self, _ptr: *const u8) -> bool {
        false
    }
    /// Gives back every page the allocator can (dlmalloc's `trim(0)`: the top's free pages and
    /// every segment with nothing live); `true` if any went back. What Gear's next allocator
    /// does at the end of every message; a no-op where there is nothing to trim.
    fn trim(&self) -> bool {
        false
    }
}
