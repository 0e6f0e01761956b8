//! Replay: a trace's allocator requests against any variant, natively (fast, exact overlap
//! checks) and in Wasm under fuel (the replay program, `replay/program`), with the checks of
//! `galloc_replay` at every step.
//!
//! A [`Workload`] names blocks by slot, not address, so one trace replays on every variant:
//! the driver keeps which address each slot's block got in this replay. The observable result
//! of a step is whether the allocator gave a block and whether a check failed; two variants
//! replaying the same workload must observe the same, and the first step where they do not
//! is a divergence.

use crate::results::trace::TraceRecord;
use crate::run::backend::Backend;
use anyhow::{bail, Context, Result};
use galloc_replay::{Done, Fault, Kind, Request, DONE_BYTES};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Requests, grouped by the message they were made in. Each names its block by slot (its
/// allocation, later `realloc`s and `free`); `ptr` is 0, as each replay has its own addresses,
/// and for `realloc`/`free` `size` is the block's size as the trace had it (a replay uses its
/// own record of the block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    pub messages: Vec<Vec<Request>>,
}

/// The name trace files and reports give an op: the probe's own.
pub fn op_name(kind: Kind) -> &'static str {
    galloc::probe::Op::ALL[kind as usize].name()
}

impl Workload {
    /// Every step in order.
    pub fn steps(&self) -> impl Iterator<Item = &Request> {
        self.messages.iter().flatten()
    }

    /// How many steps.
    pub fn len(&self) -> usize {
        self.messages.iter().map(Vec::len).sum()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A recorded trace as a workload: addresses become slots (a `realloc` keeps its slot);
    /// requests the recording's allocator refused stay in, as requests.
    pub fn from_trace(records: &[TraceRecord]) -> Result<Workload> {
        let mut live: HashMap<u64, u32> = HashMap::new();
        let mut next = 0u32;
        let mut messages: Vec<Vec<Request>> = Vec::new();
        let mut current = None;
        for (i, r) in records.iter().enumerate() {
            let Some(kind) = Kind::ALL.into_iter().find(|k| op_name(*k) == r.op) else {
                bail!("trace row {}: unknown op `{}`", i + 1, r.op);
            };
            let slot = match kind {
                Kind::Malloc | Kind::Calloc => {
                    next += 1;
                    if r.result != 0 {
                        live.insert(r.result, next);
                    }
                    next
                }
                Kind::Realloc | Kind::Free => {
                    let Some(&slot) = live.get(&r.ptr) else {
                        bail!(
                            "trace row {}: {} of {:#x}, which no earlier row allocated",
                            i + 1,
                            r.op,
                            r.ptr
                        );
                    };
                    if kind == Kind::Free || r.result != 0 {
                        live.remove(&r.ptr);
                    }
                    if kind == Kind::Realloc && r.result != 0 {
                        live.insert(r.result, slot);
                    }
                    slot
                }
            };
            if current != Some(r.message) {
                messages.push(Vec::new());
                current = Some(r.message);
            }
            messages.last_mut().expect("pushed").push(Request {
                kind,
                slot,
                ptr: 0,
                size: r.size as usize,
                align: r.align as usize,
                new_size: r.new_size as usize,
            });
        }
        Ok(Workload { messages })
    }
}

/// What one step did in a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observed {
    /// Whether the allocator gave a block (always false for `free`).
    pub block: bool,
    pub fault: Fault,
}

impl From<Done> for Observed {
    fn from(d: Done) -> Self {
        Observed {
            block: d.result != 0,
            fault: d.fault,
        }
    }
}

/// A replay's outcome: one observation per step carried out (it stops after a fault), and in
/// Wasm each call's fuel.
#[derive(Clone, Debug, Default)]
pub struct Replayed {
    pub observed: Vec<Observed>,
    /// Per step, the allocator call's calibrated fuel (Wasm replays of probe builds).
    pub fuel: Vec<u64>,
    /// Per step, the block returned (Wasm replays: comparable with a recording's addresses).
    pub results: Vec<usize>,
}

impl Replayed {
    /// The first faulty step, with its index.
    pub fn fault(&self) -> Option<(usize, Fault)> {
        self.observed
            .iter()
            .enumerate()
            .find(|(_, o)| o.fault != Fault::None)
            .map(|(i, o)| (i, o.fault))
    }
}

/// The first step at which two replays of one workload observed differently.
pub fn divergence(a: &Replayed, b: &Replayed) -> Option<usize> {
    let n = a.observed.len().max(b.observed.len());
    (0..n).find(|&i| a.observed.get(i) != b.observed.get(i))
}

/// A block's address and layout in this replay.
type Block = (usize, usize, usize);

/// Turns a step into a request for this replay's blocks. A block made earlier in the same
/// message (`pending`) goes with address 0: the program knows it, the driver not yet. `None`
/// when the slot has no live block (an earlier refusal in this replay that the recording did
/// not have).
fn request(
    step: &Request,
    blocks: &HashMap<u32, Block>,
    pending: &HashSet<u32>,
) -> Option<Request> {
    let (ptr, size, align) = match step.kind {
        Kind::Malloc | Kind::Calloc => return Some(*step),
        Kind::Realloc | Kind::Free if pending.contains(&step.slot) => return Some(*step),
        Kind::Realloc | Kind::Free => *blocks.get(&step.slot)?,
    };
    Some(Request {
        ptr,
        size,
        align,
        ..*step
    })
}

fn record(step: &Request, r: &Request, done: &Done, blocks: &mut HashMap<u32, Block>) {
    if done.fault != Fault::None {
        return;
    }
    match step.kind {
        Kind::Malloc | Kind::Calloc if done.result != 0 => {
            blocks.insert(step.slot, (done.result, r.size, r.align));
        }
        Kind::Realloc if done.result != 0 => {
            blocks.insert(step.slot, (done.result, r.new_size, r.align));
        }
        Kind::Free => {
            blocks.remove(&step.slot);
        }
        _ => {}
    }
}

/// Replays `w` on the replay program `code` (a probe build) on `backend`: one message per
/// message of the workload (split at the program's limit), each call's fuel from the probe's
/// records.
pub fn in_wasm(backend: &mut dyn Backend, code: &[u8], w: &Workload) -> Result<Replayed> {
    const USER: u64 = 1;
    let (program, init) = backend.deploy(code, USER, &[])?;
    if init.failed {
        bail!("the replay program's init failed");
    }
    let mut blocks: HashMap<u32, Block> = HashMap::new();
    let mut out = Replayed::default();
    for message in &w.messages {
        for chunk in message.chunks(lab_replay::MAX_REQUESTS) {
            let mut requests = Vec::with_capacity(chunk.len());
            let mut pending = HashSet::new();
            for step in chunk {
                let Some(r) = request(step, &blocks, &pending) else {
                    out.observed.push(Observed {
                        block: false,
                        fault: Fault::BadRequest,
                    });
                    return Ok(out);
                };
                if matches!(step.kind, Kind::Malloc | Kind::Calloc) {
                    pending.insert(step.slot);
                }
                requests.push(r);
            }
            let payload: Vec<u8> = requests.iter().flat_map(|r| r.encode()).collect();
            let outcome = backend.send(program, USER, &payload)?;
            if outcome.failed {
                bail!(
                    "the replay program failed at step {} (a trap inside the allocator?)",
                    out.observed.len()
                );
            }
            if outcome.reply.len() != chunk.len() * DONE_BYTES {
                bail!(
                    "the replay program answered {} bytes for {} requests",
                    outcome.reply.len(),
                    chunk.len()
                );
            }
            let mut calls = outcome.ops.iter();
            for ((step, r), bytes) in chunk
                .iter()
                .zip(&requests)
                .zip(outcome.reply.chunks_exact(DONE_BYTES))
            {
                let done = Done::decode(bytes).context("the replay program's answer")?;
                // Checks that fail before the call (a block found overwritten) make none.
                if !(done.fault == Fault::Overwritten || done.fault == Fault::BadRequest) {
                    out.fuel.push(calls.next().map_or(0, |c| c.cost));
                }
                record(step, r, &done, &mut blocks);
                out.results.push(done.result);
                out.observed.push(done.into());
                if done.fault != Fault::None {
                    return Ok(out);
                }
            }
        }
    }
    Ok(out)
}

/// Replays `w` with the native replayer `binary` (built for one variant); returns the replay
/// and the nanoseconds its requests took.
pub fn natively(binary: &Path, w: &Workload, scratch: &Path) -> Result<(Replayed, u128)> {
    std::fs::create_dir_all(scratch)?;
    let input = scratch.join("requests.bin");
    let output = scratch.join("results.bin");
    let bytes: Vec<u8> = w.steps().flat_map(Request::encode).collect();
    std::fs::write(&input, bytes)?;
    let out = std::process::Command::new(binary)
        .arg(&input)
        .arg(&output)
        .output()
        .with_context(|| format!("running {}", binary.display()))?;
    if !out.status.success() {
        bail!(
            "{} failed ({}): {}",
            binary.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let nanos: u128 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .context("the native replayer's time")?;
    let results = std::fs::read(&output)?;
    let observed = results
        .chunks_exact(DONE_BYTES)
        .map(|b| Done::decode(b).map(Observed::from))
        .collect::<Option<Vec<_>>>()
        .context("the native replayer's results")?;
    Ok((
        Replayed {
            observed,
            ..Replayed::default()
        },
        nanos,
    ))
}

/// The smallest sub-workload (whole slots removed at a time, order kept) on which `fails`
/// still holds: delta debugging over slots. `fails(w)` must hold for `w` itself.
pub fn shrink(w: &Workload, mut fails: impl FnMut(&Workload) -> Result<bool>) -> Result<Workload> {
    let mut slots: Vec<u32> = Vec::new();
    for s in w.steps() {
        if !slots.contains(&s.slot) {
            slots.push(s.slot);
        }
    }
    let keep = |kept: &[u32]| Workload {
        messages: vec![w
            .steps()
            .filter(|s| kept.contains(&s.slot))
            .copied()
            .collect()],
    };
    let mut n = 2;
    while slots.len() >= 2 {
        let chunk = slots.len().div_ceil(n);
        let mut reduced = None;
        for i in 0..slots.len().div_ceil(chunk) {
            let without: Vec<u32> = slots
                .iter()
                .enumerate()
                .filter(|(j, _)| j / chunk != i)
                .map(|(_, s)| *s)
                .collect();
            if without.len() < slots.len() && fails(&keep(&without))? {
                reduced = Some(without);
                break;
            }
        }
        match reduced {
            Some(smaller) => {
                slots = smaller;
                n = (n - 1).max(2);
            }
            None if n >= slots.len() => break,
            None => n = (n * 2).min(slots.len()),
        }
    }
    Ok(keep(&slots))
}

/// A workload written as a trace file (`results/traces/README.md`'s columns; addresses are
/// slot numbers, fuel 0), so a shrunk failure can be replayed and kept as a test.
pub fn write_trace(path: &Path, w: &Workload) -> Result<()> {
    let rows: Vec<TraceRecord> = w
        .messages
        .iter()
        .enumerate()
        .flat_map(|(m, steps)| {
            steps.iter().map(move |s| {
                let block = u64::from(s.slot) * 16;
                let (ptr, result) = match s.kind {
                    Kind::Malloc | Kind::Calloc => (0, block),
                    Kind::Realloc => (block, block),
                    Kind::Free => (block, 0),
                };
                TraceRecord {
                    message: m as u64,
                    op: op_name(s.kind).into(),
                    ptr,
                    size: s.size as u64,
                    align: s.align as u64,
                    new_size: s.new_size as u64,
                    result,
                    fuel: 0,
                }
            })
        })
        .collect();
    crate::results::write_csv(path, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(message: u64, op: &str, ptr: u64, size: u64, new_size: u64, result: u64) -> TraceRecord {
        TraceRecord {
            message,
            op: op.into(),
            ptr,
            size,
            align: 8,
            new_size,
            result,
            fuel: 7,
        }
    }

    #[test]
    fn a_trace_becomes_slots_that_follow_their_blocks() {
        let trace = [
            row(0, "malloc", 0, 16, 0, 0x100),
            row(0, "malloc", 0, 32, 0, 0x200),
            row(1, "realloc", 0x100, 16, 64, 0x300),
            row(1, "free", 0x200, 32, 0, 0),
            // The address 0x200 comes back for a new block: a new slot.
            row(2, "calloc", 0, 8, 0, 0x200),
            row(2, "free", 0x300, 64, 0, 0),
        ];
        let w = Workload::from_trace(&trace).unwrap();
        let slots: Vec<(Kind, u32)> = w.steps().map(|s| (s.kind, s.slot)).collect();
        assert_eq!(
            slots,
            [
                (Kind::Malloc, 1),
                (Kind::Malloc, 2),
                (Kind::Realloc, 1),
                (Kind::Free, 2),
                (Kind::Calloc, 3),
                (Kind::Free, 1)
            ]
        );
        assert_eq!(w.messages.len(), 3);
        let e = Workload::from_trace(&[row(0, "free", 0x40, 8, 0, 0)]).unwrap_err();
        assert!(e.to_string().contains("no earlier row allocated"), "{e}");
    }

    #[test]
    fn shrinking_keeps_only_the_slots_the_failure_needs() {
        let mut trace = Vec::new();
        for i in 0..40u64 {
            trace.push(row(0, "malloc", 0, 8 + i, 0, 0x1000 + 0x100 * i));
        }
        for i in 0..40u64 {
            trace.push(row(1, "free", 0x1000 + 0x100 * i, 8 + i, 0, 0));
        }
        let w = Workload::from_trace(&trace).unwrap();
        // "Fails" whenever slots 7 and 31 are both present.
        let needs = |w: &Workload| {
            let has = |slot| w.steps().any(|s| s.slot == slot);
            Ok(has(7) && has(31))
        };
        let small = shrink(&w, needs).unwrap();
        let slots: Vec<u32> = small.steps().map(|s| s.slot).collect();
        assert_eq!(slots, [7, 31, 7, 31]);
    }

    #[test]
    fn a_written_trace_reads_back_as_the_same_workload() {
        let w = Workload::from_trace(&[
            row(0, "malloc", 0, 16, 0, 0x100),
            row(0, "realloc", 0x100, 16, 48, 0x180),
            row(1, "free", 0x180, 48, 0, 0),
        ])
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        write_trace(&path, &w).unwrap();
        let back = Workload::from_trace(&crate::results::trace::read(&path).unwrap()).unwrap();
        assert_eq!(back, w);
    }

    #[test]
    fn divergence_is_the_first_step_observed_differently() {
        let ok = Observed {
            block: true,
            fault: Fault::None,
        };
        let a = Replayed {
            observed: vec![ok, ok, ok],
            ..Replayed::default()
        };
        let mut b = a.clone();
        assert_eq!(divergence(&a, &b), None);
        b.observed[1].block = false;
        assert_eq!(divergence(&a, &b), Some(1));
        b.observed.truncate(1);
        assert_eq!(divergence(&a, &b), Some(1));
    }
}
