//! A non-fungible-token program, written as Gear dapps are: the message types here (usable
//! from host code), the program in `wasm.rs`.
#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use alloc::{format, string::String, vec::Vec};
use gstd::collections::HashMap;
use gstd::ActorId;
use parity_scale_codec::{Decode, Encode};
use scale_info::TypeInfo;

#[cfg(target_arch = "wasm32")]
mod wasm;

/// Token ids are handed out from a counter starting at 0.
pub type TokenId = u128;

/// The `init` payload.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub struct InitNft {
    pub name: String,
    pub symbol: String,
    /// Prefix of every token's media address.
    pub base_uri: String,
}

/// What a token describes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub struct TokenMetadata {
    pub name: String,
    pub description: String,
    pub media: String,
    pub reference: String,
}

/// A `handle` payload. State-changing actions carry a transaction id: repeating one (from
/// the same sender) returns the first result without acting again.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum NftAction {
    /// Mints the next token to the sender.
    Mint {
        transaction_id: u64,
        metadata: TokenMetadata,
    },
    /// Destroys a token; only its owner may.
    Burn {
        transaction_id: u64,
        token_id: TokenId,
    },
    /// Moves a token; its owner or the account approved for it may.
    Transfer {
        transaction_id: u64,
        to: ActorId,
        token_id: TokenId,
    },
    /// Lets `to` transfer the token; only its owner may.
    Approve {
        transaction_id: u64,
        to: ActorId,
        token_id: TokenId,
    },
    /// Asks who owns a token.
    Owner { token_id: TokenId },
}

/// What a successful action did.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum NftEvent {
    Minted {
        to: ActorId,
        token_id: TokenId,
    },
    Burned {
        token_id: TokenId,
    },
    Transferred {
        from: ActorId,
        to: ActorId,
        token_id: TokenId,
    },
    Approved {
        owner: ActorId,
        approved: ActorId,
        token_id: TokenId,
    },
    Owner {
        token_id: TokenId,
        owner: ActorId,
    },
}

/// Why an action was refused; the state is then unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum NftError {
    /// The payload did not decode as an [`NftAction`].
    InvalidPayload,
    /// No such token.
    TokenNotFound,
    /// Only the owner may do this.
    NotOwner,
    /// Neither the owner nor approved for this token.
    NotApproved,
    /// The zero address cannot own or be approved for tokens.
    ZeroAddress,
}

/// Every `handle` reply.
pub type NftReply = Result<NftEvent, NftError>;

#[allow(dead_code)] // name and symbol are state a real collection keeps
/// The collection's state and rules: the program keeps one in a `static`; host code (the
/// lab's scenarios) runs the same rules to know every reply to expect.
pub struct NftState {
    name: String,
    symbol: String,
    base_uri: String,
    owner_by_id: HashMap<TokenId, ActorId>,
    token_approvals: HashMap<TokenId, ActorId>,
    token_metadata: HashMap<TokenId, TokenMetadata>,
    tokens_for_owner: HashMap<ActorId, Vec<TokenId>>,
    token_id: TokenId,
    /// Results of processed transactions, by sender and transaction id.
    transactions: HashMap<(ActorId, u64), NftEvent>,
}

impl NftState {
    /// A collection with nothing minted.
    pub fn new(init: InitNft) -> Self {
        NftState {
            name: init.name,
            symbol: init.symbol,
            base_uri: init.base_uri,
            owner_by_id: HashMap::new(),
            token_approvals: HashMap::new(),
            token_metadata: HashMap::new(),
            tokens_for_owner: HashMap::new(),
            token_id: 0,
            transactions: HashMap::new(),
        }
    }

    /// Tokens minted so far (the next token's id).
    pub fn minted(&self) -> TokenId {
        self.token_id
    }

    /// The owner of `token_id`, if it exists.
    pub fn owner_of(&self, token_id: TokenId) -> Option<ActorId> {
        self.owner_by_id.get(&token_id).copied()
    }

    fn owner(&self, token_id: TokenId) -> Result<ActorId, NftError> {
        self.owner_by_id
            .get(&token_id)
            .copied()
            .ok_or(NftError::TokenNotFound)
    }

    fn drop_from_owner(&mut self, owner: ActorId, token_id: TokenId) {
        if let Some(tokens) = self.tokens_for_owner.get_mut(&owner) {
            tokens.retain(|t| *t != token_id);
            if tokens.is_empty() {
                self.tokens_for_owner.remove(&owner);
            }
        }
    }

    /// Handles `action` sent by `sender`; on `Err` nothing has changed.
    pub fn handle(&mut self, sender: ActorId, action: NftAction) -> NftReply {
        let transaction_id = match &action {
            NftAction::Mint { transaction_id, .. }
            | NftAction::Burn { transaction_id, .. }
            | NftAction::Transfer { transaction_id, .. }
            | NftAction::Approve { transaction_id, .. } => *transaction_id,
            NftAction::Owner { token_id } => {
                let owner = self.owner(*token_id)?;
                return Ok(NftEvent::Owner {
                    token_id: *token_id,
                    owner,
                });
            }
        };
        if let Some(done) = self.transactions.get(&(sender, transaction_id)) {
            return Ok(done.clone());
        }
        let event = self.apply(sender, action)?;
        self.transactions
            .insert((sender, transaction_id), event.clone());
        Ok(event)
    }

    fn apply(&mut self, sender: ActorId, action: NftAction) -> NftReply {
        match action {
            NftAction::Mint { mut metadata, .. } => {
                if sender.is_zero() {
                    return Err(NftError::ZeroAddress);
                }
                let token_id = self.token_id;
                self.token_id += 1;
                metadata.media = format!("{}/{}", self.base_uri, metadata.media);
                self.owner_by_id.insert(token_id, sender);
                self.token_metadata.insert(token_id, metadata);
                self.tokens_for_owner
                    .entry(sender)
                    .or_default()
                    .push(token_id);
                Ok(NftEvent::Minted {
                    to: sender,
                    token_id,
                })
            }
            NftAction::Burn { token_id, .. } => {
                if self.owner(token_id)? != sender {
                    return Err(NftError::NotOwner);
                }
                self.owner_by_id.remove(&token_id);
                self.token_approvals.remove(&token_id);
                self.token_metadata.remove(&token_id);
                self.drop_from_owner(sender, token_id);
                Ok(NftEvent::Burned { token_id })
            }
            NftAction::Transfer { to, token_id, .. } => {
                let owner = self.owner(token_id)?;
                if to.is_zero() {
                    return Err(NftError::ZeroAddress);
                }
                if owner != sender && self.token_approvals.get(&token_id) != Some(&sender) {
                    return Err(NftError::NotApproved);
                }
                self.token_approvals.remove(&token_id);
                self.drop_from_owner(owner, token_id);
                self.owner_by_id.insert(token_id, to);
                self.tokens_for_owner.entry(to).or_default().push(token_id);
                Ok(NftEvent::Transferred {
                    from: owner,
                    to,
                    token_id,
                })
            }
            NftAction::Approve { to, token_id, .. } => {
                if self.owner(token_id)? != sender {
                    return Err(NftError::NotOwner);
                }
                if to.is_zero() {
                    return Err(NftError::ZeroAddress);
                }
                self.token_approvals.insert(token_id, to);
                Ok(NftEvent::Approved {
                    owner: sender,
                    approved: to,
                    token_id,
                })
            }
            NftAction::Owner { .. } => unreachable!("answered in `handle`"),
        }
    }
}
