//! `game`: the board game (`contracts/corpus/game`, plain gstd). Players join under names and
//! mostly walk (inventories grow as they pick items up), craft, rename, and read the
//! leaderboard and inventories. Refusals among them: a name taken, empty or too long, joining
//! twice, a move of two cells, crafting without three items, acting before joining, and a
//! payload that is not a message at all.

use super::super::{actor, Scenario, Step};
use crate::run::backend::UserId;
use game::{GameAction, GameError, GameReply, GameState};
use gtest::constants::DEFAULT_USER_ALICE;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

struct Script {
    model: GameState,
    steps: Vec<Step>,
}

impl Script {
    fn send(&mut self, from: UserId, action: GameAction) {
        let reply = self.model.handle(actor(from), action.clone());
        self.steps.push(Step::expecting(from, &action, &reply));
    }
}

/// `players` join, `late` more join along the way.
fn scenario(players: UserId, late: UserId, actions: usize, seed: u64) -> Scenario {
    let mut s = Script {
        model: GameState::default(),
        steps: Vec::new(),
    };
    let mut rng = SmallRng::seed_from_u64(seed);
    let name = |u: UserId| format!("player_{u}");
    // Before joining.
    s.send(1, GameAction::Move { dx: 1, dy: 0 });
    for user in 1..=players {
        s.send(user, GameAction::Join { name: name(user) });
    }
    let mut joined = players;
    for i in 0..actions {
        if joined < players + late && i % (actions / late.max(1) as usize).max(1) == 0 {
            joined += 1;
            s.send(joined, GameAction::Join { name: name(joined) });
            continue;
        }
        let user = rng.gen_range(1..=joined);
        let action = match rng.gen_range(0..100) {
            0..=64 => GameAction::Move {
                dx: rng.gen_range(-1..=1),
                dy: if rng.gen_bool(0.5) { 1 } else { -1 },
            },
            65..=66 => GameAction::Move { dx: 2, dy: 0 },
            67..=76 => GameAction::Craft {
                kind: rng.gen_range(0..4),
            },
            77..=78 => GameAction::Join { name: name(user) },
            79..=80 => GameAction::Rename {
                name: format!("{}_the_{}", name(user), rng.gen_range(0..1_000)),
            },
            81 => GameAction::Rename {
                name: name(rng.gen_range(1..=joined)),
            },
            82 => GameAction::Rename {
                name: "a".repeat(30),
            },
            83..=89 => GameAction::Leaderboard {
                top: rng.gen_range(1..=10),
            },
            90..=98 => GameAction::Inventory {
                player: actor(rng.gen_range(1..=joined + 2)),
            },
            _ => {
                // Not a message: an error reply, nothing changed.
                let reply: GameReply = Err(GameError::InvalidPayload);
                s.steps
                    .push(Step::answering(user, vec![0xff, 0x01], &reply));
                continue;
            }
        };
        s.send(user, action);
    }
    Scenario {
        case: "game",
        package: "corpus-game",
        deployer: DEFAULT_USER_ALICE,
        init: Vec::new(),
        steps: s.steps,
    }
}

/// 20 players from the start, 10 joining later, 400 actions.
pub fn main() -> Scenario {
    scenario(20, 10, 400, 0x6a_01)
}

/// A crowded board: 60 players, 60 more joining, 500 actions.
pub fn crowded() -> Scenario {
    scenario(60, 60, 500, 0x6a_02)
}
