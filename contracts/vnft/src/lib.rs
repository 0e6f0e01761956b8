//! A non-fungible token on Sails, written for the lab: the services and methods of the public
//! VNFT standard (`Vnft`, with the `Approval` and `Transfer` events), minting and burning for
//! the admin (`VnftAdmin`), and `VnftMetadata`, over the rules in [`VnftState`], which host
//! code (the lab's scenarios) runs too, to know every reply and event to expect.
//!
//! Refused operations fail the message with the thrown [`VnftError`], as the standard's
//! programs do: Gear then discards every change and the sender gets an error reply.
#![cfg_attr(target_arch = "wasm32", no_std)]

use sails_rs::cell::RefCell;
use sails_rs::collections::{BTreeSet, HashMap};
use sails_rs::prelude::*;

/// What a token carries.
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenMetadata {
    pub name: String,
    pub description: String,
    pub media: String,
    pub reference: String,
}

/// Why an operation was refused.
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VnftError {
    /// No token has that id (never minted, or burned).
    TokenDoesNotExist,
    /// The sender does not own the token (or `from` is not its owner).
    NotOwner,
    /// The sender neither owns the token nor is approved for it.
    NotApproved,
    /// The zero address cannot own or be approved.
    ZeroAddress,
    /// Only the admin (the deployer) may mint and burn.
    NotAdmin,
}

/// What `Vnft` announces.
#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VnftEvents {
    /// `owner` lets `approved` transfer `token_id`.
    Approval {
        owner: ActorId,
        approved: ActorId,
        token_id: U256,
    },
    /// `token_id` moved from `from` to `to`.
    Transfer {
        from: ActorId,
        to: ActorId,
        token_id: U256,
    },
}

/// What `VnftAdmin` announces.
#[event]
#[sails_type]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VnftAdminEvents {
    Minted {
        to: ActorId,
        token_id: U256,
        metadata: TokenMetadata,
    },
    Burned {
        from: ActorId,
        token_id: U256,
    },
}

/// The collection: owners, approvals, metadata, each owner's tokens, and its rules. Every
/// method either changes the state and says what happened, or returns an error and changes
/// nothing.
#[derive(Clone, Debug)]
pub struct VnftState {
    pub name: String,
    pub symbol: String,
    admin: ActorId,
    next_id: U256,
    owners: HashMap<U256, ActorId>,
    approvals: HashMap<U256, ActorId>,
    metadata: HashMap<U256, TokenMetadata>,
    tokens: HashMap<ActorId, BTreeSet<U256>>,
}

impl VnftState {
    /// An empty collection administered by `admin`.
    pub fn new(name: String, symbol: String, admin: ActorId) -> Self {
        VnftState {
            name,
            symbol,
            admin,
            next_id: U256::zero(),
            owners: HashMap::new(),
            approvals: HashMap::new(),
            metadata: HashMap::new(),
            tokens: HashMap::new(),
        }
    }

    /// Tokens minted so far (the next id).
    pub fn minted(&self) -> U256 {
        self.next_id
    }

    pub fn balance_of(&self, owner: ActorId) -> U256 {
        self.tokens.get(&owner).map_or(0, BTreeSet::len).into()
    }

    /// The owner, or zero for no such token (as the standard answers).
    pub fn owner_of(&self, token_id: U256) -> ActorId {
        self.owners.get(&token_id).copied().unwrap_or_default()
    }

    /// The approved account, or zero.
    pub fn get_approved(&self, token_id: U256) -> ActorId {
        self.approvals.get(&token_id).copied().unwrap_or_default()
    }

    pub fn token_metadata_by_id(&self, token_id: U256) -> Option<TokenMetadata> {
        self.metadata.get(&token_id).cloned()
    }

    fn owner(&self, token_id: U256) -> Result<ActorId, VnftError> {
        self.owners
            .get(&token_id)
            .copied()
            .ok_or(VnftError::TokenDoesNotExist)
    }

    /// The owner lets `approved` transfer `token_id` (one approval per token).
    pub fn approve(
        &mut self,
        sender: ActorId,
        approved: ActorId,
        token_id: U256,
    ) -> Result<VnftEvents, VnftError> {
        let owner = self.owner(token_id)?;
        if owner != sender {
            return Err(VnftError::NotOwner);
        }
        if approved.is_zero() {
            return Err(VnftError::ZeroAddress);
        }
        self.approvals.insert(token_id, approved);
        Ok(VnftEvents::Approval {
            owner,
            approved,
            token_id,
        })
    }

    /// Moves `token_id` from its owner `from` to `to`; the sender is the owner or approved.
    /// The approval ends with the move.
    pub fn transfer_from(
        &mut self,
        sender: ActorId,
        from: ActorId,
        to: ActorId,
        token_id: U256,
    ) -> Result<VnftEvents, VnftError> {
        let owner = self.owner(token_id)?;
        if owner != from {
            return Err(VnftError::NotOwner);
        }
        if sender != owner && self.approvals.get(&token_id) != Some(&sender) {
            return Err(VnftError::NotApproved);
        }
        if to.is_zero() {
            return Err(VnftError::ZeroAddress);
        }
        self.approvals.remove(&token_id);
        self.take(from, token_id);
        self.give(to, token_id);
        Ok(VnftEvents::Transfer { from, to, token_id })
    }

    /// Mints the next token to `to`; only the admin may.
    pub fn mint(
        &mut self,
        sender: ActorId,
        to: ActorId,
        metadata: TokenMetadata,
    ) -> Result<VnftAdminEvents, VnftError> {
        if sender != self.admin {
            return Err(VnftError::NotAdmin);
        }
        if to.is_zero() {
            return Err(VnftError::ZeroAddress);
        }
        let token_id = self.next_id;
        self.next_id += U256::one();
        self.give(to, token_id);
        self.metadata.insert(token_id, metadata.clone());
        Ok(VnftAdminEvents::Minted {
            to,
            token_id,
            metadata,
        })
    }

    /// Burns `token_id` of `from`; only the admin may.
    pub fn burn(
        &mut self,
        sender: ActorId,
        from: ActorId,
        token_id: U256,
    ) -> Result<VnftAdminEvents, VnftError> {
        if sender != self.admin {
            return Err(VnftError::NotAdmin);
        }
        if self.owner(token_id)? != from {
            return Err(VnftError::NotOwner);
        }
        self.take(from, token_id);
        self.approvals.remove(&token_id);
        self.metadata.remove(&token_id);
        Ok(VnftAdminEvents::Burned { from, token_id })
    }

    fn give(&mut self, to: ActorId, token_id: U256) {
        self.owners.insert(token_id, to);
        self.tokens.entry(to).or_default().insert(token_id);
    }

    fn take(&mut self, from: ActorId, token_id: U256) {
        self.owners.remove(&token_id);
        if let Some(held) = self.tokens.get_mut(&from) {
            held.remove(&token_id);
            if held.is_empty() {
                self.tokens.remove(&from);
            }
        }
    }
}

/// The standard's token service.
pub struct VnftService<'a> {
    state: &'a RefCell<VnftState>,
}

#[service(events = VnftEvents)]
impl VnftService<'_> {
    #[export(unwrap_result)]
    pub fn approve(&mut self, approved: ActorId, token_id: U256) -> Result<(), VnftError> {
        let sender = Syscall::message_source();
        let event = self
            .state
            .borrow_mut()
            .approve(sender, approved, token_id)?;
        self.emit_event(event).expect("emitting an event");
        Ok(())
    }

    #[export(unwrap_result)]
    pub fn transfer(&mut self, to: ActorId, token_id: U256) -> Result<(), VnftError> {
        let sender = Syscall::message_source();
        let event = self
            .state
            .borrow_mut()
            .transfer_from(sender, sender, to, token_id)?;
        self.emit_event(event).expect("emitting an event");
        Ok(())
    }

    #[export(unwrap_result)]
    pub fn transfer_from(
        &mut self,
        from: ActorId,
        to: ActorId,
        token_id: U256,
    ) -> Result<(), VnftError> {
        let sender = Syscall::message_source();
        let event = self
            .state
            .borrow_mut()
            .transfer_from(sender, from, to, token_id)?;
        self.emit_event(event).expect("emitting an event");
        Ok(())
    }

    #[export]
    pub fn balance_of(&self, owner: ActorId) -> U256 {
        self.state.borrow().balance_of(owner)
    }

    #[export]
    pub fn owner_of(&self, token_id: U256) -> ActorId {
        self.state.borrow().owner_of(token_id)
    }

    #[export]
    pub fn get_approved(&self, token_id: U256) -> ActorId {
        self.state.borrow().get_approved(token_id)
    }
}

/// Minting and burning, for the admin; metadata by token.
pub struct VnftAdminService<'a> {
    state: &'a RefCell<VnftState>,
}

#[service(events = VnftAdminEvents)]
impl VnftAdminService<'_> {
    #[export(unwrap_result)]
    pub fn mint(&mut self, to: ActorId, metadata: TokenMetadata) -> Result<U256, VnftError> {
        let event = self
            .state
            .borrow_mut()
            .mint(Syscall::message_source(), to, metadata)?;
        let VnftAdminEvents::Minted { token_id, .. } = event else {
            unreachable!("a mint mints")
        };
        self.emit_event(event).expect("emitting an event");
        Ok(token_id)
    }

    #[export(unwrap_result)]
    pub fn burn(&mut self, from: ActorId, token_id: U256) -> Result<(), VnftError> {
        let event = self
            .state
            .borrow_mut()
            .burn(Syscall::message_source(), from, token_id)?;
        self.emit_event(event).expect("emitting an event");
        Ok(())
    }

    #[export]
    pub fn token_metadata_by_id(&self, token_id: U256) -> Option<TokenMetadata> {
        self.state.borrow().token_metadata_by_id(token_id)
    }
}

/// The collection's name and symbol.
pub struct VnftMetadataService<'a> {
    state: &'a RefCell<VnftState>,
}

#[service]
impl VnftMetadataService<'_> {
    #[export]
    pub fn name(&self) -> String {
        self.state.borrow().name.clone()
    }

    #[export]
    pub fn symbol(&self) -> String {
        self.state.borrow().symbol.clone()
    }
}

/// The program: one collection, its state kept for the program's life.
pub struct VnftProgram {
    state: RefCell<VnftState>,
}

#[program]
impl VnftProgram {
    /// Deploys an empty collection; the deployer is its admin.
    pub fn new(name: String, symbol: String) -> Self {
        let admin = Syscall::message_source();
        VnftProgram {
            state: RefCell::new(VnftState::new(name, symbol, admin)),
        }
    }

    pub fn vnft(&self) -> VnftService<'_> {
        VnftService { state: &self.state }
    }

    pub fn vnft_admin(&self) -> VnftAdminService<'_> {
        VnftAdminService { state: &self.state }
    }

    pub fn vnft_metadata(&self) -> VnftMetadataService<'_> {
        VnftMetadataService { state: &self.state }
    }
}
