//! A fungible-token program, written as Gear dapps are: the message types here (usable from
//! host code), the program in `wasm.rs`.
#![no_std]

extern crate alloc;

use alloc::string::String;
use gstd::ActorId;
use parity_scale_codec::{Decode, Encode};
use scale_info::TypeInfo;

#[cfg(target_arch = "wasm32")]
mod wasm;

/// The `init` payload.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub struct InitFt {
    /// Token name.
    pub name: String,
    /// Token symbol.
    pub symbol: String,
    /// Decimal places.
    pub decimals: u8,
}

/// A `handle` payload. Amounts are in the token's smallest unit.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum FtAction {
    /// Creates `amount` tokens for the sender.
    Mint(u128),
    /// Destroys `amount` of the sender's tokens.
    Burn(u128),
    /// Moves `amount` from `from` to `to`; the sender is `from` or spends its allowance.
    Transfer {
        from: ActorId,
        to: ActorId,
        amount: u128,
    },
    /// Lets `to` spend `amount` of the sender's tokens.
    Approve { to: ActorId, amount: u128 },
    /// Asks for the total supply.
    TotalSupply,
    /// Asks for an account's balance.
    BalanceOf(ActorId),
}

/// What a successful action did.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum FtEvent {
    Minted {
        to: ActorId,
        amount: u128,
    },
    Burned {
        from: ActorId,
        amount: u128,
    },
    Transferred {
        from: ActorId,
        to: ActorId,
        amount: u128,
    },
    Approved {
        from: ActorId,
        to: ActorId,
        amount: u128,
    },
    TotalSupply(u128),
    Balance(u128),
}

/// Why an action was refused; the state is then unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum FtError {
    /// The payload did not decode as an [`FtAction`].
    InvalidPayload,
    /// The account holds less than the amount.
    InsufficientBalance,
    /// The sender may not spend that much of `from`'s tokens.
    InsufficientAllowance,
    /// The zero address cannot receive tokens.
    ZeroAddress,
    /// The total supply would overflow.
    Overflow,
}

/// Every `handle` reply.
pub type FtReply = Result<FtEvent, FtError>;
