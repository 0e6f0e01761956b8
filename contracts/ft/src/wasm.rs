//! The fungible-token program.

use crate::{FtAction, FtError, FtEvent, FtReply, InitFt};
use gstd::collections::HashMap;
use gstd::{msg, prelude::*, ActorId};

#[allow(dead_code)] // name, symbol and decimals are state a real token keeps
struct Ft {
    name: String,
    symbol: String,
    decimals: u8,
    total_supply: u128,
    balances: HashMap<ActorId, u128>,
    allowances: HashMap<ActorId, HashMap<ActorId, u128>>,
}

static mut FT: Option<Ft> = None;

impl Ft {
    fn balance(&self, who: &ActorId) -> u128 {
        self.balances.get(who).copied().unwrap_or(0)
    }

    fn apply(&mut self, sender: ActorId, action: FtAction) -> FtReply {
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

#[unsafe(no_mangle)]
extern "C" fn init() {
    let init: InitFt = msg::load().expect("init payload must be an InitFt");
    // SAFETY: Gear runs one message at a time; `init` runs first and once.
    unsafe {
        FT = Some(Ft {
            name: init.name,
            symbol: init.symbol,
            decimals: init.decimals,
            total_supply: 0,
            balances: HashMap::new(),
            allowances: HashMap::new(),
        })
    };
}

#[unsafe(no_mangle)]
extern "C" fn handle() {
    // SAFETY: Gear runs one message at a time and `init` has run.
    let ft = unsafe { static_mut!(FT) }.as_mut().expect("initialised");
    let reply = match msg::load::<FtAction>() {
        Ok(action) => ft.apply(msg::source(), action),
        Err(_) => Err(FtError::InvalidPayload),
    };
    msg::reply(reply, 0).expect("reply");
}
