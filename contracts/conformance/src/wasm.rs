//! The conformance program (what each request does: `lib.rs`).

use crate::{Event, Reply, Request};
use gstd::{exec, msg, prelude::*, CodeId, ReservationId};

/// What the program has counted.
static mut HANDLED: u32 = 0;
static mut REPLIES: u32 = 0;
static mut SIGNALS: u32 = 0;
/// The block time `init` ran at.
static mut INIT_TIMESTAMP: u64 = 0;

#[unsafe(no_mangle)]
extern "C" fn init() {
    // SAFETY: Gear runs one message at a time; `init` runs first and once.
    unsafe { INIT_TIMESTAMP = exec::block_timestamp() };
}

fn on_reply() {
    // SAFETY: one message at a time.
    unsafe { REPLIES += 1 };
}

fn on_signal() {
    // A signal carries its code (a panic's: an execution error).
    msg::signal_code().expect("a signal's code");
    // SAFETY: one message at a time.
    unsafe { SIGNALS += 1 };
}

/// Asks this program, as another message, to `Echo(n)` (with `deposit` gas for handling the
/// reply), waits for the reply and answers what came back.
async fn ask(n: u64, deposit: u64) -> Reply {
    let reply =
        msg::send_for_reply_as::<_, Reply>(exec::program_id(), Request::Echo(n), 0, deposit)
            .expect("send")
            .await
            .expect("a reply");
    let Reply::Echoed(reply) = reply else {
        panic!("Echo answered {reply:?}")
    };
    Reply::Asked(reply)
}

#[gstd::async_main(handle_reply = on_reply, handle_signal = on_signal)]
async fn main() {
    // SAFETY: one message at a time. A message that waits runs again from where it waited
    // (gstd keeps this future), so this counts each message once.
    unsafe { HANDLED += 1 };
    let request: Request = msg::load().expect("a Request");
    let reply = match request {
        Request::Ping => Reply::Pong,
        Request::Echo(n) => Reply::Echoed(n + 1),
        Request::Ask(n) => ask(n, 0).await,
        Request::AskTimeout { user, blocks } => {
            let answer = msg::send_bytes_for_reply(user, b"anyone?", 0, 0)
                .expect("send")
                .up_to(Some(blocks))
                .expect("a lock")
                .await;
            match answer {
                Err(gstd::errors::Error::Timeout(..)) => Reply::TimedOut,
                other => panic!("a user answered: {other:?}"),
            }
        }
        Request::Sleep(blocks) => {
            let before = exec::block_height();
            exec::sleep_for(blocks).await;
            Reply::Slept(exec::block_height() - before)
        }
        Request::Delayed { n, delay } => {
            msg::send_delayed(msg::source(), Event::Later(n), 0, delay).expect("send");
            msg::send_delayed(exec::program_id(), Request::Ping, 0, delay).expect("send");
            Reply::Scheduled
        }
        Request::Reserve => {
            let first = ReservationId::reserve(1_000_000_000, 10).expect("a reservation");
            msg::send_from_reservation(first, msg::source(), Event::Reserved, 0).expect("send");
            let second = ReservationId::reserve(2_000_000_000, 10).expect("a reservation");
            Reply::Unreserved(second.unreserve().expect("unreserve"))
        }
        Request::Create { code, salt } => {
            // Creating takes the existential deposit from the program's balance: without one
            // Gear refuses it at once, and with one the `init` of a code the chain lacks fails.
            let created = gstd::prog::create_program_bytes_for_reply(
                CodeId::from(code),
                salt,
                Vec::<u8>::new(),
                0,
                0,
            );
            match created {
                Err(e) => Reply::NotCreated(format!("{e}")),
                Ok(future) => Reply::NotCreated(format!("{:?}", future.await.err())),
            }
        }
        Request::Random(subject) => {
            let (hash, block) = exec::random(subject).expect("random");
            Reply::Random { hash, block }
        }
        Request::Value => Reply::Value {
            value: msg::value(),
            available: exec::value_available(),
        },
        Request::Env => {
            let vars = exec::env_vars();
            // gtest starts its clock from the wall clock; blocks are 3 s apart on every chain.
            // SAFETY: one message at a time.
            let since = exec::block_timestamp() - unsafe { INIT_TIMESTAMP };
            Reply::Env {
                existential_deposit: vars.existential_deposit,
                mailbox_threshold: vars.mailbox_threshold,
                blocks_since_init: since / 3_000,
            }
        }
        Request::Panic => {
            exec::sleep_for(1).await;
            panic!("conformance: panicked after a wait")
        }
        Request::Pieces(bytes) => {
            let (head, tail) = bytes.split_at(bytes.len() / 2);
            msg::reply_push(head).expect("push");
            msg::reply_push(tail).expect("push");
            msg::reply_commit(0).expect("commit");
            return;
        }
        Request::Compose(bytes) => {
            let handle = msg::MessageHandle::init().expect("init");
            handle.push(&bytes[..bytes.len() / 2]).expect("push");
            handle.push(&bytes[bytes.len() / 2..]).expect("push");
            handle.commit(msg::source(), 0).expect("commit");
            msg::send_input(msg::source(), 0, ..msg::size()).expect("send_input");
            msg::reply_input(0, ..msg::size()).expect("reply_input");
            return;
        }
        Request::WithGas(bytes) => {
            let source = msg::source();
            msg::send_bytes_with_gas(source, &bytes, 10_000, 0).expect("send_wgas");
            let handle = msg::MessageHandle::init().expect("init");
            handle.push_input(..msg::size()).expect("push_input");
            handle
                .commit_with_gas(source, 10_000, 0)
                .expect("commit_wgas");
            msg::send_input_with_gas(source, 10_000, 0, ..msg::size()).expect("send_input_wgas");
            msg::reply_bytes_with_gas(bytes, 10_000, 0).expect("reply_wgas");
            return;
        }
        Request::CommitWithGas => {
            msg::reply_push_input(..msg::size()).expect("reply_push_input");
            msg::reply_commit_with_gas(10_000, 0).expect("reply_commit_wgas");
            return;
        }
        Request::InputWithGas => {
            msg::reply_input_with_gas(10_000, 0, ..msg::size()).expect("reply_input_wgas");
            return;
        }
        Request::ReserveCommit(bytes) => {
            let first = ReservationId::reserve(1_000_000_000, 10).expect("a reservation");
            let handle = msg::MessageHandle::init().expect("init");
            handle.push(Event::Reserved.encode()).expect("push");
            handle
                .commit_from_reservation(first, msg::source(), 0)
                .expect("reservation_send_commit");
            let second = ReservationId::reserve(1_000_000_000, 10).expect("a reservation");
            msg::reply_push(&bytes).expect("push");
            msg::reply_commit_from_reservation(second, 0).expect("reservation_reply_commit");
            return;
        }
        Request::ReserveReply(bytes) => {
            let id = ReservationId::reserve(1_000_000_000, 10).expect("a reservation");
            msg::reply_bytes_from_reservation(id, bytes, 0).expect("reservation_reply");
            return;
        }
        Request::AskWithDeposit(n) => ask(n, 1_000_000_000).await,
        Request::Gas => {
            assert!(exec::gas_available() > 0, "no gas left");
            Reply::Pong
        }
        Request::OutOfMemory => gstd::ext::oom_panic(),
        Request::WakeNobody => {
            exec::wake(msg::id()).expect("a wake");
            Reply::Woke
        }
        // SAFETY: one message at a time.
        Request::Counters => unsafe {
            Reply::Counters {
                handled: HANDLED,
                replies: REPLIES,
                signals: SIGNALS,
            }
        },
        Request::Leave => exec::leave(),
        Request::Exit(inheritor) => exec::exit(inheritor),
    };
    msg::reply(reply, 0).expect("reply");
}
