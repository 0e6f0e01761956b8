//! The fungible-token program.

use crate::{FtAction, FtError, FtState, InitFt};
use gstd::{msg, prelude::*};

static mut FT: Option<FtState> = None;

#[unsafe(no_mangle)]
extern "C" fn init() {
    let init: InitFt = msg::load().expect("init payload must be an InitFt");
    // SAFETY: Gear runs one message at a time; `init` runs first and once.
    unsafe { FT = Some(FtState::new(init)) };
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
