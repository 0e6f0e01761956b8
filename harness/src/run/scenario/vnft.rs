//! The NFT stress case on the lab's Sails collection (`contracts/vnft`): `nft-stress`'s mix
//! (300 mints to 50 users, then 600 seeded random operations) through the VNFT standard's
//! methods: transfers, approvals followed by `transfer_from` by the approved, burns, queries,
//! and refused operations (a sender who does not own the token, an account not approved, a
//! token burned or never minted, a mint by someone other than the admin). Every reply and
//! event comes from the collection's own rules (`VnftState`) run on the host.

use super::sails::{constructor, step, Route};
use super::{actor, Scenario, Step};
use crate::run::backend::{Sent, UserId};
use gtest::constants::DEFAULT_USER_ALICE;
use parity_scale_codec::Encode;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sails_rs::{ActorId, U256};
use vnft::{TokenMetadata, VnftAdminService, VnftError, VnftProgram, VnftService, VnftState};

const ADMIN: UserId = DEFAULT_USER_ALICE;
const USERS: UserId = 50;

struct Script {
    model: VnftState,
    steps: Vec<Step>,
    vnft: Route,
    admin: Route,
    /// Users 1..=users send.
    users: UserId,
}

fn metadata(n: u64) -> TokenMetadata {
    TokenMetadata {
        name: format!("Lab token #{n}"),
        description: "A token minted by the galloc lab's VNFT scenario".into(),
        media: format!("{n}.png"),
        reference: format!("lab/{n}.json"),
    }
}

impl Script {
    fn push(
        &mut self,
        from: UserId,
        admin: bool,
        method: &str,
        args: &impl Encode,
        outcome: Result<(impl Encode + 'static, Vec<Sent>), VnftError>,
    ) {
        let route = if admin { self.admin } else { self.vnft };
        let s = step(from, &route, method, args, outcome);
        self.steps
            .push(s.expect("a method of the collection's services"));
    }

    fn mint(&mut self, from: UserId, to: UserId, n: u64) {
        let (to_id, meta) = (actor(to), metadata(n));
        let outcome = self.model.mint(actor(from), to_id, meta.clone());
        let outcome = outcome.map(|e| {
            let vnft::VnftAdminEvents::Minted { token_id, .. } = e else {
                unreachable!()
            };
            (token_id, vec![self.admin.event(&e)])
        });
        self.push(from, true, "mint", &(to_id, meta), outcome);
    }

    fn transfer_from(&mut self, sender: UserId, from: ActorId, to: UserId, token: U256) {
        let (s, to_id) = (actor(sender), actor(to));
        let outcome = self.model.transfer_from(s, from, to_id, token);
        let outcome = outcome.map(|e| ((), vec![self.vnft.event(&e)]));
        if from == s {
            self.push(sender, false, "transfer", &(to_id, token), outcome);
        } else {
            self.push(
                sender,
                false,
                "transfer_from",
                &(from, to_id, token),
                outcome,
            );
        }
    }

    fn approve(&mut self, sender: UserId, approved: UserId, token: U256) {
        let a = actor(approved);
        let outcome = self.model.approve(actor(sender), a, token);
        let outcome = outcome.map(|e| ((), vec![self.vnft.event(&e)]));
        self.push(sender, false, "approve", &(a, token), outcome);
    }

    fn burn(&mut self, from: ActorId, token: U256) {
        let outcome = self.model.burn(actor(ADMIN), from, token);
        let outcome = outcome.map(|e| ((), vec![self.admin.event(&e)]));
        self.push(ADMIN, true, "burn", &(from, token), outcome);
    }

    fn query(
        &mut self,
        from: UserId,
        admin: bool,
        method: &str,
        args: &impl Encode,
        answer: impl Encode + 'static,
    ) {
        self.push(from, admin, method, args, Ok((answer, Vec::new())));
    }

    fn user_of(&self, token: U256) -> Option<UserId> {
        super::user_of(self.model.owner_of(token), self.users)
    }
}

/// Many users transferring and approving, the admin minting and burning, refusals mixed in
/// (seeded, so every run sends the same messages).
pub fn stress() -> Scenario {
    mixed(2023, 300, 600, USERS)
}

/// `vnft-stress`'s second workload: a growing collection, 800 mints to 100 users, then 200
/// actions of the same mix (another seed).
pub fn growing() -> Scenario {
    mixed(2025, 800, 200, 100)
}

/// `mints` tokens minted by the admin round-robin to `users` users, then `actions` of the
/// stress mix.
fn mixed(seed: u64, mints: u64, actions: u64, users: UserId) -> Scenario {
    let (name, symbol) = ("Lab collection".to_owned(), "LABNFT".to_owned());
    let mut s = Script {
        model: VnftState::new(name.clone(), symbol.clone(), actor(ADMIN)),
        steps: Vec::new(),
        vnft: Route::of::<VnftProgram, VnftService>("vnft").expect("the program's Vnft"),
        admin: Route::of::<VnftProgram, VnftAdminService>("vnft_admin").expect("VnftAdmin"),
        users,
    };
    let mut rng = SmallRng::seed_from_u64(seed);
    for n in 0..mints {
        s.mint(ADMIN, 1 + n % users, n);
    }
    let other = |rng: &mut SmallRng, not: UserId| loop {
        let u = rng.gen_range(1..=users);
        if u != not {
            break u;
        }
    };
    for n in mints..mints + actions {
        // A few never-minted ids among the rest.
        let minted = s.model.minted().as_u64();
        let token = U256::from(rng.gen_range(0..minted + 5));
        let owner = s.user_of(token);
        let sender = match owner {
            Some(o) if rng.gen_bool(0.85) => o,
            Some(o) => other(&mut rng, o),
            None => rng.gen_range(1..=users),
        };
        match rng.gen_range(0..100) {
            0..=34 => {
                let to = other(&mut rng, sender);
                // Someone else's token: half the time a plain transfer (not the owner), half
                // a `transfer_from` its owner (not approved).
                let from = match owner {
                    Some(o) if o != sender && rng.gen_bool(0.5) => actor(o),
                    _ => actor(sender),
                };
                s.transfer_from(sender, from, to, token);
            }
            35..=49 => {
                let approved = other(&mut rng, sender);
                s.approve(sender, approved, token);
                let to = other(&mut rng, approved);
                s.transfer_from(approved, actor(sender), to, token);
            }
            50..=64 => {
                let from = match owner {
                    Some(o) if rng.gen_bool(0.9) => o,
                    _ => other(&mut rng, sender),
                };
                s.burn(actor(from), token);
            }
            65..=74 => {
                let answer = s.model.owner_of(token);
                s.query(sender, false, "owner_of", &token, answer);
            }
            75..=79 => {
                let answer = s.model.get_approved(token);
                s.query(sender, false, "get_approved", &token, answer);
            }
            80..=84 => {
                let answer = s.model.balance_of(actor(sender));
                s.query(sender, false, "balance_of", &actor(sender), answer);
            }
            85..=94 => {
                let answer = s.model.token_metadata_by_id(token);
                s.query(sender, true, "token_metadata_by_id", &token, answer);
            }
            _ => s.mint(sender, sender, n), // refused: only the admin mints
        }
    }
    Scenario {
        case: "vnft-stress",
        package: "lab-vnft",
        deployer: ADMIN,
        // The program's one constructor, `new(name, symbol)`.
        init: constructor(0, &(name, symbol)),
        steps: s.steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::scenario::Expect;

    #[test]
    fn stress_mixes_every_operation_and_refusal() {
        let s = stress();
        assert!(s.steps.len() > 900, "{}", s.steps.len());
        let route = Route::of::<VnftProgram, VnftService>("vnft").unwrap();
        let admin = Route::of::<VnftProgram, VnftAdminService>("vnft_admin").unwrap();
        let refusals = [
            (route, "transfer", VnftError::NotOwner),
            (route, "transfer", VnftError::TokenDoesNotExist),
            (route, "transfer_from", VnftError::NotApproved),
            (route, "approve", VnftError::NotOwner),
            (admin, "burn", VnftError::NotOwner),
            (admin, "mint", VnftError::NotAdmin),
        ];
        for (r, method, error) in refusals {
            let expect = Expect::FailureWith(r.answer(method, &error).unwrap());
            assert!(
                s.steps.iter().any(|st| st.expect == expect),
                "no refused {method}: {error:?}"
            );
        }
        let events: usize = s
            .steps
            .iter()
            .map(|st| st.sent.as_ref().unwrap().len())
            .sum();
        assert!(events > 500, "{events}");
    }
}
