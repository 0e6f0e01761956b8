//! A registry of handles and profiles, in plain gstd, written for the lab's corpus: an account
//! registers one handle with a bio and links, edits them, follows other handles (each profile
//! keeps its followers), looks profiles up, and releases its handle. Mostly strings: made,
//! grown, replaced and dropped. The message types and rules ([`Registry`]) are here for host
//! code; the lab's scenarios run the rules on the host to know every reply.
//!
//! As gstd programs commonly do, every message is answered with a `Result`: a refused or
//! malformed message gets an `Err` and changes nothing.
#![cfg_attr(target_arch = "wasm32", no_std)]

extern crate alloc;

use alloc::{string::String, vec::Vec};
use gstd::collections::{BTreeSet, HashMap};
use gstd::ActorId;
use parity_scale_codec::{Decode, Encode};
use scale_info::TypeInfo;

pub const MAX_HANDLE: usize = 24;
pub const MAX_BIO: usize = 160;
pub const MAX_LINK: usize = 64;
pub const MAX_LINKS: usize = 5;

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum RegistryAction {
    Register { handle: String, bio: String },
    SetBio { bio: String },
    AddLink { link: String },
    RemoveLink { index: u8 },
    Follow { handle: String },
    Unfollow { handle: String },
    Lookup { handle: String },
    HandleOf { owner: ActorId },
    Release,
}

/// A profile as `Lookup` answers it.
#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub struct Profile {
    pub owner: ActorId,
    pub bio: String,
    pub links: Vec<String>,
    pub followers: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum RegistryEvent {
    Registered,
    Updated,
    Followed { followers: u32 },
    Unfollowed { followers: u32 },
    Profile(Profile),
    Handle(Option<String>),
    Released { handle: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Encode, Decode, TypeInfo)]
pub enum RegistryError {
    InvalidPayload,
    /// Empty, too long, or not of `a-z`, `0-9`, `_`.
    BadHandle,
    HandleTaken,
    AlreadyRegistered,
    NotRegistered,
    TooLong,
    TooManyLinks,
    NoSuchLink,
    NoSuchHandle,
    /// Following oneself, or following twice.
    CannotFollow,
    NotFollowing,
}

pub type RegistryReply = Result<RegistryEvent, RegistryError>;

#[derive(Clone, Debug)]
struct Entry {
    owner: ActorId,
    bio: String,
    links: Vec<String>,
    followers: BTreeSet<ActorId>,
}

/// Handles, their profiles and the rules.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    profiles: HashMap<String, Entry>,
    handles: HashMap<ActorId, String>,
}

impl Registry {
    fn own(&mut self, who: ActorId) -> Result<&mut Entry, RegistryError> {
        let handle = self.handles.get(&who).ok_or(RegistryError::NotRegistered)?;
        Ok(self
            .profiles
            .get_mut(handle)
            .expect("a handle has a profile"))
    }

    fn other(&mut self, who: ActorId, handle: &str) -> Result<&mut Entry, RegistryError> {
        let entry = self
            .profiles
            .get_mut(handle)
            .ok_or(RegistryError::NoSuchHandle)?;
        if entry.owner == who {
            return Err(RegistryError::CannotFollow);
        }
        Ok(entry)
    }

    pub fn handle(&mut self, sender: ActorId, action: RegistryAction) -> RegistryReply {
        use RegistryAction as A;
        use RegistryEvent as E;
        match action {
            A::Register { handle, bio } => {
                let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
                if handle.is_empty() || handle.len() > MAX_HANDLE || !handle.chars().all(valid) {
                    return Err(RegistryError::BadHandle);
                }
                if self.handles.contains_key(&sender) {
                    return Err(RegistryError::AlreadyRegistered);
                }
                if self.profiles.contains_key(&handle) {
                    return Err(RegistryError::HandleTaken);
                }
                if bio.len() > MAX_BIO {
                    return Err(RegistryError::TooLong);
                }
                let entry = Entry {
                    owner: sender,
                    bio,
                    links: Vec::new(),
                    followers: BTreeSet::new(),
                };
                self.profiles.insert(handle.clone(), entry);
                self.handles.insert(sender, handle);
                Ok(E::Registered)
            }
            A::SetBio { bio } => {
                let entry = self.own(sender)?;
                if bio.len() > MAX_BIO {
                    return Err(RegistryError::TooLong);
                }
                entry.bio = bio;
                Ok(E::Updated)
            }
            A::AddLink { link } => {
                let entry = self.own(sender)?;
                if link.is_empty() || link.len() > MAX_LINK {
                    return Err(RegistryError::TooLong);
                }
                if entry.links.len() >= MAX_LINKS {
                    return Err(RegistryError::TooManyLinks);
                }
                entry.links.push(link);
                Ok(E::Updated)
            }
            A::RemoveLink { index } => {
                let entry = self.own(sender)?;
                if usize::from(index) >= entry.links.len() {
                    return Err(RegistryError::NoSuchLink);
                }
                entry.links.remove(usize::from(index));
                Ok(E::Updated)
            }
            A::Follow { handle } => {
                let entry = self.other(sender, &handle)?;
                if !entry.followers.insert(sender) {
                    return Err(RegistryError::CannotFollow);
                }
                let followers = entry.followers.len() as u32;
                Ok(E::Followed { followers })
            }
            A::Unfollow { handle } => {
                let entry = self.other(sender, &handle)?;
                if !entry.followers.remove(&sender) {
                    return Err(RegistryError::NotFollowing);
                }
                let followers = entry.followers.len() as u32;
                Ok(E::Unfollowed { followers })
            }
            A::Lookup { handle } => {
                let entry = self
                    .profiles
                    .get(&handle)
                    .ok_or(RegistryError::NoSuchHandle)?;
                Ok(E::Profile(Profile {
                    owner: entry.owner,
                    bio: entry.bio.clone(),
                    links: entry.links.clone(),
                    followers: entry.followers.len() as u32,
                }))
            }
            A::HandleOf { owner } => Ok(E::Handle(self.handles.get(&owner).cloned())),
            A::Release => {
                let handle = self
                    .handles
                    .remove(&sender)
                    .ok_or(RegistryError::NotRegistered)?;
                self.profiles.remove(&handle);
                Ok(E::Released { handle })
            }
        }
    }
}

#[cfg(target_arch = "wasm32")]
mod wasm {
    use super::{Registry, RegistryAction, RegistryError};
    use gstd::{msg, prelude::*};

    static mut REGISTRY: Option<Registry> = None;

    #[unsafe(no_mangle)]
    extern "C" fn init() {
        // SAFETY: Gear runs one message at a time; `init` runs first and once.
        unsafe { REGISTRY = Some(Registry::default()) };
    }

    #[unsafe(no_mangle)]
    extern "C" fn handle() {
        // SAFETY: Gear runs one message at a time and `init` has run.
        let registry = unsafe { static_mut!(REGISTRY) }
            .as_mut()
            .expect("initialised");
        let reply = match msg::load::<RegistryAction>() {
            Ok(action) => registry.handle(msg::source(), action),
            Err(_) => Err(RegistryError::InvalidPayload),
        };
        msg::reply(reply, 0).expect("reply");
    }
}
