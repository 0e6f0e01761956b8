//! The FT stress case of the 2023 study on the lab's Sails token (`contracts/vft`): the same
//! steps and user ranges as `ft-stress`, sent as a Sails client sends them, every reply and
//! event answered by the token's own rules (`VftState`) run on the host.
//!
//! One difference the standard imposes: only the token's admin mints, so where the study's
//! users mint for themselves, the deployer mints to them (the same number of mint messages;
//! their sender differs).

use super::sails::{constructor, step, Route};
use super::{actor, Scenario, Step};
use crate::run::backend::UserId;
use gtest::constants::DEFAULT_USER_ALICE;
use sails_rs::U256;
use vft::{VftAdminService, VftProgram, VftService, VftState};

const ADMIN: UserId = DEFAULT_USER_ALICE;

/// Collects steps, answering each from the model.
struct Script {
    model: VftState,
    steps: Vec<Step>,
    vft: Route,
    admin: Route,
}

impl Script {
    fn transfer(&mut self, from: UserId, to: UserId, value: u128) {
        let (from_id, to_id, value) = (actor(from), actor(to), U256::from(value));
        let outcome = self
            .model
            .transfer_from(from_id, from_id, to_id, value)
            .map(|event| {
                (
                    event.is_some(),
                    event.iter().map(|e| self.vft.event(e)).collect(),
                )
            });
        let s = step(from, &self.vft, "transfer", &(to_id, value), outcome);
        self.steps.push(s.expect("a method of Vft"));
    }

    fn mint(&mut self, to: UserId, value: u128) {
        let (to_id, value) = (actor(to), U256::from(value));
        let outcome = self
            .model
            .mint(actor(ADMIN), to_id, value)
            .map(|event| (true, vec![self.admin.event(&event)]));
        let s = step(ADMIN, &self.admin, "mint", &(to_id, value), outcome);
        self.steps.push(s.expect("a method of VftAdmin"));
    }

    fn balance_of(&mut self, from: UserId, account: UserId) {
        let answer = self.model.balance_of(actor(account));
        let outcome = Ok::<_, ()>((answer, Vec::new()));
        let s = step(from, &self.vft, "balance_of", &actor(account), outcome);
        self.steps.push(s.expect("a query of Vft"));
    }
}

fn scenario(case: &'static str, last_user: UserId, rounds: usize) -> Scenario {
    let (name, symbol, decimals) = ("Lab token".to_owned(), "LAB".to_owned(), 18u8);
    let mut s = Script {
        model: VftState::new(name.clone(), symbol.clone(), decimals, actor(ADMIN)),
        steps: Vec::new(),
        vft: Route::of::<VftProgram, VftService>("vft").expect("the program's Vft service"),
        admin: Route::of::<VftProgram, VftAdminService>("vft_admin").expect("VftAdmin"),
    };
    s.mint(1, 1_000_000);
    for user in 1..=20 {
        s.transfer(1, user, 6_000);
    }
    for user in 1..=20 {
        s.balance_of(user, user);
    }
    for user in 1..=20u64 {
        for k in 0..4 {
            s.transfer(user, 21 + 4 * (user - 1) + k, 1_000);
        }
    }
    for user in 1..=100 {
        s.balance_of(user, user);
    }
    s.mint(2, 10_000);
    for user in 87..=120 {
        s.mint(user, 5_000);
    }
    for user in 87..=120 {
        s.transfer(user, 1, 1_000);
    }
    let supply = Ok::<_, ()>((s.model.total_supply(), Vec::new()));
    let total = step(1, &s.vft, "total_supply", &(), supply).expect("a query of Vft");
    s.steps.push(total);
    for user in 918..=last_user {
        s.mint(user, 5_000);
        s.transfer(user, 2 * user, u128::from(user / 4));
    }
    for _ in 0..rounds {
        for user in 1..=130 {
            s.balance_of(user, user);
            s.transfer(user, 1, 1);
        }
    }
    Scenario {
        case,
        package: "lab-vft",
        deployer: ADMIN,
        // The program's one constructor, `new(name, symbol, decimals)`.
        init: constructor(0, &(name, symbol, decimals)),
        steps: s.steps,
    }
}

/// The FT stress case on the Sails token: users 918-1339.
pub fn stress() -> Scenario {
    scenario("vft-stress", 1339, 30)
}

/// `vft-stress`'s second workload: `ft-stress`'s ([`super::ft::wide`]) on the Sails token.
pub fn wide() -> Scenario {
    scenario("vft-stress", 2200, 5)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::scenario::Expect;

    #[test]
    fn stress_has_ft_stress_shape_and_refuses_empty_senders() {
        let s = stress();
        assert_eq!(s.steps.len(), super::super::ft::stress().steps.len());
        let refused = s
            .steps
            .iter()
            .filter(|st| matches!(st.expect, Expect::FailureWith(_)))
            .count();
        // Users 121-130 hold nothing: 10 refused transfers per round.
        assert_eq!(refused, 30 * 10);
        // Every accepted transfer that moves tokens sends exactly one event.
        let events: usize = s
            .steps
            .iter()
            .map(|st| st.sent.as_ref().unwrap().len())
            .sum();
        assert!(events > 4_000, "{events}");
    }
}
