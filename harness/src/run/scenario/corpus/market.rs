//! `market`: the marketplace (`contracts/corpus/market`). Users deposit funds, sellers list
//! items under titles of 6-60 bytes, buyers buy, make offers (beating the lowest of a full
//! book) and sellers accept them or withdraw; listings and offers are read back. Refusals
//! among them: empty and over-long titles, buying one's own item or without the funds, an
//! offer too low, accepting an offer never made, withdrawing someone else's listing.

use super::super::sails::{constructor, Calls};
use super::super::{actor, Scenario};
use crate::run::backend::UserId;
use gtest::constants::DEFAULT_USER_ALICE;
use market::{ListingId, MarketProgram, MarketService, MarketState};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const WORDS: &[&str] = &[
    "vintage", "lamp", "oak", "chair", "signed", "print", "rare", "coin", "red", "bicycle",
    "handmade", "rug", "first", "edition", "brass", "clock",
];

struct Script {
    model: MarketState,
    calls: Calls,
    rng: SmallRng,
    users: UserId,
}

impl Script {
    fn title(&mut self) -> String {
        let words = self.rng.gen_range(1..=7);
        let mut t = String::new();
        for _ in 0..words {
            if !t.is_empty() {
                t.push(' ');
            }
            t.push_str(WORDS[self.rng.gen_range(0..WORDS.len())]);
        }
        t
    }

    fn deposit(&mut self, user: UserId, amount: u128) {
        let outcome = self.model.deposit(actor(user), amount);
        self.calls.quiet(user, "deposit", &amount, outcome);
    }

    fn list(&mut self, user: UserId, title: String, price: u128) {
        let outcome = self.model.list(actor(user), title.clone(), price);
        self.calls.change(user, "list", &(title, price), outcome);
    }

    /// An open listing, or (none open, or one in ten) one that does not exist.
    fn some_listing(&mut self) -> ListingId {
        let open: Vec<ListingId> = (0..500)
            .filter(|id| self.model.listing(*id).is_some())
            .collect();
        if open.is_empty() || self.rng.gen_ratio(1, 10) {
            return 10_000;
        }
        open[self.rng.gen_range(0..open.len())]
    }

    fn act(&mut self) {
        let user = self.rng.gen_range(1..=self.users);
        let id = self.some_listing();
        let listing = self.model.listing(id);
        match self.rng.gen_range(0..100) {
            0..=19 => {
                let (title, price) = (self.title(), self.rng.gen_range(50..5_000));
                self.list(user, title, price);
            }
            20..=21 => self.list(user, String::new(), 100),
            22..=23 => self.list(user, "x".repeat(70), 100),
            24..=35 => {
                let outcome = self.model.buy(actor(user), id);
                self.calls
                    .change(user, "buy", &id, outcome.map(|e| ((), e)));
            }
            36..=59 => {
                let ask = listing.as_ref().map_or(100, |l| l.price);
                let price = ask * self.rng.gen_range(50..100) / 100;
                let outcome = self.model.offer(actor(user), id, price);
                self.calls
                    .change(user, "offer", &(id, price), outcome.map(|e| ((), e)));
            }
            60..=69 => {
                // The seller accepts the best offer; anyone else is refused.
                let (seller, buyer) = match &listing {
                    Some(l) => (
                        self.user_of(l.seller)
                            .filter(|_| self.rng.gen_ratio(4, 5))
                            .unwrap_or(user),
                        l.offers.first().map_or(actor(user), |o| o.buyer),
                    ),
                    None => (user, actor(user)),
                };
                let outcome = self.model.accept(actor(seller), id, buyer);
                self.calls
                    .change(seller, "accept", &(id, buyer), outcome.map(|e| ((), e)));
            }
            70..=75 => {
                let seller = listing
                    .as_ref()
                    .and_then(|l| self.user_of(l.seller))
                    .filter(|_| self.rng.gen_ratio(2, 3))
                    .unwrap_or(user);
                let outcome = self.model.withdraw(actor(seller), id);
                self.calls
                    .change(seller, "withdraw", &id, outcome.map(|e| ((), e)));
            }
            76..=81 => {
                let amount = self.rng.gen_range(100..3_000);
                self.deposit(user, amount);
            }
            82..=90 => self.calls.query(user, "listing", &id, listing),
            91..=95 => {
                let who = actor(self.rng.gen_range(1..=self.users));
                let list = self.model.listings_of(who);
                self.calls.query(user, "listings_of", &who, list);
            }
            _ => {
                let funds = self.model.funds(actor(user));
                self.calls.query(user, "funds", &actor(user), funds);
            }
        }
    }

    fn user_of(&self, who: sails_rs::ActorId) -> Option<UserId> {
        super::super::user_of(who, self.users)
    }
}

fn scenario(users: UserId, actions: usize, seed: u64) -> Scenario {
    let mut s = Script {
        model: MarketState::default(),
        calls: Calls::of::<MarketProgram, MarketService>("market"),
        rng: SmallRng::seed_from_u64(seed),
        users,
    };
    for user in 1..=users {
        let amount = s.rng.gen_range(1_000..10_000);
        s.deposit(user, amount);
    }
    s.deposit(1, 2_000_000);
    for _ in 0..actions {
        s.act();
    }
    Scenario {
        case: "market",
        package: "corpus-market",
        deployer: DEFAULT_USER_ALICE,
        init: constructor(0, &()),
        steps: s.calls.steps,
    }
}

/// 30 users, 400 actions.
pub fn main() -> Scenario {
    scenario(30, 400, 0xa1_01)
}

/// A busier market: 80 users, 600 actions.
pub fn busy() -> Scenario {
    scenario(80, 600, 0xa1_02)
}
