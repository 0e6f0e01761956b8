//! A lottery on Sails, written for the lab's corpus: players deposit credit, buy tickets in the
//! open round (each ticket a seat in the round's list), and anyone closes the round once it has
//! enough tickets: the winner takes the pot less the house's cut, the list is dropped and a new
//! round opens; the program keeps its latest winners. The rules are [`LotteryState`]'s, which
//! the lab's scenarios run on the host to know every reply and event.
//!
//! The draw mixes the round's number and its tickets' owners in a fixed hash, not the chain's
//! randomness, so a run answers the same on every backend (a real lottery would use a
//! commit-reveal or an oracle; the allocator sees the same work either way).
//!
//! A refused operation fails the message with its [`LotteryError`]: Gear discards every change,
//! so state is untouched and the sender gets the error as its reply.
#![cfg_attr(target_arch = "wasm32", no_std)]

use sails_rs::cell::RefCell;
use sails_rs::collections::{HashMap, VecDeque};
use sails_rs::prelude::*;

pub const TICKET_PRICE: u128 = 100;
/// Most tickets one player holds in a round.
pub const MAX_TICKETS: u32 = 10;
/// Fewest tickets a round is drawn with.
pub const MIN_TICKETS: usize = 5;
/// Winners kept for `winners`.
pub const KEPT_WINNERS: usize = 16;
/// The house's cut of a pot, in percent.
pub const HOUSE_CUT: u128 = 5;

#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LotteryError {
    ZeroAmount,
    InsufficientCredit,
    TooManyTickets,
    NotEnoughTickets,
}

#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Win {
    pub round: u32,
    pub winner: ActorId,
    pub prize: u128,
}

#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LotteryEvents {
    TicketsBought {
        round: u32,
        player: ActorId,
        first: u32,
        count: u32,
    },
    Drawn(Win),
}

/// The open round, credit, the latest winners, and the rules.
#[derive(Clone, Debug, Default)]
pub struct LotteryState {
    round: u32,
    /// One entry a ticket, in the order bought.
    tickets: Vec<ActorId>,
    held: HashMap<ActorId, u32>,
    credit: HashMap<ActorId, u128>,
    winners: VecDeque<Win>,
    house: u128,
}

/// FNV-1a over the round's number and its tickets: the draw.
fn mix(round: u32, tickets: &[ActorId]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(&round.to_le_bytes());
    for t in tickets {
        eat(t.as_ref());
    }
    h
}

impl LotteryState {
    pub fn credit(&self, who: ActorId) -> u128 {
        self.credit.get(&who).copied().unwrap_or_default()
    }

    /// The open round's number, tickets sold and pot.
    pub fn round(&self) -> (u32, u32, u128) {
        let sold = self.tickets.len() as u32;
        (self.round, sold, u128::from(sold) * TICKET_PRICE)
    }

    pub fn winners(&self) -> Vec<Win> {
        self.winners.iter().cloned().collect()
    }

    pub fn house(&self) -> u128 {
        self.house
    }

    pub fn deposit(&mut self, who: ActorId, amount: u128) -> Result<u128, LotteryError> {
        if amount == 0 {
            return Err(LotteryError::ZeroAmount);
        }
        let credit = self.credit(who) + amount;
        self.credit.insert(who, credit);
        Ok(credit)
    }

    /// Buys `count` tickets; the number of the first.
    pub fn buy(
        &mut self,
        player: ActorId,
        count: u32,
    ) -> Result<(u32, LotteryEvents), LotteryError> {
        if count == 0 {
            return Err(LotteryError::ZeroAmount);
        }
        let held = self.held.get(&player).copied().unwrap_or_default();
        if held + count > MAX_TICKETS {
            return Err(LotteryError::TooManyTickets);
        }
        let cost = u128::from(count) * TICKET_PRICE;
        let credit = self.credit(player);
        if credit < cost {
            return Err(LotteryError::InsufficientCredit);
        }
        self.credit.insert(player, credit - cost);
        self.held.insert(player, held + count);
        let first = self.tickets.len() as u32;
        self.tickets
            .extend(core::iter::repeat_n(player, count as usize));
        Ok((
            first,
            LotteryEvents::TicketsBought {
                round: self.round,
                player,
                first,
                count,
            },
        ))
    }

    /// Draws the open round and opens the next.
    pub fn draw(&mut self) -> Result<(Win, LotteryEvents), LotteryError> {
        if self.tickets.len() < MIN_TICKETS {
            return Err(LotteryError::NotEnoughTickets);
        }
        let pot = self.tickets.len() as u128 * TICKET_PRICE;
        let cut = pot * HOUSE_CUT / 100;
        let at = mix(self.round, &self.tickets) % self.tickets.len() as u64;
        let winner = self.tickets[at as usize];
        let win = Win {
            round: self.round,
            winner,
            prize: pot - cut,
        };
        let credit = self.credit(winner) + win.prize;
        self.credit.insert(winner, credit);
        self.house += cut;
        // A new round starts from nothing: its list grows again from empty.
        self.tickets = Vec::new();
        self.held.clear();
        self.round += 1;
        if self.winners.len() == KEPT_WINNERS {
            self.winners.pop_front();
        }
        self.winners.push_back(win.clone());
        Ok((win.clone(), LotteryEvents::Drawn(win)))
    }
}

pub struct LotteryService<'a> {
    state: &'a RefCell<LotteryState>,
}

#[service(events = LotteryEvents)]
impl LotteryService<'_> {
    /// Emits what the operation did and answers its value.
    fn emit<T>(
        &mut self,
        done: Result<(T, LotteryEvents), LotteryError>,
    ) -> Result<T, LotteryError> {
        let (value, event) = done?;
        self.emit_event(event).expect("emitting an event");
        Ok(value)
    }

    /// Adds `amount` to the sender's credit; their credit after.
    #[export(unwrap_result)]
    pub fn deposit(&mut self, amount: u128) -> Result<u128, LotteryError> {
        self.state
            .borrow_mut()
            .deposit(Syscall::message_source(), amount)
    }

    #[export(unwrap_result)]
    pub fn buy(&mut self, count: u32) -> Result<u32, LotteryError> {
        let done = self
            .state
            .borrow_mut()
            .buy(Syscall::message_source(), count);
        self.emit(done)
    }

    #[export(unwrap_result)]
    pub fn draw(&mut self) -> Result<Win, LotteryError> {
        let done = self.state.borrow_mut().draw();
        self.emit(done)
    }

    #[export]
    pub fn round(&self) -> (u32, u32, u128) {
        self.state.borrow().round()
    }

    #[export]
    pub fn winners(&self) -> Vec<Win> {
        self.state.borrow().winners()
    }

    #[export]
    pub fn credit(&self, who: ActorId) -> u128 {
        self.state.borrow().credit(who)
    }
}

#[derive(Default)]
pub struct LotteryProgram {
    state: RefCell<LotteryState>,
}

#[program]
impl LotteryProgram {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn lottery(&self) -> LotteryService<'_> {
        LotteryService { state: &self.state }
    }
}
