//! Runs a scenario on a backend, checking every reply, and reads the probe after each message.

use crate::results::hex;
use crate::run::backend::Backend;
use crate::run::expect::{check, check_sent};
use crate::run::scenario::{check_payload, Scenario};
use anyhow::{bail, Context, Result};
use galloc::probe::{Op, ProbeStats};

/// What one message cost, and (in probe builds) what the allocator recorded during it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageCost {
    /// 0 is `init`; step `i` is message `i + 1`.
    pub index: usize,
    /// Whether it failed (a refused operation of a Sails program, a panic): Gear rolled its
    /// changes back, including the probe's records, so its calls are known only where the
    /// backend collects them as they happen (wasmtime).
    pub failed: bool,
    /// The whole message, in the backend's unit.
    pub cost: u64,
    /// The reply payload (checked against the scenario's expectation).
    pub reply: Vec<u8>,
    /// Pages the message touched, where the backend sees them.
    pub pages: Option<crate::run::backend::PageCounts>,
    /// Every allocator call with its cost (probe builds, on backends that collect them).
    pub ops: Vec<galloc::probe::Record>,
    /// Allocator calls during the message, per op (probe builds).
    pub op_counts: Option<[u64; 4]>,
    /// Calibrated allocator cost during the message, per op (probe builds).
    pub op_costs: Option<[u64; 4]>,
}

/// A scenario's run on one build.
#[derive(Clone, Debug)]
pub struct CaseRun {
    /// Per message, `init` first.
    pub messages: Vec<MessageCost>,
    /// The probe's records over the whole run (probe builds).
    pub probe: Option<ProbeStats>,
}

impl CaseRun {
    /// Sum of all message costs.
    pub fn total_cost(&self) -> u64 {
        self.messages.iter().map(|m| m.cost).sum()
    }

    /// The probe's calibrated cost of every allocator call (probe builds).
    pub fn allocator_cost(&self) -> Option<u64> {
        let stats = self.probe.as_ref()?;
        Some(Op::ALL.iter().map(|op| stats.op(*op).total).sum())
    }

    /// The cost of each call of `op` the backend collected in the messages that succeeded (the
    /// ones the probe's own records cover; a failed message's calls are in its own row), in
    /// order.
    pub fn call_costs(&self, op: Op) -> Vec<u64> {
        self.messages
            .iter()
            .filter(|m| !m.failed)
            .flat_map(|m| m.ops.iter())
            .filter(|r| r.op() == Some(op))
            .map(|r| r.cost)
            .collect()
    }
}

fn read_probe(
    backend: &mut dyn Backend,
    program: crate::run::backend::ProgramRef,
) -> Result<ProbeStats> {
    let bytes = backend.read_state(program)?;
    let (stats, _) = galloc::probe::parse_state(&bytes).with_context(|| {
        format!(
            "the program's state is {} bytes, not the probe's {}: was it built with `probe`?",
            bytes.len(),
            galloc::probe::STATE_LEN
        )
    })?;
    Ok(stats)
}

/// Calls per op and their calibrated cost, from the records a backend collected.
fn tally(ops: &[galloc::probe::Record]) -> ([u64; 4], [u64; 4]) {
    let mut counts = [0; 4];
    let mut costs = [0; 4];
    for r in ops {
        if let Some(op) = r.op() {
            counts[op as usize] += 1;
            costs[op as usize] += r.cost;
        }
    }
    (counts, costs)
}

fn delta(before: &ProbeStats, after: &ProbeStats) -> ([u64; 4], [u64; 4]) {
    let mut counts = [0; 4];
    let mut costs = [0; 4];
    for op in Op::ALL {
        let (b, a) = (before.op(op), after.op(op));
        counts[op as usize] = a.count - b.count;
        costs[op as usize] = a.total - b.total;
    }
    (counts, costs)
}

/// When to read a probe build's records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeReads {
    /// Not a probe build.
    Never,
    /// After every message: per-message costs per op.
    EveryMessage,
}

/// Deploys `code`, sends every step of `scenario`, checks each outcome, and reads the
/// allocator's records as `reads` says. `progress` is called per message. The first outcome
/// other than the scenario's is an error that names the message.
pub fn run_case(
    backend: &mut dyn Backend,
    code: &[u8],
    scenario: &Scenario,
    reads: ProbeReads,
    progress: impl FnMut(),
) -> Result<CaseRun> {
    run_checked(backend, code, scenario, reads, progress, &mut |_, wrong| {
        Err(wrong)
    })
}

/// A message whose outcome was not the scenario's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wrong {
    /// Its index (0 is `init`).
    pub index: usize,
    /// What was expected and what came, as [`run_case`]'s error says it.
    pub why: String,
}

/// [`run_case`] on a plain build, going on past wrong outcomes: every message is sent, and
/// those whose outcome was not the scenario's are returned beside the run, in order. For a
/// reproduction of a broken allocator (registry `reproduces`), whose point is where and how it
/// goes wrong; a candidate's run stops at the first (`run_case`).
pub fn run_recording(
    backend: &mut dyn Backend,
    code: &[u8],
    scenario: &Scenario,
    progress: impl FnMut(),
) -> Result<(CaseRun, Vec<Wrong>)> {
    let mut wrong = Vec::new();
    let run = run_checked(
        backend,
        code,
        scenario,
        ProbeReads::Never,
        progress,
        &mut |index, why| {
            wrong.push(Wrong {
                index,
                why: format!("{why:#}"),
            });
            Ok(())
        },
    )?;
    Ok((run, wrong))
}

/// The run both share: `on_wrong(index, why)` hears each message whose outcome differs from
/// the scenario's, and stops the run by returning the error.
fn run_checked(
    backend: &mut dyn Backend,
    code: &[u8],
    scenario: &Scenario,
    reads: ProbeReads,
    mut progress: impl FnMut(),
    on_wrong: &mut dyn FnMut(usize, anyhow::Error) -> Result<()>,
) -> Result<CaseRun> {
    check_payload(&scenario.init, &format!("case `{}`, init", scenario.case))?;
    for (i, step) in scenario.steps.iter().enumerate() {
        check_payload(
            &step.payload,
            &format!("case `{}`, message {}", scenario.case, i + 1),
        )?;
    }
    backend.users(&scenario.senders())?;
    let (program, init) = backend.deploy(code, scenario.deployer, &scenario.init)?;
    if init.failed {
        bail!(
            "case `{}`: init failed (reply 0x{})",
            scenario.case,
            hex(&init.reply)
        );
    }
    progress();
    let mut last = if reads == ProbeReads::EveryMessage {
        Some(read_probe(backend, program)?)
    } else {
        None
    };
    let (counts, costs) = match &last {
        Some(stats) => {
            let (c, g) = delta(&ProbeStats::EMPTY, stats);
            (Some(c), Some(g))
        }
        None => (None, None),
    };
    let mut messages = vec![MessageCost {
        index: 0,
        failed: false,
        cost: init.cost,
        reply: init.reply,
        pages: init.pages,
        ops: init.ops,
        op_counts: counts,
        op_costs: costs,
    }];
    for (i, step) in scenario.steps.iter().enumerate() {
        let outcome = backend.send(program, step.from, &step.payload)?;
        if let Err(why) = check(scenario, i + 1, &step.expect, step.reads.as_ref(), &outcome)
            .and_then(|()| check_sent(scenario, i + 1, step, &outcome))
        {
            on_wrong(i + 1, why)?;
        }
        let (op_counts, op_costs) = match last.as_mut() {
            // A failed message's records rolled back with it; the calls the backend saw
            // happen (wasmtime) are its calls. Where it saw none (gtest), they are unknown
            // and the failure is marked, so no fit counts them as zero.
            Some(_) if outcome.failed => {
                let (c, g) = tally(&outcome.ops);
                (Some(c), Some(g))
            }
            Some(prev) => {
                let now = read_probe(backend, program).with_context(|| {
                    format!("case `{}`, after message {}", scenario.case, i + 1)
                })?;
                let (c, g) = delta(prev, &now);
                *prev = now;
                (Some(c), Some(g))
            }
            None => (None, None),
        };
        messages.push(MessageCost {
            index: i + 1,
            failed: outcome.failed,
            cost: outcome.cost,
            reply: outcome.reply,
            pages: outcome.pages,
            ops: outcome.ops,
            op_counts,
            op_costs,
        });
        progress();
    }
    Ok(CaseRun {
        messages,
        probe: last,
    })
}

/// The calls the backend collected in a probe-build run, in order.
pub fn trace_records(run: &CaseRun) -> Vec<crate::results::trace::TraceRecord> {
    run.messages
        .iter()
        .flat_map(|m| {
            m.ops
                .iter()
                .map(move |e| crate::results::trace::TraceRecord {
                    message: m.index as u64,
                    op: e.op().map_or("?", |op| op.name()).into(),
                    ptr: e.ptr.into(),
                    size: e.size.into(),
                    align: e.align.into(),
                    new_size: e.new_size.into(),
                    result: e.result.into(),
                    fuel: e.cost,
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::scenario::MAX_PAYLOAD;

    /// Gear's limit is inclusive: a payload of exactly 8 MiB is sent, one byte more is refused
    /// with the limit named.
    #[test]
    fn payloads_over_gear_limit_are_refused_naming_it() {
        assert_eq!(MAX_PAYLOAD, 8 << 20);
        assert!(check_payload(&vec![0; MAX_PAYLOAD], "m").is_ok());
        let err = check_payload(&vec![0; MAX_PAYLOAD + 1], "case `c`, message 3")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("case `c`, message 3")
                && err.contains("8388609 bytes")
                && err.contains("8 MiB"),
            "{err}"
        );
    }
}
