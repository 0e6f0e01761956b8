//! The seam every meter implements: deploy a program, send it messages, get replies and cost.
//!
//! Scenarios are written once against [`Backend`]: gtest (Gear's runtime, gas) and the
//! wasmtime fuel meter implement it, and a real node through gclient (`node`, in its own
//! process).

pub mod gtest;
pub mod node;
pub mod wasmtime;

pub use self::wasmtime::{FirstTouch, PageCounts};
use galloc::probe::Record;

use anyhow::{bail, Result};

/// Blocks a scenario's message may take to be done (waiting for replies, timeouts, wakes):
/// gstd's longest default wait is 100 blocks; a message not done by then waits for something
/// that never comes, and the step fails naming it.
pub const MAX_BLOCKS_PER_MESSAGE: u32 = 1_000;

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
    /// Messages the program sent, in order (Sails events go to the zero address), where the
    /// backend sees them (gtest, wasmtime; not yet a node): first those it sent earlier with a
    /// delay that ends in this message's block, then the message's own, none of which when it
    /// failed (Gear discards them with the rest of the execution).
    pub sent: Option<Vec<Sent>>,
    /// Whether execution failed (a panic or trap): Gear then discards its state changes.
    pub failed: bool,
    /// Cost of the message in the backend's [`Unit`].
    pub cost: u64,
    /// Pages the message touched, where the backend can see them (wasmtime).
    pub pages: Option<PageCounts>,
    /// Every allocator call of the message with its cost (probe builds, where the backend
    /// collects them: wasmtime).
    pub ops: Vec<Record>,
}

/// A message a program sent while handling one (not its reply).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// The destination's 32-byte id.
    pub destination: [u8; 32],
    pub payload: Vec<u8>,
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

    /// Announces the scenario's senders before anything is sent. A node needs it (each sender
    /// is a key pair that must hold funds); local backends mint on first use and ignore it.
    fn users(&mut self, _users: &[UserId]) -> Result<()> {
        Ok(())
    }

    /// Where the heap of the programs deployed from now on starts (`__heap_base`, which Gear's
    /// post-processing strips from the module): what tells a program's static data from its
    /// heap. The wasmtime meter places each page a probe build touches by it ([`FirstTouch`]);
    /// others ignore it.
    fn heap_base(&mut self, _heap_base: u32) {}

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

/// The backends this build of the lab can run, in report order: the embedded default first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BackendKind {
    /// The wasmtime fuel meter: fast, exact per op, counts pages; fuel, not gas.
    Wasmtime,
    /// Gear's runtime, locally: gas as a node charges it.
    Gtest,
    /// A real node through gclient (`lab-node`): needs `--node` or `--node-bin`.
    Node,
}

impl BackendKind {
    /// The backends built into the lab, which run anywhere.
    pub const EMBEDDED: [BackendKind; 2] = [BackendKind::Wasmtime, BackendKind::Gtest];

    /// Every backend, in report order.
    pub const ALL: [BackendKind; 3] =
        [BackendKind::Wasmtime, BackendKind::Gtest, BackendKind::Node];

    /// As results and the CLI name it.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Wasmtime => "wasmtime",
            BackendKind::Gtest => "gtest",
            BackendKind::Node => "node",
        }
    }

    /// The backend results name `name`, if any.
    pub fn from_name(name: &str) -> Option<BackendKind> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }

    /// A fresh backend: a new chain, or a new meter with no programs.
    pub fn create(self) -> Result<Box<dyn Backend>> {
        Ok(match self {
            BackendKind::Wasmtime => Box::new(wasmtime::WasmtimeBackend::new()?),
            BackendKind::Gtest => Box::new(gtest::GtestBackend::new()),
            BackendKind::Node => Box::new(node::NodeBackend::start()?),
        })
    }

    /// Whether it collects every allocator call of a probe build (exact per-op records).
    pub fn records_calls(self) -> bool {
        self == BackendKind::Wasmtime
    }

    /// Whether it can run on this machine as configured (a node must be given).
    pub fn available(self) -> bool {
        self != BackendKind::Node || node::configured()
    }

    /// Parses a comma-separated list, or `all`: every backend that is available, saying in
    /// one line on stderr why one is left out. A backend named but unavailable is an error.
    pub fn select(list: &str) -> Result<Vec<BackendKind>> {
        if list.trim() == "all" {
            let (picked, skipped): (Vec<_>, Vec<_>) =
                Self::ALL.into_iter().partition(|k| k.available());
            if skipped.contains(&BackendKind::Node) {
                eprintln!("node: skipped, {}", node::NO_NODE);
            }
            return Ok(picked);
        }
        let mut picked = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let Some(kind) = Self::ALL.into_iter().find(|k| k.name() == name) else {
                let here: Vec<&str> = Self::ALL
                    .iter()
                    .filter(|k| k.available())
                    .map(|k| k.name())
                    .collect();
                let node = if BackendKind::Node.available() {
                    ""
                } else {
                    "; `node` too with a node given (--node URL or --node-bin PATH)"
                };
                bail!(
                    "unknown backend `{name}`; available here: {}{node}",
                    here.join(", ")
                );
            };
            if !kind.available() {
                bail!("backend `node`: {}", node::NO_NODE);
            }
            if !picked.contains(&kind) {
                picked.push(kind);
            }
        }
        if picked.is_empty() {
            bail!("no backend given (an empty list); pass `all` or some of: wasmtime, gtest, node");
        }
        picked.sort();
        Ok(picked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_every_backend_available_and_a_node_must_be_given() {
        // No test in this process configures a node.
        assert_eq!(
            BackendKind::select("all").unwrap(),
            [BackendKind::Wasmtime, BackendKind::Gtest]
        );
        assert_eq!(
            BackendKind::select("gtest, wasmtime,gtest").unwrap(),
            [BackendKind::Wasmtime, BackendKind::Gtest]
        );
        let e = BackendKind::select("wasmtime,node")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("backend `node`: no node given"), "{e}");
    }
}
