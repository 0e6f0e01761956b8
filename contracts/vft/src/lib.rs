//! A fungible token on Sails, written for the lab: the services and methods of the public VFT
//! standard (`Vft`, `VftAdmin`, `VftMetadata`, with the `Approval` and `Transfer` events) over
//! the rules in [`VftState`], which host code (the lab's scenarios) runs too, to know every
//! reply and event to expect.
//!
//! Refused operations (a transfer over the balance, over the allowance, by a non-admin mint)
//! fail the message, as the standard's programs do: Gear then discards every change, so state
//! is untouched and the sender gets an error reply.
#![cfg_attr(target_arch = "wasm32", no_std)]

use sails_rs::cell::RefCell;
use sails_rs::collections::HashMap;
use sails_rs::prelude::*;

/// Why an operation was refused.
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VftError {
    /// The account holds less than the value.
    InsufficientBalance,
    /// The sender may not spend that much of the owner's tokens.
    InsufficientAllowance,
    /// The zero address cannot hold or spend tokens.
    ZeroAddress,
    /// The total supply would overflow.
    Overflow,
    /// Only the admin (the deployer) may mint and burn.
    NotAdmin,
}

/// What `Vft` announces to every subscriber.
#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VftEvents {
    /// `owner` allows `spender` to spend `value` of its tokens.
    Approval {
        owner: ActorId,
        spender: ActorId,
        value: U256,
    },
    /// `value` moved from `from` to `to` (a mint comes from zero, a burn goes to zero).
    Transfer {
        from: ActorId,
        to: ActorId,
        value: U256,
    },
}

/// What `VftAdmin` announces.
#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VftAdminEvents {
    Minted { to: ActorId, value: U256 },
    Burned { from: ActorId, value: U256 },
}

/// The token: metadata, supply, balances and allowances, and its rules. Every method either
/// changes the state and says what happened, or returns an error and changes nothing.
#[derive(Clone, Debug)]
pub struct VftState {
    pub name: String,
    pub symbol: String,
    pub decimals: u8,
    admin: ActorId,
    total_supply: U256,
    balances: HashMap<ActorId, U256>,
    allowances: HashMap<(ActorId, ActorId), U256>,
}

impl VftState {
    /// A token with nothing minted, administered by `admin`.
    pub fn new(name: String, symbol: String, decimals: u8, admin: ActorId) -> Self {
        VftState {
            name,
            symbol,
            decimals,
            admin,
            total_supply: U256::zero(),
            balances: HashMap::new(),
            allowances: HashMap::new(),
        }
    }

    pub fn total_supply(&self) -> U256 {
        self.total_supply
    }

    pub fn balance_of(&self, account: ActorId) -> U256 {
        self.balances.get(&account).copied().unwrap_or_default()
    }

    pub fn allowance(&self, owner: ActorId, spender: ActorId) -> U256 {
        self.allowances
            .get(&(owner, spender))
            .copied()
            .unwrap_or_default()
    }

    /// Sets `spender`'s allowance over `owner`'s tokens; `Ok(None)` when it already was
    /// `value` (nothing changes, no event), as the standard answers `false`.
    pub fn approve(
        &mut self,
        owner: ActorId,
        spender: ActorId,
        value: U256,
    ) -> Result<Option<VftEvents>, VftError> {
        if spender.is_zero() {
            return Err(VftError::ZeroAddress);
        }
        if self.allowance(owner, spender) == value {
            return Ok(None);
        }
        if value.is_zero() {
            self.allowances.remove(&(owner, spender));
        } else {
            self.allowances.insert((owner, spender), value);
        }
        Ok(Some(VftEvents::Approval {
            owner,
            spender,
            value,
        }))
    }

    /// Moves `value` from `from` to `to`, spending `sender`'s allowance when it is not `from`.
    /// `Ok(None)` for a move that changes nothing (zero value, or to oneself).
    pub fn transfer_from(
        &mut self,
        sender: ActorId,
        from: ActorId,
        to: ActorId,
        value: U256,
    ) -> Result<Option<VftEvents>, VftError> {
        if from.is_zero() || to.is_zero() {
            return Err(VftError::ZeroAddress);
        }
        let balance = self.balance_of(from);
        if balance < value {
            return Err(VftError::InsufficientBalance);
        }
        if sender != from {
            let allowed = self.allowance(from, sender);
            if allowed < value {
                return Err(VftError::InsufficientAllowance);
            }
            if !value.is_zero() {
                let left = allowed - value;
                if left.is_zero() {
                    self.allowances.remove(&(from, sender));
                } else {
                    self.allowances.insert((from, sender), left);
                }
            }
        }
        if value.is_zero() || from == to {
            return Ok(None);
        }
        self.set_balance(from, balance - value);
        let to_balance = self.balance_of(to);
        self.set_balance(to, to_balance + value);
        Ok(Some(VftEvents::Transfer { from, to, value }))
    }

    /// Creates `value` tokens for `to`; only the admin may.
    pub fn mint(
        &mut self,
        sender: ActorId,
        to: ActorId,
        value: U256,
    ) -> Result<VftAdminEvents, VftError> {
        if sender != self.admin {
            return Err(VftError::NotAdmin);
        }
        if to.is_zero() {
            return Err(VftError::ZeroAddress);
        }
        let supply = self
            .total_supply
            .checked_add(value)
            .ok_or(VftError::Overflow)?;
        let balance = self.balance_of(to);
        self.total_supply = supply;
        self.set_balance(to, balance + value);
        Ok(VftAdminEvents::Minted { to, value })
    }

    /// Destroys `value` of `from`'s tokens; only the admin may.
    pub fn burn(
        &mut self,
        sender: ActorId,
        from: ActorId,
        value: U256,
    ) -> Result<VftAdminEvents, VftError> {
        if sender != self.admin {
            return Err(VftError::NotAdmin);
        }
        let balance = self.balance_of(from);
        if balance < value {
            return Err(VftError::InsufficientBalance);
        }
        self.total_supply -= value;
        self.set_balance(from, balance - value);
        Ok(VftAdminEvents::Burned { from, value })
    }

    /// A zero balance is not kept: the map holds only accounts with tokens.
    fn set_balance(&mut self, account: ActorId, value: U256) {
        if value.is_zero() {
            self.balances.remove(&account);
        } else {
            self.balances.insert(account, value);
        }
    }
}

/// The standard's token service: transfers, approvals, queries.
pub struct VftService<'a> {
    state: &'a RefCell<VftState>,
}

#[service(events = VftEvents)]
impl VftService<'_> {
    /// Lets `spender` spend `value` of the sender's tokens; `false` if that was already so.
    #[export(unwrap_result)]
    pub fn approve(&mut self, spender: ActorId, value: U256) -> Result<bool, VftError> {
        let owner = Syscall::message_source();
        let event = self.state.borrow_mut().approve(owner, spender, value)?;
        self.announce(event)
    }

    /// Sends `value` of the sender's tokens to `to`; `false` if nothing moved.
    #[export(unwrap_result)]
    pub fn transfer(&mut self, to: ActorId, value: U256) -> Result<bool, VftError> {
        let sender = Syscall::message_source();
        let event = self
            .state
            .borrow_mut()
            .transfer_from(sender, sender, to, value)?;
        self.announce(event)
    }

    /// Sends `value` of `from`'s tokens to `to`, spending the sender's allowance.
    #[export(unwrap_result)]
    pub fn transfer_from(
        &mut self,
        from: ActorId,
        to: ActorId,
        value: U256,
    ) -> Result<bool, VftError> {
        let sender = Syscall::message_source();
        let event = self
            .state
            .borrow_mut()
            .transfer_from(sender, from, to, value)?;
        self.announce(event)
    }

    #[export]
    pub fn allowance(&self, owner: ActorId, spender: ActorId) -> U256 {
        self.state.borrow().allowance(owner, spender)
    }

    #[export]
    pub fn balance_of(&self, account: ActorId) -> U256 {
        self.state.borrow().balance_of(account)
    }

    #[export]
    pub fn total_supply(&self) -> U256 {
        self.state.borrow().total_supply()
    }

    /// Emits what changed, if anything: the standard's `bool` answer.
    fn announce(&mut self, event: Option<VftEvents>) -> Result<bool, VftError> {
        match event {
            Some(event) => {
                self.emit_event(event).expect("emitting an event");
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// Minting and burning, for the admin.
pub struct VftAdminService<'a> {
    state: &'a RefCell<VftState>,
}

#[service(events = VftAdminEvents)]
impl VftAdminService<'_> {
    #[export(unwrap_result)]
    pub fn mint(&mut self, to: ActorId, value: U256) -> Result<bool, VftError> {
        let event = self
            .state
            .borrow_mut()
            .mint(Syscall::message_source(), to, value)?;
        self.emit_event(event).expect("emitting an event");
        Ok(true)
    }

    #[export(unwrap_result)]
    pub fn burn(&mut self, from: ActorId, value: U256) -> Result<bool, VftError> {
        let event = self
            .state
            .borrow_mut()
            .burn(Syscall::message_source(), from, value)?;
        self.emit_event(event).expect("emitting an event");
        Ok(true)
    }
}

/// The token's name, symbol and decimals.
pub struct VftMetadataService<'a> {
    state: &'a RefCell<VftState>,
}

#[service]
impl VftMetadataService<'_> {
    #[export]
    pub fn name(&self) -> String {
        self.state.borrow().name.clone()
    }

    #[export]
    pub fn symbol(&self) -> String {
        self.state.borrow().symbol.clone()
    }

    #[export]
    pub fn decimals(&self) -> u8 {
        self.state.borrow().decimals
    }
}

/// The program: one token, its state kept for the program's life.
pub struct VftProgram {
    state: RefCell<VftState>,
}

#[program]
impl VftProgram {
    /// Deploys a token with nothing minted; the deployer is its admin.
    pub fn new(name: String, symbol: String, decimals: u8) -> Self {
        let admin = Syscall::message_source();
        VftProgram {
            state: RefCell::new(VftState::new(name, symbol, decimals, admin)),
        }
    }

    pub fn vft(&self) -> VftService<'_> {
        VftService { state: &self.state }
    }

    pub fn vft_admin(&self) -> VftAdminService<'_> {
        VftAdminService { state: &self.state }
    }

    pub fn vft_metadata(&self) -> VftMetadataService<'_> {
        VftMetadataService { state: &self.state }
    }
}
