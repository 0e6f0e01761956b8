//! Token vesting on Sails, written for the lab's corpus: the admin (the deployer) grants
//! beneficiaries schedules (an amount released linearly over a duration after a cliff), moves
//! the program's clock on by epochs, and may revoke what has not vested; beneficiaries claim
//! what has. The rules are [`VestingState`]'s, which the lab's scenarios run on the host to know
//! every reply and event.
//!
//! The clock is the program's own epoch counter, not the block height, so a run answers the
//! same on every backend whatever its blocks.
//!
//! A refused operation fails the message with its [`VestingError`]: Gear discards every change,
//! so state is untouched and the sender gets the error as its reply.
#![cfg_attr(target_arch = "wasm32", no_std)]

use sails_rs::cell::RefCell;
use sails_rs::collections::BTreeMap;
use sails_rs::prelude::*;

/// Most schedules one beneficiary holds.
pub const MAX_SCHEDULES: usize = 8;

#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VestingError {
    NotAdmin,
    ZeroAmount,
    /// A duration of zero or a cliff past the end.
    BadSchedule,
    TooManySchedules,
    NoSuchSchedule,
    AlreadyRevoked,
    NothingToClaim,
}

#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub total: u128,
    pub start: u64,
    pub cliff: u64,
    pub duration: u64,
    pub claimed: u128,
    pub revoked: bool,
}

impl Schedule {
    /// What has vested by epoch `now`: nothing before the cliff, then linearly to `total`; a
    /// revoked schedule's total is what had vested when it was revoked.
    pub fn vested(&self, now: u64) -> u128 {
        let elapsed = now.saturating_sub(self.start);
        if elapsed < self.cliff {
            0
        } else if elapsed >= self.duration || self.revoked {
            self.total
        } else {
            self.total * u128::from(elapsed) / u128::from(self.duration)
        }
    }
}

#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VestingEvents {
    Granted {
        beneficiary: ActorId,
        index: u32,
        total: u128,
    },
    Claimed {
        beneficiary: ActorId,
        amount: u128,
    },
    Revoked {
        beneficiary: ActorId,
        index: u32,
        returned: u128,
    },
    Advanced {
        now: u64,
    },
}

/// Schedules, the clock and the rules.
#[derive(Clone, Debug)]
pub struct VestingState {
    admin: ActorId,
    now: u64,
    schedules: BTreeMap<ActorId, Vec<Schedule>>,
    /// What beneficiaries have claimed, in total, and what revocations returned to the admin.
    released: u128,
    returned: u128,
}

impl VestingState {
    pub fn new(admin: ActorId) -> Self {
        VestingState {
            admin,
            now: 0,
            schedules: BTreeMap::new(),
            released: 0,
            returned: 0,
        }
    }

    pub fn now(&self) -> u64 {
        self.now
    }

    pub fn schedules_of(&self, who: ActorId) -> Vec<Schedule> {
        self.schedules.get(&who).cloned().unwrap_or_default()
    }

    /// What `who` could claim now.
    pub fn claimable(&self, who: ActorId) -> u128 {
        self.schedules.get(&who).map_or(0, |list| {
            list.iter().map(|s| s.vested(self.now) - s.claimed).sum()
        })
    }

    /// Claimed by everyone so far, and returned to the admin.
    pub fn totals(&self) -> (u128, u128) {
        (self.released, self.returned)
    }

    fn admin_only(&self, sender: ActorId) -> Result<(), VestingError> {
        if sender == self.admin {
            Ok(())
        } else {
            Err(VestingError::NotAdmin)
        }
    }

    /// Grants `beneficiary` a schedule starting now; its index among theirs.
    pub fn grant(
        &mut self,
        sender: ActorId,
        beneficiary: ActorId,
        total: u128,
        cliff: u64,
        duration: u64,
    ) -> Result<(u32, VestingEvents), VestingError> {
        self.admin_only(sender)?;
        if total == 0 {
            return Err(VestingError::ZeroAmount);
        }
        if duration == 0 || cliff > duration {
            return Err(VestingError::BadSchedule);
        }
        let list = self.schedules.entry(beneficiary).or_default();
        if list.len() >= MAX_SCHEDULES {
            return Err(VestingError::TooManySchedules);
        }
        list.push(Schedule {
            total,
            start: self.now,
            cliff,
            duration,
            claimed: 0,
            revoked: false,
        });
        let index = (list.len() - 1) as u32;
        Ok((
            index,
            VestingEvents::Granted {
                beneficiary,
                index,
                total,
            },
        ))
    }

    pub fn advance(
        &mut self,
        sender: ActorId,
        epochs: u64,
    ) -> Result<(u64, VestingEvents), VestingError> {
        self.admin_only(sender)?;
        self.now += epochs;
        Ok((self.now, VestingEvents::Advanced { now: self.now }))
    }

    /// Pays out everything vested and unclaimed; a beneficiary whose schedules are all paid
    /// out and ended is forgotten.
    pub fn claim(&mut self, who: ActorId) -> Result<(u128, VestingEvents), VestingError> {
        let amount = self.claimable(who);
        if amount == 0 {
            return Err(VestingError::NothingToClaim);
        }
        let now = self.now;
        let list = self.schedules.get_mut(&who).expect("something to claim");
        for s in list.iter_mut() {
            s.claimed = s.vested(now);
        }
        list.retain(|s| s.claimed < s.total);
        if list.is_empty() {
            self.schedules.remove(&who);
        }
        self.released += amount;
        Ok((
            amount,
            VestingEvents::Claimed {
                beneficiary: who,
                amount,
            },
        ))
    }

    /// Stops schedule `index` of `beneficiary` where it stands: what has not vested returns to
    /// the admin.
    pub fn revoke(
        &mut self,
        sender: ActorId,
        beneficiary: ActorId,
        index: u32,
    ) -> Result<(u128, VestingEvents), VestingError> {
        self.admin_only(sender)?;
        let now = self.now;
        let s = self
            .schedules
            .get_mut(&beneficiary)
            .and_then(|list| list.get_mut(index as usize))
            .ok_or(VestingError::NoSuchSchedule)?;
        if s.revoked {
            return Err(VestingError::AlreadyRevoked);
        }
        let vested = s.vested(now);
        let returned = s.total - vested;
        s.total = vested;
        s.revoked = true;
        self.returned += returned;
        Ok((
            returned,
            VestingEvents::Revoked {
                beneficiary,
                index,
                returned,
            },
        ))
    }
}

pub struct VestingService<'a> {
    state: &'a RefCell<VestingState>,
}

#[service(events = VestingEvents)]
impl VestingService<'_> {
    /// Emits what the operation did and answers its value.
    fn emit<T>(
        &mut self,
        done: Result<(T, VestingEvents), VestingError>,
    ) -> Result<T, VestingError> {
        let (value, event) = done?;
        self.emit_event(event).expect("emitting an event");
        Ok(value)
    }

    #[export(unwrap_result)]
    pub fn grant(
        &mut self,
        beneficiary: ActorId,
        total: u128,
        cliff: u64,
        duration: u64,
    ) -> Result<u32, VestingError> {
        let sender = Syscall::message_source();
        let done = self
            .state
            .borrow_mut()
            .grant(sender, beneficiary, total, cliff, duration);
        self.emit(done)
    }

    #[export(unwrap_result)]
    pub fn advance(&mut self, epochs: u64) -> Result<u64, VestingError> {
        let done = self
            .state
            .borrow_mut()
            .advance(Syscall::message_source(), epochs);
        self.emit(done)
    }

    #[export(unwrap_result)]
    pub fn claim(&mut self) -> Result<u128, VestingError> {
        let done = self.state.borrow_mut().claim(Syscall::message_source());
        self.emit(done)
    }

    #[export(unwrap_result)]
    pub fn revoke(&mut self, beneficiary: ActorId, index: u32) -> Result<u128, VestingError> {
        let sender = Syscall::message_source();
        let done = self.state.borrow_mut().revoke(sender, beneficiary, index);
        self.emit(done)
    }

    #[export]
    pub fn schedules_of(&self, who: ActorId) -> Vec<Schedule> {
        self.state.borrow().schedules_of(who)
    }

    #[export]
    pub fn claimable(&self, who: ActorId) -> u128 {
        self.state.borrow().claimable(who)
    }

    #[export]
    pub fn totals(&self) -> (u128, u128) {
        self.state.borrow().totals()
    }
}

pub struct VestingProgram {
    state: RefCell<VestingState>,
}

// `new` reads the deployer, so a `Default` (callable outside a message) would be wrong.
#[allow(clippy::new_without_default)]
#[program]
impl VestingProgram {
    /// The deployer is the admin.
    pub fn new() -> Self {
        VestingProgram {
            state: RefCell::new(VestingState::new(Syscall::message_source())),
        }
    }

    pub fn vesting(&self) -> VestingService<'_> {
        VestingService { state: &self.state }
    }
}
