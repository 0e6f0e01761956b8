//! A relay: a message asking for `n` more hops makes the program send itself `n - 1`, so one
//! message from a user sets off `n` more executions of the same program, as a multisig's owner
//! change or a queue drained a batch at a time does. Each execution appends to a log that
//! only grows (the allocator has work in every one); the user is answered with the log's length.
#![no_std]

extern crate alloc;

use alloc::vec::Vec;
use gstd::{exec, msg};

static mut LOG: Vec<u32> = Vec::new();

#[unsafe(no_mangle)]
extern "C" fn init() {}

#[unsafe(no_mangle)]
extern "C" fn handle() {
    // SAFETY: Gear runs one message at a time.
    let log = unsafe { &mut *core::ptr::addr_of_mut!(LOG) };
    // A payload that is not one byte asks for no hop: it is answered, and sets nothing off.
    let hops: u8 = msg::load().unwrap_or(0);
    log.extend(core::iter::repeat_n(u32::from(hops), 64));
    let me = exec::program_id();
    if hops > 0 {
        msg::send(me, hops - 1, 0).expect("send to itself");
    }
    if msg::source() != me {
        msg::reply(log.len() as u32, 0).expect("reply");
    }
}
