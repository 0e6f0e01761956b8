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
    let mut s = Script::new(1);
    for _ in 0..120 {
        let mut live = Vec::new();
        for i in 0..150 {
            let size = 8 * s.rng.gen_range(1..=8);
            live.push(s.malloc(size, 8));
            if i % 2 == 1 {
                let j = s.rng.gen_range(0..live.len());
                let slot = live.swap_remove(j);
                s.free(slot);
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
    let mut s = Script::new(2);
    let (mut len, mut cap) = (0usize, 4usize);
    let vec = s.malloc(cap * 8, 8);
    for _ in 0..40 {
        let payload = s.malloc(64, 1);
        len += 1_000;
        while cap < len {
            s.realloc(vec, cap * 16);
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
    let mut s = Script::new(3);
    let mut leaves: Vec<u32> = vec![s.malloc(280, 8)];
    let mut internals: Vec<u32> = Vec::new();
    let mut inserted = 0;
    for m in 0..150 {
        let keys = s.malloc(20 * 8, 8);
        for _ in 0..20 {
            inserted += 1;
            if inserted % 6 == 0 {
                leaves.push(s.malloc(280, 8));
                if leaves.len().is_multiple_of(11) {
                    internals.push(s.malloc(376, 8));
                }
            }
        }
        if m % 5 == 4 && leaves.len() > 2 {
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
    let mut s = Script::new(4);
    let mut kept: std::collections::VecDeque<u32> = Default::default();
    for _ in 0..150 {
        let mut made = Vec::new();
        for _ in 0..30 {
            let len = s.rng.gen_range(1..=120);
            let slot = s.malloc(len, 1);
            made.push((slot, len));
        }
        for (slot, len) in made.iter_mut().take(10) {
            *len *= 2;
            s.realloc(*slot, *len);
        }
        for (i, (slot, _)) in made.into_iter().enumerate() {
            if i % 6 == 0 {
                kept.push_back(slot);
            } else {
                s.free(slot);
            }
        }
        while kept.len() > 400 {
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
        for make in [small_objects, growing_vec, map, strings] {
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
