//! A non-fungible-token program, written as Gear dapps are: the message types here (usable
//! from host code), the program in `wasm.rs`.
#![no_std]

extern crate alloc;

use alloc::string::String;
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
