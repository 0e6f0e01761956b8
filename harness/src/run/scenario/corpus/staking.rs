//! `staking`: the staking pool (`contracts/corpus/staking`). Accounts take their grant and
//! stake; the admin pays rewards now and then; stakers stake more, unstake (positions made and
//! dropped), claim, and read positions, wallets and the total. Refusals among them: a second
//! grant, staking beyond the wallet, unstaking beyond the stake, rewards paid by someone else,
//! a claim with nothing earned.

use super::super::sails::{constructor, Calls};
use super::super::{actor, Scenario};
use crate::run::backend::UserId;
use gtest::constants::DEFAULT_USER_ALICE;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use staking::{PoolState, StakingProgram, StakingService, GRANT};

const ADMIN: UserId = DEFAULT_USER_ALICE;

struct Script {
    model: PoolState,
    calls: Calls,
}

impl Script {
    fn grant(&mut self, user: UserId) {
        let outcome = self.model.grant(actor(user)).map(|e| ((), e));
        self.calls.change(user, "grant", &(), outcome);
    }

    fn stake(&mut self, user: UserId, amount: u128) {
        let outcome = self.model.stake(actor(user), amount);
        self.calls.change(user, "stake", &amount, outcome);
    }

    fn unstake(&mut self, user: UserId, amount: u128) {
        let outcome = self.model.unstake(actor(user), amount);
        self.calls.change(user, "unstake", &amount, outcome);
    }

    fn pay(&mut self, from: UserId, amount: u128) {
        let outcome = self.model.pay_rewards(actor(from), amount).map(|e| ((), e));
        self.calls.change(from, "pay_rewards", &amount, outcome);
    }
}

fn scenario(users: UserId, actions: usize, seed: u64) -> Scenario {
    let mut s = Script {
        model: PoolState::new(actor(ADMIN)),
        calls: Calls::of::<StakingProgram, StakingService>("staking"),
    };
    let mut rng = SmallRng::seed_from_u64(seed);
    // Nothing staked yet: rewards would belong to no one.
    s.pay(ADMIN, 1_000);
    for user in 1..=users {
        s.grant(user);
        if rng.gen_bool(0.5) {
            s.stake(user, rng.gen_range(1_000..GRANT / 2));
        }
    }
    for _ in 0..actions {
        let user = rng.gen_range(1..=users);
        let position = s.model.position(actor(user));
        match rng.gen_range(0..100) {
            0..=7 => s.pay(ADMIN, rng.gen_range(1_000..50_000)),
            8..=9 => s.pay(user, 1_000),
            10..=29 => s.stake(user, rng.gen_range(100..GRANT / 4)),
            30..=31 => s.stake(user, 2 * GRANT),
            32..=44 => {
                // All of it (the position goes), part of it, or more than staked: refused.
                let amount = match rng.gen_range(0..3) {
                    0 => position.staked,
                    1 => position.staked / 2,
                    _ => position.staked + 1,
                };
                s.unstake(user, amount);
            }
            45..=59 => {
                let outcome = s.model.claim(actor(user));
                s.calls.change(user, "claim", &(), outcome);
            }
            60..=61 => s.grant(user),
            62..=84 => {
                let who = actor(rng.gen_range(1..=users));
                s.calls.query(user, "position", &who, s.model.position(who));
            }
            85..=94 => {
                let wallet = s.model.wallet(actor(user));
                s.calls.query(user, "wallet", &actor(user), wallet);
            }
            _ => {
                let total = s.model.total_staked();
                s.calls.query(user, "total_staked", &(), total);
            }
        }
    }
    Scenario {
        case: "staking",
        package: "corpus-staking",
        deployer: ADMIN,
        init: constructor(0, &()),
        steps: s.calls.steps,
    }
}

/// 40 stakers, 400 actions.
pub fn main() -> Scenario {
    scenario(40, 400, 0x5a_01)
}

/// 160 stakers (about 80 positions made at once), 300 actions.
pub fn wide() -> Scenario {
    scenario(160, 300, 0x5a_02)
}
