//! `dex`: the exchange pair (`contracts/corpus/dex`). Users take their airdrop, a few provide
//! liquidity, then a seeded mix of swaps both ways, liquidity added and removed, quotes and
//! reads of the trade window, with refusals among them (a second airdrop, a swap beyond the
//! balance or below its bound, redeeming shares one does not hold).

use super::super::sails::{constructor, Calls};
use super::super::{actor, Scenario};
use crate::run::backend::UserId;
use dex::{DexProgram, PairService, PairState, AIRDROP};
use gtest::constants::DEFAULT_USER_ALICE;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

struct Script {
    model: PairState,
    calls: Calls,
}

impl Script {
    fn airdrop(&mut self, user: UserId) {
        let outcome = self.model.claim_airdrop(actor(user)).map(|e| ((), e));
        self.calls.change(user, "claim_airdrop", &(), outcome);
    }

    fn add(&mut self, user: UserId, a: u128, b_max: u128, min_shares: u128) {
        let outcome = self.model.add_liquidity(actor(user), a, b_max, min_shares);
        self.calls
            .change(user, "add_liquidity", &(a, b_max, min_shares), outcome);
    }

    fn remove(&mut self, user: UserId, shares: u128) {
        let outcome = self.model.remove_liquidity(actor(user), shares);
        self.calls
            .change(user, "remove_liquidity", &shares, outcome);
    }

    /// A swap bounded 1 % under the quote, or (`greedy`) 1 over it: refused.
    fn swap(&mut self, user: UserId, a_to_b: bool, amount: u128, greedy: bool) {
        let quote = self.model.quote(a_to_b, amount).unwrap_or_default();
        let min_out = if greedy { quote + 1 } else { quote * 99 / 100 };
        let outcome = self.model.swap(actor(user), a_to_b, amount, min_out);
        self.calls
            .change(user, "swap", &(a_to_b, amount, min_out), outcome);
    }

    fn read(&mut self, user: UserId, rng: &mut SmallRng, users: UserId) {
        match rng.gen_range(0..4) {
            0 => {
                let (a_to_b, amount) = (rng.gen_bool(0.5), rng.gen_range(1..5_000));
                let quote = self.model.quote(a_to_b, amount);
                self.calls.quiet(user, "quote", &(a_to_b, amount), quote);
            }
            1 => self
                .calls
                .query(user, "reserves", &(), self.model.reserves()),
            2 => {
                let who = actor(rng.gen_range(1..=users));
                self.calls
                    .query(user, "account", &who, self.model.account(who));
            }
            _ => {
                let trades = self.model.recent_trades();
                self.calls.query(user, "recent_trades", &(), trades);
            }
        }
    }
}

fn scenario(users: UserId, providers: UserId, actions: usize, seed: u64) -> Scenario {
    let mut s = Script {
        model: PairState::default(),
        calls: Calls::of::<DexProgram, PairService>("pair"),
    };
    let mut rng = SmallRng::seed_from_u64(seed);
    for user in 1..=users {
        s.airdrop(user);
    }
    // Before any liquidity: a swap has nothing to trade against.
    s.swap(1, true, 1_000, false);
    for user in 1..=providers {
        let a = 10_000 * u128::from(user);
        s.add(user, a, AIRDROP / 2, 0);
    }
    for _ in 0..actions {
        let user = rng.gen_range(1..=users);
        match rng.gen_range(0..100) {
            0..=54 => {
                let amount = rng.gen_range(100..20_000);
                s.swap(user, rng.gen_bool(0.5), amount, false);
            }
            55..=59 => s.swap(user, rng.gen_bool(0.5), rng.gen_range(100..2_000), true),
            60..=61 => s.swap(user, true, 3 * AIRDROP, false),
            62..=69 => {
                let a = rng.gen_range(1_000..30_000);
                let (ra, rb) = s.model.reserves();
                let b_max = (a * rb).div_ceil(ra.max(1)) + 10;
                s.add(user, a, b_max, 0);
            }
            70..=77 => {
                let held = s.model.account(actor(user)).shares;
                // Half of what one holds, or (holding none) one share: refused.
                s.remove(user, (held / 2).max(1));
            }
            78..=79 => s.airdrop(user),
            _ => s.read(user, &mut rng, users),
        }
    }
    Scenario {
        case: "dex",
        package: "corpus-dex",
        deployer: DEFAULT_USER_ALICE,
        init: constructor(0, &()),
        steps: s.calls.steps,
    }
}

/// 40 users, 8 of them providers, 400 actions.
pub fn main() -> Scenario {
    scenario(40, 8, 400, 0xde_01)
}

/// A crowd: 120 users (120 airdrops and accounts), 3 providers, 300 actions.
pub fn crowd() -> Scenario {
    scenario(120, 3, 300, 0xde_02)
}
