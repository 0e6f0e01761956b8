//! The non-fungible-token program.

use crate::{InitNft, NftAction, NftError, NftState};
use gstd::{msg, prelude::*};

static mut NFT: Option<NftState> = None;

#[unsafe(no_mangle)]
extern "C" fn init() {
    let init: InitNft = msg::load().expect("init payload must be an InitNft");
    // SAFETY: Gear runs one message at a time; `init` runs first and once.
    unsafe { NFT = Some(NftState::new(init)) };
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
