//! A constant-product exchange pair on Sails, written for the lab's corpus: two assets held in
//! the program's own ledger (each account claims one airdrop of both), liquidity provided for
//! shares, swaps at a 0.3 % fee with a slippage bound, and a window of the latest trades (what
//! a price chart reads). The rules are [`PairState`]'s, which the lab's scenarios run on the
//! host to know every reply and event.
//!
//! A refused operation fails the message with its [`DexError`]: Gear discards every change, so
//! state is untouched and the sender gets the error as its reply.
#![cfg_attr(target_arch = "wasm32", no_std)]

use sails_rs::cell::RefCell;
use sails_rs::collections::{HashMap, HashSet, VecDeque};
use sails_rs::prelude::*;

/// Of each asset, what one airdrop gives.
pub const AIRDROP: u128 = 1_000_000;
/// How many trades [`PairState::recent_trades`] keeps.
pub const TRADE_WINDOW: usize = 32;

#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DexError {
    /// The account already took its airdrop.
    AlreadyClaimed,
    /// An amount of zero.
    ZeroAmount,
    /// The account holds less of an asset than the operation needs.
    InsufficientBalance,
    /// The account holds fewer shares than it tries to redeem.
    InsufficientShares,
    /// The pool is empty: nothing to swap against.
    NoLiquidity,
    /// The result is below the bound the sender gave.
    Slippage,
}

/// One trade, as the window keeps it.
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trade {
    pub trader: ActorId,
    /// Asset A in, B out (or the other way).
    pub a_to_b: bool,
    pub amount_in: u128,
    pub amount_out: u128,
}

#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DexEvents {
    Airdropped {
        to: ActorId,
    },
    LiquidityAdded {
        provider: ActorId,
        a: u128,
        b: u128,
        shares: u128,
    },
    LiquidityRemoved {
        provider: ActorId,
        a: u128,
        b: u128,
        shares: u128,
    },
    Swapped(Trade),
}

/// What one account holds.
#[sails_type]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Account {
    pub a: u128,
    pub b: u128,
    pub shares: u128,
}

/// The pair: reserves, shares, accounts, the trade window, and its rules.
#[derive(Clone, Debug, Default)]
pub struct PairState {
    reserve_a: u128,
    reserve_b: u128,
    total_shares: u128,
    accounts: HashMap<ActorId, Account>,
    claimed: HashSet<ActorId>,
    trades: VecDeque<Trade>,
}

/// The integer square root (the first provider's shares, as Uniswap v2 mints them).
fn sqrt(n: u128) -> u128 {
    if n < 2 {
        return n;
    }
    let mut x = n;
    let mut y = x.div_ceil(2);
    while y < x {
        x = y;
        y = (x + n / x) / 2;
    }
    x
}

impl PairState {
    pub fn reserves(&self) -> (u128, u128) {
        (self.reserve_a, self.reserve_b)
    }

    pub fn account(&self, who: ActorId) -> Account {
        self.accounts.get(&who).cloned().unwrap_or_default()
    }

    pub fn recent_trades(&self) -> Vec<Trade> {
        self.trades.iter().cloned().collect()
    }

    /// What `amount_in` buys now (0.3 % fee), or `NoLiquidity`.
    pub fn quote(&self, a_to_b: bool, amount_in: u128) -> Result<u128, DexError> {
        let (r_in, r_out) = if a_to_b {
            (self.reserve_a, self.reserve_b)
        } else {
            (self.reserve_b, self.reserve_a)
        };
        if r_in == 0 || r_out == 0 {
            return Err(DexError::NoLiquidity);
        }
        let with_fee = amount_in * 997;
        Ok(with_fee * r_out / (r_in * 1000 + with_fee))
    }

    pub fn claim_airdrop(&mut self, to: ActorId) -> Result<DexEvents, DexError> {
        if self.claimed.contains(&to) {
            return Err(DexError::AlreadyClaimed);
        }
        self.claimed.insert(to);
        let account = self.accounts.entry(to).or_default();
        account.a += AIRDROP;
        account.b += AIRDROP;
        Ok(DexEvents::Airdropped { to })
    }

    /// Deposits `a` of asset A and as much B as the pool's ratio asks (all of `b_max` into an
    /// empty pool), for shares; refused if that B is over `b_max` or the shares under
    /// `min_shares`.
    pub fn add_liquidity(
        &mut self,
        provider: ActorId,
        a: u128,
        b_max: u128,
        min_shares: u128,
    ) -> Result<(u128, DexEvents), DexError> {
        if a == 0 || b_max == 0 {
            return Err(DexError::ZeroAmount);
        }
        let (b, shares) = if self.total_shares == 0 {
            (b_max, sqrt(a * b_max))
        } else {
            (
                (a * self.reserve_b).div_ceil(self.reserve_a),
                a * self.total_shares / self.reserve_a,
            )
        };
        if b > b_max || shares < min_shares || shares == 0 {
            return Err(DexError::Slippage);
        }
        let account = self.account(provider);
        if account.a < a || account.b < b {
            return Err(DexError::InsufficientBalance);
        }
        let account = self.accounts.entry(provider).or_default();
        account.a -= a;
        account.b -= b;
        account.shares += shares;
        self.reserve_a += a;
        self.reserve_b += b;
        self.total_shares += shares;
        Ok((
            shares,
            DexEvents::LiquidityAdded {
                provider,
                a,
                b,
                shares,
            },
        ))
    }

    /// Redeems `shares` for their part of both reserves.
    pub fn remove_liquidity(
        &mut self,
        provider: ActorId,
        shares: u128,
    ) -> Result<((u128, u128), DexEvents), DexError> {
        if shares == 0 {
            return Err(DexError::ZeroAmount);
        }
        if self.account(provider).shares < shares {
            return Err(DexError::InsufficientShares);
        }
        let a = shares * self.reserve_a / self.total_shares;
        let b = shares * self.reserve_b / self.total_shares;
        let account = self.accounts.entry(provider).or_default();
        account.shares -= shares;
        account.a += a;
        account.b += b;
        self.reserve_a -= a;
        self.reserve_b -= b;
        self.total_shares -= shares;
        Ok((
            (a, b),
            DexEvents::LiquidityRemoved {
                provider,
                a,
                b,
                shares,
            },
        ))
    }

    /// Sells `amount_in` of one asset for at least `min_out` of the other.
    pub fn swap(
        &mut self,
        trader: ActorId,
        a_to_b: bool,
        amount_in: u128,
        min_out: u128,
    ) -> Result<(u128, DexEvents), DexError> {
        if amount_in == 0 {
            return Err(DexError::ZeroAmount);
        }
        let out = self.quote(a_to_b, amount_in)?;
        if out < min_out || out == 0 {
            return Err(DexError::Slippage);
        }
        let held = self.account(trader);
        if (if a_to_b { held.a } else { held.b }) < amount_in {
            return Err(DexError::InsufficientBalance);
        }
        let account = self.accounts.entry(trader).or_default();
        if a_to_b {
            account.a -= amount_in;
            account.b += out;
            self.reserve_a += amount_in;
            self.reserve_b -= out;
        } else {
            account.b -= amount_in;
            account.a += out;
            self.reserve_b += amount_in;
            self.reserve_a -= out;
        }
        let trade = Trade {
            trader,
            a_to_b,
            amount_in,
            amount_out: out,
        };
        if self.trades.len() == TRADE_WINDOW {
            self.trades.pop_front();
        }
        self.trades.push_back(trade.clone());
        Ok((out, DexEvents::Swapped(trade)))
    }
}

/// The pair's service: everything an account does, and the queries.
pub struct PairService<'a> {
    state: &'a RefCell<PairState>,
}

#[service(events = DexEvents)]
impl PairService<'_> {
    /// Emits what the operation did and answers its value.
    fn emit<T>(&mut self, (value, event): (T, DexEvents)) -> T {
        self.emit_event(event).expect("emitting an event");
        value
    }

    #[export(unwrap_result)]
    pub fn claim_airdrop(&mut self) -> Result<(), DexError> {
        let event = self
            .state
            .borrow_mut()
            .claim_airdrop(Syscall::message_source())?;
        self.emit(((), event));
        Ok(())
    }

    #[export(unwrap_result)]
    pub fn add_liquidity(
        &mut self,
        a: u128,
        b_max: u128,
        min_shares: u128,
    ) -> Result<u128, DexError> {
        let sender = Syscall::message_source();
        let done = self
            .state
            .borrow_mut()
            .add_liquidity(sender, a, b_max, min_shares)?;
        Ok(self.emit(done))
    }

    #[export(unwrap_result)]
    pub fn remove_liquidity(&mut self, shares: u128) -> Result<(u128, u128), DexError> {
        let sender = Syscall::message_source();
        let done = self.state.borrow_mut().remove_liquidity(sender, shares)?;
        Ok(self.emit(done))
    }

    #[export(unwrap_result)]
    pub fn swap(&mut self, a_to_b: bool, amount_in: u128, min_out: u128) -> Result<u128, DexError> {
        let sender = Syscall::message_source();
        let done = self
            .state
            .borrow_mut()
            .swap(sender, a_to_b, amount_in, min_out)?;
        Ok(self.emit(done))
    }

    #[export(unwrap_result)]
    pub fn quote(&self, a_to_b: bool, amount_in: u128) -> Result<u128, DexError> {
        self.state.borrow().quote(a_to_b, amount_in)
    }

    #[export]
    pub fn reserves(&self) -> (u128, u128) {
        self.state.borrow().reserves()
    }

    #[export]
    pub fn account(&self, who: ActorId) -> Account {
        self.state.borrow().account(who)
    }

    #[export]
    pub fn recent_trades(&self) -> Vec<Trade> {
        self.state.borrow().recent_trades()
    }
}

/// The program: one pair for its whole life.
#[derive(Default)]
pub struct DexProgram {
    state: RefCell<PairState>,
}

#[program]
impl DexProgram {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn pair(&self) -> PairService<'_> {
        PairService { state: &self.state }
    }
}
