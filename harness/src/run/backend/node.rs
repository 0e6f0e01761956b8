//! The node backend: the lab's programs on a real Gear node, gas as the node burns it.
//!
//! gclient pins Gear 1.10 crates and this lab runs gtest 2.0, so the gclient half lives in
//! its own crate and process, `lab-node` (`harness/node/`, its own lock file), built on first
//! use. This half is a pipe to it: one JSON line per call (`harness/wire`). Nothing can be run
//! against a node on the machines this lab was built on; what is tested here is the pipe, the
//! errors without a node, and (in `harness/node`) the mapping from events to outcomes.

use super::{Backend, Outcome, ProgramRef, Unit, UserId};
use anyhow::{anyhow, bail, Context, Result};
use galloc_lab_wire::{read_line, write_line, Answer, Id, Request};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;

/// Where the node is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A running node's WebSocket address (`--node`, `LAB_NODE`).
    Url(String),
    /// A node binary to start in dev mode for each run (`--node-bin`, `LAB_NODE_BIN`).
    Binary(PathBuf),
}

/// What to do when no node is given: the line `just compare` prints when it skips the node,
/// and the error when the node backend is asked for by name.
pub const NO_NODE: &str = "no node given: pass --node ws://HOST:PORT (or set LAB_NODE) for a \
running Gear node, or --node-bin PATH (or LAB_NODE_BIN) for a gear node binary to start with \
--dev; docs/node.md, \"Measuring on a real node\"";

struct Config {
    endpoint: Endpoint,
    /// The lab's workspace root, where `harness/node` is.
    root: PathBuf,
    /// `lab-node`, once built in this process.
    binary: OnceLock<PathBuf>,
}

static CONFIG: OnceLock<Config> = OnceLock::new();

/// Sets the node for this process (once: every run of a `lab measure` uses the same node).
pub fn configure(endpoint: Endpoint, root: &Path) {
    let _ = CONFIG.set(Config {
        endpoint,
        root: root.to_path_buf(),
        binary: OnceLock::new(),
    });
}

/// Whether a node has been given.
pub fn configured() -> bool {
    CONFIG.get().is_some()
}

/// Builds `lab-node` (its own workspace and lock file, its own target directory), once per
/// process; the first build takes a few minutes.
fn binary(config: &Config) -> Result<&Path> {
    if let Some(path) = config.binary.get() {
        return Ok(path);
    }
    let manifest = config.root.join("harness/node/Cargo.toml");
    let target = config.root.join("target/lab/node");
    eprintln!("node: building lab-node (gclient 1.10; a few minutes the first time)");
    let status = crate::build::process::status(
        crate::build::workspace::cargo_command()
            .args(["build", "-q", "--locked", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target),
    )
    .with_context(|| format!("running cargo build for {}", manifest.display()))?;
    if !status.success() {
        bail!(
            "building the node backend ({}) failed: see cargo's output above",
            manifest.display()
        );
    }
    Ok(config.binary.get_or_init(|| target.join("debug/lab-node")))
}

/// A `lab-node` process connected to the node.
pub struct NodeBackend {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// Programs deployed by this backend, by [`ProgramRef`] index.
    programs: Vec<Id>,
}

impl NodeBackend {
    /// Starts `lab-node` for the configured node and waits until it is connected.
    pub fn start() -> Result<Self> {
        let config = CONFIG
            .get()
            .ok_or_else(|| anyhow!("node backend: {NO_NODE}"))?;
        let mut command = Command::new(binary(config)?);
        match &config.endpoint {
            Endpoint::Url(url) => command.arg("--node").arg(url),
            Endpoint::Binary(path) => command.arg("--node-bin").arg(path),
        };
        Self::over(command)
    }

    /// Talks to whatever `command` starts as to `lab-node` (tests start a stand-in).
    pub fn over(mut command: Command) -> Result<Self> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {:?}", command.get_program()))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut backend = NodeBackend {
            child,
            stdin,
            stdout,
            programs: Vec::new(),
        };
        match backend.receive()? {
            Answer::Ready { node } => {
                eprintln!("node: connected to {node}");
                Ok(backend)
            }
            other => bail!("lab-node: expected `ready`, got {other:?}"),
        }
    }

    fn receive(&mut self) -> Result<Answer> {
        match read_line::<Answer>(&mut self.stdout).context("reading lab-node's answer")? {
            Some(Answer::Error { message }) => bail!("node: {message}"),
            Some(answer) => Ok(answer),
            None => {
                let status = self.child.wait().ok();
                bail!(
                    "lab-node exited ({}) without answering: its message is above",
                    status.map_or_else(|| "status unknown".into(), |s| s.to_string())
                )
            }
        }
    }

    fn call(&mut self, request: &Request) -> Result<Answer> {
        write_line(&mut self.stdin, request).context("writing to lab-node")?;
        self.receive()
    }

    fn program(&self, program: ProgramRef) -> Result<Id> {
        self.programs
            .get(program.0 as usize)
            .copied()
            .ok_or_else(|| anyhow!("no program {} on this node backend", program.0))
    }
}

impl Drop for NodeBackend {
    fn drop(&mut self) {
        // Closing stdin ends lab-node's loop; a node it started goes with it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn outcome(o: galloc_lab_wire::Outcome) -> Outcome {
    Outcome {
        reply: o.reply,
        // lab-node does not read the node's `UserMessageSent` events yet.
        sent: None,
        failed: o.failed,
        cost: o.gas_burned,
        pages: None,
        ops: Vec::new(),
    }
}

impl Backend for NodeBackend {
    fn name(&self) -> &'static str {
        "node"
    }

    fn unit(&self) -> Unit {
        Unit::Gas
    }

    fn users(&mut self, users: &[UserId]) -> Result<()> {
        match self.call(&Request::Users {
            users: users.to_vec(),
        })? {
            Answer::Users { accounts } if accounts.len() == users.len() => Ok(()),
            other => bail!("lab-node: expected {} accounts, got {other:?}", users.len()),
        }
    }

    fn deploy(
        &mut self,
        code: &[u8],
        from: UserId,
        payload: &[u8],
    ) -> Result<(ProgramRef, Outcome)> {
        let request = Request::Deploy {
            code: code.to_vec(),
            from,
            payload: payload.to_vec(),
        };
        match self
            .call(&request)
            .context("the node did not take the program")?
        {
            Answer::Deployed {
                program,
                outcome: o,
            } => {
                self.programs.push(program);
                Ok((ProgramRef(self.programs.len() as u64 - 1), outcome(o)))
            }
            other => bail!("lab-node: expected `deployed`, got {other:?}"),
        }
    }

    fn send(&mut self, program: ProgramRef, from: UserId, payload: &[u8]) -> Result<Outcome> {
        let request = Request::Send {
            program: self.program(program)?,
            from,
            payload: payload.to_vec(),
        };
        match self.call(&request)? {
            Answer::Sent { outcome: o } => Ok(outcome(o)),
            other => bail!("lab-node: expected `sent`, got {other:?}"),
        }
    }

    fn read_state(&mut self, program: ProgramRef) -> Result<Vec<u8>> {
        let request = Request::ReadState {
            program: self.program(program)?,
        };
        match self.call(&request)? {
            Answer::State { bytes } => Ok(bytes),
            other => bail!("lab-node: expected `state`, got {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for lab-node speaking the protocol from a shell script: this tests the
    /// lab's half of the pipe, not a node.
    fn stand_in(script: &str) -> Result<NodeBackend> {
        let mut command = Command::new("bash");
        command.args(["-c", script]);
        NodeBackend::over(command)
    }

    #[test]
    fn answers_come_back_as_outcomes_and_programs_get_local_refs() {
        let program = "[".to_owned() + &["9"; 32].join(",") + "]";
        let script = format!(
            r#"echo '{{"ready":{{"node":"stand-in"}}}}'
read -r _; echo '{{"users":{{"accounts":[[{a}]]}}}}'
read -r _; echo '{{"deployed":{{"program":{program},"outcome":{{"reply":[],"failed":false,"gas_burned":11,"gas_limit":12}}}}}}'
read -r line; case "$line" in *'"program":{program}'*) echo '{{"sent":{{"outcome":{{"reply":[1,2],"failed":true,"gas_burned":7,"gas_limit":8}}}}}}';; *) echo '{{"error":{{"message":"wrong program"}}}}';; esac
read -r _; echo '{{"error":{{"message":"no state export"}}}}'"#,
            a = ["1"; 32].join(","),
        );
        let mut node = stand_in(&script).unwrap();
        node.users(&[5]).unwrap();
        let (program, init) = node.deploy(b"\0asm", 5, &[]).unwrap();
        assert_eq!(program, ProgramRef(0));
        assert_eq!((init.cost, init.failed), (11, false));
        let sent = node.send(program, 5, &[3]).unwrap();
        assert_eq!((sent.reply, sent.failed, sent.cost), (vec![1, 2], true, 7));
        let e = node.read_state(program).unwrap_err();
        assert_eq!(e.to_string(), "node: no state export");
        assert!(
            node.send(ProgramRef(3), 5, &[]).is_err(),
            "unknown program ref"
        );
    }

    #[test]
    fn a_backend_that_dies_before_connecting_is_named() {
        let e = stand_in("echo 'lab-node: cannot connect' >&2; exit 1")
            .err()
            .expect("no ready line");
        assert!(
            e.to_string()
                .contains("lab-node exited (exit status: 1) without answering"),
            "{e}"
        );
    }
}
