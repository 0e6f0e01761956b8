//! Where a message's blocks land, by how long they live: from a trace of
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
        let mut live: BTreeMap<u64, Live> = BTreeMap::new();
        // Per message: the blocks it got (address, size, freed in it), and the pages of the
        // old blocks it freed or resized.
        let mut got: BTreeMap<u64, Vec<(u64, u64, bool)>> = BTreeMap::new();
        let mut old: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
        for r in trace {
            let m = r.message;
            let blocks = got.entry(m).or_default();
            // Takes the block at `at` back in `m`: a temporary if `m` got it, else old in `m`.
            let mut take = |at: u64, blocks: &mut Vec<(u64, u64, bool)>| {
                let block = live.remove(&at)?;
                match block.slot {
                    Some(slot) if block.born == m => blocks[slot].2 = true,
                    _ => old.entry(m).or_default().extend(pages(at, block.size)),
                }
                Some(block)
            };
            match r.op.as_str() {
                "malloc" | "calloc" if r.result != 0 => {
                    blocks.push((r.result, r.size, false));
                    let slot = Some(blocks.len() - 1);
                    live.insert(
                        r.result,
                        Live {
                            size: r.size,
                            born: m,
                            slot,
                        },
                    );
                }
                "free" => {
                    take(r.ptr, blocks);
                }
                "realloc" if r.result != 0 => {
                    let kept = take(r.ptr, blocks).filter(|_| r.result == r.ptr);
                    // Grown or shrunk in place, a block keeps its age; moved, it is new.
                    let born = kept.map_or(m, |b| b.born);
                    let slot = (born == m).then(|| {
                        blocks.push((r.result, r.new_size, false));
                        blocks.len() - 1
                    });
                    live.insert(
                        r.result,
                        Live {
                            size: r.new_size,
                            born,
                            slot,
                        },
                    );
                }
                _ => {}
            }
        }
        let none = BTreeSet::new();
        let mut out = Lifetimes::default();
        for (m, blocks) in &got {
            let (mut temporary, mut kept) = (BTreeSet::new(), BTreeSet::new());
            for &(at, size, freed) in blocks {
                let set = if freed { &mut temporary } else { &mut kept };
                set.extend(pages(at, size));
            }
            let old = old.get(m).unwrap_or(&none);
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

/// A live block: its size, the message that got it, and its place among that message's blocks
/// (`None` for a block grown in place in a later message: it stays its first message's).
struct Live {
    size: u64,
    born: u64,
    slot: Option<usize>,
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
        // A block grown in place in a later message keeps its age: in that message it is an
        // old block resized, not a block kept, and freed later it is old again.
        let grown = [
            call(0, "malloc", 0, 64, 0, p + 16),
            call(1, "realloc", p + 16, 64, 128, p + 16),
            call(2, "free", p + 16, 128, 0, 0),
        ];
        assert_eq!(
            Lifetimes::of(&grown),
            Lifetimes {
                messages: 3,
                temporary: 0,
                kept: 1,
                old: 2,
                temporary_only: 0,
            }
        );
    }
}
