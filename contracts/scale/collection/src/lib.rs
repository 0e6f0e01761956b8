//! A collection that grows for years (a scale case): tokens minted in drops of many
//! at once, traded and burned, its state kept as an author keeps it, in ordered maps and a
//! list of tokens per owner. The message types and rules here (usable from host code), the
//! program in `wasm.rs`.
#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use alloc::collections::BTreeMap;
use alloc::{format, string::String, vec::Vec};
use gstd::ActorId;
use parity_scale_codec::{Decode, Encode};
use scale_info::TypeInfo;

#[cfg(target_arch = "wasm32")]
mod wasm;

/// Token ids are handed out from a counter starting at 0.
pub type TokenId = u64;

/// A drop mints at most this many tokens in one message.
pub const MAX_DROP: u32 = 2_000;

/// The `init` payload.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub struct InitCollection {
    pub name: String,
    /// Prefix of every token's media address.
    pub base_uri: String,
}

/// A `handle` payload.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum CollectionAction {
    /// Mints `count` tokens to the sender, numbered on from the last minted, each named
    /// `label` and its number.
    Drop { count: u32, label: String },
    /// Gives `token_id` to `to`; only its owner may.
    Transfer { to: ActorId, token_id: TokenId },
    /// Destroys `token_id`; only its owner may.
    Burn { token_id: TokenId },
    /// Who owns `token_id`, and its name.
    Token { token_id: TokenId },
    /// How many tokens `owner` holds.
    Holding { owner: ActorId },
}

/// What a successful action did or found.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum CollectionEvent {
    Dropped {
        first: TokenId,
        count: u32,
    },
    Transferred {
        from: ActorId,
        to: ActorId,
        token_id: TokenId,
    },
    Burned {
        token_id: TokenId,
    },
    Token {
        owner: ActorId,
        name: String,
        media: String,
    },
    Holding {
        owner: ActorId,
        count: u32,
    },
}

/// Why an action was refused (nothing changed).
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum CollectionError {
    /// The payload is not a `CollectionAction`.
    InvalidPayload,
    TokenNotFound,
    NotOwner,
    /// A drop of none, or of more than [`MAX_DROP`].
    BadDrop,
    ZeroAddress,
}

/// Every `handle` reply.
pub type CollectionReply = Result<CollectionEvent, CollectionError>;

/// One token.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Token {
    owner: ActorId,
    name: String,
    media: String,
}

/// The collection's state and rules: the program keeps one in a `static`; host code (the
/// lab's scenarios) runs the same rules to know every reply to expect.
pub struct CollectionState {
    #[allow(dead_code, reason = "state a real collection keeps")]
    name: String,
    base_uri: String,
    tokens: BTreeMap<TokenId, Token>,
    tokens_of: BTreeMap<ActorId, Vec<TokenId>>,
    next: TokenId,
}

impl CollectionState {
    /// A collection with nothing minted.
    pub fn new(init: InitCollection) -> Self {
        CollectionState {
            name: init.name,
            base_uri: init.base_uri,
            tokens: BTreeMap::new(),
            tokens_of: BTreeMap::new(),
            next: 0,
        }
    }

    /// Tokens minted so far (the next token's id).
    pub fn minted(&self) -> TokenId {
        self.next
    }

    /// The owner of `token_id`, if it exists.
    pub fn owner_of(&self, token_id: TokenId) -> Option<ActorId> {
        self.tokens.get(&token_id).map(|t| t.owner)
    }

    /// The tokens `owner` holds, oldest first.
    pub fn tokens_of(&self, owner: ActorId) -> &[TokenId] {
        self.tokens_of.get(&owner).map_or(&[], Vec::as_slice)
    }

    fn owned(&self, sender: ActorId, token_id: TokenId) -> Result<(), CollectionError> {
        match self.tokens.get(&token_id) {
            None => Err(CollectionError::TokenNotFound),
            Some(t) if t.owner != sender => Err(CollectionError::NotOwner),
            Some(_) => Ok(()),
        }
    }

    fn take_from(&mut self, owner: ActorId, token_id: TokenId) {
        if let Some(list) = self.tokens_of.get_mut(&owner) {
            list.retain(|t| *t != token_id);
            if list.is_empty() {
                self.tokens_of.remove(&owner);
            }
        }
    }

    /// Handles `action` sent by `sender`; on `Err` nothing has changed.
    pub fn handle(&mut self, sender: ActorId, action: CollectionAction) -> CollectionReply {
        use CollectionAction as A;
        use CollectionEvent as E;
        match action {
            A::Drop { count, label } => {
                if count == 0 || count > MAX_DROP {
                    return Err(CollectionError::BadDrop);
                }
                let first = self.next;
                let held = self.tokens_of.entry(sender).or_default();
                for id in first..first + TokenId::from(count) {
                    let token = Token {
                        owner: sender,
                        name: format!("{label} #{id}"),
                        media: format!("{}/{id}.png", self.base_uri),
                    };
                    self.tokens.insert(id, token);
                    held.push(id);
                }
                self.next = first + TokenId::from(count);
                Ok(E::Dropped { first, count })
            }
            A::Transfer { to, token_id } => {
                if to == ActorId::zero() {
                    return Err(CollectionError::ZeroAddress);
                }
                self.owned(sender, token_id)?;
                self.take_from(sender, token_id);
                self.tokens_of.entry(to).or_default().push(token_id);
                if let Some(t) = self.tokens.get_mut(&token_id) {
                    t.owner = to;
                }
                Ok(E::Transferred {
                    from: sender,
                    to,
                    token_id,
                })
            }
            A::Burn { token_id } => {
                self.owned(sender, token_id)?;
                self.take_from(sender, token_id);
                self.tokens.remove(&token_id);
                Ok(E::Burned { token_id })
            }
            A::Token { token_id } => {
                let t = self
                    .tokens
                    .get(&token_id)
                    .ok_or(CollectionError::TokenNotFound)?;
                Ok(E::Token {
                    owner: t.owner,
                    name: t.name.clone(),
                    media: t.media.clone(),
                })
            }
            A::Holding { owner } => Ok(E::Holding {
                owner,
                count: self.tokens_of(owner).len() as u32,
            }),
        }
    }
}
