//! From a node's events to one message's outcome: its status, its reply, the gas it burned.
//!
//! The node reports no "gas burned" figure per message. What its events do show is money:
//! sending a message moves `gas_limit` worth of value from the sender to the gear bank
//! (`Balances::Transfer`), and when the message has been processed the bank returns the
//! unspent part (another `Transfer`, back to the sender). So
//! `burned = (deposited - returned) / (deposited / gas_limit)`, in whole gas, and every step
//! of that division must be exact or the events are not what this reading assumes.

use anyhow::{Context, Result, bail};
use galloc_lab_wire::{Id, Outcome};
use gclient::{
    Event, GearEvent,
    ext::gear_core::{ids::MessageId, message::ReplyDetails},
    gear::{balances::Event as BalancesEvent, runtime_types::gear_common::event::DispatchStatus},
};

/// What was sent, as needed to find it in the events.
pub struct Sent {
    /// The message's id, from its `MessageQueued` event.
    pub message: MessageId,
    /// The signer's account.
    pub sender: Id,
    /// The gear bank's account (`GearBank::BankAddress`).
    pub bank: Id,
    /// The gas limit the message was sent with.
    pub gas_limit: u64,
}

/// The outcome of `sent`, read from the events of the blocks from its inclusion to its
/// processing. `Ok(None)` when the message has not been processed yet in these events.
pub fn outcome(events: &[Event], sent: &Sent) -> Result<Option<Outcome>> {
    let Some(status) = status(events, sent.message) else {
        return Ok(None);
    };
    let failed = match status {
        DispatchStatus::Success => false,
        DispatchStatus::Failed => true,
        DispatchStatus::NotExecuted => bail!(
            "message {:?} was dispatched but not executed (was the program initialised?)",
            sent.message
        ),
    };
    let (reply, reply_ok) = reply(events, sent.message).unwrap_or_default();
    let gas_burned = burned(events, sent)?;
    Ok(Some(Outcome {
        reply,
        failed: failed || !reply_ok,
        gas_burned,
        gas_limit: sent.gas_limit,
    }))
}

/// The message's status from `Gear::MessagesDispatched`.
fn status(events: &[Event], message: MessageId) -> Option<DispatchStatus> {
    events.iter().find_map(|e| match e {
        Event::Gear(GearEvent::MessagesDispatched { statuses, .. }) => statuses
            .iter()
            .find(|(id, _)| *id == message)
            .map(|(_, status)| status.clone()),
        _ => None,
    })
}

/// The reply to the message (`Gear::UserMessageSent` whose details point at it) and whether
/// its reply code is a success. Programs that do not reply have none: `None`.
fn reply(events: &[Event], message: MessageId) -> Option<(Vec<u8>, bool)> {
    events.iter().find_map(|e| match e {
        Event::Gear(GearEvent::UserMessageSent { message: m, .. }) => m
            .details()
            .filter(|d: &ReplyDetails| d.to_message_id() == message)
            .map(|d| (m.payload_bytes().to_vec(), d.to_reply_code().is_success())),
        _ => None,
    })
}

/// Gas burned, from the value the sender deposited with the bank and got back.
fn burned(events: &[Event], sent: &Sent) -> Result<u64> {
    let (mut deposited, mut returned) = (0u128, 0u128);
    for e in events {
        if let Event::Balances(BalancesEvent::Transfer { from, to, amount }) = e {
            let (from, to): (&[u8; 32], &[u8; 32]) = (from.as_ref(), to.as_ref());
            if *from == sent.sender && *to == sent.bank {
                deposited += amount;
            } else if *from == sent.bank && *to == sent.sender {
                returned += amount;
            }
        }
    }
    if deposited == 0 || sent.gas_limit == 0 {
        bail!(
            "no gas deposit from the sender to the gear bank in the events of message {:?}: \
             the node's runtime does not hold gas the way Gear 1.10 does",
            sent.message
        );
    }
    if deposited % u128::from(sent.gas_limit) != 0 || returned > deposited {
        bail!(
            "message {:?}: deposited {deposited} for {} gas and got {returned} back, which is \
             not a whole price per gas",
            sent.message,
            sent.gas_limit
        );
    }
    let per_gas = deposited / u128::from(sent.gas_limit);
    let spent = deposited - returned;
    if spent % per_gas != 0 {
        bail!(
            "message {:?}: {spent} spent is not a whole number of gas at {per_gas} per gas",
            sent.message
        );
    }
    u64::try_from(spent / per_gas).context("gas burned does not fit in u64")
}

#[cfg(test)]
mod tests {
    //! Events as a Gear 1.10 node emits them for one `send_message`, built from gclient's
    //! own types (no node runs here).

    use super::*;
    use gclient::ext::gear_core::{
        ids::ActorId,
        message::{ReplyDetails, UserMessage},
    };
    use gclient::ext::gear_core_errors::{
        ErrorReplyReason, ReplyCode, SimpleExecutionError, SuccessReplyReason,
    };
    use gclient::ext::subxt::utils::{AccountId32, KeyedVec};
    use gclient::gear::runtime_types::gear_common::event::{DispatchStatus, MessageEntry};

    const SENDER: Id = [0xa1; 32];
    const BANK: Id = [0xba; 32];
    const AUTHOR: Id = [0xcc; 32];
    const PROGRAM: Id = [0x99; 32];
    const PER_GAS: u128 = 6;

    fn transfer(from: Id, to: Id, amount: u128) -> Event {
        Event::Balances(BalancesEvent::Transfer {
            from: AccountId32(from),
            to: AccountId32(to),
            amount,
        })
    }

    fn dispatched(message: MessageId, status: DispatchStatus) -> Event {
        Event::Gear(GearEvent::MessagesDispatched {
            total: 1,
            statuses: KeyedVec::from(vec![(message, status)]),
            state_changes: vec![],
        })
    }

    fn replied(message: MessageId, payload: &[u8], code: ReplyCode) -> Event {
        Event::Gear(GearEvent::UserMessageSent {
            message: UserMessage::new(
                MessageId::from([0x77; 32]),
                ActorId::from(PROGRAM),
                ActorId::from(SENDER),
                payload.to_vec().try_into().unwrap(),
                0,
                Some(ReplyDetails::new(message, code)),
            ),
            expiration: None,
        })
    }

    fn queued(message: MessageId) -> Event {
        Event::Gear(GearEvent::MessageQueued {
            id: message,
            source: AccountId32(SENDER),
            destination: ActorId::from(PROGRAM),
            entry: MessageEntry::Handle,
        })
    }

    /// The events of one message sent with `limit` that burned `burned`, in the order a
    /// block holds them: deposit and queueing in the extrinsic, then processing.
    fn block(message: MessageId, limit: u64, burned: u64, end: Vec<Event>) -> Vec<Event> {
        let mut events = vec![
            transfer(SENDER, BANK, u128::from(limit) * PER_GAS),
            queued(message),
            // Someone else's message in the same block: not ours to count.
            transfer([0x55; 32], BANK, 1_000 * PER_GAS),
            transfer(BANK, AUTHOR, u128::from(burned) * PER_GAS),
            transfer(BANK, SENDER, u128::from(limit - burned) * PER_GAS),
        ];
        events.extend(end);
        events
    }

    fn sent(message: MessageId, gas_limit: u64) -> Sent {
        Sent {
            message,
            sender: SENDER,
            bank: BANK,
            gas_limit,
        }
    }

    #[test]
    fn a_processed_message_gives_its_reply_and_the_gas_it_burned() {
        let id = MessageId::from([1; 32]);
        let ok = ReplyCode::Success(SuccessReplyReason::Manual);
        let events = block(
            id,
            740_000_000,
            737_123_456,
            vec![
                replied(id, &[9, 8, 7], ok),
                dispatched(id, DispatchStatus::Success),
            ],
        );
        let outcome = outcome(&events, &sent(id, 740_000_000)).unwrap().unwrap();
        assert_eq!(
            outcome,
            Outcome {
                reply: vec![9, 8, 7],
                failed: false,
                gas_burned: 737_123_456,
                gas_limit: 740_000_000,
            }
        );
    }

    #[test]
    fn a_panic_is_a_failed_outcome_with_the_error_reply() {
        let id = MessageId::from([2; 32]);
        let error = ReplyCode::Error(ErrorReplyReason::Execution(
            SimpleExecutionError::UserspacePanic,
        ));
        let events = block(
            id,
            5_000_000,
            4_000_000,
            vec![
                replied(id, b"panicked", error),
                dispatched(id, DispatchStatus::Failed),
            ],
        );
        let outcome = outcome(&events, &sent(id, 5_000_000)).unwrap().unwrap();
        assert!(outcome.failed);
        assert_eq!(outcome.reply, b"panicked");
        assert_eq!(outcome.gas_burned, 4_000_000);
    }

    #[test]
    fn a_message_not_yet_processed_has_no_outcome() {
        let id = MessageId::from([3; 32]);
        let events = vec![transfer(SENDER, BANK, 600), queued(id)];
        assert_eq!(outcome(&events, &sent(id, 100)).unwrap(), None);
        // Another message's dispatch is not ours.
        let other = dispatched(MessageId::from([4; 32]), DispatchStatus::Success);
        assert_eq!(outcome(&[other], &sent(id, 100)).unwrap(), None);
    }

    #[test]
    fn events_that_do_not_add_up_are_an_error_not_a_figure() {
        let id = MessageId::from([5; 32]);
        let done = dispatched(id, DispatchStatus::Success);
        // No deposit at all.
        let e = outcome(std::slice::from_ref(&done), &sent(id, 100)).unwrap_err();
        assert!(e.to_string().contains("no gas deposit"), "{e}");
        // A deposit that is not a whole price per gas for the limit sent.
        let events = vec![transfer(SENDER, BANK, 601), done.clone()];
        assert!(outcome(&events, &sent(id, 100)).is_err());
        // Not executed.
        let events = vec![
            transfer(SENDER, BANK, 600),
            dispatched(id, DispatchStatus::NotExecuted),
        ];
        assert!(outcome(&events, &sent(id, 100)).is_err());
    }
}
