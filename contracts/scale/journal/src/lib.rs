//! A journal that grows by appends for years (a scale case): entries kept in one
//! `Vec` that doubles as it grows, each with its author and text, and a running digest of the
//! whole text, as a log or guestbook author keeps them. The message types and rules here
//! (usable from host code), the program in `wasm.rs`.
#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use alloc::{format, string::String, vec::Vec};
use gstd::ActorId;
use parity_scale_codec::{Decode, Encode};
use scale_info::TypeInfo;

#[cfg(target_arch = "wasm32")]
mod wasm;

/// A batch appends at most this many entries in one message.
pub const MAX_BATCH: u32 = 2_000;
/// An entry's text is at most this many bytes.
pub const MAX_TEXT: usize = 1_024;

/// The `init` payload.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub struct InitJournal {
    pub title: String,
}

/// A `handle` payload.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum JournalAction {
    /// Appends one entry.
    Append { text: String },
    /// Appends `count` entries, each `text` followed by its entry number (an import of
    /// older records).
    Import { count: u32, text: String },
    /// The entry at `index`.
    Entry { index: u64 },
    /// The last `count` entries' texts, newest first.
    Recent { count: u32 },
}

/// What a successful action did or found.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum JournalEvent {
    /// Entries now in the journal, and the digest of every text so far.
    Appended {
        entries: u64,
        digest: u64,
    },
    Entry {
        author: ActorId,
        text: String,
    },
    Recent {
        texts: Vec<String>,
    },
}

/// Why an action was refused (nothing changed).
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum JournalError {
    /// The payload is not a `JournalAction`.
    InvalidPayload,
    NoSuchEntry,
    /// A text over [`MAX_TEXT`] bytes, or empty.
    BadText,
    /// A batch of none, or of more than [`MAX_BATCH`].
    BadBatch,
}

/// Every `handle` reply.
pub type JournalReply = Result<JournalEvent, JournalError>;

struct Entry {
    author: ActorId,
    text: String,
}

/// The journal's state and rules: the program keeps one in a `static`; host code (the lab's
/// scenarios) runs the same rules to know every reply to expect.
pub struct JournalState {
    #[allow(dead_code, reason = "state a real journal keeps")]
    title: String,
    entries: Vec<Entry>,
    /// FNV-1a over every text appended, in order.
    digest: u64,
}

impl JournalState {
    /// An empty journal.
    pub fn new(init: InitJournal) -> Self {
        JournalState {
            title: init.title,
            entries: Vec::new(),
            digest: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// Entries so far.
    pub fn len(&self) -> u64 {
        self.entries.len() as u64
    }

    /// Whether nothing was appended yet.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn push(&mut self, author: ActorId, text: String) {
        for b in text.bytes() {
            self.digest = (self.digest ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.entries.push(Entry { author, text });
    }

    fn appended(&self) -> JournalReply {
        Ok(JournalEvent::Appended {
            entries: self.len(),
            digest: self.digest,
        })
    }

    /// Handles `action` sent by `sender`; on `Err` nothing has changed.
    pub fn handle(&mut self, sender: ActorId, action: JournalAction) -> JournalReply {
        use JournalAction as A;
        let bad_text = |t: &str| t.is_empty() || t.len() > MAX_TEXT;
        match action {
            A::Append { text } => {
                if bad_text(&text) {
                    return Err(JournalError::BadText);
                }
                self.push(sender, text);
                self.appended()
            }
            A::Import { count, text } => {
                if count == 0 || count > MAX_BATCH {
                    return Err(JournalError::BadBatch);
                }
                if bad_text(&text) {
                    return Err(JournalError::BadText);
                }
                for _ in 0..count {
                    let entry = format!("{text} #{}", self.entries.len());
                    self.push(sender, entry);
                }
                self.appended()
            }
            A::Entry { index } => {
                let e = usize::try_from(index)
                    .ok()
                    .and_then(|i| self.entries.get(i))
                    .ok_or(JournalError::NoSuchEntry)?;
                Ok(JournalEvent::Entry {
                    author: e.author,
                    text: e.text.clone(),
                })
            }
            A::Recent { count } => Ok(JournalEvent::Recent {
                texts: self
                    .entries
                    .iter()
                    .rev()
                    .take(count.min(MAX_BATCH) as usize)
                    .map(|e| e.text.clone())
                    .collect(),
            }),
        }
    }
}
