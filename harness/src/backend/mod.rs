//! The seam every meter implements: deploy a program, send it messages, get replies and cost.
//!
//! Scenarios are written once against [`Backend`]: gtest (Gear's runtime, gas) and the
//! wasmtime fuel meter implement it; a real node follows behind the same trait.

pub mod gtest;
pub mod wasmtime;

pub use self::wasmtime::PageCounts;
use galloc::probe::OpEvent;

use anyhow::Result;

/// A user account, as a number (Gear's `ActorId::from(u64)`).
pub type UserId = u64;

/// A deployed program, as the backend names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProgramRef(pub u64);

/// What one message did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The reply payload (empty when the program failed without replying).
    pub reply: Vec<u8>,
    /// Whether execution failed (a panic or trap): Gear then discards its state changes.
    pub failed: bool,
    /// Cost of the message in the backend's [`Unit`].
    pub cost: u64,
    /// Pages the message touched, where the backend can see them (wasmtime).
    pub pages: Option<PageCounts>,
    /// Every allocator call of the message with its cost, from trace builds (wasmtime).
    pub ops: Vec<OpEvent>,
}

/// What a backend's costs are counted in; never mixed in one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Gear gas (gtest, a node).
    Gas,
    /// wasmtime fuel (one unit per Wasm operator).
    Fuel,
}

impl Unit {
    /// The name result rows carry in their `unit` column.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Gas => "gas",
            Unit::Fuel => "fuel",
        }
    }
}

/// A place to run Gear programs and measure them.
pub trait Backend {
    /// Short name used in results (`gtest`, `wasmtime`, `node`).
    fn name(&self) -> &'static str;

    /// The unit of [`Outcome::cost`].
    fn unit(&self) -> Unit;

    /// Uploads `code` and runs its `init` with `payload`, sent by `from`.
    fn deploy(
        &mut self,
        code: &[u8],
        from: UserId,
        payload: &[u8],
    ) -> Result<(ProgramRef, Outcome)>;

    /// Sends `payload` from `from` to `program` and runs it to completion.
    fn send(&mut self, program: ProgramRef, from: UserId, payload: &[u8]) -> Result<Outcome>;

    /// Reads the program's `state` export (the probe records in probe builds). Runs outside
    /// any message: it costs the measured messages nothing and changes nothing.
    fn read_state(&mut self, program: ProgramRef) -> Result<Vec<u8>>;
}
