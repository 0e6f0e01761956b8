//! The replay program: each message is a list of allocator requests ([`galloc_replay::Request`],
//! 24 bytes each); the program carries them out through Rust's global allocator (the `galloc`
//! variant it was built with, as a contract calls it) and replies with one
//! [`galloc_replay::Done`] per request. It keeps no state between messages: the driver knows
//! which address each slot's block has, so the heap holds exactly what the trace put there,
//! and the program's static data is a few bytes (`lab replay` pads it to the recorded
//! contract's `__heap_base`, so the allocator sees the same addresses). A block allocated
//! earlier in the same message is one the driver has not seen yet: it sends address 0 and the
//! program looks the slot up in the message's own table (on the stack).
#![cfg_attr(target_arch = "wasm32", no_std)]

/// Requests per message the program accepts (the input and reply buffers are on the stack).
pub const MAX_REQUESTS: usize = 2048;

#[cfg(target_arch = "wasm32")]
mod program {
    extern crate galloc;

    use super::MAX_REQUESTS;
    use galloc_replay::{execute, Fault, Kind, Request, RustAlloc, DONE_BYTES, REQUEST_BYTES};

    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        core::arch::wasm32::unreachable()
    }

    #[unsafe(no_mangle)]
    extern "C" fn init() {}

    #[unsafe(no_mangle)]
    extern "C" fn handle() {
        let mut input = [0u8; MAX_REQUESTS * REQUEST_BYTES];
        let mut output = [0u8; MAX_REQUESTS * DONE_BYTES];
        let len = gcore::msg::size();
        if len > input.len() || !len.is_multiple_of(REQUEST_BYTES) {
            // A malformed message: fail it, touching nothing.
            panic!("payload is not a whole number of requests within the limit");
        }
        gcore::msg::read(&mut input[..len]).expect("read the payload");
        let n = len / REQUEST_BYTES;
        // Blocks this message made: (slot, address, size); `u32::MAX` marks a freed entry.
        let mut made = [(u32::MAX, 0usize, 0usize); MAX_REQUESTS];
        let mut n_made = 0;
        for i in 0..n {
            let Some(mut request) =
                Request::decode(&input[i * REQUEST_BYTES..(i + 1) * REQUEST_BYTES])
            else {
                panic!("unknown request kind");
            };
            let mine = made[..n_made].iter().position(|m| m.0 == request.slot);
            if matches!(request.kind, Kind::Realloc | Kind::Free) {
                if let Some(j) = mine {
                    (request.ptr, request.size) = (made[j].1, made[j].2);
                }
            }
            // SAFETY: the driver sends `realloc`/`free` only for live blocks of this program,
            // with the layout they were given.
            let done = unsafe { execute(&RustAlloc, &request) };
            let ok = done.fault == Fault::None;
            match request.kind {
                Kind::Malloc | Kind::Calloc if ok && done.result != 0 => {
                    made[n_made] = (request.slot, done.result, request.size);
                    n_made += 1;
                }
                Kind::Realloc if ok && done.result != 0 => match mine {
                    Some(j) => made[j] = (request.slot, done.result, request.new_size),
                    None => {
                        made[n_made] = (request.slot, done.result, request.new_size);
                        n_made += 1;
                    }
                },
                Kind::Free if ok => {
                    if let Some(j) = mine {
                        made[j].0 = u32::MAX;
                    }
                }
                _ => {}
            }
            output[i * DONE_BYTES..(i + 1) * DONE_BYTES].copy_from_slice(&done.encode());
        }
        gcore::msg::reply(&output[..n * DONE_BYTES], 0).expect("reply");
    }
}
