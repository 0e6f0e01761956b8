//! Where a message's blocks land, by how long they live (issue 59, step 1): from a trace of
//! every allocator call at the linker's layout, the 16 KiB Gear pages each message's blocks
//! are on, summed over the messages. A block got and freed in the same message is a
//! temporary; one got and still live when the message ends is kept; one freed that an earlier
//! message got is old. An allocator that scatters a message's temporaries over more pages, or
//! puts them on pages its kept blocks do not share, makes the message touch more pages.
//!
//! A `realloc` that moves a block frees the old one and gets a new one in this message; one
//! that keeps its address keeps the block's age.

use crate::results::pages::GEAR_PAGE;
use crate::results::trace::TraceRecord;
use std::collections::{BTreeMap, BTreeSet};

/// Pages a run's messages put blocks on, by the blocks' lifetimes, summed over its messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lifetimes {
    /// Messages with at least one allocator call.
    pub messages: usize,
    /// Pages holding a temporary (a block got and freed in the message).
    pub temporary: usize,
    /// Pages holding a block got in the message and live at its end.
    pub kept: usize,
    /// Pages holding a block an earlier message got, freed (or resized) in this one.
    pub old: usize,
    /// Pages holding temporaries and no block of the other two kinds: what the temporaries
    /// alone brought into the message as far as the allocator's blocks say.
    pub temporary_only: usize,
}

fn pages(at: u64, size: u64) -> std::ops::RangeInclusive<u64> {
    let page = u64::from(GEAR_PAGE);
    at / page..=(at + size.max(1) - 1) / page
}

impl Lifetimes {
    /// The lifetimes of the blocks of `trace` (its calls in order, as `results/traces/` has them).
    pub fn of(trace: &[TraceRecord]) -> Lifetimes {
        // Live blocks: address -> (size, the message that got it).
        let mut live: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        // Per message: blocks got (address, size) with whether freed in it, and pages of old
        // blocks freed.
        let mut got: Got = BTreeMap::new();
        let mut old: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
        for r in trace {
            let m = r.message;
            match r.op.as_str() {
                "malloc" | "calloc" if r.result != 0 => {
                    live.insert(r.result, (r.size, m));
                    got.entry(m).or_default().push((r.result, r.size, false));
                }
                "free" => {
                    free(m, r.ptr, &mut live, &mut got, &mut old);
                }
                "realloc" if r.result != 0 => {
                    let born = free(m, r.ptr, &mut live, &mut got, &mut old).unwrap_or(m);
                    let born = if r.result == r.ptr { born } else { m };
                    live.insert(r.result, (r.new_size, born));
                    if born == m {
                        got.entry(m)
                            .or_default()
                            .push((r.result, r.new_size, false));
                    }
                }
                _ => {}
            }
            got.entry(m).or_default();
        }
        let mut out = Lifetimes::default();
        for (m, blocks) in &got {
            let (mut temporary, mut kept) = (BTreeSet::new(), BTreeSet::new());
            for &(at, size, freed) in blocks {
                let set = if freed { &mut temporary } else { &mut kept };
                set.extend(pages(at, size));
            }
            let old = old.get(m).cloned().unwrap_or_default();
            out.messages += 1;
            out.temporary += temporary.len();
            out.kept += kept.len();
            out.old += old.len();
            out.temporary_only += temporary
                .iter()
                .filter(|p| !kept.contains(p) && !old.contains(p))
                .count();
        }
        out
    }
}

/// Blocks got in each message: (address, size, freed in that message).
type Got = BTreeMap<u64, Vec<(u64, u64, bool)>>;

/// Frees the block at `at` in message `m`: a temporary if `m` got it, else its pages are old
/// in `m`. Returns the message that got it, if it was live.
fn free(
    m: u64,
    at: u64,
    live: &mut BTreeMap<u64, (u64, u64)>,
    got: &mut Got,
    old: &mut BTreeMap<u64, BTreeSet<u64>>,
) -> Option<u64> {
    let (size, born) = live.remove(&at)?;
    if born == m {
        if let Some(b) = got
            .entry(m)
            .or_default()
            .iter_mut()
            .rev()
            .find(|(a, s, freed)| *a == at && *s == size && !freed)
        {
            b.2 = true;
        }
    } else {
        old.entry(m).or_default().extend(pages(at, size));
    }
    Some(born)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(
        message: u64,
        op: &str,
        ptr: u64,
        size: u64,
        new_size: u64,
        result: u64,
    ) -> TraceRecord {
        TraceRecord {
            message,
            op: op.into(),
            ptr,
            size,
            align: 1,
            new_size,
            result,
            fuel: 0,
        }
    }

    /// Temporaries, kept and old blocks are told apart by the message that got and freed them,
    /// each page counted once a message, and a block that spans two pages is on both.
    #[test]
    fn blocks_by_lifetime_and_the_pages_they_are_on() {
        let p = u64::from(GEAR_PAGE);
        let trace = [
            // Message 0: a block kept on page 1, a temporary on page 2.
            call(0, "malloc", 0, 64, 0, p + 16),
            call(0, "malloc", 0, 32, 0, 2 * p),
            call(0, "free", 2 * p, 32, 0, 0),
            // Message 1: message 0's block freed (old, page 1); a temporary over pages 3-4
            // grown in place; another on page 1 too.
            call(1, "free", p + 16, 64, 0, 0),
            call(1, "malloc", 0, 16, 0, 4 * p - 8),
            call(1, "realloc", 4 * p - 8, 16, 32, 4 * p - 8),
            call(1, "malloc", 0, 8, 0, p + 128),
            call(1, "free", 4 * p - 8, 32, 0, 0),
            call(1, "free", p + 128, 8, 0, 0),
        ];
        let l = Lifetimes::of(&trace);
        assert_eq!(
            l,
            Lifetimes {
                messages: 2,
                temporary: 1 + 3,
                kept: 1,
                old: 1,
                // Message 0's page 2; message 1's pages 3 and 4 (page 1 has the old block).
                temporary_only: 1 + 2,
            }
        );
    }
}
