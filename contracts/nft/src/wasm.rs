//! The non-fungible-token program.

use crate::{InitNft, NftAction, NftError, NftEvent, NftReply, TokenId, TokenMetadata};
use gstd::collections::HashMap;
use gstd::{msg, prelude::*, ActorId};

#[allow(dead_code)] // name and symbol are state a real collection keeps
struct Nft {
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

static mut NFT: Option<Nft> = None;

impl Nft {
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

    fn handle(&mut self, sender: ActorId, action: NftAction) -> NftReply {
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

#[unsafe(no_mangle)]
extern "C" fn init() {
    let init: InitNft = msg::load().expect("init payload must be an InitNft");
    // SAFETY: Gear runs one message at a time; `init` runs first and once.
    unsafe {
        NFT = Some(Nft {
            name: init.name,
            symbol: init.symbol,
            base_uri: init.base_uri,
            owner_by_id: HashMap::new(),
            token_approvals: HashMap::new(),
            token_metadata: HashMap::new(),
            tokens_for_owner: HashMap::new(),
            token_id: 0,
            transactions: HashMap::new(),
        })
    };
}

#[unsafe(no_mangle)]
extern "C" fn handle() {
    // SAFETY: Gear runs one message at a time and `init` has run.
    let nft = unsafe { static_mut!(NFT) }.as_mut().expect("initialised");
    let reply = match msg::load::<NftAction>() {
        Ok(action) => nft.handle(msg::source(), action),
        Err(_) => Err(NftError::InvalidPayload),
    };
    msg::reply(reply, 0).expect("reply");
}
