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
use crate::run::backend::UserId;
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

impl Script {
    /// A script on the token every FT case deploys, before any message.
    fn start() -> Self {
        Script {
            model: FtState::new(init()),
            steps: Vec::new(),
        }
    }

    /// The scenario of `case`: the token deployed, then the steps.
    fn finish(self, case: &'static str) -> Scenario {
        Scenario {
            case,
            package: "lab-ft",
            deployer: DEFAULT_USER_ALICE,
            init: init().encode(),
            steps: self.steps,
        }
    }
}

/// The `init` every FT case deploys the token with.
fn init() -> InitFt {
    InitFt {
        name: "Lab token".into(),
        symbol: "LAB".into(),
        decimals: 18,
    }
}

fn scenario(case: &'static str, last_user: UserId, rounds: usize) -> Scenario {
    let mut s = Script::start();
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
    s.finish(case)
}

/// The default FT stress case: users 918-1339.
pub fn stress() -> Scenario {
    scenario("ft-stress", 1339, 30)
}

/// The study's literal range, users 918-13400.
pub fn stress_full() -> Scenario {
    scenario("ft-stress-full", 13400, 30)
}

/// The balance map a transfer to a new account grows: as in the 2025 study's test (Gear PR
/// #4853, pallet-gear's `fungible_token_stress_test`), two users each send one batch of the
/// same shape (users 5,001 and 5,002: outside every range the batches address). A batch
/// mints 1,000,000 and sends 6,000 to users 1-20, asks 21 balances, has users 1-20 pass 1,000
/// on to users 21-40, mints 10,000,000, then for users 87-120 mints 5,000, sends it to the
/// user and asks its balance, and for users `i` in 918-1339 mints 5,000, sends it to `i`, and
/// has `i` send `i / 4` to user `2i`. The study sent the holders' transfers from the batch's
/// user too, which a token with owners refuses; here each holder sends its own, so the map
/// takes 920 accounts and grows twice: to 1,024 buckets at its 449th account, in message 746
/// (where the study's own log shows the growth too; 747 is the first message after it), and to
/// 2,048 at its 897th, in message 1,418. 2,903 messages.
pub fn study_2025() -> Scenario {
    let mut s = Script::start();
    for user in [5_001, 5_002] {
        s.send(user, FtAction::Mint(1_000_000));
        for i in 1..=20 {
            s.transfer(user, i, 6_000);
        }
        s.send(user, FtAction::BalanceOf(actor(user)));
        for i in 1..=20 {
            s.send(user, FtAction::BalanceOf(actor(i)));
        }
        for i in 1..=20 {
            s.transfer(i, i + 20, 1_000);
        }
        for i in 1..=20 {
            s.send(user, FtAction::BalanceOf(actor(i)));
        }
        s.send(user, FtAction::Mint(10_000_000));
        for i in 87..=120 {
            s.send(user, FtAction::Mint(5_000));
            s.transfer(user, i, 5_000);
            s.send(user, FtAction::BalanceOf(actor(i)));
        }
        for i in 918..=1339u64 {
            s.send(user, FtAction::Mint(5_000));
            s.transfer(user, i, 5_000);
            s.transfer(i, 2 * i, u128::from(i / 4));
        }
    }
    s.finish("ft-4853")
}

/// `ft-stress`'s second workload: three times the new holders (users 918-2200, so the
/// balance map grows past 2,500 entries) and 5 rounds of balance checks instead of 30.
pub fn wide() -> Scenario {
    scenario("ft-stress", 2200, 5)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::scenario::Expect;
    use ft::{FtError, FtReply};
    use parity_scale_codec::Decode;

    /// 2,903 messages, as the study's; the map's 449th and 897th accounts (where hashbrown
    /// doubles a table of 512 and of 1,024 buckets) arrive in the first batch.
    #[test]
    fn study_2025_has_the_studys_shape_and_grows_the_map_twice() {
        let s = study_2025();
        assert_eq!(s.steps.len() + 1, 2_903);
        let batch = 1 + 20 + 1 + 20 + 20 + 20 + 1 + 3 * 34 + 3 * 422;
        assert_eq!(s.steps.len(), 2 * batch);
        // The accounts the map holds: every minter and every receiver (no step is refused).
        let ok = |st: &Step| matches!(st.expect, Expect::Reply(ref r) if r[0] == 0);
        let mut accounts = std::collections::BTreeSet::new();
        let mut grew_at = Vec::new();
        for (i, step) in s.steps.iter().enumerate() {
            assert!(ok(step), "step {i} is refused");
            let holder = match FtAction::decode(&mut &step.payload[..]).unwrap() {
                FtAction::Mint(_) => actor(step.from),
                FtAction::Transfer { to, .. } => to,
                _ => continue,
            };
            if accounts.insert(holder) && [449, 897].contains(&accounts.len()) {
                grew_at.push(i + 1);
            }
        }
        assert_eq!(accounts.len(), 920);
        assert_eq!(grew_at, [746, 1_418]);
    }

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
