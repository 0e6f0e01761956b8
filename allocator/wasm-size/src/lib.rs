//! Links galloc into a Gear-shaped Wasm program and calls every allocator entry point, so
//! the `.wasm` holds exactly the allocator code a program would: its size is the variant's
//! code size, and its imports show what the variant needs from the runtime.
#![cfg_attr(target_arch = "wasm32", no_std)]

#[cfg(target_arch = "wasm32")]
mod program {
    extern crate alloc;
    extern crate galloc;

    use alloc::{boxed::Box, vec, vec::Vec};
    use core::hint::black_box;

    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        core::arch::wasm32::unreachable()
    }

    /// malloc (Box), calloc (`vec![0; n]`), realloc (growing Vec) and free (drops).
    #[no_mangle]
    extern "C" fn handle() {
        let boxed = black_box(Box::new(black_box(7u64)));
        let zeroed: Vec<u8> = vec![0; black_box(300)];
        let mut grown: Vec<u32> = Vec::with_capacity(black_box(1));
        for i in 0..black_box(100) {
            grown.push(i);
        }
        black_box((&boxed, &zeroed, &grown));
    }
}
