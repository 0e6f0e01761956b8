//! Auctions on Sails, timed in blocks: a seller opens a lot for a number of blocks, anyone bids
//! above the best bid until the lot's last block, and the seller is sent a notice when the lot
//! closes, as a message delayed by the lot's length when it opens. Each call logs a `debug!`
//! line. A small program of the kind contract authors write, used by the lab to check that
//! what such authors turn on (gstd's `debug`, delayed sends, the block height) measures on
//! both embedded backends exactly as written.
#![cfg_attr(target_arch = "wasm32", no_std)]

use sails_rs::cell::RefCell;
use sails_rs::collections::BTreeMap;
use sails_rs::gstd::{debug, msg};
use sails_rs::prelude::*;

/// Why a call was refused; the message fails with it and nothing changes.
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuctionError {
    NoSuchLot,
    NoBlocks,
    Closed,
    StillOpen,
    TooLow,
    OwnLot,
}

#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuctionEvents {
    Opened { id: u32, item: String, last_block: u32 },
    Bid { id: u32, bidder: ActorId, amount: u128 },
}

/// One lot: its seller, what it sells, its last block and the bids so far, best last.
struct Lot {
    seller: ActorId,
    item: String,
    last_block: u32,
    bids: Vec<(ActorId, u128)>,
}

#[derive(Default)]
pub struct Auctions {
    lots: BTreeMap<u32, Lot>,
}

pub struct AuctionService<'a> {
    state: &'a RefCell<Auctions>,
}

#[service(events = AuctionEvents)]
impl AuctionService<'_> {
    /// Opens a lot for `blocks` blocks (bids are taken in this block and the next
    /// `blocks - 1`); returns its id. The seller is sent `"closed <id>"` when it closes.
    #[export(unwrap_result)]
    pub fn open(&mut self, item: String, blocks: u32) -> Result<u32, AuctionError> {
        if blocks == 0 {
            return Err(AuctionError::NoBlocks);
        }
        let seller = Syscall::message_source();
        let last_block = Syscall::block_height() + blocks - 1;
        let id = {
            let mut state = self.state.borrow_mut();
            let id = state.lots.len() as u32;
            state.lots.insert(
                id,
                Lot {
                    seller,
                    item: item.clone(),
                    last_block,
                    bids: Vec::new(),
                },
            );
            id
        };
        debug!("lot {id} ({item}) open until block {last_block}");
        msg::send_bytes_delayed(seller, format!("closed {id}"), 0, blocks)
            .expect("sending the closing notice");
        self.emit_event(AuctionEvents::Opened {
            id,
            item,
            last_block,
        })
        .expect("emitting an event");
        Ok(id)
    }

    /// The sender's bid of `amount` on lot `id`, above the best so far; returns how many bids
    /// the lot has.
    #[export(unwrap_result)]
    pub fn bid(&mut self, id: u32, amount: u128) -> Result<u32, AuctionError> {
        let bidder = Syscall::message_source();
        let count = {
            let mut state = self.state.borrow_mut();
            let lot = state.lots.get_mut(&id).ok_or(AuctionError::NoSuchLot)?;
            if Syscall::block_height() > lot.last_block {
                return Err(AuctionError::Closed);
            }
            if lot.seller == bidder {
                return Err(AuctionError::OwnLot);
            }
            if lot.bids.last().is_some_and(|&(_, best)| amount <= best) {
                return Err(AuctionError::TooLow);
            }
            lot.bids.push((bidder, amount));
            lot.bids.len() as u32
        };
        debug!("lot {id}: bid {count} of {amount}");
        self.emit_event(AuctionEvents::Bid { id, bidder, amount })
            .expect("emitting an event");
        Ok(count)
    }

    /// Lot `id`'s winner and price, once it has closed; `None` when nobody bid.
    #[export(unwrap_result)]
    pub fn winner(&self, id: u32) -> Result<Option<(ActorId, u128)>, AuctionError> {
        let state = self.state.borrow();
        let lot = state.lots.get(&id).ok_or(AuctionError::NoSuchLot)?;
        if Syscall::block_height() <= lot.last_block {
            return Err(AuctionError::StillOpen);
        }
        Ok(lot.bids.last().copied())
    }

    /// Lot `id`'s item, last block and bids so far.
    #[export]
    pub fn lot(&self, id: u32) -> Option<(String, u32, Vec<(ActorId, u128)>)> {
        let state = self.state.borrow();
        let lot = state.lots.get(&id)?;
        Some((lot.item.clone(), lot.last_block, lot.bids.clone()))
    }
}

pub struct AuctionProgram {
    state: RefCell<Auctions>,
}

#[program]
impl AuctionProgram {
    pub fn new() -> Self {
        debug!("auction house open");
        AuctionProgram {
            state: RefCell::new(Auctions::default()),
        }
    }

    pub fn auction(&self) -> AuctionService<'_> {
        AuctionService { state: &self.state }
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub use code::WASM_BINARY_OPT as WASM_BINARY;

#[cfg(not(target_arch = "wasm32"))]
mod code {
    include!(concat!(env!("OUT_DIR"), "/wasm_binary.rs"));
}
