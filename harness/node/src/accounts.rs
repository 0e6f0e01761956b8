//! Scenario users as node accounts.
//!
//! Scenarios name users by number and mean `ActorId::from(number)` wherever a payload or
//! reply holds an account. On a node a sender is a key pair, so user `n` signs as
//! `//galloc-lab//n` (a dev-style derivation: anyone can reproduce it, nothing of value is
//! held) and its account is that key's public key. Every 32-byte run equal to a known user's
//! lab id is swapped for the node account on the way in, and back on the way out, so the lab
//! compares replies with the scenario's expectations unchanged.

use galloc_lab_wire::{Id, lab_account};

/// The key derivation a user signs with.
pub fn suri(user: u64) -> String {
    format!("//galloc-lab//{user}")
}

/// Known users: their lab ids and node accounts.
#[derive(Default, Debug)]
pub struct Accounts {
    pairs: Vec<(Id, Id)>,
}

impl Accounts {
    /// Records that `user` is `account` on the node.
    pub fn insert(&mut self, user: u64, account: Id) {
        let lab = lab_account(user);
        if !self.pairs.iter().any(|(l, _)| *l == lab) {
            self.pairs.push((lab, account));
        }
    }

    /// `bytes` as the node must see them: lab ids of known users become their accounts.
    pub fn to_node(&self, bytes: &[u8]) -> Vec<u8> {
        swap(bytes, |window| {
            self.pairs
                .iter()
                .find(|(lab, _)| lab == window)
                .map(|(_, node)| *node)
        })
    }

    /// `bytes` as the scenario expects them: known accounts become lab ids again.
    pub fn to_lab(&self, bytes: &[u8]) -> Vec<u8> {
        swap(bytes, |window| {
            self.pairs
                .iter()
                .find(|(_, node)| node == window)
                .map(|(lab, _)| *lab)
        })
    }
}

/// Replaces, left to right, each 32-byte window that `map` knows; a replaced window is not
/// looked into again. A lab id is mostly zeros, so a window shifted by a few bytes can look
/// like another id: only exact ids of users the scenario announced are swapped, never a
/// pattern.
fn swap(bytes: &[u8], map: impl Fn(&[u8]) -> Option<Id>) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if let Some(new) = bytes.get(i..i + 32).and_then(&map) {
            out.extend_from_slice(&new);
            i += 32;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gclient::ext::sp_core::{Pair, sr25519};

    #[test]
    fn lab_ids_are_gears_own_actor_ids() {
        for user in [0, 1, 918, 1339, u64::MAX] {
            let gear: [u8; 32] = gclient::ext::gear_core::ids::ActorId::from(user).into();
            assert_eq!(lab_account(user), gear);
        }
    }

    #[test]
    fn a_user_signs_with_a_key_anyone_can_derive() {
        let pair = sr25519::Pair::from_string(&suri(918), None).unwrap();
        let again = sr25519::Pair::from_string("//galloc-lab//918", None).unwrap();
        assert_eq!(pair.public(), again.public());
        assert_ne!(
            pair.public(),
            sr25519::Pair::from_string(&suri(919), None)
                .unwrap()
                .public()
        );
    }

    #[test]
    fn payloads_go_out_with_node_accounts_and_replies_come_back_with_lab_ids() {
        let mut accounts = Accounts::default();
        accounts.insert(918, [0xa1; 32]);
        accounts.insert(1339, [0xb2; 32]);
        // An FT-like transfer: a tag, two accounts, an amount.
        let mut payload = vec![2];
        payload.extend(lab_account(918));
        payload.extend(lab_account(1339));
        payload.extend(500u128.to_le_bytes());
        let out = accounts.to_node(&payload);
        let mut expected = vec![2];
        expected.extend([0xa1; 32]);
        expected.extend([0xb2; 32]);
        expected.extend(500u128.to_le_bytes());
        assert_eq!(out, expected);
        assert_eq!(accounts.to_lab(&out), payload);
    }

    #[test]
    fn unknown_users_and_shifted_look_alikes_are_left_alone() {
        let mut accounts = Accounts::default();
        accounts.insert(918, [0xa1; 32]);
        // A tag of 0 before user 918's id: the window at offset 0 reads as user 918 << 8,
        // the window at 1 is user 918. Only the exact id is swapped.
        let mut payload = vec![0];
        payload.extend(lab_account(918));
        // User 7 never signs: its id stays as it is, which the program sees consistently.
        payload.extend(lab_account(7));
        let out = accounts.to_node(&payload);
        assert_eq!(out[0], 0);
        assert_eq!(&out[1..33], &[0xa1; 32]);
        assert_eq!(&out[33..], &lab_account(7));
    }

    #[test]
    fn a_user_announced_twice_keeps_its_first_account() {
        let mut accounts = Accounts::default();
        accounts.insert(5, [1; 32]);
        accounts.insert(5, [2; 32]);
        assert_eq!(accounts.to_node(&lab_account(5)), vec![1; 32]);
    }
}
