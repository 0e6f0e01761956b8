//! The scale cases (`just scale`): programs whose state grows by batches past 4 MiB
//! of live heap, as a program that lives for years does, with the same few ordinary messages
//! sent at checkpoints along the way. Each round is [`Plan::growth`] batch messages, then
//! [`Plan::probes`] probe messages: the checkpoint, whose gas is compared across variants at
//! the live heap the state has reached. Every reply is the contract's own rules' (run here on
//! the host), so a refusal or a corrupted state fails the run.

use super::{actor, Scenario, Step};
use crate::run::backend::UserId;
use collection::{CollectionAction, CollectionState, InitCollection, TokenId};
use gtest::constants::DEFAULT_USER_ALICE;
use journal::{InitJournal, JournalAction, JournalState};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// How a scale case's messages are laid out: `rounds` times, `growth` batch messages then
/// `probes` probe messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub rounds: usize,
    pub growth: usize,
    pub probes: usize,
}

impl Plan {
    /// Each checkpoint's messages, as the results number them (1 is the first after `init`).
    pub fn checkpoints(&self) -> Vec<std::ops::Range<usize>> {
        let round = self.growth + self.probes;
        (0..self.rounds)
            .map(|r| {
                let first = 1 + r * round + self.growth;
                first..first + self.probes
            })
            .collect()
    }
}

/// The collection: 10 rounds of 4 drops of 1,000 tokens (40,000 tokens in all).
pub const COLLECTION: Plan = Plan {
    rounds: 10,
    growth: 4,
    probes: 6,
};

/// The journal: 10 rounds of 4 imports of 1,000 entries (40,000 entries in all).
pub const JOURNAL: Plan = Plan {
    rounds: 10,
    growth: 4,
    probes: 4,
};

/// The plan of a scale case, or `None` for any other case.
pub fn plan(case: &str) -> Option<Plan> {
    match case {
        "collection-scale" => Some(COLLECTION),
        "journal-scale" => Some(JOURNAL),
        _ => None,
    }
}

/// Users who send, round robin.
const USERS: UserId = 16;
/// Tokens a drop mints, entries an import appends.
const BATCH: u32 = 1_000;

/// A collection of tens of thousands of tokens: drops of 1,000 by users in turn, and at each
/// checkpoint a token looked up, a holding counted, a transfer, a burn, a drop of one and the
/// new token looked up.
pub fn collection() -> Scenario {
    let init = InitCollection {
        name: "Lab collection at scale".into(),
        base_uri: "https://galloc.lab/collection".into(),
    };
    let mut model = CollectionState::new(init.clone());
    let mut steps = Vec::new();
    let mut rng = SmallRng::seed_from_u64(59);
    let mut send = |model: &mut CollectionState, from: UserId, action: CollectionAction| {
        let reply = model.handle(actor(from), action.clone());
        steps.push(Step::expecting(from, &action, &reply));
    };
    let mut next_user = 0;
    for round in 0..COLLECTION.rounds {
        for _ in 0..COLLECTION.growth {
            next_user = next_user % USERS + 1;
            let action = CollectionAction::Drop {
                count: BATCH,
                label: "Lab drop".into(),
            };
            send(&mut model, next_user, action);
        }
        let minted = model.minted();
        // Someone who has had a drop already.
        let dropped = ((round + 1) * COLLECTION.growth).min(USERS as usize) as UserId;
        let holder = rng.gen_range(1..=dropped);
        // A token the holder has: the probes act on existing tokens.
        let held = model.tokens_of(actor(holder)).to_vec();
        let i = rng.gen_range(0..held.len());
        let j = (i + rng.gen_range(1..held.len())) % held.len();
        let (moved, burned) = (held[i], held[j]);
        let to = holder % USERS + 1;
        let probes = [
            CollectionAction::Token {
                token_id: rng.gen_range(0..minted as TokenId),
            },
            CollectionAction::Holding {
                owner: actor(holder),
            },
            CollectionAction::Transfer {
                to: actor(to),
                token_id: moved,
            },
            CollectionAction::Burn { token_id: burned },
            CollectionAction::Drop {
                count: 1,
                label: "Lab single".into(),
            },
            CollectionAction::Token { token_id: minted },
        ];
        for action in probes {
            send(&mut model, holder, action);
        }
    }
    Scenario {
        case: "collection-scale",
        package: "lab-collection",
        deployer: DEFAULT_USER_ALICE,
        init: parity_scale_codec::Encode::encode(&init),
        steps,
    }
}

/// A journal of tens of thousands of entries: imports of 1,000 by users in turn, and at each
/// checkpoint an entry appended, one read back, the last ten read and a longer entry appended.
pub fn journal() -> Scenario {
    let init = InitJournal {
        title: "Lab journal at scale".into(),
    };
    let mut model = JournalState::new(init.clone());
    let mut steps = Vec::new();
    let mut rng = SmallRng::seed_from_u64(59);
    let mut send = |model: &mut JournalState, from: UserId, action: JournalAction| {
        let reply = model.handle(actor(from), action.clone());
        steps.push(Step::expecting(from, &action, &reply));
    };
    let mut next_user = 0;
    for round in 0..JOURNAL.rounds {
        for _ in 0..JOURNAL.growth {
            next_user = next_user % USERS + 1;
            let action = JournalAction::Import {
                count: BATCH,
                text: "Imported from the archive of an older chain, record".into(),
            };
            send(&mut model, next_user, action);
        }
        let writer = rng.gen_range(1..=USERS);
        let probes = [
            JournalAction::Append {
                text: format!("Checkpoint {round}: all well"),
            },
            JournalAction::Entry {
                index: rng.gen_range(0..model.len()),
            },
            JournalAction::Recent { count: 10 },
            JournalAction::Append {
                text: "A longer note, as people write when something happened: ".repeat(4),
            },
        ];
        for action in probes {
            send(&mut model, writer, action);
        }
    }
    Scenario {
        case: "journal-scale",
        package: "lab-journal",
        deployer: DEFAULT_USER_ALICE,
        init: parity_scale_codec::Encode::encode(&init),
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case's steps are its plan's rounds, and each checkpoint's messages are its probes:
    /// the replies the checkpoint expects are probes' replies, not a batch's.
    #[test]
    fn checkpoints_are_the_probe_messages_of_each_round() {
        for (scenario, plan) in [(collection(), COLLECTION), (journal(), JOURNAL)] {
            assert_eq!(
                scenario.steps.len(),
                plan.rounds * (plan.growth + plan.probes)
            );
            let checkpoints = plan.checkpoints();
            assert_eq!(checkpoints.len(), plan.rounds);
            assert_eq!(
                checkpoints[0],
                plan.growth + 1..plan.growth + plan.probes + 1
            );
            let last = checkpoints.last().unwrap();
            assert_eq!(
                last.end - 1,
                scenario.steps.len(),
                "the last message is a probe"
            );
            // A batch's payload is the same every time; a probe's (message i is step i - 1)
            // never is a batch's.
            let batch = &scenario.steps[0].payload;
            for c in &checkpoints {
                for m in c.clone() {
                    assert_ne!(&scenario.steps[m - 1].payload, batch, "{}", scenario.case);
                }
                assert_eq!(&scenario.steps[c.start - 2].payload, batch);
            }
        }
    }
}
