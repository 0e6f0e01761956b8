//! A guestbook: visitors sign with a note, anyone reads the latest notes or one author's.
//!
//! Written as any small gstd dapp is, with no knowledge of the lab: strings of every length,
//! a log that only grows, a map from author to their notes' positions, and replies built per
//! message. That mix (many short-lived strings around a growing `Vec`) is what the lab's NFT
//! and FT cases do not stress.
#![no_std]

extern crate alloc;

use alloc::{string::String, vec::Vec};
use gstd::{collections::BTreeMap, msg, ActorId};
use parity_scale_codec::{Decode, Encode};

/// A `handle` payload.
#[derive(Decode)]
pub enum Action {
    /// Adds a note under the sender's name.
    Sign(String),
    /// The latest `n` notes, newest first.
    Latest(u32),
    /// Every note one author signed, oldest first.
    By(ActorId),
    /// Deletes the sender's notes.
    Erase,
}

/// A reply.
#[derive(Encode)]
pub enum Reply {
    /// The note's position in the book.
    Signed(u32),
    Notes(Vec<String>),
    /// How many notes were erased.
    Erased(u32),
    /// The payload was not an `Action`, or a note was empty or over 280 bytes.
    Invalid,
}

struct Book {
    notes: Vec<Option<(ActorId, String)>>,
    by_author: BTreeMap<ActorId, Vec<u32>>,
}

static mut BOOK: Book = Book {
    notes: Vec::new(),
    by_author: BTreeMap::new(),
};

impl Book {
    fn handle(&mut self, sender: ActorId, action: Action) -> Reply {
        match action {
            Action::Sign(note) if note.is_empty() || note.len() > 280 => Reply::Invalid,
            Action::Sign(note) => {
                let at = self.notes.len() as u32;
                self.notes.push(Some((sender, note)));
                self.by_author.entry(sender).or_default().push(at);
                Reply::Signed(at)
            }
            Action::Latest(n) => Reply::Notes(
                self.notes
                    .iter()
                    .rev()
                    .flatten()
                    .take(n as usize)
                    .map(|(_, note)| note.clone())
                    .collect(),
            ),
            Action::By(author) => Reply::Notes(
                self.by_author
                    .get(&author)
                    .into_iter()
                    .flatten()
                    .filter_map(|&i| self.notes[i as usize].as_ref())
                    .map(|(_, note)| note.clone())
                    .collect(),
            ),
            Action::Erase => {
                let erased = self.by_author.remove(&sender).unwrap_or_default();
                for &i in &erased {
                    self.notes[i as usize] = None;
                }
                Reply::Erased(erased.len() as u32)
            }
        }
    }
}

/// Nothing to set up: the book starts empty.
#[unsafe(no_mangle)]
extern "C" fn init() {}

#[unsafe(no_mangle)]
extern "C" fn handle() {
    // SAFETY: Gear runs one message at a time.
    let book = unsafe { &mut *core::ptr::addr_of_mut!(BOOK) };
    let reply = match msg::load::<Action>() {
        Ok(action) => book.handle(msg::source(), action),
        Err(_) => Reply::Invalid,
    };
    msg::reply(reply, 0).expect("reply");
}
