//! `lottery`: the lottery (`contracts/corpus/lottery`). Players deposit credit and buy tickets;
//! every so often someone draws the round (its ticket list dropped, a new one grown); players
//! read the round, the winners and their credit. Refusals among them: buying beyond the
//! per-round limit or the credit, drawing a round with too few tickets, a deposit of nothing.

use super::super::sails::{constructor, Calls};
use super::super::{actor, Scenario};
use crate::run::backend::UserId;
use gtest::constants::DEFAULT_USER_ALICE;
use lottery::{LotteryProgram, LotteryService, LotteryState};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

struct Script {
    model: LotteryState,
    calls: Calls,
}

impl Script {
    fn deposit(&mut self, user: UserId, amount: u128) {
        let outcome = self.model.deposit(actor(user), amount);
        self.calls.quiet(user, "deposit", &amount, outcome);
    }

    fn buy(&mut self, user: UserId, count: u32) {
        let outcome = self.model.buy(actor(user), count);
        self.calls.change(user, "buy", &count, outcome);
    }

    fn draw(&mut self, user: UserId) {
        let outcome = self.model.draw();
        self.calls.change(user, "draw", &(), outcome);
    }
}

/// `draw_every`: on average, one draw per that many actions.
fn scenario(players: UserId, actions: usize, draw_every: u32, seed: u64) -> Scenario {
    let mut s = Script {
        model: LotteryState::default(),
        calls: Calls::of::<LotteryProgram, LotteryService>("lottery"),
    };
    let mut rng = SmallRng::seed_from_u64(seed);
    for user in 1..=players {
        s.deposit(user, rng.gen_range(500..3_000));
    }
    // Nothing bought yet: too few tickets.
    s.draw(1);
    for _ in 0..actions {
        let user = rng.gen_range(1..=players);
        if rng.gen_ratio(1, draw_every) {
            s.draw(user);
            continue;
        }
        match rng.gen_range(0..100) {
            0..=54 => s.buy(user, rng.gen_range(1..=4)),
            55..=59 => s.buy(user, 11),
            60..=61 => s.deposit(user, 0),
            62..=69 => s.deposit(user, rng.gen_range(1..2_000)),
            70..=79 => s.calls.query(user, "round", &(), s.model.round()),
            80..=89 => s.calls.query(user, "winners", &(), s.model.winners()),
            _ => {
                let who = actor(rng.gen_range(1..=players));
                s.calls.query(user, "credit", &who, s.model.credit(who));
            }
        }
    }
    Scenario {
        case: "lottery",
        package: "corpus-lottery",
        deployer: DEFAULT_USER_ALICE,
        init: constructor(0, &()),
        steps: s.calls.steps,
    }
}

/// 30 players, 400 actions, a draw about every 25.
pub fn main() -> Scenario {
    scenario(30, 400, 25, 0x10_01)
}

/// Long rounds: 90 players, 400 actions, a draw about every 120 (ticket lists of hundreds).
pub fn long_rounds() -> Scenario {
    scenario(90, 400, 120, 0x10_02)
}
