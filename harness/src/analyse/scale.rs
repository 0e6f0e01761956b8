//! The scale cases against shipping (`just scale`): each checkpoint's gas (the sum of
//! its probe messages) against shipping's at the same layout, each variant's dearest checkpoint,
//! and the messages it refused that shipping served; the batches that grow the state beside
//! them, the same way. The design target reads each variant's standing from here.

use crate::results::trace::TraceRecord;
use crate::results::ScaleRow;
use galloc_variants::REFERENCE;
use std::collections::{BTreeMap, BTreeSet};

/// A variant on the scale cases against shipping at the same checkpoints.
#[derive(Clone, Debug, PartialEq)]
pub struct AtScale {
    /// Its dearest checkpoint against shipping's (percent), and where: case, layout offset and
    /// live heap bytes.
    pub dearest_pct: f64,
    pub dearest_at: (String, u32, u64),
    /// Messages it failed that shipping served.
    pub refused: usize,
}

/// One checkpoint (or the batches before it) of one variant at one layout, against shipping's.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub case: String,
    /// The checkpoint (0 first); for batches, the checkpoint they lead to.
    pub checkpoint: u32,
    pub offset: u32,
    /// Live bytes when the checkpoint's first probe began.
    pub live_bytes: u64,
    /// Gas against shipping's on the same messages, in percent.
    pub pct: f64,
}

/// What the messages are: a checkpoint's probes, or the batches that grow the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Probes,
    Batches,
}

/// One run of a case: its case, variant and layout offset.
type Run<'a> = (&'a str, &'a str, u32);

/// Each variant's changes against shipping on `part`, one per case, checkpoint and layout (a
/// batch counts toward the checkpoint that follows it), in the rows' order; shipping has none.
pub fn changes(rows: &[ScaleRow], part: Part) -> BTreeMap<String, Vec<Change>> {
    // (case, variant, offset, checkpoint) -> gas.
    let mut sums: BTreeMap<(&str, &str, u32, u32), u64> = BTreeMap::new();
    // Batches lead to the checkpoint after them: the next probe's.
    let mut next_checkpoint: BTreeMap<Run, Vec<(u32, u32)>> = BTreeMap::new();
    for r in rows {
        if let Some(c) = r.checkpoint {
            next_checkpoint
                .entry((&r.case, &r.variant, r.offset))
                .or_default()
                .push((r.message, c));
        }
    }
    for r in rows {
        let key = (r.case.as_str(), r.variant.as_str(), r.offset);
        let checkpoint = match (part, r.checkpoint) {
            (Part::Probes, Some(c)) => c,
            (Part::Batches, None) => {
                let Some(&(_, c)) = next_checkpoint
                    .get(&key)
                    .and_then(|probes| probes.iter().find(|(m, _)| *m > r.message))
                else {
                    continue; // batches after the last checkpoint lead nowhere
                };
                c
            }
            _ => continue,
        };
        *sums.entry((key.0, key.1, key.2, checkpoint)).or_default() += r.gas;
    }
    let mut out: BTreeMap<String, Vec<Change>> = BTreeMap::new();
    for (&(case, variant, offset, checkpoint), &gas) in &sums {
        if variant == REFERENCE {
            continue;
        }
        let Some(&reference) = sums.get(&(case, REFERENCE, offset, checkpoint)) else {
            continue;
        };
        // The checkpoint's live bytes are its probes', whatever the part.
        let live_bytes = probe_live(rows, case, offset, checkpoint);
        out.entry(variant.to_owned()).or_default().push(Change {
            case: case.to_owned(),
            checkpoint,
            offset,
            live_bytes,
            pct: 100.0 * (gas as f64 / reference as f64 - 1.0),
        });
    }
    out
}

/// Live bytes when checkpoint `checkpoint` of `case` began (its first probe, shipping's run).
fn probe_live(rows: &[ScaleRow], case: &str, offset: u32, checkpoint: u32) -> u64 {
    rows.iter()
        .filter(|r| {
            r.case == case
                && r.variant == REFERENCE
                && r.offset == offset
                && r.checkpoint == Some(checkpoint)
        })
        .min_by_key(|r| r.message)
        .map_or(0, |r| r.live_bytes)
}

/// Each variant's standing on the scale cases: its dearest checkpoint against shipping over
/// every layout, and the messages it failed that shipping served.
pub fn standing(rows: &[ScaleRow]) -> BTreeMap<String, AtScale> {
    // The messages shipping served: (case, offset, message).
    let served: BTreeSet<(&str, u32, u32)> = rows
        .iter()
        .filter(|r| r.variant == REFERENCE && !r.failed)
        .map(|r| (r.case.as_str(), r.offset, r.message))
        .collect();
    let mut out = BTreeMap::new();
    for (variant, changes) in changes(rows, Part::Probes) {
        let Some(dearest) = changes.iter().max_by(|a, b| a.pct.total_cmp(&b.pct)) else {
            continue;
        };
        let refused = rows
            .iter()
            .filter(|r| r.variant == variant && r.failed)
            .filter(|r| served.contains(&(r.case.as_str(), r.offset, r.message)))
            .count();
        out.insert(
            variant,
            AtScale {
                dearest_pct: dearest.pct,
                dearest_at: (dearest.case.clone(), dearest.offset, dearest.live_bytes),
                refused,
            },
        );
    }
    out
}

/// One variant's changes at one checkpoint of a case, over the layouts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OverLayouts {
    /// Live bytes when the checkpoint began.
    pub live_bytes: u64,
    /// The mean change over the layouts, and the dearest (percent).
    pub mean_pct: f64,
    pub dearest_pct: f64,
}

/// `changes` (one variant's) on `case`, by checkpoint, over the layouts: what the scale page's
/// tables and its chart show.
pub fn over_layouts(changes: &[Change], case: &str) -> BTreeMap<u32, OverLayouts> {
    let mut at: BTreeMap<u32, Vec<&Change>> = BTreeMap::new();
    for c in changes.iter().filter(|c| c.case == case) {
        at.entry(c.checkpoint).or_default().push(c);
    }
    at.into_iter()
        .map(|(checkpoint, cs)| {
            let pcts = cs.iter().map(|c| c.pct);
            let over = OverLayouts {
                live_bytes: cs[0].live_bytes,
                mean_pct: pcts.clone().sum::<f64>() / cs.len() as f64,
                dearest_pct: pcts.fold(f64::NEG_INFINITY, f64::max),
            };
            (checkpoint, over)
        })
        .collect()
}

/// The cases of `rows`, in their order (a run's rows are together).
pub fn cases(rows: &[ScaleRow]) -> Vec<&str> {
    let mut cases: Vec<&str> = rows.iter().map(|r| r.case.as_str()).collect();
    cases.dedup();
    cases
}

/// Bytes the program held live when each of `messages` messages began (`init` first), from the
/// trace of its allocator calls: what it asked for and had not freed.
pub fn live_at_start(trace: &[TraceRecord], messages: usize) -> Vec<u64> {
    let mut change = vec![0i64; messages];
    for r in trace {
        let (size, new_size) = (r.size as i64, r.new_size as i64);
        let delta = match r.op.as_str() {
            "malloc" | "calloc" if r.result != 0 => size,
            "realloc" if r.result != 0 => new_size - size,
            "free" => -size,
            _ => 0,
        };
        if let Some(c) = change.get_mut(r.message as usize) {
            *c += delta;
        }
    }
    let mut held = 0i64;
    change
        .into_iter()
        .map(|c| {
            let at = held.max(0) as u64;
            held += c;
            at
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        variant: &str,
        offset: u32,
        message: u32,
        checkpoint: Option<u32>,
        gas: u64,
    ) -> ScaleRow {
        ScaleRow {
            case: "journal-scale".into(),
            variant: variant.into(),
            offset,
            message,
            checkpoint,
            live_bytes: u64::from(message) * 1000,
            failed: false,
            gas,
        }
    }

    /// A checkpoint is the sum of its probes against shipping's at the same layout; batches
    /// count toward the checkpoint after them; the dearest checkpoint over the layouts is the
    /// standing, and a message failed where shipping's succeeded is a refusal.
    #[test]
    fn checkpoints_against_shipping_and_the_dearest() {
        let mut rows = Vec::new();
        for offset in [0, 4096] {
            // Message 1 a batch, 2 and 3 checkpoint 0, 4 a batch, 5 checkpoint 1.
            for (m, c, ship, lab) in [
                (1, None, 1000, 1100),
                (2, Some(0), 100, 99),
                (3, Some(0), 100, 99),
                (4, None, 1000, 1000),
                (5, Some(1), 100, if offset == 0 { 101 } else { 103 }),
            ] {
                rows.push(row("shipping", offset, m, c, ship));
                rows.push(row("lab", offset, m, c, lab));
            }
        }
        // The second probe of checkpoint 0 begins with less live (the first freed some): the
        // checkpoint's live heap is the first probe's.
        for r in rows.iter_mut().filter(|r| r.message == 3) {
            r.live_bytes = 1500;
        }
        let probes = &changes(&rows, Part::Probes)["lab"];
        assert_eq!(probes.len(), 4);
        assert!((probes[0].pct - (-1.0)).abs() < 1e-9, "{probes:?}");
        assert_eq!(probes[0].live_bytes, 2000, "the first probe's");
        assert!((probes[3].pct - 3.0).abs() < 1e-9);
        let batches = &changes(&rows, Part::Batches)["lab"];
        assert!((batches[0].pct - 10.0).abs() < 1e-9, "{batches:?}");
        assert_eq!(batches[0].live_bytes, 2000, "the checkpoint it leads to");
        assert!(batches[1].pct.abs() < 1e-9);
        let s = &standing(&rows)["lab"];
        assert!((s.dearest_pct - 3.0).abs() < 1e-9);
        assert_eq!(s.dearest_at, ("journal-scale".to_owned(), 4096, 5000));
        assert_eq!(s.refused, 0);
        // A probe lab failed and shipping served.
        rows.iter_mut()
            .find(|r| r.variant == "lab" && r.message == 3)
            .unwrap()
            .failed = true;
        assert_eq!(standing(&rows)["lab"].refused, 1);
    }

    /// Live bytes at each message's start: what was got and not freed before it, a grown
    /// block counting its growth and a refused request nothing.
    #[test]
    fn live_bytes_at_each_message() {
        let call = |message, op: &str, size, new_size, result| TraceRecord {
            message,
            op: op.into(),
            ptr: 8,
            size,
            align: 1,
            new_size,
            result,
            fuel: 0,
        };
        let trace = [
            call(0, "malloc", 100, 0, 8),
            call(1, "realloc", 100, 150, 8),
            call(1, "malloc", 40, 0, 0),
            call(2, "free", 150, 0, 0),
        ];
        assert_eq!(live_at_start(&trace, 4), [0, 100, 150, 0]);
    }
}
