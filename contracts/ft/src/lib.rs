//! A fungible-token program, written as Gear dapps are: the message types here (usable from
//! host code), the program in `wasm.rs`.
#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use alloc::string::String;
use gstd::collections::HashMap;
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

#[allow(dead_code)] // name, symbol and decimals are state a real token keeps
/// The token's state and rules: the program keeps one in a `static`; host code (the lab's
/// scenarios) runs the same rules to know every reply to expect.
pub struct FtState {
    name: String,
    symbol: String,
    decimals: u8,
    total_supply: u128,
    balances: HashMap<ActorId, u128>,
    allowances: HashMap<ActorId, HashMap<ActorId, u128>>,
}

impl FtState {
    /// A token with nothing minted.
    pub fn new(init: InitFt) -> Self {
        FtState {
            name: init.name,
            symbol: init.symbol,
            decimals: init.decimals,
            total_supply: 0,
            balances: HashMap::new(),
            allowances: HashMap::new(),
        }
    }

    /// `who`'s balance.
    pub fn balance(&self, who: &ActorId) -> u128 {
        self.balances.get(who).copied().unwrap_or(0)
    }

    /// Applies `action` sent by `sender`; on `Err` nothing has changed.
    pub fn apply(&mut self, sender: ActorId, action: FtAction) -> FtReply {
        match action {
            FtAction::Mint(amount) => {
                if sender.is_zero() {
                    return Err(FtError::ZeroAddress);
                }
                let supply = self
                    .total_supply
                    .checked_add(amount)
                    .ok_or(FtError::Overflow)?;
                self.total_supply = supply;
                *self.balances.entry(sender).or_default() += amount;
                Ok(FtEvent::Minted { to: sender, amount })
            }
            FtAction::Burn(amount) => {
                let balance = self.balance(&sender);
                if balance < amount {
                    return Err(FtError::InsufficientBalance);
                }
                self.balances.insert(sender, balance - amount);
                self.total_supply -= amount;
                Ok(FtEvent::Burned {
                    from: sender,
                    amount,
                })
            }
            FtAction::Transfer { from, to, amount } => {
                if to.is_zero() {
                    return Err(FtError::ZeroAddress);
                }
                let balance = self.balance(&from);
                if balance < amount {
                    return Err(FtError::InsufficientBalance);
                }
                if from != sender {
                    let allowed = self
                        .allowances
                        .get(&from)
                        .and_then(|a| a.get(&sender))
                        .copied()
                        .unwrap_or(0);
                    if allowed < amount {
                        return Err(FtError::InsufficientAllowance);
                    }
                    if let Some(a) = self.allowances.get_mut(&from) {
                        a.insert(sender, allowed - amount);
                    }
                }
                self.balances.insert(from, balance - amount);
                *self.balances.entry(to).or_default() += amount;
                Ok(FtEvent::Transferred { from, to, amount })
            }
            FtAction::Approve { to, amount } => {
                if to.is_zero() {
                    return Err(FtError::ZeroAddress);
                }
                self.allowances
                    .entry(sender)
                    .or_default()
                    .insert(to, amount);
                Ok(FtEvent::Approved {
                    from: sender,
                    to,
                    amount,
                })
            }
            FtAction::TotalSupply => Ok(FtEvent::TotalSupply(self.total_supply)),
            FtAction::BalanceOf(who) => Ok(FtEvent::Balance(self.balance(&who))),
        }
    }
}
