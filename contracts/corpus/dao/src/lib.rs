//! A DAO on Sails, written for the lab's corpus: accounts join as members, members make
//! proposals (a title and a text), vote on them once each, and a proposal's author closes it:
//! it passes with more yes than no and a quorum of voters. An open proposal keeps who voted;
//! a closed one only its tally. The rules are [`DaoState`]'s, which the lab's scenarios run on
//! the host to know every reply and event.
//!
//! A refused operation fails the message with its [`DaoError`]: Gear discards every change, so
//! state is untouched and the sender gets the error as its reply.
#![cfg_attr(target_arch = "wasm32", no_std)]

use sails_rs::cell::RefCell;
use sails_rs::collections::{BTreeMap, BTreeSet, HashSet};
use sails_rs::prelude::*;

pub const MAX_TITLE: usize = 80;
pub const MAX_TEXT: usize = 400;
/// Voters a proposal needs to pass.
pub const QUORUM: u32 = 3;

pub type ProposalId = u32;

#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DaoError {
    AlreadyMember,
    NotMember,
    EmptyTitle,
    TooLong,
    NoSuchProposal,
    AlreadyVoted,
    Closed,
    NotAuthor,
}

/// A proposal as `proposal` answers it.
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProposalView {
    pub author: ActorId,
    pub title: String,
    pub text: String,
    pub yes: u32,
    pub no: u32,
    /// `None` while open; whether it passed once closed.
    pub passed: Option<bool>,
}

#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DaoEvents {
    Joined {
        member: ActorId,
    },
    Proposed {
        id: ProposalId,
        author: ActorId,
        title: String,
    },
    Voted {
        id: ProposalId,
        voter: ActorId,
        yes: bool,
    },
    Closed {
        id: ProposalId,
        passed: bool,
    },
}

#[derive(Clone, Debug)]
struct Proposal {
    view: ProposalView,
    /// Who voted, while open (dropped on close).
    voters: BTreeSet<ActorId>,
}

/// Members, proposals and the rules.
#[derive(Clone, Debug, Default)]
pub struct DaoState {
    members: HashSet<ActorId>,
    proposals: BTreeMap<ProposalId, Proposal>,
    next: ProposalId,
}

impl DaoState {
    pub fn members(&self) -> u32 {
        self.members.len() as u32
    }

    pub fn proposal(&self, id: ProposalId) -> Option<ProposalView> {
        self.proposals.get(&id).map(|p| p.view.clone())
    }

    /// The ids of the open proposals, oldest first.
    pub fn open_proposals(&self) -> Vec<ProposalId> {
        self.proposals
            .iter()
            .filter(|(_, p)| p.view.passed.is_none())
            .map(|(id, _)| *id)
            .collect()
    }

    pub fn join(&mut self, who: ActorId) -> Result<DaoEvents, DaoError> {
        if !self.members.insert(who) {
            return Err(DaoError::AlreadyMember);
        }
        Ok(DaoEvents::Joined { member: who })
    }

    fn member(&self, who: ActorId) -> Result<(), DaoError> {
        if self.members.contains(&who) {
            Ok(())
        } else {
            Err(DaoError::NotMember)
        }
    }

    pub fn propose(
        &mut self,
        author: ActorId,
        title: String,
        text: String,
    ) -> Result<(ProposalId, DaoEvents), DaoError> {
        self.member(author)?;
        if title.is_empty() {
            return Err(DaoError::EmptyTitle);
        }
        if title.len() > MAX_TITLE || text.len() > MAX_TEXT {
            return Err(DaoError::TooLong);
        }
        let id = self.next;
        self.next += 1;
        let event = DaoEvents::Proposed {
            id,
            author,
            title: title.clone(),
        };
        let view = ProposalView {
            author,
            title,
            text,
            yes: 0,
            no: 0,
            passed: None,
        };
        self.proposals.insert(
            id,
            Proposal {
                view,
                voters: BTreeSet::new(),
            },
        );
        Ok((id, event))
    }

    fn open(&mut self, id: ProposalId) -> Result<&mut Proposal, DaoError> {
        let p = self
            .proposals
            .get_mut(&id)
            .ok_or(DaoError::NoSuchProposal)?;
        if p.view.passed.is_some() {
            return Err(DaoError::Closed);
        }
        Ok(p)
    }

    pub fn vote(
        &mut self,
        voter: ActorId,
        id: ProposalId,
        yes: bool,
    ) -> Result<DaoEvents, DaoError> {
        self.member(voter)?;
        let p = self.open(id)?;
        if !p.voters.insert(voter) {
            return Err(DaoError::AlreadyVoted);
        }
        if yes {
            p.view.yes += 1;
        } else {
            p.view.no += 1;
        }
        Ok(DaoEvents::Voted { id, voter, yes })
    }

    /// Closes `id`; whether it passed.
    pub fn close(
        &mut self,
        sender: ActorId,
        id: ProposalId,
    ) -> Result<(bool, DaoEvents), DaoError> {
        let p = self.open(id)?;
        if p.view.author != sender {
            return Err(DaoError::NotAuthor);
        }
        let passed = p.view.yes > p.view.no && p.view.yes + p.view.no >= QUORUM;
        p.view.passed = Some(passed);
        p.voters = BTreeSet::new();
        Ok((passed, DaoEvents::Closed { id, passed }))
    }
}

pub struct DaoService<'a> {
    state: &'a RefCell<DaoState>,
}

#[service(events = DaoEvents)]
impl DaoService<'_> {
    /// Emits what the operation did and answers its value.
    fn emit<T>(&mut self, done: Result<(T, DaoEvents), DaoError>) -> Result<T, DaoError> {
        let (value, event) = done?;
        self.emit_event(event).expect("emitting an event");
        Ok(value)
    }

    #[export(unwrap_result)]
    pub fn join(&mut self) -> Result<(), DaoError> {
        let done = self.state.borrow_mut().join(Syscall::message_source());
        self.emit(done.map(|e| ((), e)))
    }

    #[export(unwrap_result)]
    pub fn propose(&mut self, title: String, text: String) -> Result<ProposalId, DaoError> {
        let sender = Syscall::message_source();
        let done = self.state.borrow_mut().propose(sender, title, text);
        self.emit(done)
    }

    #[export(unwrap_result)]
    pub fn vote(&mut self, id: ProposalId, yes: bool) -> Result<(), DaoError> {
        let sender = Syscall::message_source();
        let done = self.state.borrow_mut().vote(sender, id, yes);
        self.emit(done.map(|e| ((), e)))
    }

    #[export(unwrap_result)]
    pub fn close(&mut self, id: ProposalId) -> Result<bool, DaoError> {
        let done = self.state.borrow_mut().close(Syscall::message_source(), id);
        self.emit(done)
    }

    #[export]
    pub fn proposal(&self, id: ProposalId) -> Option<ProposalView> {
        self.state.borrow().proposal(id)
    }

    #[export]
    pub fn open_proposals(&self) -> Vec<ProposalId> {
        self.state.borrow().open_proposals()
    }

    #[export]
    pub fn members(&self) -> u32 {
        self.state.borrow().members()
    }
}

#[derive(Default)]
pub struct DaoProgram {
    state: RefCell<DaoState>,
}

#[program]
impl DaoProgram {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn dao(&self) -> DaoService<'_> {
        DaoService { state: &self.state }
    }
}
