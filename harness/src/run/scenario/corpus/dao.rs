//! `dao`: the DAO (`contracts/corpus/dao`). Accounts join; members propose (titles of a few
//! words, texts of 0-300 bytes), vote, and close their proposals; anyone reads proposals, the
//! open list and the member count. Refusals among them: joining twice, proposing or voting as
//! a non-member, an empty title or an over-long text, voting twice or on a closed proposal,
//! closing someone else's.

use super::super::sails::{constructor, Calls};
use super::super::{actor, Scenario};
use crate::run::backend::UserId;
use dao::{DaoProgram, DaoService, DaoState, ProposalId};
use gtest::constants::DEFAULT_USER_ALICE;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

struct Script {
    model: DaoState,
    calls: Calls,
    rng: SmallRng,
    /// Proposals made so far, and who made each.
    authors: Vec<UserId>,
}

impl Script {
    fn join(&mut self, user: UserId) {
        let outcome = self.model.join(actor(user)).map(|e| ((), e));
        self.calls.change(user, "join", &(), outcome);
    }

    fn propose(&mut self, user: UserId, title: String, text: String) {
        let outcome = self.model.propose(actor(user), title.clone(), text.clone());
        if let Ok((id, _)) = &outcome {
            assert_eq!(*id as usize, self.authors.len());
            self.authors.push(user);
        }
        self.calls.change(user, "propose", &(title, text), outcome);
    }

    /// A proposal made so far (mostly a recent one), or one that does not exist.
    fn some_proposal(&mut self) -> ProposalId {
        let made = self.authors.len() as ProposalId;
        if made == 0 || self.rng.gen_ratio(1, 20) {
            return made + 7;
        }
        made - 1 - self.rng.gen_range(0..made.min(12))
    }

    fn act(&mut self, users: UserId) {
        let user = self.rng.gen_range(1..=users);
        match self.rng.gen_range(0..100) {
            0..=4 => self.join(user),
            5..=16 => {
                let title = format!("Proposal {} of member {user}", self.authors.len());
                let text = "Spend part of the treasury on the next allocator study. "
                    .repeat(self.rng.gen_range(0..6));
                self.propose(user, title, text);
            }
            17..=18 => self.propose(user, String::new(), String::new()),
            19 => self.propose(user, "Too long".into(), "x".repeat(500)),
            20..=64 => {
                let (id, yes) = (self.some_proposal(), self.rng.gen_ratio(2, 3));
                let outcome = self.model.vote(actor(user), id, yes).map(|e| ((), e));
                self.calls.change(user, "vote", &(id, yes), outcome);
            }
            65..=74 => {
                let id = self.some_proposal();
                let author = self.authors.get(id as usize).copied();
                let closer = author.filter(|_| self.rng.gen_ratio(4, 5)).unwrap_or(user);
                let outcome = self.model.close(actor(closer), id);
                self.calls.change(closer, "close", &id, outcome);
            }
            75..=89 => {
                let id = self.some_proposal();
                self.calls
                    .query(user, "proposal", &id, self.model.proposal(id));
            }
            90..=95 => {
                let open = self.model.open_proposals();
                self.calls.query(user, "open_proposals", &(), open);
            }
            _ => self.calls.query(user, "members", &(), self.model.members()),
        }
    }
}

/// `members` of the `users` join first.
fn scenario(users: UserId, members: UserId, actions: usize, seed: u64) -> Scenario {
    let mut s = Script {
        model: DaoState::default(),
        calls: Calls::of::<DaoProgram, DaoService>("dao"),
        rng: SmallRng::seed_from_u64(seed),
        authors: Vec::new(),
    };
    for user in 1..=members {
        s.join(user);
    }
    for _ in 0..actions {
        s.act(users);
    }
    Scenario {
        case: "dao",
        package: "corpus-dao",
        deployer: DEFAULT_USER_ALICE,
        init: constructor(0, &()),
        steps: s.calls.steps,
    }
}

/// 40 accounts, 30 of them members from the start, 400 actions.
pub fn main() -> Scenario {
    scenario(40, 30, 400, 0xda_01)
}

/// A large membership: 150 accounts, 140 members, 300 actions.
pub fn large() -> Scenario {
    scenario(150, 140, 300, 0xda_02)
}
