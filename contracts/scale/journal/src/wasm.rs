//! The journal program.

use crate::{InitJournal, JournalAction, JournalError, JournalState};
use gstd::{msg, prelude::*};

static mut JOURNAL: Option<JournalState> = None;

#[unsafe(no_mangle)]
extern "C" fn init() {
    let init: InitJournal = msg::load().expect("init payload must be an InitJournal");
    // SAFETY: Gear runs one message at a time; `init` runs first and once.
    unsafe { JOURNAL = Some(JournalState::new(init)) };
}

#[unsafe(no_mangle)]
extern "C" fn handle() {
    // SAFETY: Gear runs one message at a time and `init` has run.
    let state = unsafe { static_mut!(JOURNAL) }
        .as_mut()
        .expect("initialised");
    let reply = match msg::load::<JournalAction>() {
        Ok(action) => state.handle(msg::source(), action),
        Err(_) => Err(JournalError::InvalidPayload),
    };
    msg::reply(reply, 0).expect("reply");
}
