//! The synthetic workloads' program: like the replay program, each message is a list of
//! allocator requests, but this one keeps each slot's block in a table of its own (static
//! data), so a scenario can be written once as fixed payloads and run on every backend like
//! the contracts (`just compare`'s `synthetic-*` cases). It replies with two little-endian
//! `u32`s: requests the allocator refused and requests whose checks failed; a scenario
//! expects both to be 0.
#![cfg_attr(target_arch = "wasm32", no_std)]

/// Slots the table holds: a workload names blocks 0..SLOTS.
pub const SLOTS: usize = 4096;
/// Requests per message.
pub const MAX_REQUESTS: usize = 2048;

#[cfg(target_arch = "wasm32")]
mod program {
    extern crate galloc;

    use super::{MAX_REQUESTS, SLOTS};
    use core::cell::UnsafeCell;
    use galloc_replay::{execute, Fault, Kind, Request, RustAlloc, REQUEST_BYTES};

    /// Each slot's block: address (0 = none) and size.
    struct Table(UnsafeCell<[(usize, usize); SLOTS]>);
    // SAFETY: a Gear program runs one message at a time on one thread.
    unsafe impl Sync for Table {}
    static TABLE: Table = Table(UnsafeCell::new([(0, 0); SLOTS]));

    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        core::arch::wasm32::unreachable()
    }

    #[unsafe(no_mangle)]
    extern "C" fn init() {}

    #[unsafe(no_mangle)]
    extern "C" fn handle() {
        let mut input = [0u8; MAX_REQUESTS * REQUEST_BYTES];
        let len = gcore::msg::size();
        if len > input.len() || !len.is_multiple_of(REQUEST_BYTES) {
            panic!("payload is not a whole number of requests within the limit");
        }
        gcore::msg::read(&mut input[..len]).expect("read the payload");
        // SAFETY: the only reference to the table while this message runs.
        let table = unsafe { &mut *TABLE.0.get() };
        let (mut refused, mut faults) = (0u32, 0u32);
        for bytes in input[..len].chunks_exact(REQUEST_BYTES) {
            let Some(mut r) = Request::decode(bytes) else {
                panic!("unknown request kind");
            };
            let Some(entry) = table.get_mut(r.slot as usize) else {
                panic!("slot out of range");
            };
            if matches!(r.kind, Kind::Realloc | Kind::Free) {
                if entry.0 == 0 {
                    // Its allocation was refused: nothing to do.
                    continue;
                }
                (r.ptr, r.size) = *entry;
            }
            // SAFETY: realloc/free get the slot's live block with its size; the workload
            // gives each slot one alignment.
            let done = unsafe { execute(&RustAlloc, &r) };
            if done.fault != Fault::None {
                faults += 1;
                continue;
            }
            match r.kind {
                Kind::Malloc | Kind::Calloc | Kind::Realloc if done.result == 0 => refused += 1,
                Kind::Malloc | Kind::Calloc => *entry = (done.result, r.size),
                Kind::Realloc => *entry = (done.result, r.new_size),
                Kind::Free => *entry = (0, 0),
            }
        }
        let mut reply = [0u8; 8];
        reply[..4].copy_from_slice(&refused.to_le_bytes());
        reply[4..].copy_from_slice(&faults.to_le_bytes());
        gcore::msg::reply(&reply, 0).expect("reply");
    }
}
