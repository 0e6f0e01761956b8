//! Synthetic workloads: allocation patterns contracts have that the NFT and FT cases miss,
//! written as request lists for the synthetic program (`replay/synthetic`), which carries
//! them out through the variant's allocator and keeps each slot's block. Every message must
//! be answered "nothing refused, nothing faulty" (eight zero bytes).
//!
//! The sizes follow what Rust code asks for: `Vec` doubling its capacity, `BTreeMap` nodes
//! (a leaf of `u64 -> u128` is 280 bytes, an internal node 376), `String`s of user text.

use super::{Expect, Scenario, Step};
use galloc_replay::{Kind, Request};
use gtest::constants::DEFAULT_USER_ALICE;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Builds messages of requests, handing out slots and reusing freed ones.
struct Script {
    steps: Vec<Step>,
    message: Vec<Request>,
    free: Vec<u32>,
    next: u32,
    /// Each live slot's alignment (the program needs it for `realloc`/`free`).
    align: Vec<usize>,
    rng: SmallRng,
}

impl Script {
    fn new(seed: u64) -> Script {
        Script {
            steps: Vec::new(),
            message: Vec::new(),
            free: Vec::new(),
            next: 0,
            align: vec![0; lab_synthetic::SLOTS],
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    fn request(&mut self, kind: Kind, slot: u32, size: usize, new_size: usize) {
        self.message.push(Request {
            kind,
            slot,
            ptr: 0,
            size,
            align: self.align[slot as usize],
            new_size,
        });
    }

    fn alloc(&mut self, kind: Kind, size: usize, align: usize) -> u32 {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.next += 1;
            self.next - 1
        });
        assert!(
            (slot as usize) < lab_synthetic::SLOTS,
            "synthetic workload uses too many slots"
        );
        self.align[slot as usize] = align;
        self.request(kind, slot, size, 0);
        slot
    }

    fn malloc(&mut self, size: usize, align: usize) -> u32 {
        self.alloc(Kind::Malloc, size, align)
    }

    fn realloc(&mut self, slot: u32, new_size: usize) {
        self.request(Kind::Realloc, slot, 0, new_size);
    }

    fn free(&mut self, slot: u32) {
        self.request(Kind::Free, slot, 0, 0);
        self.free.push(slot);
    }

    /// Ends the message: one step, sent by one user.
    fn send(&mut self) {
        let payload = self.message.drain(..).flat_map(|r| r.encode()).collect();
        self.steps.push(Step {
            from: DEFAULT_USER_ALICE,
            payload,
            expect: Expect::Reply(vec![0; 8]),
            sent: Some(Vec::new()),
            reads: None,
        });
    }

    fn finish(self, case: &'static str) -> Scenario {
        Scenario {
            case,
            package: "lab-synthetic",
            deployer: DEFAULT_USER_ALICE,
            init: Vec::new(),
            steps: self.steps,
        }
    }
}

/// Many small short-lived objects: each message makes 150 blocks of 8-64 bytes (boxed
/// values, small vectors, decoded fields) and frees them all before it ends, half of them
/// early.
pub fn small_objects() -> Scenario {
    small_objects_with(1, 120, 150, 8, 2)
}

/// `synthetic-small-objects`' second workload: 60 blocks of 16-128 bytes a message, two of
/// every three freed early, over 200 messages.
pub fn small_objects_larger() -> Scenario {
    small_objects_with(11, 200, 60, 16, 3)
}

/// `messages` messages of `blocks` blocks each of `unit` to 8 x `unit` bytes; after every
/// `every`th block, `every - 1` of the live ones freed at random (`every` 2: one).
fn small_objects_with(
    seed: u64,
    messages: usize,
    blocks: usize,
    unit: usize,
    every: usize,
) -> Scenario {
    let mut s = Script::new(seed);
    for _ in 0..messages {
        let mut live = Vec::new();
        for i in 0..blocks {
            let size = unit * s.rng.gen_range(1..=8);
            live.push(s.malloc(size, 8));
            if i % every == every - 1 {
                for _ in 0..every - 1 {
                    let j = s.rng.gen_range(0..live.len());
                    let slot = live.swap_remove(j);
                    s.free(slot);
                }
            }
        }
        while let Some(slot) = live.pop() {
            s.free(slot);
        }
        s.send();
    }
    s.finish("synthetic-small-objects")
}

/// One large growing `Vec<u64>`: 1,000 elements pushed per message, its capacity doubling
/// from 4 (up to 40,000 elements, 320 KiB), beside a small payload buffer each message.
pub fn growing_vec() -> Scenario {
    growing_vec_with(2, 8, 1_000, 40)
}

/// `synthetic-growing-vec`'s second workload: a `Vec<u128>` taking 300 elements a message
/// over 60 messages (18,000 elements, 512 KiB of capacity at the end).
pub fn growing_vec_wide() -> Scenario {
    growing_vec_with(12, 16, 300, 60)
}

/// A vector of `element`-byte items, `per_message` pushed a message, its capacity doubling
/// from 4, beside a 64-byte payload buffer each message.
fn growing_vec_with(seed: u64, element: usize, per_message: usize, messages: usize) -> Scenario {
    let mut s = Script::new(seed);
    let (mut len, mut cap) = (0usize, 4usize);
    let vec = s.malloc(cap * element, 8);
    for _ in 0..messages {
        let payload = s.malloc(64, 1);
        len += per_message;
        while cap < len {
            s.realloc(vec, cap * 2 * element);
            cap *= 2;
        }
        s.free(payload);
        s.send();
    }
    s.finish("synthetic-growing-vec")
}

/// Map-heavy state: a `BTreeMap<u64, u128>` taking 20 entries a message (a new 280-byte leaf
/// every sixth, a 376-byte internal node every eleventh leaf), every fifth message removing
/// entries and freeing a node, plus a temporary key list per message.
pub fn map() -> Scenario {
    map_with(3, 150, 20, 5)
}

/// `synthetic-map`'s second workload: 8 entries a message over 300 messages, every second
/// message freeing a node (a map that churns more than it grows).
pub fn map_churn() -> Scenario {
    map_with(13, 300, 8, 2)
}

/// `messages` messages inserting `entries` each, every `remove_every`th freeing a leaf.
fn map_with(seed: u64, messages: usize, entries: usize, remove_every: usize) -> Scenario {
    let mut s = Script::new(seed);
    let mut leaves: Vec<u32> = vec![s.malloc(280, 8)];
    let mut internals: Vec<u32> = Vec::new();
    let mut inserted = 0;
    for m in 0..messages {
        let keys = s.malloc(entries * 8, 8);
        for _ in 0..entries {
            inserted += 1;
            if inserted % 6 == 0 {
                leaves.push(s.malloc(280, 8));
                if leaves.len().is_multiple_of(11) {
                    internals.push(s.malloc(376, 8));
                }
            }
        }
        if m % remove_every == remove_every - 1 && leaves.len() > 2 {
            let j = s.rng.gen_range(0..leaves.len());
            let leaf = leaves.swap_remove(j);
            s.free(leaf);
        }
        s.free(keys);
        s.send();
    }
    s.finish("synthetic-map")
}

/// Strings: 30 of 1-120 bytes a message, 10 of them grown by appending (doubling), five
/// kept (the oldest kept ones freed beyond 400), the rest dropped at the end.
pub fn strings() -> Scenario {
    strings_with(4, 150, 30, 120, 6, 400)
}

/// `synthetic-strings`' second workload: 12 strings of 1-400 bytes a message, a quarter kept
/// (the oldest freed beyond 600), over 200 messages.
pub fn strings_long() -> Scenario {
    strings_with(14, 200, 12, 400, 4, 600)
}

/// `messages` messages of `count` strings of 1-`longest` bytes, a third grown by doubling,
/// one in `keep_one_in` kept, the oldest kept freed beyond `kept_at_most`.
fn strings_with(
    seed: u64,
    messages: usize,
    count: usize,
    longest: usize,
    keep_one_in: usize,
    kept_at_most: usize,
) -> Scenario {
    let mut s = Script::new(seed);
    let mut kept: std::collections::VecDeque<u32> = Default::default();
    for _ in 0..messages {
        let mut made = Vec::new();
        for _ in 0..count {
            let len = s.rng.gen_range(1..=longest);
            let slot = s.malloc(len, 1);
            made.push((slot, len));
        }
        for (slot, len) in made.iter_mut().take(count / 3) {
            *len *= 2;
            s.realloc(*slot, *len);
        }
        for (i, (slot, _)) in made.into_iter().enumerate() {
            if i % keep_one_in == 0 {
                kept.push_back(slot);
            } else {
                s.free(slot);
            }
        }
        while kept.len() > kept_at_most {
            let old = kept.pop_front().expect("non-empty");
            s.free(old);
        }
        s.send();
    }
    s.finish("synthetic-strings")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;

    /// Every workload is valid: run natively with every check on the system allocator.
    #[test]
    fn every_workload_passes_every_check_on_the_system_allocator() {
        for make in [
            small_objects,
            growing_vec,
            map,
            strings,
            small_objects_larger,
            growing_vec_wide,
            map_churn,
            strings_long,
        ] {
            let scenario = make();
            let requests: Vec<Request> = scenario
                .steps
                .iter()
                .flat_map(|s| s.payload.chunks_exact(galloc_replay::REQUEST_BYTES))
                .map(|b| Request::decode(b).unwrap())
                .collect();
            assert!(requests.len() > 90, "{}", scenario.case);
            assert!(scenario
                .steps
                .iter()
                .all(|s| s.payload.len()
                    <= lab_synthetic::MAX_REQUESTS * galloc_replay::REQUEST_BYTES));
            let mut checked = galloc_replay::checked::Checked::new(&System);
            for (i, r) in requests.iter().enumerate() {
                let done = checked.step(r);
                assert_eq!(
                    done.fault,
                    galloc_replay::Fault::None,
                    "{} step {i}",
                    scenario.case
                );
            }
        }
    }
}
