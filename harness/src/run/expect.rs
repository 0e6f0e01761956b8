//! What a message had to do against what it did: its reply or failure and the messages it
//! sent, each mismatch an error that names the message as its scenario file counts it and
//! shows values where the step reads them (a Sails call, through its IDL).

use crate::results::hex;
use crate::run::backend::{Outcome, Sent};
use crate::run::scenario::{Expect, Scenario, Step};
use anyhow::{bail, Result};

/// Message `index` of a scenario as its file counts it: `messages` from 1, after `init` (0).
fn numbered(index: usize) -> String {
    match index {
        0 => "`init`".to_owned(),
        n => format!("message {n} (counting from 1 after `init`)"),
    }
}

/// A destination as a scenario names it: `user N` for Gear's `ActorId::from(N)` (the ids
/// scenarios send from), else its hex; the zero address is where Sails events go.
fn recipient(id: &[u8; 32]) -> String {
    let number = u64::from_le_bytes(id[12..20].try_into().expect("8 bytes"));
    if *id == [0; 32] {
        "the zero address (events)".to_owned()
    } else if *id == gstd::ActorId::from(number).into_bytes() {
        format!("user {number}")
    } else {
        format!("0x{}", hex(id))
    }
}

/// The messages `step` had to send against those the backend saw it send (where it sees them).
pub(crate) fn check_sent(
    scenario: &Scenario,
    index: usize,
    step: &Step,
    outcome: &Outcome,
) -> Result<()> {
    let (Some(expected), Some(got)) = (&step.sent, &outcome.sent) else {
        return Ok(());
    };
    if expected == got {
        return Ok(());
    }
    // Events as the values they encode where the step reads them (a Sails call, through its
    // IDL), users by the number a scenario sends from, the rest as hex.
    let event_text = |m: &Sent| {
        (m.destination == [0; 32])
            .then(|| step.reads.as_ref().and_then(|r| (r.event)(&m.payload)))
            .flatten()
    };
    let show = |sent: &[Sent]| {
        let each: Vec<String> = sent
            .iter()
            .map(|m| match event_text(m) {
                Some(event) => format!("event {event}"),
                None => format!("to {}: 0x{}", recipient(&m.destination), hex(&m.payload)),
            })
            .collect();
        if each.is_empty() {
            "nothing".to_owned()
        } else {
            each.join("; ")
        }
    };
    // Sails events go to the zero address; a scenario's `events` can list nothing else. A
    // message that also sends to a user needs `sends`, which lists both.
    let event = |m: &Sent| m.destination == [0; 32];
    let hint = if expected.iter().all(event) && got.iter().any(|m| !event(m)) {
        "; it also sent to a user, which `events` cannot list: list everything the message \
         sends, events and messages to users, in `sends` (docs/your-program.md)"
    } else {
        ""
    };
    bail!(
        "case `{}`, {}: expected it to send {}, it sent {}{hint}",
        scenario.case,
        numbered(index),
        show(expected),
        show(got)
    );
}

pub(crate) fn check(
    scenario: &Scenario,
    index: usize,
    expect: &Expect,
    reads: Option<&crate::run::scenario::ReplyText>,
    outcome: &Outcome,
) -> Result<()> {
    // A reply as the value it encodes where the step can read it (a Sails call, through the
    // IDL), else as hex.
    let value = |bytes: &[u8], failed: bool| reads.and_then(|r| (r.reply)(bytes, failed));
    let ok = match expect {
        Expect::Reply(bytes) => !outcome.failed && &outcome.reply == bytes,
        Expect::Success => !outcome.failed,
        Expect::Failure => outcome.failed,
        Expect::FailureWith(bytes) => outcome.failed && &outcome.reply == bytes,
    };
    if !ok {
        let got = match (outcome.failed, value(&outcome.reply, outcome.failed)) {
            (true, Some(error)) => format!("a failed execution with error {error}"),
            // Gear's error reply to a panic is the panic message: show it as the text it is.
            (true, None) => format!(
                "a failed execution (the program panicked: {:?})",
                String::from_utf8_lossy(&outcome.reply)
            ),
            (false, Some(reply)) => format!("success with reply {reply}"),
            (false, None) => format!("success with reply 0x{}", hex(&outcome.reply)),
        };
        let shown = |bytes: &[u8], failed: bool| {
            value(bytes, failed).unwrap_or_else(|| format!("0x{}", hex(bytes)))
        };
        bail!(
            "case `{}`, {}: expected {}, got {got}",
            scenario.case,
            numbered(index),
            match expect {
                Expect::Reply(b) => format!("reply {}", shown(b, false)),
                Expect::Success => "a successful execution".to_owned(),
                Expect::Failure => "a failed execution".to_owned(),
                Expect::FailureWith(b) =>
                    format!("a failed execution with error {}", shown(b, true)),
            },
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        Scenario {
            case: "c",
            package: "p",
            deployer: 42,
            init: Vec::new(),
            steps: Vec::new(),
        }
    }
    /// A failed message's reply is the panic text: it is shown as text, not hex.
    #[test]
    fn a_failure_shows_the_panic_text() {
        let outcome = Outcome {
            reply: b"panicked with 'no \"room\"'".to_vec(),
            sent: None,
            failed: true,
            cost: 1,
            pages: None,
            ops: Vec::new(),
        };
        let err = check(&scenario(), 2, &Expect::Success, None, &outcome)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(r#"the program panicked: "panicked with 'no \"room\"'""#),
            "{err}"
        );
        let ok = Outcome {
            failed: false,
            reply: vec![1, 2],
            ..outcome
        };
        let err = check(&scenario(), 2, &Expect::Failure, None, &ok)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("got success with reply 0x0102"), "{err}");
    }

    /// Where a step can read its replies (a Sails call, through the IDL), a wrong reply is
    /// shown as the values on both sides, not as hex; bytes it cannot read stay hex.
    #[test]
    fn a_wrong_reply_is_shown_as_values_where_the_step_reads_them() {
        let reads = crate::run::scenario::ReplyText {
            reply: std::sync::Arc::new(|bytes, failed| match (bytes, failed) {
                ([0], false) => Some("None".to_owned()),
                ([1, 7], false) => Some(r#"Some(("Where shall the lab meet?", 7))"#.to_owned()),
                ([2], true) => Some("SoldOut".to_owned()),
                _ => None,
            }),
            event: std::sync::Arc::new(|_| None),
        };
        let outcome = Outcome {
            reply: vec![1, 7],
            sent: None,
            failed: false,
            cost: 1,
            pages: None,
            ops: Vec::new(),
        };
        let err = check(
            &scenario(),
            4,
            &Expect::Reply(vec![0]),
            Some(&reads),
            &outcome,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.ends_with(
                r#"expected reply None, got success with reply Some(("Where shall the lab meet?", 7))"#
            ),
            "{err}"
        );
        let thrown = Outcome {
            reply: vec![2],
            failed: true,
            ..outcome.clone()
        };
        let err = check(
            &scenario(),
            4,
            &Expect::Reply(vec![9]),
            Some(&reads),
            &thrown,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.ends_with("expected reply 0x09, got a failed execution with error SoldOut"),
            "{err}"
        );
    }

    /// Every expectation can fail: a reply other than the one expected (a `None` expected and
    /// a `Some` given), a message to a user expected and not sent, or sent and not expected.
    #[test]
    fn each_wrong_expectation_fails() {
        let outcome = Outcome {
            reply: vec![1, 7],
            sent: Some(vec![Sent {
                destination: [0; 32],
                payload: vec![9],
            }]),
            failed: false,
            cost: 1,
            pages: None,
            ops: Vec::new(),
        };
        assert!(check(&scenario(), 1, &Expect::Reply(vec![0]), None, &outcome).is_err());
        assert!(check(&scenario(), 1, &Expect::Reply(vec![1, 7]), None, &outcome).is_ok());
        let to_user = Sent {
            destination: gstd::ActorId::from(42u64).into_bytes(),
            payload: vec![5],
        };
        let step = |sent: Option<Vec<Sent>>| Step {
            from: 42,
            payload: Vec::new(),
            expect: Expect::Success,
            sent,
            reads: None,
        };
        let event = outcome.sent.clone().unwrap();
        let with_user = [event.clone(), vec![to_user.clone()]].concat();
        assert!(check_sent(&scenario(), 1, &step(Some(event.clone())), &outcome).is_ok());
        let err = check_sent(&scenario(), 1, &step(Some(with_user.clone())), &outcome)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "message 1 (counting from 1 after `init`): expected it to send \
                 to the zero address (events): 0x09; to user 42: 0x05, it sent to the zero \
                 address (events): 0x09"
            ),
            "{err}"
        );
        // Where the step reads its events (a Sails call), they are shown as values.
        let reading = Step {
            reads: Some(crate::run::scenario::ReplyText {
                reply: std::sync::Arc::new(|_, _| None),
                event: std::sync::Arc::new(|bytes| {
                    (bytes == [9]).then(|| "Opened { id: 9 }".to_owned())
                }),
            }),
            ..step(Some(with_user.clone()))
        };
        let err = check_sent(&scenario(), 1, &reading, &outcome)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with(
                "expected it to send event Opened { id: 9 }; to user 42: 0x05, it sent event \
                 Opened { id: 9 }"
            ),
            "{err}"
        );
        let sent_more = Outcome {
            sent: Some(with_user),
            ..outcome.clone()
        };
        // Events expected, events and a message to a user sent: the way to say it is named.
        let err = check_sent(&scenario(), 1, &step(Some(event.clone())), &sent_more)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("it also sent to a user, which `events` cannot list")
                && err.contains("in `sends`"),
            "{err}"
        );
        // Not where the expected list names users itself (it came from `sends`).
        let other_user = Sent {
            destination: gstd::ActorId::from(43u64).into_bytes(),
            payload: vec![5],
        };
        let err = check_sent(&scenario(), 1, &step(Some(vec![other_user])), &sent_more)
            .unwrap_err()
            .to_string();
        assert!(!err.contains("`events` cannot list"), "{err}");
        assert!(check_sent(&scenario(), 1, &step(None), &sent_more).is_ok());
    }
}
