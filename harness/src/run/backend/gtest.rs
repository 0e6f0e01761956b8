//! The gtest backend: Gear's own runtime, run locally, gas as the node would charge it.

use super::{Backend, Outcome, ProgramRef, Sent, Unit, UserId};
use anyhow::{anyhow, bail, Result};
use gtest::{constants::UNITS, Program, System};
use std::collections::HashSet;

/// Program ids start far above any user id a scenario uses.
const FIRST_PROGRAM_ID: u64 = 1 << 48;
/// Balance given to each user on first use: enough to reserve gtest's default gas limit
/// for every message it sends.
const USER_BALANCE: u128 = 1_000_000 * UNITS;

/// Programs on a local gtest [`System`].
pub struct GtestBackend {
    system: System,
    next_program: u64,
    funded: HashSet<UserId>,
}

impl GtestBackend {
    /// A fresh chain. gtest allows one `System` per thread.
    pub fn new() -> Self {
        GtestBackend {
            system: System::new(),
            next_program: FIRST_PROGRAM_ID,
            funded: HashSet::new(),
        }
    }

    fn fund(&mut self, user: UserId) {
        if self.funded.insert(user) {
            self.system.mint_to(user, USER_BALANCE);
        }
    }

    fn program(&self, program: ProgramRef) -> Result<Program<'_>> {
        self.system
            .get_program(program.0)
            .ok_or_else(|| anyhow!("no program {} on this gtest system", program.0))
    }

    /// Runs blocks until `message`, sent to `program`, is done (succeeded, failed, or answered
    /// without running) and the queue is empty; returns its outcome. A message that waits (for
    /// a reply, a timeout, a wake) takes the blocks it waits for. Its cost is the gas of every
    /// execution in those blocks: the message's own and every one it set off (messages the
    /// program sent itself, replies it handles), as the sender of the step pays for all of
    /// them. A scenario sends one message at a time, so nothing else runs meanwhile
    /// (`harness/tests/suite/counting.rs`).
    fn run(&self, program: ProgramRef, message: gstd::MessageId) -> Result<Outcome> {
        let program = gstd::ActorId::from(program.0);
        let mut failed: Option<bool> = None;
        let mut reply: Option<Vec<u8>> = None;
        let mut sent = Vec::new();
        let mut burned: u64 = 0;
        for _ in 0..super::MAX_BLOCKS_PER_MESSAGE {
            let block = self.system.run_next_block();
            burned += block.gas_burned.values().sum::<u64>();
            for log in &block.log {
                if log.reply_to() == Some(message) {
                    reply = Some(log.payload().to_vec());
                } else if log.reply_to().is_none() && log.source() == program {
                    // One message is processed at a time: what the program sent meanwhile is
                    // this message's doing (Sails events, to the zero address).
                    sent.push(Sent {
                        destination: log.destination().into_bytes(),
                        payload: log.payload().to_vec(),
                    });
                }
            }
            if block.failed.contains(&message) || block.not_executed.contains(&message) {
                failed = Some(true);
            } else if block.succeed.contains(&message) {
                failed = Some(false);
            }
            if let (Some(failed), 0) = (failed, self.system.queue_len()) {
                // Gear logs nothing a failed execution sent; what its blocks logged from the
                // program is then a message an earlier one sent with a delay, delivered now:
                // kept.
                return Ok(Outcome {
                    reply: reply.unwrap_or_default(),
                    sent: Some(sent),
                    failed,
                    cost: burned,
                    pages: None,
                    ops: Vec::new(),
                });
            }
        }
        bail!(
            "gtest: message {message:?} was not done after {} blocks (it waits for a reply or \
             a wake that never comes)",
            super::MAX_BLOCKS_PER_MESSAGE
        )
    }
}

impl Default for GtestBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl Backend for GtestBackend {
    fn name(&self) -> &'static str {
        "gtest"
    }

    fn unit(&self) -> Unit {
        Unit::Gas
    }

    fn deploy(
        &mut self,
        code: &[u8],
        from: UserId,
        payload: &[u8],
    ) -> Result<(ProgramRef, Outcome)> {
        self.fund(from);
        let id = self.next_program;
        self.next_program += 1;
        // gtest validates and instruments the code here and panics on a module Gear rejects;
        // turn that into an error that names the cause.
        let code = code.to_vec();
        let system = &self.system;
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Program::from_binary_with_id(system, id, code);
        }))
        .map_err(|panic| {
            let why = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown reason");
            anyhow!("gtest rejected the Wasm: {why}")
        })?;
        let program = ProgramRef(id);
        let message = self.program(program)?.send_bytes(from, payload.to_vec());
        let outcome = self.run(program, message)?;
        Ok((program, outcome))
    }

    fn send(&mut self, program: ProgramRef, from: UserId, payload: &[u8]) -> Result<Outcome> {
        self.fund(from);
        let message = self.program(program)?.send_bytes(from, payload.to_vec());
        self.run(program, message)
    }

    fn read_state(&mut self, program: ProgramRef) -> Result<Vec<u8>> {
        self.program(program)?
            .read_state_bytes(Vec::new())
            .map_err(|e| anyhow!("reading state of program {}: {e:?}", program.0))
    }
}
