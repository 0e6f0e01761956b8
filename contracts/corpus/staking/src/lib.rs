//! A staking pool on Sails, written for the lab's corpus: accounts take one grant of the
//! pool's token, stake and unstake it, the admin (the deployer) pays rewards into the pool,
//! shared by stake at that moment (the reward-per-share accumulator every staking contract
//! uses), and stakers claim what they earned. Each staker's position is one map entry, made on
//! first stake and dropped when empty. The rules are [`PoolState`]'s, which the lab's
//! scenarios run on the host to know every reply and event.
//!
//! A refused operation fails the message with its [`StakingError`]: Gear discards every change,
//! so state is untouched and the sender gets the error as its reply.
#![cfg_attr(target_arch = "wasm32", no_std)]

use sails_rs::cell::RefCell;
use sails_rs::collections::{HashMap, HashSet};
use sails_rs::prelude::*;

/// What one grant gives.
pub const GRANT: u128 = 100_000;
/// Fixed-point scale of the reward accumulator.
const SCALE: u128 = 1_000_000_000_000;

#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StakingError {
    AlreadyGranted,
    ZeroAmount,
    InsufficientBalance,
    InsufficientStake,
    NotAdmin,
    /// Rewards paid while nothing is staked would belong to no one.
    NothingStaked,
    NothingToClaim,
}

/// A staker's position as `position` answers it.
#[sails_type]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Position {
    pub staked: u128,
    /// Earned and not yet claimed.
    pub pending: u128,
}

#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StakingEvents {
    Granted { to: ActorId },
    Staked { staker: ActorId, amount: u128 },
    Unstaked { staker: ActorId, amount: u128 },
    RewardsPaid { amount: u128, per_share: u128 },
    Claimed { staker: ActorId, amount: u128 },
}

#[derive(Clone, Debug, Default)]
struct Staker {
    staked: u128,
    /// `staked * per_share` when last settled.
    debt: u128,
    /// Settled and unclaimed.
    owed: u128,
}

/// The pool, wallets and the rules.
#[derive(Clone, Debug)]
pub struct PoolState {
    admin: ActorId,
    granted: HashSet<ActorId>,
    wallets: HashMap<ActorId, u128>,
    stakers: HashMap<ActorId, Staker>,
    total_staked: u128,
    per_share: u128,
}

impl PoolState {
    pub fn new(admin: ActorId) -> Self {
        PoolState {
            admin,
            granted: HashSet::new(),
            wallets: HashMap::new(),
            stakers: HashMap::new(),
            total_staked: 0,
            per_share: 0,
        }
    }

    pub fn wallet(&self, who: ActorId) -> u128 {
        self.wallets.get(&who).copied().unwrap_or_default()
    }

    pub fn total_staked(&self) -> u128 {
        self.total_staked
    }

    pub fn position(&self, who: ActorId) -> Position {
        self.stakers
            .get(&who)
            .map_or_else(Position::default, |s| Position {
                staked: s.staked,
                pending: s.owed + s.staked * self.per_share / SCALE - s.debt,
            })
    }

    pub fn grant(&mut self, to: ActorId) -> Result<StakingEvents, StakingError> {
        if !self.granted.insert(to) {
            return Err(StakingError::AlreadyGranted);
        }
        let wallet = self.wallet(to) + GRANT;
        self.wallets.insert(to, wallet);
        Ok(StakingEvents::Granted { to })
    }

    /// Moves what `who` earned since last settled into `owed` and re-bases its debt.
    fn settle(s: &mut Staker, per_share: u128) {
        s.owed += s.staked * per_share / SCALE - s.debt;
    }

    fn rebase(s: &mut Staker, per_share: u128) {
        s.debt = s.staked * per_share / SCALE;
    }

    pub fn stake(
        &mut self,
        who: ActorId,
        amount: u128,
    ) -> Result<(u128, StakingEvents), StakingError> {
        if amount == 0 {
            return Err(StakingError::ZeroAmount);
        }
        let wallet = self.wallet(who);
        if wallet < amount {
            return Err(StakingError::InsufficientBalance);
        }
        self.wallets.insert(who, wallet - amount);
        let per_share = self.per_share;
        let s = self.stakers.entry(who).or_default();
        Self::settle(s, per_share);
        s.staked += amount;
        Self::rebase(s, per_share);
        let staked = s.staked;
        self.total_staked += amount;
        Ok((
            staked,
            StakingEvents::Staked {
                staker: who,
                amount,
            },
        ))
    }

    pub fn unstake(
        &mut self,
        who: ActorId,
        amount: u128,
    ) -> Result<(u128, StakingEvents), StakingError> {
        if amount == 0 {
            return Err(StakingError::ZeroAmount);
        }
        let per_share = self.per_share;
        let s = self
            .stakers
            .get_mut(&who)
            .filter(|s| s.staked >= amount)
            .ok_or(StakingError::InsufficientStake)?;
        Self::settle(s, per_share);
        s.staked -= amount;
        Self::rebase(s, per_share);
        let (staked, owed) = (s.staked, s.owed);
        if staked == 0 && owed == 0 {
            self.stakers.remove(&who);
        }
        self.total_staked -= amount;
        let wallet = self.wallet(who) + amount;
        self.wallets.insert(who, wallet);
        Ok((
            staked,
            StakingEvents::Unstaked {
                staker: who,
                amount,
            },
        ))
    }

    /// The admin pays `amount` of rewards, shared by stake now.
    pub fn pay_rewards(
        &mut self,
        sender: ActorId,
        amount: u128,
    ) -> Result<StakingEvents, StakingError> {
        if sender != self.admin {
            return Err(StakingError::NotAdmin);
        }
        if amount == 0 {
            return Err(StakingError::ZeroAmount);
        }
        if self.total_staked == 0 {
            return Err(StakingError::NothingStaked);
        }
        self.per_share += amount * SCALE / self.total_staked;
        Ok(StakingEvents::RewardsPaid {
            amount,
            per_share: self.per_share,
        })
    }

    /// Pays `who` what it earned into its wallet.
    pub fn claim(&mut self, who: ActorId) -> Result<(u128, StakingEvents), StakingError> {
        let per_share = self.per_share;
        let s = self
            .stakers
            .get_mut(&who)
            .ok_or(StakingError::NothingToClaim)?;
        Self::settle(s, per_share);
        Self::rebase(s, per_share);
        let amount = core::mem::take(&mut s.owed);
        if amount == 0 {
            return Err(StakingError::NothingToClaim);
        }
        if s.staked == 0 {
            self.stakers.remove(&who);
        }
        let wallet = self.wallet(who) + amount;
        self.wallets.insert(who, wallet);
        Ok((
            amount,
            StakingEvents::Claimed {
                staker: who,
                amount,
            },
        ))
    }
}

pub struct StakingService<'a> {
    state: &'a RefCell<PoolState>,
}

#[service(events = StakingEvents)]
impl StakingService<'_> {
    /// Emits what the operation did and answers its value.
    fn emit<T>(
        &mut self,
        done: Result<(T, StakingEvents), StakingError>,
    ) -> Result<T, StakingError> {
        let (value, event) = done?;
        self.emit_event(event).expect("emitting an event");
        Ok(value)
    }

    #[export(unwrap_result)]
    pub fn grant(&mut self) -> Result<(), StakingError> {
        let done = self.state.borrow_mut().grant(Syscall::message_source());
        self.emit(done.map(|e| ((), e)))
    }

    /// Stakes `amount` from the sender's wallet; their stake after.
    #[export(unwrap_result)]
    pub fn stake(&mut self, amount: u128) -> Result<u128, StakingError> {
        let done = self
            .state
            .borrow_mut()
            .stake(Syscall::message_source(), amount);
        self.emit(done)
    }

    #[export(unwrap_result)]
    pub fn unstake(&mut self, amount: u128) -> Result<u128, StakingError> {
        let done = self
            .state
            .borrow_mut()
            .unstake(Syscall::message_source(), amount);
        self.emit(done)
    }

    #[export(unwrap_result)]
    pub fn pay_rewards(&mut self, amount: u128) -> Result<(), StakingError> {
        let sender = Syscall::message_source();
        let done = self.state.borrow_mut().pay_rewards(sender, amount);
        self.emit(done.map(|e| ((), e)))
    }

    #[export(unwrap_result)]
    pub fn claim(&mut self) -> Result<u128, StakingError> {
        let done = self.state.borrow_mut().claim(Syscall::message_source());
        self.emit(done)
    }

    #[export]
    pub fn position(&self, who: ActorId) -> Position {
        self.state.borrow().position(who)
    }

    #[export]
    pub fn wallet(&self, who: ActorId) -> u128 {
        self.state.borrow().wallet(who)
    }

    #[export]
    pub fn total_staked(&self) -> u128 {
        self.state.borrow().total_staked()
    }
}

pub struct StakingProgram {
    state: RefCell<PoolState>,
}

// `new` reads the deployer, so a `Default` (callable outside a message) would be wrong.
#[allow(clippy::new_without_default)]
#[program]
impl StakingProgram {
    /// The deployer is the admin, who pays the rewards.
    pub fn new() -> Self {
        StakingProgram {
            state: RefCell::new(PoolState::new(Syscall::message_source())),
        }
    }

    pub fn staking(&self) -> StakingService<'_> {
        StakingService { state: &self.state }
    }
}
