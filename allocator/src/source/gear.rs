//! Pages from the Gear runtime through its memory syscalls.

use super::{PageSource, WASM_PAGE};

// gsys 2.0 does not declare the memory syscalls, so they are declared here; the signatures
// are Gear's (`alloc` returns a page number or `u32::MAX`; `free_range` is inclusive and
// returns 0 on success).
mod sys {
    #[link(wasm_import_module = "env")]
    extern "C" {
        pub fn alloc(pages: u32) -> u32;
        pub fn free_range(start: u32, end: u32) -> i32;
    }

    extern "C" {
        // Placed by the linker after static data and the stack; only its address is used.
        pub static __heap_base: u8;
    }
}

/// The Gear runtime's page allocator.
#[derive(Clone, Copy, Default)]
pub struct GearPages;

// Every method is inlined: each is a syscall or an operator or two, and `alloc` as a call
// returned its `Option` through the stack (a frame in every caller): inlined, `lab`'s code is
// 115 bytes smaller (`lab sizes`).
// SAFETY: the runtime hands out each page to at most one `alloc` until it is freed, pages are
// identity-mapped at `page * WASM_PAGE` in linear memory, and the linker reserves nothing after
// `__heap_base`.
unsafe impl PageSource for GearPages {
    #[inline(always)]
    fn alloc(&self, count: u32) -> Option<u32> {
        // SAFETY: a plain syscall with no pointer arguments.
        let page = unsafe { sys::alloc(count) };
        (page != u32::MAX).then_some(page)
    }

    #[inline(always)]
    fn free_range(&self, first: u32, last: u32) -> bool {
        // SAFETY: a plain syscall; the caller no longer uses these pages.
        unsafe { sys::free_range(first, last) == 0 }
    }

    #[inline(always)]
    fn heap_base(&self) -> *mut u8 {
        // Only the address of the linker symbol is taken, never its value.
        core::ptr::addr_of!(sys::__heap_base) as *mut u8
    }

    #[inline(always)]
    fn page_addr(&self, page: u32) -> *mut u8 {
        (page as usize * WASM_PAGE) as *mut u8
    }

    #[inline(always)]
    fn page_of(&self, addr: *const u8) -> u32 {
        (addr as usize / WASM_PAGE) as u32
    }
}
