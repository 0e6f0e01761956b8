//! A game whose state grows per player, in plain gstd, written for the lab's corpus: players
//! join under a name, walk a 64 x 64 board picking up the items that lie where they step (an
//! inventory that grows), craft three items of a kind into one of the next, rename
//! themselves, and read the leaderboard (built and sorted per query) or an inventory. The
//! message types and rules ([`GameState`]) are here for host code; the lab's scenarios run the
//! rules on the host to know every reply.
//!
//! As gstd programs commonly do, every message is answered with a `Result`: a refused or
//! malformed message gets an `Err` and changes nothing.
#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use alloc::{string::String, vec::Vec};
use gstd::collections::BTreeMap;
use gstd::ActorId;
use parity_scale_codec::{Decode, Encode};
use scale_info::TypeInfo;

pub const BOARD: u8 = 64;
pub const MAX_NAME: usize = 24;
pub const MAX_ITEMS: usize = 48;

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum GameAction {
    Join {
        name: String,
    },
    /// One step: each of `dx`, `dy` in -1..=1, not both 0.
    Move {
        dx: i8,
        dy: i8,
    },
    /// Three items of `kind` become one of `kind + 1` with their power summed.
    Craft {
        kind: u8,
    },
    Rename {
        name: String,
    },
    Leaderboard {
        top: u8,
    },
    Inventory {
        player: ActorId,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub struct Item {
    pub kind: u8,
    pub power: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum GameEvent {
    Joined {
        at: (u8, u8),
    },
    /// Where the player stands, and what it picked up there.
    Moved {
        at: (u8, u8),
        found: Option<Item>,
    },
    Crafted(Item),
    Renamed,
    Leaderboard(Vec<(String, u32)>),
    Inventory(Vec<Item>),
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum GameError {
    InvalidPayload,
    AlreadyJoined,
    NotJoined,
    BadName,
    NameTaken,
    BadMove,
    NotEnoughItems,
}

pub type GameReply = Result<GameEvent, GameError>;

#[derive(Clone, Debug)]
struct Player {
    name: String,
    at: (u8, u8),
    steps: u32,
    items: Vec<Item>,
}

impl Player {
    fn score(&self) -> u32 {
        self.items.iter().map(|i| i.power).sum()
    }
}

/// The board's players and the rules.
#[derive(Clone, Debug, Default)]
pub struct GameState {
    players: BTreeMap<ActorId, Player>,
    names: BTreeMap<String, ActorId>,
}

/// What lies at `at` for a player's `step`-th step, if anything (one cell in three).
fn item_at(at: (u8, u8), step: u32) -> Option<Item> {
    let h = u32::from(at.0).wrapping_mul(73_856_093)
        ^ u32::from(at.1).wrapping_mul(19_349_663)
        ^ step.wrapping_mul(83_492_791);
    h.is_multiple_of(3).then(|| Item {
        kind: (h >> 8) as u8 % 4,
        power: 1 + (h >> 16) % 50,
    })
}

impl GameState {
    fn valid_name(&self, name: &str) -> Result<(), GameError> {
        if name.is_empty() || name.len() > MAX_NAME {
            return Err(GameError::BadName);
        }
        if self.names.contains_key(name) {
            return Err(GameError::NameTaken);
        }
        Ok(())
    }

    fn player(&mut self, who: ActorId) -> Result<&mut Player, GameError> {
        self.players.get_mut(&who).ok_or(GameError::NotJoined)
    }

    pub fn handle(&mut self, sender: ActorId, action: GameAction) -> GameReply {
        match action {
            GameAction::Join { name } => {
                if self.players.contains_key(&sender) {
                    return Err(GameError::AlreadyJoined);
                }
                self.valid_name(&name)?;
                let seed = sender.as_ref()[0];
                let at = (seed % BOARD, (seed / 4) % BOARD);
                self.names.insert(name.clone(), sender);
                let player = Player {
                    name,
                    at,
                    steps: 0,
                    items: Vec::new(),
                };
                self.players.insert(sender, player);
                Ok(GameEvent::Joined { at })
            }
            GameAction::Move { dx, dy } => {
                let p = self.player(sender)?;
                if !(-1..=1).contains(&dx) || !(-1..=1).contains(&dy) || (dx, dy) == (0, 0) {
                    return Err(GameError::BadMove);
                }
                let wrap =
                    |c: u8, d: i8| (i16::from(c) + i16::from(d)).rem_euclid(i16::from(BOARD)) as u8;
                p.at = (wrap(p.at.0, dx), wrap(p.at.1, dy));
                p.steps += 1;
                let found = item_at(p.at, p.steps).filter(|_| p.items.len() < MAX_ITEMS);
                if let Some(item) = &found {
                    p.items.push(item.clone());
                }
                Ok(GameEvent::Moved { at: p.at, found })
            }
            GameAction::Craft { kind } => {
                let p = self.player(sender)?;
                let mut of_kind: Vec<usize> = (0..p.items.len())
                    .filter(|i| p.items[*i].kind == kind)
                    .collect();
                if of_kind.len() < 3 || kind == u8::MAX {
                    return Err(GameError::NotEnoughItems);
                }
                of_kind.truncate(3);
                let power = of_kind.iter().map(|i| p.items[*i].power).sum();
                for i in of_kind.into_iter().rev() {
                    p.items.remove(i);
                }
                let item = Item {
                    kind: kind + 1,
                    power,
                };
                p.items.push(item.clone());
                Ok(GameEvent::Crafted(item))
            }
            GameAction::Rename { name } => {
                self.player(sender)?;
                self.valid_name(&name)?;
                let p = self.players.get_mut(&sender).expect("joined");
                let old = core::mem::replace(&mut p.name, name.clone());
                self.names.remove(&old);
                self.names.insert(name, sender);
                Ok(GameEvent::Renamed)
            }
            GameAction::Leaderboard { top } => {
                let mut board: Vec<(String, u32)> = self
                    .players
                    .values()
                    .map(|p| (p.name.clone(), p.score()))
                    .collect();
                board.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                board.truncate(usize::from(top));
                Ok(GameEvent::Leaderboard(board))
            }
            GameAction::Inventory { player } => {
                let p = self.players.get(&player).ok_or(GameError::NotJoined)?;
                Ok(GameEvent::Inventory(p.items.clone()))
            }
        }
    }
}

#[cfg(target_arch = "wasm32")]
mod wasm {
    use super::{GameAction, GameError, GameState};
    use gstd::{msg, prelude::*};

    static mut GAME: Option<GameState> = None;

    #[unsafe(no_mangle)]
    extern "C" fn init() {
        // SAFETY: Gear runs one message at a time; `init` runs first and once.
        unsafe { GAME = Some(GameState::default()) };
    }

    #[unsafe(no_mangle)]
    extern "C" fn handle() {
        // SAFETY: Gear runs one message at a time and `init` has run.
        let game = unsafe { static_mut!(GAME) }.as_mut().expect("initialised");
        let reply = match msg::load::<GameAction>() {
            Ok(action) => game.handle(msg::source(), action),
            Err(_) => Err(GameError::InvalidPayload),
        };
        msg::reply(reply, 0).expect("reply");
    }
}
