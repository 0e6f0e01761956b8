//! The NFT cases; the contract's own rules, run on the host, give every expected reply.

use super::{actor, Scenario, Step};
use crate::run::backend::UserId;
use gtest::constants::DEFAULT_USER_ALICE;
use nft::{InitNft, NftAction, NftState, TokenId, TokenMetadata};
use parity_scale_codec::Encode;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

struct Script {
    model: NftState,
    steps: Vec<Step>,
    next_tx: u64,
    /// Users 1..=users send.
    users: UserId,
}

impl Script {
    fn new(users: UserId) -> Self {
        Script {
            model: NftState::new(init()),
            steps: Vec::new(),
            next_tx: 0,
            users,
        }
    }

    fn tx(&mut self) -> u64 {
        self.next_tx += 1;
        self.next_tx
    }

    fn send(&mut self, from: UserId, action: NftAction) {
        let reply = self.model.handle(actor(from), action.clone());
        self.steps.push(Step::expecting(from, &action, &reply));
    }

    fn mint(&mut self, from: UserId, n: u64) {
        let metadata = TokenMetadata {
            name: format!("Lab token #{n}"),
            description: "A token minted by the galloc lab's NFT scenario".into(),
            media: format!("{n}.png"),
            reference: format!("lab/{n}.json"),
        };
        let transaction_id = self.tx();
        self.send(
            from,
            NftAction::Mint {
                transaction_id,
                metadata,
            },
        );
    }

    fn user_of(&self, token_id: TokenId) -> Option<UserId> {
        super::user_of(self.model.owner_of(token_id)?, self.users)
    }

    fn finish(self, case: &'static str) -> Scenario {
        Scenario {
            case,
            package: "lab-nft",
            deployer: DEFAULT_USER_ALICE,
            init: init().encode(),
            steps: self.steps,
        }
    }
}

const USERS: UserId = 50;

fn init() -> InitNft {
    InitNft {
        name: "Lab collection".into(),
        symbol: "LABNFT".into(),
        base_uri: "https://galloc.lab/nft".into(),
    }
}

/// The 2023 study's NFT case: init, mint one token, burn it.
pub fn basic() -> Scenario {
    let mut s = Script::new(1);
    s.mint(1, 0);
    let transaction_id = s.tx();
    s.send(
        1,
        NftAction::Burn {
            transaction_id,
            token_id: 0,
        },
    );
    s.finish("nft")
}

/// Many users minting, transferring, approving and burning, with refused actions and
/// repeated transaction ids mixed in (seeded, so every run sends the same messages).
pub fn stress() -> Scenario {
    mixed("nft-stress", 2023, 300, 600, USERS)
}

/// `nft`'s second workload: a longer history of the same program, 40 mints by 5 users, then
/// 40 actions of `nft-stress`'s mix (burns among them).
pub fn history() -> Scenario {
    mixed("nft", 7, 40, 40, 5)
}

/// `nft-stress`'s second workload: a growing collection, 800 mints by 100 users, then 200
/// actions of the same mix (another seed).
pub fn growing() -> Scenario {
    mixed("nft-stress", 2025, 800, 200, 100)
}

/// `mints` tokens minted round-robin by `users` users, then `actions` of the stress mix.
fn mixed(case: &'static str, seed: u64, mints: u64, actions: usize, users: UserId) -> Scenario {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut s = Script::new(users);
    for n in 0..mints {
        s.mint(1 + n % users, n);
    }
    let other = |rng: &mut SmallRng, not: UserId| loop {
        let u = rng.gen_range(1..=users);
        if u != not {
            break u;
        }
    };
    for _ in 0..actions {
        let token_id = rng.gen_range(0..s.model.minted() + 5); // a few never-minted ids
        let owner = s.user_of(token_id);
        let sender = match owner {
            Some(o) if rng.gen_bool(0.85) => o,
            Some(o) => other(&mut rng, o),
            None => rng.gen_range(1..=users),
        };
        let transaction_id = s.tx();
        match rng.gen_range(0..100) {
            0..=39 => {
                let to = actor(other(&mut rng, sender));
                s.send(
                    sender,
                    NftAction::Transfer {
                        transaction_id,
                        to,
                        token_id,
                    },
                );
            }
            40..=54 => {
                let approved = other(&mut rng, sender);
                s.send(
                    sender,
                    NftAction::Approve {
                        transaction_id,
                        to: actor(approved),
                        token_id,
                    },
                );
                let transaction_id = s.tx();
                let to = actor(other(&mut rng, approved));
                s.send(
                    approved,
                    NftAction::Transfer {
                        transaction_id,
                        to,
                        token_id,
                    },
                );
            }
            55..=74 => s.send(
                sender,
                NftAction::Burn {
                    transaction_id,
                    token_id,
                },
            ),
            75..=89 => s.send(sender, NftAction::Owner { token_id }),
            _ => {
                // Repeat an earlier message verbatim: the cached result comes back.
                let earlier = s.steps[rng.gen_range(0..s.steps.len())].clone();
                let action =
                    <NftAction as parity_scale_codec::Decode>::decode(&mut &earlier.payload[..])
                        .expect("own payload");
                s.send(earlier.from, action);
            }
        }
    }
    s.finish(case)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::scenario::Expect;
    use nft::{NftError, NftEvent, NftReply};

    #[test]
    fn basic_mints_then_burns_token_zero() {
        let s = basic();
        assert_eq!(s.steps.len(), 2);
        let burned: NftReply = Ok(NftEvent::Burned { token_id: 0 });
        assert_eq!(s.steps[1].expect, Expect::Reply(burned.encode()));
    }

    #[test]
    fn stress_mixes_successes_refusals_and_repeats() {
        let s = stress();
        assert!(s.steps.len() > 900, "{}", s.steps.len());
        let refused = [
            NftError::NotOwner,
            NftError::NotApproved,
            NftError::TokenNotFound,
        ]
        .map(|e| Expect::Reply(NftReply::Err(e).encode()));
        for r in &refused {
            assert!(s.steps.iter().any(|st| &st.expect == r), "no {r:?}");
        }
    }
}
