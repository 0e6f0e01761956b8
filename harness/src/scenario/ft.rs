//! The FT stress case of the 2023 study, with a host model giving every expected reply.
//!
//! The study's outline leaves amounts and pairings open in places; this is how they are
//! read here (and in the README): users 1-20 each send 1,000 to four users, covering 21-100;
//! "mint to user 2" mints 10,000; users 87-120 each mint 5,000 and send 1,000 back to user 1;
//! users `i` in 918..=1339 (the benchmark's range) mint 5,000 and send `i / 4` to user `2i`;
//! then 30 rounds in which users 1-130 each ask their balance and send 1 to user 1 (users
//! 121-130 hold nothing, so those transfers are refused: the error path is measured too).

use super::{Expect, Scenario, Step};
use crate::backend::UserId;
use ft::{FtAction, FtError, FtEvent, FtReply, InitFt};
use gtest::constants::DEFAULT_USER_ALICE;
use parity_scale_codec::Encode;
use std::collections::HashMap;

type ActorId = gstd::ActorId;

fn actor(user: UserId) -> ActorId {
    ActorId::from(user)
}

/// The contract's semantics, on the host.
#[derive(Default)]
struct Model {
    total_supply: u128,
    balances: HashMap<ActorId, u128>,
    allowances: HashMap<(ActorId, ActorId), u128>,
}

impl Model {
    fn balance(&self, who: &ActorId) -> u128 {
        self.balances.get(who).copied().unwrap_or(0)
    }

    fn apply(&mut self, sender: ActorId, action: &FtAction) -> FtReply {
        match *action {
            FtAction::Mint(amount) => {
                self.total_supply = self
                    .total_supply
                    .checked_add(amount)
                    .ok_or(FtError::Overflow)?;
                *self.balances.entry(sender).or_default() += amount;
                Ok(FtEvent::Minted { to: sender, amount })
            }
            FtAction::Burn(amount) => {
                let balance = self.balance(&sender);
                if balance < amount {
                    return Err(FtError::InsufficientBalance);
                }
                self.balances.insert(sender, balance - amount);
                self.total_supply -= amount;
                Ok(FtEvent::Burned {
                    from: sender,
                    amount,
                })
            }
            FtAction::Transfer { from, to, amount } => {
                if to.is_zero() {
                    return Err(FtError::ZeroAddress);
                }
                let balance = self.balance(&from);
                if balance < amount {
                    return Err(FtError::InsufficientBalance);
                }
                if from != sender {
                    let allowed = self.allowances.get(&(from, sender)).copied().unwrap_or(0);
                    if allowed < amount {
                        return Err(FtError::InsufficientAllowance);
                    }
                    self.allowances.insert((from, sender), allowed - amount);
                }
                self.balances.insert(from, balance - amount);
                *self.balances.entry(to).or_default() += amount;
                Ok(FtEvent::Transferred { from, to, amount })
            }
            FtAction::Approve { to, amount } => {
                if to.is_zero() {
                    return Err(FtError::ZeroAddress);
                }
                self.allowances.insert((sender, to), amount);
                Ok(FtEvent::Approved {
                    from: sender,
                    to,
                    amount,
                })
            }
            FtAction::TotalSupply => Ok(FtEvent::TotalSupply(self.total_supply)),
            FtAction::BalanceOf(who) => Ok(FtEvent::Balance(self.balance(&who))),
        }
    }
}

/// Collects steps, answering each from the model.
struct Script {
    model: Model,
    steps: Vec<Step>,
}

impl Script {
    fn send(&mut self, from: UserId, action: FtAction) {
        let reply = self.model.apply(actor(from), &action);
        self.steps.push(Step {
            from,
            payload: action.encode(),
            expect: Expect::Reply(reply.encode()),
        });
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

fn scenario(case: &'static str, last_user: UserId) -> Scenario {
    let mut s = Script {
        model: Model::default(),
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
    for _ in 0..30 {
        for user in 1..=130 {
            s.send(user, FtAction::BalanceOf(actor(user)));
            s.transfer(user, 1, 1);
        }
    }
    Scenario {
        case,
        package: "lab-ft",
        deployer: DEFAULT_USER_ALICE,
        init: InitFt {
            name: "Lab token".into(),
            symbol: "LAB".into(),
            decimals: 18,
        }
        .encode(),
        steps: s.steps,
    }
}

/// The default FT stress case: users 918-1339.
pub fn stress() -> Scenario {
    scenario("ft-stress", 1339)
}

/// The study's literal range, users 918-13400.
pub fn stress_full() -> Scenario {
    scenario("ft-stress-full", 13400)
}

#[cfg(test)]
mod tests {
    use super::*;

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
