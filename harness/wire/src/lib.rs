//! What the lab and `lab-node` (the gclient node backend, `harness/node/`) say to each other.
//!
//! gclient pins Gear 1.10 crates and the lab runs gtest 2.0: the two cannot share one
//! dependency tree, so the node backend is its own program with its own lock file, and the
//! lab's `Backend` for a node is a pipe to it. One JSON line per request on its stdin, one
//! JSON line per answer on its stdout; its stderr is its log. The first line it writes is
//! [`Answer::Ready`] (or it exits non-zero, saying why on stderr).

use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

/// A Gear account or program id.
pub type Id = [u8; 32];

/// What the lab asks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// The scenario's senders, before any message: on a node each one is a key pair that
    /// must exist and hold funds. Answered with [`Answer::Users`].
    Users { users: Vec<u64> },
    /// Upload `code` and run its `init` with `payload`, sent by `from`.
    Deploy {
        code: Vec<u8>,
        from: u64,
        payload: Vec<u8>,
    },
    /// Send `payload` from `from` to `program` and wait until it has been processed.
    Send {
        program: Id,
        from: u64,
        payload: Vec<u8>,
    },
    /// Read the program's `state` export (no message, no gas).
    ReadState { program: Id },
}

/// What one processed message did on the node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The reply's payload (for a failed execution: the node's error text, as bytes).
    pub reply: Vec<u8>,
    /// Whether execution failed.
    pub failed: bool,
    /// Gas the message burned, read from the node's events.
    pub gas_burned: u64,
    /// The gas limit it was sent with (the node's own estimate of the minimum).
    pub gas_limit: u64,
}

/// What `lab-node` answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Connected to the node at this address.
    Ready { node: String },
    /// Each user's account id on the node, in the order asked.
    Users { accounts: Vec<Id> },
    /// The program's id and its `init` message's outcome.
    Deployed { program: Id, outcome: Outcome },
    /// A `handle` message's outcome.
    Sent { outcome: Outcome },
    /// The `state` export's bytes.
    State { bytes: Vec<u8> },
    /// The request could not be carried out.
    Error { message: String },
}

/// The account a scenario's user number stands for off-chain: Gear's `ActorId::from(u64)`
/// (the number's little-endian bytes at 12..20). Payloads and expected replies name users
/// this way; on a node, where senders are key pairs, `lab-node` swaps these ids for the
/// users' real accounts on the way in and back on the way out.
pub fn lab_account(user: u64) -> Id {
    let mut id = [0; 32];
    id[12..20].copy_from_slice(&user.to_le_bytes());
    id
}

/// Writes one message as one line and flushes it.
pub fn write_line<T: Serialize>(out: &mut impl Write, message: &T) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, message)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Reads one message from one line; `Ok(None)` at the end of the stream.
pub fn read_line<T: for<'de> Deserialize<'de>>(
    input: &mut impl BufRead,
) -> std::io::Result<Option<T>> {
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    serde_json::from_str(&line)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_and_an_answer_survive_the_pipe() {
        let mut pipe = Vec::new();
        let request = Request::Send {
            program: [7; 32],
            from: 918,
            payload: vec![1, 2, 3],
        };
        let answer = Answer::Sent {
            outcome: Outcome {
                reply: vec![0],
                failed: false,
                gas_burned: 737_000_000,
                gas_limit: 740_000_000,
            },
        };
        write_line(&mut pipe, &request).unwrap();
        write_line(&mut pipe, &answer).unwrap();
        assert_eq!(pipe.iter().filter(|b| **b == b'\n').count(), 2);
        let mut input = std::io::Cursor::new(pipe);
        assert_eq!(read_line::<Request>(&mut input).unwrap(), Some(request));
        assert_eq!(read_line::<Answer>(&mut input).unwrap(), Some(answer));
        assert_eq!(read_line::<Answer>(&mut input).unwrap(), None);
    }

    #[test]
    fn a_garbled_line_is_an_error_not_a_panic() {
        let mut input = std::io::Cursor::new(b"{\"sent\": 3}\n".to_vec());
        let e = read_line::<Answer>(&mut input).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
    }
}
