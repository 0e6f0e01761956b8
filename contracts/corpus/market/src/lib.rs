//! A marketplace on Sails, written for the lab's corpus: sellers list items with a title and a
//! price, buyers buy at the price or make offers (a listing keeps the best few), sellers accept
//! an offer or withdraw the listing; funds are the program's own ledger, topped up by
//! `deposit`. The rules are [`MarketState`]'s, which the lab's scenarios run on the host to
//! know every reply and event.
//!
//! A refused operation fails the message with its [`MarketError`]: Gear discards every change,
//! so state is untouched and the sender gets the error as its reply.
#![cfg_attr(target_arch = "wasm32", no_std)]

use sails_rs::cell::RefCell;
use sails_rs::collections::{BTreeMap, HashMap};
use sails_rs::prelude::*;

/// Longest title, in bytes.
pub const MAX_TITLE: usize = 64;
/// Most open offers a listing keeps.
pub const MAX_OFFERS: usize = 4;
/// Most one deposit adds.
pub const MAX_DEPOSIT: u128 = 1_000_000;

pub type ListingId = u64;

#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarketError {
    EmptyTitle,
    TitleTooLong,
    ZeroPrice,
    DepositTooLarge,
    NoSuchListing,
    /// A seller cannot buy or bid on their own listing.
    OwnListing,
    NotSeller,
    InsufficientFunds,
    /// The offer is not above the listing's lowest while it holds [`MAX_OFFERS`].
    OfferTooLow,
    NoSuchOffer,
}

#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    pub buyer: ActorId,
    pub price: u128,
}

#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    pub seller: ActorId,
    pub title: String,
    pub price: u128,
    /// Highest first; one per buyer.
    pub offers: Vec<Offer>,
}

#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarketEvents {
    Listed {
        id: ListingId,
        seller: ActorId,
        title: String,
        price: u128,
    },
    Sold {
        id: ListingId,
        buyer: ActorId,
        price: u128,
    },
    OfferMade {
        id: ListingId,
        buyer: ActorId,
        price: u128,
    },
    Withdrawn {
        id: ListingId,
    },
}

/// Listings, funds and the rules.
#[derive(Clone, Debug, Default)]
pub struct MarketState {
    next_id: ListingId,
    listings: BTreeMap<ListingId, Listing>,
    funds: HashMap<ActorId, u128>,
}

impl MarketState {
    pub fn funds(&self, who: ActorId) -> u128 {
        self.funds.get(&who).copied().unwrap_or_default()
    }

    pub fn listing(&self, id: ListingId) -> Option<Listing> {
        self.listings.get(&id).cloned()
    }

    /// The ids and titles of `seller`'s open listings, oldest first.
    pub fn listings_of(&self, seller: ActorId) -> Vec<(ListingId, String)> {
        self.listings
            .iter()
            .filter(|(_, l)| l.seller == seller)
            .map(|(id, l)| (*id, l.title.clone()))
            .collect()
    }

    pub fn deposit(&mut self, who: ActorId, amount: u128) -> Result<u128, MarketError> {
        if amount > MAX_DEPOSIT {
            return Err(MarketError::DepositTooLarge);
        }
        let funds = self.funds(who) + amount;
        self.funds.insert(who, funds);
        Ok(funds)
    }

    pub fn list(
        &mut self,
        seller: ActorId,
        title: String,
        price: u128,
    ) -> Result<(ListingId, MarketEvents), MarketError> {
        if title.is_empty() {
            return Err(MarketError::EmptyTitle);
        }
        if title.len() > MAX_TITLE {
            return Err(MarketError::TitleTooLong);
        }
        if price == 0 {
            return Err(MarketError::ZeroPrice);
        }
        let id = self.next_id;
        self.next_id += 1;
        let event = MarketEvents::Listed {
            id,
            seller,
            title: title.clone(),
            price,
        };
        self.listings.insert(
            id,
            Listing {
                seller,
                title,
                price,
                offers: Vec::new(),
            },
        );
        Ok((id, event))
    }

    fn open(&self, id: ListingId) -> Result<&Listing, MarketError> {
        self.listings.get(&id).ok_or(MarketError::NoSuchListing)
    }

    /// Moves `price` from `buyer` to the seller and closes the listing.
    fn settle(&mut self, id: ListingId, buyer: ActorId, price: u128) -> MarketEvents {
        let listing = self.listings.remove(&id).expect("checked open");
        let left = self.funds(buyer) - price;
        self.funds.insert(buyer, left);
        let earned = self.funds(listing.seller) + price;
        self.funds.insert(listing.seller, earned);
        MarketEvents::Sold { id, buyer, price }
    }

    pub fn buy(&mut self, buyer: ActorId, id: ListingId) -> Result<MarketEvents, MarketError> {
        let listing = self.open(id)?;
        if listing.seller == buyer {
            return Err(MarketError::OwnListing);
        }
        if self.funds(buyer) < listing.price {
            return Err(MarketError::InsufficientFunds);
        }
        let price = listing.price;
        Ok(self.settle(id, buyer, price))
    }

    /// Records (or replaces) `buyer`'s offer; when the listing holds [`MAX_OFFERS`] others,
    /// it must beat the lowest, which is dropped.
    pub fn offer(
        &mut self,
        buyer: ActorId,
        id: ListingId,
        price: u128,
    ) -> Result<MarketEvents, MarketError> {
        let listing = self.open(id)?;
        if listing.seller == buyer {
            return Err(MarketError::OwnListing);
        }
        if price == 0 {
            return Err(MarketError::ZeroPrice);
        }
        if self.funds(buyer) < price {
            return Err(MarketError::InsufficientFunds);
        }
        let others = listing.offers.iter().filter(|o| o.buyer != buyer).count();
        let lowest = listing.offers.last().map(|o| o.price).unwrap_or_default();
        if others >= MAX_OFFERS && price <= lowest {
            return Err(MarketError::OfferTooLow);
        }
        let offers = &mut self.listings.get_mut(&id).expect("checked open").offers;
        offers.retain(|o| o.buyer != buyer);
        if offers.len() >= MAX_OFFERS {
            offers.pop();
        }
        let at = offers.partition_point(|o| o.price >= price);
        offers.insert(at, Offer { buyer, price });
        Ok(MarketEvents::OfferMade { id, buyer, price })
    }

    /// The seller sells to `buyer` at their offer, if the buyer still has the funds.
    pub fn accept(
        &mut self,
        seller: ActorId,
        id: ListingId,
        buyer: ActorId,
    ) -> Result<MarketEvents, MarketError> {
        let listing = self.open(id)?;
        if listing.seller != seller {
            return Err(MarketError::NotSeller);
        }
        let offer = listing.offers.iter().find(|o| o.buyer == buyer);
        let price = offer.ok_or(MarketError::NoSuchOffer)?.price;
        if self.funds(buyer) < price {
            return Err(MarketError::InsufficientFunds);
        }
        Ok(self.settle(id, buyer, price))
    }

    pub fn withdraw(
        &mut self,
        seller: ActorId,
        id: ListingId,
    ) -> Result<MarketEvents, MarketError> {
        if self.open(id)?.seller != seller {
            return Err(MarketError::NotSeller);
        }
        self.listings.remove(&id);
        Ok(MarketEvents::Withdrawn { id })
    }
}

pub struct MarketService<'a> {
    state: &'a RefCell<MarketState>,
}

#[service(events = MarketEvents)]
impl MarketService<'_> {
    /// Emits what the operation did, or passes its refusal on.
    fn announce(&mut self, event: Result<MarketEvents, MarketError>) -> Result<(), MarketError> {
        self.emit_event(event?).expect("emitting an event");
        Ok(())
    }

    /// Adds `amount` to the sender's funds; their funds after.
    #[export(unwrap_result)]
    pub fn deposit(&mut self, amount: u128) -> Result<u128, MarketError> {
        self.state
            .borrow_mut()
            .deposit(Syscall::message_source(), amount)
    }

    #[export(unwrap_result)]
    pub fn list(&mut self, title: String, price: u128) -> Result<ListingId, MarketError> {
        let sender = Syscall::message_source();
        let (id, event) = self.state.borrow_mut().list(sender, title, price)?;
        self.emit_event(event).expect("emitting an event");
        Ok(id)
    }

    #[export(unwrap_result)]
    pub fn buy(&mut self, id: ListingId) -> Result<(), MarketError> {
        let sender = Syscall::message_source();
        let event = self.state.borrow_mut().buy(sender, id);
        self.announce(event)
    }

    #[export(unwrap_result)]
    pub fn offer(&mut self, id: ListingId, price: u128) -> Result<(), MarketError> {
        let sender = Syscall::message_source();
        let event = self.state.borrow_mut().offer(sender, id, price);
        self.announce(event)
    }

    #[export(unwrap_result)]
    pub fn accept(&mut self, id: ListingId, buyer: ActorId) -> Result<(), MarketError> {
        let sender = Syscall::message_source();
        let event = self.state.borrow_mut().accept(sender, id, buyer);
        self.announce(event)
    }

    #[export(unwrap_result)]
    pub fn withdraw(&mut self, id: ListingId) -> Result<(), MarketError> {
        let sender = Syscall::message_source();
        let event = self.state.borrow_mut().withdraw(sender, id);
        self.announce(event)
    }

    #[export]
    pub fn listing(&self, id: ListingId) -> Option<Listing> {
        self.state.borrow().listing(id)
    }

    #[export]
    pub fn listings_of(&self, seller: ActorId) -> Vec<(ListingId, String)> {
        self.state.borrow().listings_of(seller)
    }

    #[export]
    pub fn funds(&self, who: ActorId) -> u128 {
        self.state.borrow().funds(who)
    }
}

#[derive(Default)]
pub struct MarketProgram {
    state: RefCell<MarketState>,
}

#[program]
impl MarketProgram {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn market(&self) -> MarketService<'_> {
        MarketService { state: &self.state }
    }
}
