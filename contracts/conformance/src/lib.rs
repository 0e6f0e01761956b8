//! The meter's conformance program: one gstd program, written as Gear authors write async
//! programs, whose messages between them use every group of Gear's syscalls (gsys 2.0): a
//! request to a program and its awaited reply, a timeout, a sleep (wait and wake), delayed
//! messages, a gas reservation, program creation, randomness, value, the environment, pieces
//! of a reply and of a message, a panic that signals, leave and exit. It asks itself as the
//! other program: a request it sends itself runs as another message while the first waits,
//! which is what a second program would do. The harness runs it on gtest and the wasmtime
//! meter and requires the same replies and events (`harness/src/run/scenario/conformance.rs`).
#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use alloc::{string::String, vec::Vec};
use gstd::ActorId;
use parity_scale_codec::{Decode, Encode};
use scale_info::TypeInfo;

#[cfg(target_arch = "wasm32")]
mod wasm;

/// A `handle` payload.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum Request {
    /// Replies `Pong`.
    Ping,
    /// The callee's side of `Ask`: replies `Echoed(n + 1)`.
    Echo(u64),
    /// Asks this program, as another message, to `Echo(n)`, waits for the reply and replies
    /// what came back.
    Ask(u64),
    /// Asks `user` (who never answers) for at most `blocks` blocks: replies `TimedOut`.
    AskTimeout { user: ActorId, blocks: u32 },
    /// Sleeps `blocks` blocks and replies how many passed.
    Sleep(u32),
    /// Sends the sender the event `Later(n)` after `delay` blocks and this program `Ping`
    /// after as many.
    Delayed { n: u64, delay: u32 },
    /// Reserves gas, sends the sender the event `Reserved` from the reservation, reserves
    /// again and unreserves: replies that the second was unreserved.
    Reserve,
    /// Creates a program from `code` (unknown to the chain) with no value: replies why it was
    /// not created (the program holds no existential deposit to give it).
    Create { code: [u8; 32], salt: Vec<u8> },
    /// Replies the random bytes for `subject` and the block they belong to.
    Random([u8; 32]),
    /// Replies the message's value and the value available to the program.
    Value,
    /// Replies the environment: the existential deposit, the mailbox threshold and the time
    /// since `init`, in blocks.
    Env,
    /// Panics after an `await` (gstd's async runtime has reserved gas for a signal by then):
    /// the error reply carries the message, and the program's `handle_signal` runs.
    Panic,
    /// Replies `bytes` in pieces (`reply_push` twice, then `reply_commit`).
    Pieces(Vec<u8>),
    /// Sends the sender `bytes` as an event built in pieces (`send_init`, `send_push`,
    /// `send_commit`), and its own payload back as another (`send_input`), then replies the
    /// payload itself (`reply_input`).
    Compose(Vec<u8>),
    /// Wakes a message that does not wait (Gear ignores it) and replies `Woke`.
    WakeNobody,
    /// The forms with a gas limit: sends the sender `bytes` (`send_wgas`), its own payload
    /// twice (`send_push_input` and `send_commit_wgas`, then `send_input_wgas`), and replies
    /// `bytes` (`reply_wgas`).
    WithGas(Vec<u8>),
    /// Replies its own payload through `reply_push_input` and `reply_commit_wgas`.
    CommitWithGas,
    /// Replies its own payload through `reply_input_wgas`.
    InputWithGas,
    /// Sends the sender `Event::Reserved` from one reservation (`reservation_send_commit`)
    /// and replies `bytes` from another (`reservation_reply_commit`).
    ReserveCommit(Vec<u8>),
    /// Replies `bytes` from a reservation (`reservation_reply`).
    ReserveReply(Vec<u8>),
    /// `Ask`, with gas deposited for the reply's handling (`reply_deposit`).
    AskWithDeposit(u64),
    /// Replies `Pong` if any gas (fuel, on the meter) is left (`gas_available`).
    Gas,
    /// Ends as a program out of memory does (`oom_panic`).
    OutOfMemory,
    /// Replies what the program has counted: messages handled, replies and signals received.
    Counters,
    /// Ends without replying (`leave`): the sender gets Gear's auto-reply.
    Leave,
    /// Exits, its balance going to `inheritor` (Gear answers later messages with an error).
    Exit(ActorId),
}

/// A reply.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum Reply {
    Pong,
    Echoed(u64),
    /// What `Ask` got back.
    Asked(u64),
    TimedOut,
    Slept(u32),
    Scheduled,
    Unreserved(u64),
    /// Why the program was not created, as gstd words it.
    NotCreated(String),
    Random {
        hash: [u8; 32],
        block: u32,
    },
    Value {
        value: u128,
        available: u128,
    },
    Env {
        existential_deposit: u128,
        mailbox_threshold: u64,
        blocks_since_init: u64,
    },
    Composed,
    Woke,
    Counters {
        handled: u32,
        replies: u32,
        signals: u32,
    },
}

/// An event the program sends a user.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum Event {
    Later(u64),
    Reserved,
}
