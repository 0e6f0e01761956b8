//! Scenarios: the message sequences each case sends, written once for every backend.
//!
//! A scenario is data: who deploys what with which `init`, then steps of (sender, payload,
//! expected outcome). Expected replies come from running the contract's own state rules
//! (`FtState`, `NftState` in the contracts' `lib.rs`) on the host with the host's allocator:
//! the program must answer exactly as they do, so an allocator or runtime fault that corrupts
//! state or replies cannot pass silently. The rules themselves are checked against
//! hand-written expectations in `harness/tests/suite/contracts.rs`.

mod conformance;
pub mod corpus;
pub mod file;
mod ft;
pub mod idl;
mod nft;
pub mod sails;
pub mod scale;
mod synthetic;
mod vft;
mod vnft;

use crate::run::backend::{Sent, UserId};
use anyhow::{bail, Result};
use parity_scale_codec::Encode;

/// What a step must produce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A successful execution replying exactly these bytes.
    Reply(Vec<u8>),
    /// A successful execution, whatever it replies (scenario files that give no reply).
    Success,
    /// A failed execution (panic or trap).
    Failure,
    /// A failed execution whose error reply is exactly these bytes (a Sails business error:
    /// the program panics with the encoded error).
    FailureWith(Vec<u8>),
}

/// One message.
#[derive(Clone, Debug)]
pub struct Step {
    /// Sender.
    pub from: UserId,
    /// SCALE-encoded payload.
    pub payload: Vec<u8>,
    /// What it must produce.
    pub expect: Expect,
    /// The messages it must send (events), exactly and in order, where the backend sees them;
    /// `None` leaves them unchecked (scenario files that list none).
    pub sent: Option<Vec<Sent>>,
    /// How its replies and the events it sends read as values, for the message when one is
    /// not what was expected (a Sails call's, through the IDL); `None`: shown as hex.
    pub reads: Option<ReplyText>,
}

/// A reply's bytes (and whether the message failed) as the value they encode, or `None`.
pub type ReadReply = dyn Fn(&[u8], bool) -> Option<String> + Send + Sync;

/// A message's bytes as the event they encode (`Opened { id: 0, .. }`), or `None`.
pub type ReadEvent = dyn Fn(&[u8]) -> Option<String> + Send + Sync;

/// How a step's replies ([`ReadReply`]) and events ([`ReadEvent`]) read as values, shared by
/// the step's copies.
#[derive(Clone)]
pub struct ReplyText {
    pub reply: std::sync::Arc<ReadReply>,
    pub event: std::sync::Arc<ReadEvent>,
}

impl std::fmt::Debug for ReplyText {
    /// Nothing of the function: a scenario's `Debug` text is its fingerprint in the run cache,
    /// and how replies are shown changes no run.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplyText")
    }
}

impl Step {
    /// `action` sent by `from`, which must be answered with exactly `reply` and send nothing.
    fn expecting(from: UserId, action: &impl Encode, reply: &impl Encode) -> Step {
        Step::answering(from, action.encode(), reply)
    }

    /// `payload` as it is (a malformed one, say) sent by `from`, which must be answered with
    /// exactly `reply` and send nothing.
    fn answering(from: UserId, payload: Vec<u8>, reply: &impl Encode) -> Step {
        Step {
            from,
            payload,
            expect: Expect::Reply(reply.encode()),
            sent: Some(Vec::new()),
            reads: None,
        }
    }
}

/// The account a scenario's user number stands for.
fn actor(user: UserId) -> gstd::ActorId {
    gstd::ActorId::from(user)
}

/// The user number among `1..=users` that `account` stands for ([`actor`]'s inverse).
fn user_of(account: gstd::ActorId, users: UserId) -> Option<UserId> {
    (1..=users).find(|u| actor(*u) == account)
}

/// One case: a contract and the messages sent to it.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Case id used on the command line and in results.
    pub case: &'static str,
    /// The contract's cargo package.
    pub package: &'static str,
    /// Who deploys it.
    pub deployer: UserId,
    /// The `init` payload.
    pub init: Vec<u8>,
    /// The `handle` messages, in order.
    pub steps: Vec<Step>,
}

impl Scenario {
    /// Everyone who sends a message, deployer first, each once, in order of first message.
    pub fn senders(&self) -> Vec<UserId> {
        let mut users = vec![self.deployer];
        for step in &self.steps {
            if !users.contains(&step.from) {
                users.push(step.from);
            }
        }
        users
    }
}

/// A case: its id, whether `just compare` runs it by default, and how to make it.
pub struct Case {
    /// Id on the command line and in results.
    pub id: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// Run unless asked otherwise (long cases are on demand).
    pub default: bool,
    /// One of the corpus (`corpus::`): programs written as Gear authors write them, run by
    /// `just corpus` (`--cases corpus`) rather than by default, and judged with the default
    /// cases for the ship verdict.
    pub corpus: bool,
    /// Held out from allocator design: the lab's design ([`galloc_variants::DESIGN`]) is
    /// shaped on the other default cases and only confirmed on these. Decided before the
    /// design was measured against them (README, "Variants"); a case added later starts
    /// held out.
    pub held_out: bool,
    /// Builds the scenario.
    pub make: fn() -> Scenario,
    /// Another traffic of the same program, which every verdict on the case is checked
    /// against (docs/verdicts.md, "A second workload"): every default case has one.
    pub second: Option<Workload>,
}

/// A case's second workload: the same program (its scenario's `case` is the case's id) sent
/// another mix of messages or a longer history.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// Id in results (`results/<backend>/second.csv`) and the report.
    pub id: &'static str,
    /// One line on how it differs from the case.
    pub summary: &'static str,
    /// Builds the scenario.
    pub make: fn() -> Scenario,
}

/// Every case, in report order.
pub const CASES: &[Case] = &[
    Case {
        id: "nft",
        summary: "NFT init, mint, burn: the 2023 study's NFT case",
        default: true,
        held_out: true,
        corpus: false,
        make: nft::basic,
        second: Some(Workload {
            id: "nft-history",
            summary: "40 mints by 5 users, then 40 actions of nft-stress's mix",
            make: nft::history,
        }),
    },
    Case {
        id: "nft-stress",
        summary: "NFT: 300 mints, transfers, approvals and burns by 50 users",
        default: true,
        held_out: false,
        corpus: false,
        make: nft::stress,
        second: Some(Workload {
            id: "nft-growing",
            summary: "a growing collection: 800 mints by 100 users, then 200 actions of the mix",
            make: nft::growing,
        }),
    },
    Case {
        id: "ft-stress",
        summary: "FT: the 2023 study's stress case (users 918-1339)",
        default: true,
        held_out: true,
        corpus: false,
        make: ft::stress,
        second: Some(Workload {
            id: "ft-wide",
            summary:
                "users 918-2200 (3x the new holders), 5 rounds of balance checks instead of 30",
            make: ft::wide,
        }),
    },
    Case {
        id: "vft-stress",
        summary: "Sails VFT: the FT stress case's steps on the lab's Sails token, with events",
        default: true,
        held_out: false,
        corpus: false,
        make: vft::stress,
        second: Some(Workload {
            id: "vft-wide",
            summary: "ft-wide on the Sails token: users 918-2200, 5 rounds instead of 30",
            make: vft::wide,
        }),
    },
    Case {
        id: "vnft-stress",
        summary: "Sails VNFT: 300 mints, then transfers, approvals, burns, queries, refusals",
        default: true,
        held_out: true,
        corpus: false,
        make: vnft::stress,
        second: Some(Workload {
            id: "vnft-growing",
            summary: "a growing collection: 800 mints to 100 users, then 200 actions of the mix",
            make: vnft::growing,
        }),
    },
    Case {
        id: "synthetic-small-objects",
        summary:
            "Synthetic: 150 small short-lived blocks per message (replay program, not a contract)",
        default: true,
        held_out: true,
        corpus: false,
        make: synthetic::small_objects,
        second: Some(Workload {
            id: "small-objects-larger",
            summary: "60 blocks of 16-128 B a message, 2 in 3 freed early, 200 messages",
            make: synthetic::small_objects_larger,
        }),
    },
    Case {
        id: "synthetic-growing-vec",
        summary: "Synthetic: one Vec<u64> growing by doubling to 320 KiB over 40 messages",
        default: true,
        held_out: true,
        corpus: false,
        make: synthetic::growing_vec,
        second: Some(Workload {
            id: "growing-vec-wide",
            summary: "a Vec<u128> taking 300 elements a message over 60 messages",
            make: synthetic::growing_vec_wide,
        }),
    },
    Case {
        id: "synthetic-map",
        summary: "Synthetic: BTreeMap<u64, u128> nodes growing over 150 messages, some freed",
        default: true,
        held_out: false,
        corpus: false,
        make: synthetic::map,
        second: Some(Workload {
            id: "map-churn",
            summary: "8 entries a message over 300 messages, a node freed every second one",
            make: synthetic::map_churn,
        }),
    },
    Case {
        id: "synthetic-strings",
        summary: "Synthetic: strings of 1-120 B made, grown, mostly dropped, some kept",
        default: true,
        held_out: false,
        corpus: false,
        make: synthetic::strings,
        second: Some(Workload {
            id: "strings-long",
            summary: "12 strings of 1-400 B a message, a quarter kept (up to 600), 200 messages",
            make: synthetic::strings_long,
        }),
    },
    Case {
        id: "dex",
        summary: "Sails DEX pair: 40 users' airdrops, 8 providers, 400 swaps, deposits, redemptions, reads",
        default: false,
        held_out: false,
        corpus: true,
        make: corpus::dex::main,
        second: Some(Workload {
            id: "dex-crowd",
            summary: "120 users (120 accounts), 3 providers, 300 actions",
            make: corpus::dex::crowd,
        }),
    },
    Case {
        id: "market",
        summary: "Sails marketplace: 30 users list, buy, offer, accept and withdraw; 400 actions",
        default: false,
        held_out: false,
        corpus: true,
        make: corpus::market::main,
        second: Some(Workload {
            id: "market-busy",
            summary: "80 users, 600 actions",
            make: corpus::market::busy,
        }),
    },
    Case {
        id: "dao",
        summary: "Sails DAO: 30 members of 40 accounts propose, vote and close; 400 actions",
        default: false,
        held_out: false,
        corpus: true,
        make: corpus::dao::main,
        second: Some(Workload {
            id: "dao-large",
            summary: "150 accounts, 140 members, 300 actions",
            make: corpus::dao::large,
        }),
    },
    Case {
        id: "game",
        summary: "gstd game: 30 players walk a board, pick up and craft items, read leaderboards; 400 actions",
        default: false,
        held_out: false,
        corpus: true,
        make: corpus::game::main,
        second: Some(Workload {
            id: "game-crowded",
            summary: "120 players (60 joining along the way), 500 actions",
            make: corpus::game::crowded,
        }),
    },
    Case {
        id: "vesting",
        summary: "Sails vesting: 60 schedules for 25 beneficiaries, then claims, grants, revocations; 350 actions",
        default: false,
        held_out: true,
        corpus: true,
        make: corpus::vesting::main,
        second: Some(Workload {
            id: "vesting-many",
            summary: "100 beneficiaries, 200 schedules, 250 actions",
            make: corpus::vesting::many,
        }),
    },
    Case {
        id: "lottery",
        summary: "Sails lottery: 30 players buy tickets, a draw about every 25 of 400 actions",
        default: false,
        held_out: true,
        corpus: true,
        make: corpus::lottery::main,
        second: Some(Workload {
            id: "lottery-long-rounds",
            summary: "90 players, a draw about every 120 actions (lists of hundreds)",
            make: corpus::lottery::long_rounds,
        }),
    },
    Case {
        id: "staking",
        summary: "Sails staking pool: 40 stakers stake, unstake, claim; rewards paid now and then; 400 actions",
        default: false,
        held_out: true,
        corpus: true,
        make: corpus::staking::main,
        second: Some(Workload {
            id: "staking-wide",
            summary: "160 stakers, 300 actions",
            make: corpus::staking::wide,
        }),
    },
    Case {
        id: "profiles",
        summary: "gstd registry of handles: 40 profiles with bios, links and followers; 400 actions",
        default: false,
        held_out: true,
        corpus: true,
        make: corpus::profiles::main,
        second: Some(Workload {
            id: "profiles-many",
            summary: "150 accounts, 300 actions",
            make: corpus::profiles::many,
        }),
    },
    Case {
        id: "collection-scale",
        summary: "gstd collection at scale: drops of 1,000 tokens to 40,000, probes at 10 \
                  checkpoints (`just scale`)",
        default: false,
        held_out: true,
        corpus: false,
        make: scale::collection,
        second: None,
    },
    Case {
        id: "journal-scale",
        summary: "gstd journal at scale: imports of 1,000 entries to 40,000, probes at 10 \
                  checkpoints (`just scale`)",
        default: false,
        held_out: true,
        corpus: false,
        make: scale::journal,
        second: None,
    },
    Case {
        id: "ft-stress-full",
        summary: "FT: the stress case with users 918-13400, as the study's text says (on demand)",
        default: false,
        held_out: true,
        corpus: false,
        make: ft::stress_full,
        second: None,
    },
    Case {
        id: "ft-4853",
        summary: "FT: the 2025 study's test (Gear PR #4853): two users' batches, 2,903 messages, \
                  the balance map grown to 2,048 buckets (`just pr4853`)",
        default: false,
        held_out: true,
        corpus: false,
        make: ft::study_2025,
        second: None,
    },
    Case {
        id: "conformance",
        summary: "the meter's conformance program: one message per group of Gear's syscalls, on both backends",
        default: false,
        held_out: false,
        corpus: false,
        make: conformance::main,
        second: None,
    },
];

/// Whether `case` was held out from the lab's design: a registry case says so itself, and any
/// other (a program measured with `--program` or `pick`) was never designed on.
pub fn held_out(case: &str) -> bool {
    CASES
        .iter()
        .find(|c| c.id == case)
        .is_none_or(|c| c.held_out)
}

/// The cases named in a comma-separated list (`default` = the default cases, `corpus` = the
/// corpus, `programs` = both, the ship verdict's 17, `all` = every case), in report order; an
/// empty list is an error.
pub fn select(list: &str) -> Result<Vec<&'static Case>> {
    let wanted: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let known = || CASES.iter().map(|c| c.id).collect::<Vec<_>>().join(", ");
    if wanted.is_empty() {
        // An empty list is a mistake (an unset shell variable), not a request for the defaults.
        anyhow::bail!(
            "no case given (an empty list); pass `default`, `corpus`, `programs` (both), `all` or \
             some of: {}",
            known()
        );
    }
    if wanted == ["default"] {
        return Ok(CASES.iter().filter(|c| c.default).collect());
    }
    if wanted == ["all"] {
        return Ok(CASES.iter().collect());
    }
    if wanted == ["corpus"] {
        return Ok(CASES.iter().filter(|c| c.corpus).collect());
    }
    if wanted == ["programs"] {
        // The 17 programs the ship verdict judges: the default cases, then the corpus.
        return Ok(CASES
            .iter()
            .filter(|c| c.default)
            .chain(CASES.iter().filter(|c| c.corpus))
            .collect());
    }
    for id in &wanted {
        if !CASES.iter().any(|c| c.id == *id) {
            anyhow::bail!("unknown case `{id}`; known cases: {}", known());
        }
    }
    Ok(CASES.iter().filter(|c| wanted.contains(&c.id)).collect())
}

/// Gear's largest message payload (`gear_core::buffer::MAX_PAYLOAD_SIZE`, 8 MiB).
pub const MAX_PAYLOAD: usize = gear_core::buffer::MAX_PAYLOAD_SIZE;

/// Refuses a payload Gear would refuse, before any backend sees it (gtest panics on one, and
/// the fuel meter would run it): `what` names the message.
pub fn check_payload(payload: &[u8], what: &str) -> Result<()> {
    if payload.len() > MAX_PAYLOAD {
        bail!(
            "{what}: the payload is {} bytes, over Gear's limit of {MAX_PAYLOAD} bytes (8 MiB); \
             Gear refuses such a message: split its data over several messages",
            payload.len()
        );
    }
    Ok(())
}

/// `0x`-prefixed (or bare) hex; `what` names it in errors, which quote at most the start of
/// `text` (a payload may be megabytes of it).
pub fn unhex(text: &str, what: &str) -> Result<Vec<u8>> {
    let digits = text.trim();
    let digits = digits.strip_prefix("0x").unwrap_or(digits);
    let shown = || {
        const SHOWN: usize = 40;
        match text.char_indices().nth(SHOWN) {
            Some((end, _)) => format!("{}… ({} characters)", &text[..end], text.chars().count()),
            None => text.to_owned(),
        }
    };
    if let Some((at, c)) = digits
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_hexdigit())
    {
        bail!(
            "{what}: `{}` is not hex (`{c}` at digit {})",
            shown(),
            at + 1
        );
    }
    if !digits.len().is_multiple_of(2) {
        bail!("{what}: `{}` has an odd number of hex digits", shown());
    }
    let value = |d: u8| char::from(d).to_digit(16).expect("checked above") as u8;
    Ok(digits
        .as_bytes()
        .chunks(2)
        .map(|pair| value(pair[0]) << 4 | value(pair[1]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every default case has a second workload: the same program (package, deployer and
    /// `init`), under the case's own id, sending other messages; ids are unique.
    #[test]
    fn every_default_case_has_a_second_workload_of_the_same_program() {
        let mut ids = std::collections::BTreeSet::new();
        for c in CASES.iter().filter(|c| c.default || c.corpus) {
            let w = c
                .second
                .unwrap_or_else(|| panic!("{}: no second workload", c.id));
            assert!(ids.insert(w.id), "{}: id used twice", w.id);
            let (first, second) = ((c.make)(), (w.make)());
            assert_eq!(second.case, c.id, "{}", w.id);
            assert_eq!(second.package, first.package, "{}", w.id);
            assert_eq!(second.deployer, first.deployer, "{}", w.id);
            assert_eq!(second.init, first.init, "{}", w.id);
            let payloads = |s: &Scenario| {
                s.steps
                    .iter()
                    .map(|st| st.payload.clone())
                    .collect::<Vec<_>>()
            };
            assert_ne!(payloads(&second), payloads(&first), "{}", w.id);
            assert!(
                second.steps.len() > 30,
                "{}: {} steps",
                w.id,
                second.steps.len()
            );
        }
    }

    /// `programs` is the ship verdict's 17: the default cases, then the corpus, each once.
    #[test]
    fn programs_are_the_default_cases_then_the_corpus() {
        let ids = |l: &str| -> Vec<&str> { select(l).unwrap().iter().map(|c| c.id).collect() };
        let mut both = ids("default");
        both.extend(ids("corpus"));
        assert_eq!(both.len(), 17);
        assert_eq!(ids("programs"), both);
    }
}
