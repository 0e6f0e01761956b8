//! `vesting`: the vesting schedules (`contracts/corpus/vesting`). The admin grants schedules
//! to beneficiaries and moves the clock on; beneficiaries claim, read their schedules and what
//! they can claim; the admin revokes some. Refusals among them: a grant by someone else, a
//! cliff past the end, a ninth schedule, a claim with nothing vested, a revocation twice.

use super::super::sails::{constructor, Calls};
use super::super::{actor, Scenario};
use crate::run::backend::UserId;
use gtest::constants::DEFAULT_USER_ALICE;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use vesting::{VestingProgram, VestingService, VestingState};

const ADMIN: UserId = DEFAULT_USER_ALICE;

struct Script {
    model: VestingState,
    calls: Calls,
}

impl Script {
    fn grant(&mut self, from: UserId, to: UserId, total: u128, cliff: u64, duration: u64) {
        let outcome = self
            .model
            .grant(actor(from), actor(to), total, cliff, duration);
        self.calls
            .change(from, "grant", &(actor(to), total, cliff, duration), outcome);
    }

    fn advance(&mut self, epochs: u64) {
        let outcome = self.model.advance(actor(ADMIN), epochs);
        self.calls.change(ADMIN, "advance", &epochs, outcome);
    }

    fn claim(&mut self, user: UserId) {
        let outcome = self.model.claim(actor(user));
        self.calls.change(user, "claim", &(), outcome);
    }

    fn revoke(&mut self, user: UserId, index: u32) {
        let outcome = self.model.revoke(actor(ADMIN), actor(user), index);
        self.calls
            .change(ADMIN, "revoke", &(actor(user), index), outcome);
    }
}

fn scenario(users: UserId, grants: usize, actions: usize, seed: u64) -> Scenario {
    let mut s = Script {
        model: VestingState::new(actor(ADMIN)),
        calls: Calls::of::<VestingProgram, VestingService>("vesting"),
    };
    let mut rng = SmallRng::seed_from_u64(seed);
    for _ in 0..grants {
        let user = rng.gen_range(1..=users);
        let duration = rng.gen_range(10..200);
        s.grant(
            ADMIN,
            user,
            rng.gen_range(1_000..100_000),
            rng.gen_range(0..duration / 2),
            duration,
        );
    }
    for _ in 0..actions {
        let user = rng.gen_range(1..=users);
        match rng.gen_range(0..100) {
            0..=9 => s.advance(rng.gen_range(1..15)),
            10..=39 => s.claim(user),
            40..=54 => {
                let duration = rng.gen_range(10..200);
                let cliff = rng.gen_range(0..duration / 2);
                s.grant(ADMIN, user, rng.gen_range(1_000..100_000), cliff, duration);
            }
            55..=57 => s.grant(user, user, 5_000, 0, 10),
            58..=59 => s.grant(ADMIN, user, 5_000, 30, 20),
            60..=66 => {
                let held = s.model.schedules_of(actor(user)).len() as u32;
                s.revoke(user, rng.gen_range(0..held + 1));
            }
            67..=84 => {
                let list = s.model.schedules_of(actor(user));
                s.calls.query(user, "schedules_of", &actor(user), list);
            }
            85..=94 => {
                let who = actor(rng.gen_range(1..=users));
                s.calls
                    .query(user, "claimable", &who, s.model.claimable(who));
            }
            _ => s.calls.query(user, "totals", &(), s.model.totals()),
        }
    }
    Scenario {
        case: "vesting",
        package: "corpus-vesting",
        deployer: ADMIN,
        init: constructor(0, &()),
        steps: s.calls.steps,
    }
}

/// 25 beneficiaries, 60 schedules granted first, then 350 actions.
pub fn main() -> Scenario {
    scenario(25, 60, 350, 0x7e_01)
}

/// Many beneficiaries, a few schedules each: 100 of them, 200 grants, then 250 actions.
pub fn many() -> Scenario {
    scenario(100, 200, 250, 0x7e_02)
}
