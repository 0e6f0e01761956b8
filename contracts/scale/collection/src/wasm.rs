//! The collection program.

use crate::{CollectionAction, CollectionError, CollectionState, InitCollection};
use gstd::{msg, prelude::*};

static mut COLLECTION: Option<CollectionState> = None;

#[unsafe(no_mangle)]
extern "C" fn init() {
    let init: InitCollection = msg::load().expect("init payload must be an InitCollection");
    // SAFETY: Gear runs one message at a time; `init` runs first and once.
    unsafe { COLLECTION = Some(CollectionState::new(init)) };
}

#[unsafe(no_mangle)]
extern "C" fn handle() {
    // SAFETY: Gear runs one message at a time and `init` has run.
    let state = unsafe { static_mut!(COLLECTION) }
        .as_mut()
        .expect("initialised");
    let reply = match msg::load::<CollectionAction>() {
        Ok(action) => state.handle(msg::source(), action),
        Err(_) => Err(CollectionError::InvalidPayload),
    };
    msg::reply(reply, 0).expect("reply");
}
