//! Polls on Sails: anyone opens a poll with its options, each account votes once, the opener
//! closes it. A small program of the kind contract authors write, used by the lab to check
//! that a Sails crate measures through `lab measure --program` exactly as written.
#![cfg_attr(target_arch = "wasm32", no_std)]

use sails_rs::cell::RefCell;
use sails_rs::collections::BTreeMap;
use sails_rs::collections::BTreeSet;
use sails_rs::prelude::*;

/// Why a call was refused; the message fails with it and nothing changes.
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PollError {
    NoSuchPoll,
    NoSuchOption,
    AlreadyVoted,
    Closed,
    NotOpener,
    NoOptions,
}

#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PollEvents {
    Opened { id: u32, question: String },
    Voted { id: u32, voter: ActorId, option: u8 },
    Closed { id: u32, winner: Option<u8> },
}

/// One poll: its question, its options' vote counts, who voted, and whether it is open.
struct Poll {
    opener: ActorId,
    question: String,
    options: Vec<String>,
    votes: Vec<u32>,
    voters: BTreeSet<ActorId>,
    open: bool,
}

#[derive(Default)]
pub struct Polls {
    polls: BTreeMap<u32, Poll>,
}

pub struct PollsService<'a> {
    state: &'a RefCell<Polls>,
}

#[service(events = PollEvents)]
impl PollsService<'_> {
    /// Opens a poll; returns its id.
    #[export(unwrap_result)]
    pub fn open(&mut self, question: String, options: Vec<String>) -> Result<u32, PollError> {
        if options.is_empty() {
            return Err(PollError::NoOptions);
        }
        let id = {
            let mut state = self.state.borrow_mut();
            let id = state.polls.len() as u32;
            let votes = vec![0; options.len()];
            state.polls.insert(
                id,
                Poll {
                    opener: Syscall::message_source(),
                    question: question.clone(),
                    options,
                    votes,
                    voters: BTreeSet::new(),
                    open: true,
                },
            );
            id
        };
        self.emit_event(PollEvents::Opened { id, question })
            .expect("emitting an event");
        Ok(id)
    }

    /// The sender's vote for `option` of poll `id`; returns that option's count.
    #[export(unwrap_result)]
    pub fn vote(&mut self, id: u32, option: u8) -> Result<u32, PollError> {
        let voter = Syscall::message_source();
        let count = {
            let mut state = self.state.borrow_mut();
            let poll = state.polls.get_mut(&id).ok_or(PollError::NoSuchPoll)?;
            if !poll.open {
                return Err(PollError::Closed);
            }
            let slot = poll
                .votes
                .get_mut(usize::from(option))
                .ok_or(PollError::NoSuchOption)?;
            if !poll.voters.insert(voter) {
                return Err(PollError::AlreadyVoted);
            }
            *slot += 1;
            *slot
        };
        self.emit_event(PollEvents::Voted { id, voter, option })
            .expect("emitting an event");
        Ok(count)
    }

    /// Closes poll `id` (its opener only); returns the winning option, if any votes.
    #[export(unwrap_result)]
    pub fn close(&mut self, id: u32) -> Result<Option<u8>, PollError> {
        let winner = {
            let mut state = self.state.borrow_mut();
            let poll = state.polls.get_mut(&id).ok_or(PollError::NoSuchPoll)?;
            if poll.opener != Syscall::message_source() {
                return Err(PollError::NotOpener);
            }
            if !poll.open {
                return Err(PollError::Closed);
            }
            poll.open = false;
            // The first option with the most votes; none when nobody voted.
            let most = poll.votes.iter().copied().max().unwrap_or(0);
            (most > 0)
                .then(|| poll.votes.iter().position(|&v| v == most))
                .flatten()
                .map(|i| i as u8)
        };
        self.emit_event(PollEvents::Closed { id, winner })
            .expect("emitting an event");
        Ok(winner)
    }

    /// Poll `id`'s question, options and counts.
    #[export]
    pub fn tally(&self, id: u32) -> Option<(String, Vec<(String, u32)>)> {
        let state = self.state.borrow();
        let poll = state.polls.get(&id)?;
        let counts = poll.options.iter().cloned().zip(poll.votes.iter().copied());
        Some((poll.question.clone(), counts.collect()))
    }

    /// How many polls were opened.
    #[export]
    pub fn count(&self) -> u32 {
        self.state.borrow().polls.len() as u32
    }
}

pub struct PollsProgram {
    state: RefCell<Polls>,
}

#[program]
impl PollsProgram {
    pub fn new() -> Self {
        PollsProgram {
            state: RefCell::new(Polls::default()),
        }
    }

    pub fn polls(&self) -> PollsService<'_> {
        PollsService { state: &self.state }
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub use code::WASM_BINARY_OPT as WASM_BINARY;

#[cfg(not(target_arch = "wasm32"))]
mod code {
    include!(concat!(env!("OUT_DIR"), "/wasm_binary.rs"));
}
