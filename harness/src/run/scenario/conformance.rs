//! The meter's conformance case (`contracts/conformance`): one message per group of Gear's
//! syscalls, every reply and event given by Gear's rules as written here, and each message
//! timed in blocks (a request that waits takes the blocks it waits for), so that what depends
//! on the block (random bytes, events sent with a delay) is known before the run.

use super::{actor, Expect, Scenario, Step};
use crate::run::backend::{Sent, UserId};
use conformance::{Event, Reply, Request};
use parity_scale_codec::Encode;
use rand::{RngCore, SeedableRng};

const DEPLOYER: UserId = 10;
/// A user who never answers (what `AskTimeout` asks).
const SILENT: UserId = 99;

/// gtest's epoch random at `block` (`gtest/src/state/blocks.rs`): rand's `StdRng` seeded with
/// 42 plus the number of whole 600-block epochs.
fn epoch_random(block: u32) -> [u8; 32] {
    let mut rng = rand::rngs::StdRng::seed_from_u64(42 + u64::from(block / 600));
    let mut random = [0u8; 32];
    rng.fill_bytes(&mut random);
    random
}

/// Collects steps, each with the block it ends in.
struct Script {
    steps: Vec<Step>,
    /// The block the last message was done in (`init` is done in block 1).
    block: u32,
    /// Events sent with a delay: (block they arrive in, event).
    later: Vec<(u32, Sent)>,
    /// What the program counts (`Request::Counters`).
    handled: u32,
    replies: u32,
    signals: u32,
}

impl Script {
    /// `request` from `from`, done `blocks` blocks after the block it starts in, answered
    /// `expect`, sending `sent` itself (events that arrive in its blocks are added).
    fn send(
        &mut self,
        from: UserId,
        request: Request,
        blocks: u32,
        expect: Expect,
        sent: Vec<Sent>,
    ) {
        let start = self.block + 1;
        self.block = start + blocks;
        let end = self.block;
        let (arrived, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.later)
            .into_iter()
            .partition(|(at, _)| *at <= end);
        self.later = later;
        // gtest logs a block's arrivals before what its messages send.
        let mut all: Vec<Sent> = arrived.into_iter().map(|(_, s)| s).collect();
        all.extend(sent);
        self.handled += 1;
        self.steps.push(Step {
            from,
            payload: request.encode(),
            expect,
            sent: Some(all),
            reads: None,
        });
    }

    fn reply(&mut self, request: Request, reply: Reply) {
        self.send(
            DEPLOYER,
            request,
            0,
            Expect::Reply(reply.encode()),
            Vec::new(),
        );
    }

    /// The block the next message starts in.
    fn next(&self) -> u32 {
        self.block + 1
    }
}

fn to(user: UserId, payload: Vec<u8>) -> Sent {
    Sent {
        destination: actor(user).into_bytes(),
        payload,
    }
}

/// The conformance messages, in an order where each group's effects are checked by a later
/// message (`Counters` counts the replies and signals the others caused).
pub fn main() -> Scenario {
    let mut s = Script {
        steps: Vec::new(),
        block: 1,
        later: Vec::new(),
        handled: 0,
        replies: 0,
        signals: 0,
    };
    s.reply(Request::Ping, Reply::Pong);

    // A request to a program (itself, as another message) and its awaited reply: the callee's
    // `handle` runs, its reply reaches `handle_reply`, which wakes the first message.
    s.handled += 1;
    s.replies += 1;
    s.reply(Request::Ask(41), Reply::Asked(42));

    let subject = [7u8; 32];
    let block = s.next();
    let hash = gear_core::ids::hash(&[&subject[..], &epoch_random(block)[..]].concat());
    s.reply(Request::Random(subject), Reply::Random { hash, block });

    s.reply(
        Request::Value,
        Reply::Value {
            value: 0,
            available: 0,
        },
    );
    let blocks_since_init = u64::from(s.next() - 1);
    s.reply(
        Request::Env,
        Reply::Env {
            existential_deposit: 1_000_000_000_000,
            mailbox_threshold: 3_000,
            blocks_since_init,
        },
    );

    // A reply in pieces; a message in pieces and the input sent and replied as it came.
    let bytes = b"a reply in two pieces".to_vec();
    s.send(
        DEPLOYER,
        Request::Pieces(bytes.clone()),
        0,
        Expect::Reply(bytes),
        Vec::new(),
    );
    let bytes = b"a message in two pieces".to_vec();
    let request = Request::Compose(bytes.clone());
    let input = request.encode();
    s.send(
        DEPLOYER,
        request,
        0,
        Expect::Reply(input.clone()),
        vec![to(DEPLOYER, bytes), to(DEPLOYER, input)],
    );
    s.reply(Request::WakeNobody, Reply::Woke);

    // The forms with a gas limit, and input pushed into a message and a reply.
    let bytes = b"sent with gas".to_vec();
    let request = Request::WithGas(bytes.clone());
    let input = request.encode();
    s.send(
        DEPLOYER,
        request,
        0,
        Expect::Reply(bytes.clone()),
        vec![
            to(DEPLOYER, bytes),
            to(DEPLOYER, input.clone()),
            to(DEPLOYER, input),
        ],
    );
    for request in [Request::CommitWithGas, Request::InputWithGas] {
        let input = request.encode();
        s.send(DEPLOYER, request, 0, Expect::Reply(input), Vec::new());
    }
    let bytes = b"a reply from a reservation".to_vec();
    s.send(
        DEPLOYER,
        Request::ReserveCommit(bytes.clone()),
        0,
        Expect::Reply(bytes.clone()),
        vec![to(DEPLOYER, Event::Reserved.encode())],
    );
    s.send(
        DEPLOYER,
        Request::ReserveReply(bytes.clone()),
        0,
        Expect::Reply(bytes),
        Vec::new(),
    );
    s.handled += 1;
    s.replies += 1;
    s.reply(Request::AskWithDeposit(7), Reply::Asked(8));
    s.reply(Request::Gas, Reply::Pong);
    // A trap, as a panic is: gstd's async runtime holds a system reservation for every
    // message, so Gear signals the program.
    s.signals += 1;
    s.send(
        DEPLOYER,
        Request::OutOfMemory,
        0,
        Expect::Failure,
        Vec::new(),
    );
    // Gear keeps nothing the trapped execution wrote: its count of the message is undone.
    s.handled -= 1;

    // Delayed messages: an event to the sender and a `Ping` to itself, two blocks on; the
    // `Ping` runs in that block and its `Pong` comes back to `handle_reply`.
    let arrives = s.next() + 2;
    s.later
        .push((arrives, to(DEPLOYER, Event::Later(5).encode())));
    s.reply(Request::Delayed { n: 5, delay: 2 }, Reply::Scheduled);
    s.handled += 1;
    s.replies += 1;
    s.reply(Request::Ping, Reply::Pong);
    s.reply(Request::Ping, Reply::Pong);

    // Waits: a sleep of three blocks, and a request no one answers given up after two.
    s.send(
        DEPLOYER,
        Request::Sleep(3),
        3,
        Expect::Reply(Reply::Slept(3).encode()),
        Vec::new(),
    );
    s.send(
        DEPLOYER,
        Request::AskTimeout {
            user: actor(SILENT),
            blocks: 2,
        },
        2,
        Expect::Reply(Reply::TimedOut.encode()),
        vec![to(SILENT, b"anyone?".to_vec())],
    );

    // A reservation spent on an event, another given back whole.
    s.send(
        DEPLOYER,
        Request::Reserve,
        0,
        Expect::Reply(Reply::Unreserved(2_000_000_000).encode()),
        vec![to(DEPLOYER, Event::Reserved.encode())],
    );

    // Creating a program takes the existential deposit from the creator, which holds none.
    let refused = gstd::errors::Error::Core(gstd::errors::CoreError::Ext(
        gstd::errors::ExtError::Execution(gstd::errors::ExecutionError::NotEnoughValue),
    ));
    s.reply(
        Request::Create {
            code: [9u8; 32],
            salt: b"salt".to_vec(),
        },
        Reply::NotCreated(refused.to_string()),
    );

    // A panic after a wait: the message fails, and gstd's system reservation makes Gear send
    // the program a signal, which its `handle_signal` counts.
    s.signals += 1;
    s.send(DEPLOYER, Request::Panic, 1, Expect::Failure, Vec::new());

    let (handled, replies, signals) = (s.handled + 1, s.replies, s.signals);
    s.reply(
        Request::Counters,
        Reply::Counters {
            handled,
            replies,
            signals,
        },
    );

    // Leaving without a reply gets Gear's auto-reply (empty), and so does an exit. (gtest's
    // API refuses to send anything to an exited program, so the exit comes last.)
    s.send(
        DEPLOYER,
        Request::Leave,
        0,
        Expect::Reply(Vec::new()),
        Vec::new(),
    );
    s.send(
        DEPLOYER,
        Request::Exit(actor(DEPLOYER)),
        0,
        Expect::Reply(Vec::new()),
        Vec::new(),
    );

    Scenario {
        case: "conformance",
        package: "lab-conformance",
        deployer: DEPLOYER,
        init: Vec::new(),
        steps: s.steps,
    }
}
