//! The FT stress case of the 2023 study; the contract's own rules, run on the host, give
//! every expected reply.
//!
//! The study's outline leaves amounts and pairings open in places; this is how they are
//! read here (and in the README): users 1-20 each send 1,000 to four users, covering 21-100;
//! "mint to user 2" mints 10,000; users 87-120 each mint 5,000 and send 1,000 back to user 1;
//! users `i` in 918..=1339 (the benchmark's range) mint 5,000 and send `i / 4` to user `2i`;
//! then 30 rounds in which users 1-130 each ask their balance and send 1 to user 1 (users
//! 121-130 hold nothing, so those transfers are refused: the error path is measured too).

use super::{actor, Scenario, Step};
use crate::backend::UserId;
use ft::{FtAction, FtState, InitFt};
use gtest::constants::DEFAULT_USER_ALICE;
use parity_scale_codec::Encode;

/// Collects steps, answering each from the model.
struct Script {
    model: FtState,
    steps: Vec<Step>,
}

impl Script {
    fn send(&mut self, from: UserId, action: FtAction) {
        let reply = self.model.apply(actor(from), action.clone());
        self.steps.push(Step::expecting(from, &action, &reply));
    }

    fn transfer(&mut self, from: UserId, to: UserId, amount: u128) {
        let (from_id, to_id) = (actor(from), actor(to));
        self.send(
            from,
            FtAction::Transfer {
                from: from_id,
                to: to_id,
                amount,
            },
        );
    }
}

fn scenario(case: &'static str, last_user: UserId, rounds: usize) -> Scenario {
    let init = InitFt {
        name: "Lab token".into(),
        symbol: "LAB".into(),
        decimals: 18,
    };
    let mut s = Script {
        model: FtState::new(init.clone()),
        steps: Vec::new(),
    };
    s.send(1, FtAction::Mint(1_000_000));
    for user in 1..=20 {
        s.transfer(1, user, 6_000);
    }
    for user in 1..=20 {
        s.send(user, FtAction::BalanceOf(actor(user)));
    }
    for user in 1..=20u64 {
        for k in 0..4 {
            s.transfer(user, 21 + 4 * (user - 1) + k, 1_000);
        }
    }
    for user in 1..=100 {
        s.send(user, FtAction::BalanceOf(actor(user)));
    }
    s.send(2, FtAction::Mint(10_000));
    for user in 87..=120 {
        s.send(user, FtAction::Mint(5_000));
    }
    for user in 87..=120 {
        s.transfer(user, 1, 1_000);
    }
    s.send(1, FtAction::TotalSupply);
    for user in 918..=last_user {
        s.send(user, FtAction::Mint(5_000));
        s.transfer(user, 2 * user, u128::from(user / 4));
    }
    for _ in 0..rounds {
        for user in 1..=130 {
            s.send(user, FtAction::BalanceOf(actor(user)));
            s.transfer(user, 1, 1);
        }
    }
    Scenario {
        case,
        package: "lab-ft",
        deployer: DEFAULT_USER_ALICE,
        init: init.encode(),
        steps: s.steps,
    }
}

/// The default FT stress case: users 918-1339.
pub fn stress() -> Scenario {
    scenario("ft-stress", 1339, 30)
}

/// The study's literal range, users 918-13400.
pub fn stress_full() -> Scenario {
    scenario("ft-stress-full", 13400, 30)
}

/// `ft-stress`'s second workload: three times the new holders (users 918-2200, so the
/// balance map grows past 2,500 entries) and 5 rounds of balance checks instead of 30.
pub fn wide() -> Scenario {
    scenario("ft-stress", 2200, 5)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Expect;
    use ft::{FtError, FtReply};

    #[test]
    fn stress_has_the_expected_shape_and_refuses_empty_senders() {
        let s = stress();
        assert_eq!(
            s.steps.len(),
            1 + 20 + 20 + 80 + 100 + 1 + 34 + 34 + 1 + 2 * 422 + 30 * 260
        );
        let refused = Expect::Reply(FtReply::Err(FtError::InsufficientBalance).encode());
        // Users 121-130 hold nothing: 10 refused transfers per round.
        assert_eq!(
            s.steps.iter().filter(|st| st.expect == refused).count(),
            30 * 10
        );
    }
}
