//! Where pages come from: the one boundary between the allocator algorithms and the platform.
//!
//! Gear forbids `memory.grow`; a program asks the runtime for 64 KiB pages with the `alloc`
//! syscall and returns them with `free_range`. [`PageSource`] is that interface, implemented
//! over the real syscalls on Wasm ([`GearPages`]) and over an arena on the host
//! ([`HostPages`]), so the same allocator code runs in both.

#[cfg(target_arch = "wasm32")]
mod gear;
#[cfg(not(target_family = "wasm"))]
mod host;

#[cfg(target_arch = "wasm32")]
pub use gear::GearPages;
#[cfg(not(target_family = "wasm"))]
pub use host::{HostConfig, HostPages};

/// One Wasm page, 64 KiB: what Gear's `alloc` and `free_range` hand out and take back (Gear's
/// `WasmPage`).
pub const WASM_PAGE: usize = 64 * 1024;

/// One Gear page, 16 KiB: what Gear charges a message for, per page it first reads or writes
/// (Gear's `GearPage`; four to a Wasm page).
pub const GEAR_PAGE: usize = 16 * 1024;

/// A supplier of 64 KiB pages with the semantics of Gear's `alloc` / `free_range` syscalls.
///
/// # Safety
/// `alloc` must return pages that are not in use by anyone else until they are passed back
/// through `free_range`, each page `p` spanning `page_addr(p) .. page_addr(p) + WASM_PAGE`;
/// `heap_base..` up to the end of its page must be memory nobody else uses.
pub unsafe trait PageSource: Send {
    /// Allocates `count` contiguous pages and returns the number of the first, or `None` when
    /// the source has no such run left.
    fn alloc(&self, count: u32) -> Option<u32>;

    /// Returns pages `first..=last` (inclusive, as Gear's `free_range`). Returns `false` when the
    /// source refused and the pages are still allocated.
    fn free_range(&self, first: u32, last: u32) -> bool;

    /// The first byte the program's static data leaves free (the linker's `__heap_base`).
    fn heap_base(&self) -> *mut u8;

    /// The address of page `page`'s first byte.
    fn page_addr(&self, page: u32) -> *mut u8;

    /// The number of the page holding `addr`.
    fn page_of(&self, addr: *const u8) -> u32;
}

/// The part of `__heap_base`'s page that static data leaves free, from its first
/// `align`-aligned byte (`align` a power of two up to a page): `(start, bytes)`, with no bytes
/// when there is none (the heap base on a page boundary: that page is Gear's to hand out).
#[inline]
pub fn heap_tail<S: PageSource>(source: &S, align: usize) -> (*mut u8, usize) {
    let base = source.heap_base();
    let start = base.wrapping_add(base.align_offset(align));
    // The end of the page the base is in, or the base itself when it starts a page; `start`
    // is never past it, `align` dividing a page. One subtraction, no branch: every caller
    // checks the length it needs anyway.
    let page_end = source.page_addr(source.page_of(base.wrapping_add(WASM_PAGE - 1)));
    debug_assert!(start <= page_end);
    (start, page_end as usize - start as usize)
}
