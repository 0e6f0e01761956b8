//! The allocator galloc 2.0 ships: `gear-dlmalloc` 0.2.1's `GlobalDlmalloc`, unchanged.
//!
//! It is the reference every other variant is measured against. It brings its own page
//! platform (Gear's syscalls on Wasm, `mmap` on the host) and its own static buffer.

// Beside another variant (a host test build of it) only `host` is used.
#![cfg_attr(
    not(galloc_shipping),
    allow(dead_code, reason = "beside another variant only `host` is used")
)]

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

/// gear-dlmalloc on the host over the lab's simulated Gear pages, as the other variants run.
///
/// gear-dlmalloc has no page-source hook: its platform layer is picked by target, Gear's
/// `alloc`/`free_range` on Wasm and, on Linux, `mmap`/`munmap` with the page size from
/// `sysconf` (4 KiB). Run that way, its tests said nothing about Gear: it gave back 4 KiB
/// pages Gear cannot free, took memory anywhere instead of from Gear's first free run, and
/// its pages could not be counted (and the kernel's page faults made fuzzing it three times
/// slower than any other variant). So the host build supplies those three symbols to it: the
/// linker binds gear-dlmalloc's calls to the definitions below, which, while a call of
/// [`ShippingHost`] is running on this thread, serve them from its [`HostPages`] with Gear's
/// 64 KiB page, exactly as its Wasm layer would (`alloc(size / 64 KiB)`, `free_range` of
/// the whole pages given back); any other caller in the process gets the C library's own.
/// What still differs from Wasm: gear-dlmalloc's Linux layer does not hand it the part of
/// the heap base's page that static data leaves free, so it starts on a fresh page.
#[cfg(all(not(target_family = "wasm"), target_os = "linux"))]
pub mod host {
    use crate::source::{HostPages, PageSource, WASM_PAGE};
    use core::alloc::{GlobalAlloc, Layout};
    use core::cell::Cell;
    use core::ffi::{c_int, c_long, c_void, CStr};
    use core::ptr;
    use core::sync::atomic::{AtomicPtr, Ordering};
    use gear_dlmalloc::Dlmalloc;
    use libc::{off_t, size_t};
    use std::boxed::Box;
    use std::sync::{Mutex, PoisonError};

    /// One gear-dlmalloc instance (the same code `GlobalDlmalloc` runs, without the global)
    /// over its own simulated Gear memory.
    pub struct ShippingHost {
        dl: Mutex<Instance>,
        pages: HostPages,
    }

    struct Instance(Box<Dlmalloc>);
    // SAFETY: the instance owns its heap (memory in `pages`, which outlives it); it is only
    // used under the mutex.
    unsafe impl Send for Instance {}

    impl ShippingHost {
        /// A fresh instance over `pages`.
        pub fn new(pages: HostPages) -> Self {
            ShippingHost {
                dl: Mutex::new(Instance(Box::new(Dlmalloc::new()))),
                pages,
            }
        }

        /// Runs `f` on the instance with this thread's page calls served by `self.pages`.
        fn with<R>(&self, f: impl FnOnce(&mut Dlmalloc) -> R) -> R {
            let mut dl = self.dl.lock().unwrap_or_else(PoisonError::into_inner);
            let previous = SERVING.replace(&self.pages);
            let result = f(&mut dl.0);
            SERVING.set(previous);
            result
        }
    }

    // SAFETY: every call goes to gear-dlmalloc's `Dlmalloc` as `GlobalDlmalloc` makes it.
    unsafe impl GlobalAlloc for ShippingHost {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded with the caller's guarantees.
            self.with(|dl| unsafe { dl.malloc(layout.size(), layout.align()) })
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: forwarded with the caller's guarantees.
            self.with(|dl| unsafe { dl.calloc(layout.size(), layout.align()) })
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded with the caller's guarantees.
            self.with(|dl| unsafe { dl.free(ptr, layout.size(), layout.align()) })
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: forwarded with the caller's guarantees.
            self.with(|dl| unsafe { dl.realloc(ptr, layout.size(), layout.align(), new_size) })
        }
    }

    std::thread_local! {
        /// The pages gear-dlmalloc's page calls go to on this thread: set only inside a call
        /// of [`ShippingHost`]. A plain pointer in a `const` cell, so reading it from inside
        /// `mmap` never allocates.
        static SERVING: Cell<*const HostPages> = const { Cell::new(ptr::null()) };
    }

    /// The pages serving this thread's page calls now, if any.
    fn serving() -> Option<&'static HostPages> {
        // SAFETY: set only for the duration of `ShippingHost::with`, which borrows the pages.
        SERVING.with(|s| unsafe { s.get().as_ref() })
    }

    /// The C library's own definition of `name` (the next one after ours).
    fn next<F>(cache: &AtomicPtr<c_void>, name: &CStr) -> F {
        let mut f = cache.load(Ordering::Relaxed);
        if f.is_null() {
            // SAFETY: a symbol lookup with a NUL-terminated name.
            f = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
            assert!(!f.is_null(), "the C library has no {name:?}");
            cache.store(f, Ordering::Relaxed);
        }
        // SAFETY: `F` is the C prototype of `name`, and `f` a function pointer.
        unsafe { core::mem::transmute_copy(&f) }
    }

    /// gear-dlmalloc's Linux layer asks for `size` bytes of fresh memory (a multiple of its
    /// 64 KiB granularity); on Wasm it asks Gear for `size / 64 KiB` pages.
    ///
    /// # Safety
    /// As the C library's `mmap`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn mmap(
        addr: *mut c_void,
        len: size_t,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        offset: off_t,
    ) -> *mut c_void {
        let Some(pages) = serving() else {
            static NEXT: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());
            type Mmap = unsafe extern "C" fn(
                *mut c_void,
                size_t,
                c_int,
                c_int,
                c_int,
                off_t,
            ) -> *mut c_void;
            let mmap: Mmap = next(&NEXT, c"mmap");
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { mmap(addr, len, prot, flags, fd, offset) };
        };
        assert!(
            len.is_multiple_of(WASM_PAGE),
            "gear-dlmalloc asked for {len} bytes, not whole Gear pages"
        );
        // More pages than Gear's syscall can even be asked for is a refusal, as it is there.
        match u32::try_from(len / WASM_PAGE)
            .ok()
            .and_then(|n| pages.alloc(n))
        {
            Some(first) => pages.page_addr(first).cast(),
            None => libc::MAP_FAILED,
        }
    }

    /// gear-dlmalloc gives back whole pages inside a freed span; on Wasm, `free_range` of them.
    ///
    /// # Safety
    /// As the C library's `munmap`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
        let Some(pages) = serving() else {
            static NEXT: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());
            type Munmap = unsafe extern "C" fn(*mut c_void, size_t) -> c_int;
            let munmap: Munmap = next(&NEXT, c"munmap");
            // SAFETY: forwarded with the caller's guarantees.
            return unsafe { munmap(addr, len) };
        };
        // Its page size comes from `sysconf` once per process (the `page_size` crate keeps
        // it); if anything asked before a shipping call did, it is 4 KiB and this shows it.
        assert!(
            (addr as usize).is_multiple_of(WASM_PAGE) && len.is_multiple_of(WASM_PAGE) && len > 0,
            "gear-dlmalloc gave back {len} bytes at {addr:?}, not whole Gear pages: its page \
             size was read outside a shipping call"
        );
        let first = pages.page_of(addr.cast());
        let last = first + (len / WASM_PAGE) as u32 - 1;
        if pages.free_range(first, last) {
            0
        } else {
            -1
        }
    }

    /// gear-dlmalloc's page size: Gear's 64 KiB page, as its Wasm layer has it.
    ///
    /// # Safety
    /// As the C library's `sysconf`.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn sysconf(name: c_int) -> c_long {
        if name == libc::_SC_PAGESIZE && serving().is_some() {
            return WASM_PAGE as c_long;
        }
        static NEXT: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());
        type Sysconf = unsafe extern "C" fn(c_int) -> c_long;
        let sysconf: Sysconf = next(&NEXT, c"sysconf");
        // SAFETY: forwarded.
        unsafe { sysconf(name) }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::source::HostConfig;

        #[test]
        fn gear_dlmalloc_takes_and_gives_back_whole_gear_pages_from_the_simulation() {
            let pages = HostPages::new(HostConfig::default());
            let heap = ShippingHost::new(pages.clone());
            let big = Layout::from_size_align(300 * 1024, 8).unwrap();
            // SAFETY: a fresh block, freed once below.
            let p = unsafe { heap.alloc(big) };
            assert!(!p.is_null());
            let first = pages.page_of(p);
            assert!(first >= HostConfig::default().static_pages);
            assert!(pages.pages_in_use() >= 5, "{} pages", pages.pages_in_use());
            // SAFETY: the block above, with its layout.
            unsafe { heap.dealloc(p, big) };
            assert!(
                pages.calls().1 >= 1,
                "the freed span went back through free_range"
            );
            // Outside a shipping call the process has the C library's own.
            // SAFETY: plain calls.
            let os_page = unsafe { sysconf(libc::_SC_PAGESIZE) } as usize;
            assert_ne!(os_page, WASM_PAGE);
            // SAFETY: an anonymous private mapping, unmapped right after.
            let m = unsafe {
                mmap(
                    ptr::null_mut(),
                    os_page,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(m, libc::MAP_FAILED);
            let arena = pages.page_addr(0) as usize
                ..pages.page_addr(HostConfig::default().max_pages) as usize;
            assert!(
                !arena.contains(&(m as usize)),
                "not from the simulated pages"
            );
            // SAFETY: the mapping above.
            assert_eq!(unsafe { munmap(m, os_page) }, 0);
        }
    }
}
