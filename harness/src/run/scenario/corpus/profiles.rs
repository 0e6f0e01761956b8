//! `profiles`: the registry of handles (`contracts/corpus/profiles`, plain gstd). Accounts
//! register handles with bios, rewrite bios, add and remove links, follow and unfollow each
//! other, look profiles up, and some release their handle and register another. Refusals among
//! them: a handle taken or malformed, a second registration, a bio or link too long, a sixth
//! link, following oneself or twice, unfollowing someone not followed, and a payload that is
//! not a message at all.

use super::super::{actor, Scenario, Step};
use crate::run::backend::UserId;
use gtest::constants::DEFAULT_USER_ALICE;
use profiles::{Registry, RegistryAction as A, RegistryError, RegistryReply};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

struct Script {
    model: Registry,
    steps: Vec<Step>,
    rng: SmallRng,
}

const BIO: &str = "Builds allocators for smart contracts; measures everything twice. ";

impl Script {
    fn send(&mut self, from: UserId, action: A) {
        let reply = self.model.handle(actor(from), action.clone());
        self.steps.push(Step::expecting(from, &action, &reply));
    }

    fn bio(&mut self) -> String {
        let len = self.rng.gen_range(0..=150);
        BIO.repeat(3)[..len].to_owned()
    }

    /// A handle some account may hold: mostly a registered one's, sometimes one never made.
    fn handle(&mut self, users: UserId) -> String {
        let u = self.rng.gen_range(1..=users + 3);
        format!("user_{u}")
    }
}

fn scenario(users: UserId, actions: usize, seed: u64) -> Scenario {
    let mut s = Script {
        model: Registry::default(),
        steps: Vec::new(),
        rng: SmallRng::seed_from_u64(seed),
    };
    for user in 1..=users {
        let bio = s.bio();
        s.send(
            user,
            A::Register {
                handle: format!("user_{user}"),
                bio,
            },
        );
    }
    for _ in 0..actions {
        let user = s.rng.gen_range(1..=users);
        let action = match s.rng.gen_range(0..100) {
            0..=9 => A::SetBio { bio: s.bio() },
            10 => A::SetBio {
                bio: "x".repeat(200),
            },
            11..=22 => A::AddLink {
                link: format!("https://example.org/{user}/{}", s.rng.gen_range(0..1_000)),
            },
            23..=27 => A::RemoveLink {
                index: s.rng.gen_range(0..6),
            },
            28..=49 => A::Follow {
                handle: s.handle(users),
            },
            50..=57 => A::Unfollow {
                handle: s.handle(users),
            },
            58..=79 => A::Lookup {
                handle: s.handle(users),
            },
            80..=84 => A::HandleOf {
                owner: actor(s.rng.gen_range(1..=users)),
            },
            85..=87 => A::Release,
            88..=93 => A::Register {
                handle: format!("user_{user}"),
                bio: s.bio(),
            },
            94 => A::Register {
                handle: "Not A Handle".into(),
                bio: String::new(),
            },
            95..=97 => A::Register {
                handle: format!("user_{user}_{}", s.rng.gen_range(0..100)),
                bio: s.bio(),
            },
            _ => {
                // Not a message: an error reply, nothing changed.
                let reply: RegistryReply = Err(RegistryError::InvalidPayload);
                s.steps.push(Step::answering(user, vec![0xee], &reply));
                continue;
            }
        };
        s.send(user, action);
    }
    Scenario {
        case: "profiles",
        package: "corpus-profiles",
        deployer: DEFAULT_USER_ALICE,
        init: Vec::new(),
        steps: s.steps,
    }
}

/// 40 accounts, 400 actions.
pub fn main() -> Scenario {
    scenario(40, 400, 0x9f_01)
}

/// 150 accounts (150 profiles to follow), 300 actions.
pub fn many() -> Scenario {
    scenario(150, 300, 0x9f_02)
}
