//! The granules a message touches, kept for the layout model when asked
//! ([`super::WasmtimeBackend::tracing_touches`]): the page log ([`super::pages`]) calls these
//! beside its own counting, so both see the same accesses.

use crate::results::touches::{MessageTouches, Touch, GRANULE};

/// The granules of the running message, and those of the messages before it.
pub(super) struct Granules {
    /// Per granule of memory: 0 if the running message has not touched it, else one more
    /// than its index in `touches`.
    pub(super) index: Vec<u32>,
    pub(super) touches: Vec<Touch>,
    pub(super) done: Vec<MessageTouches>,
}

impl Granules {
    /// The granules of `len` bytes at `addr` that Gear charges for (at or above `from`).
    pub(super) fn of(&self, from: u64, addr: u64, len: u64) -> std::ops::Range<usize> {
        let g = u64::from(GRANULE);
        let first = addr.max(from) / g;
        let end = ((addr + len).div_ceil(g) as usize).min(self.index.len());
        (first as usize).min(end)..end
    }

    pub(super) fn needs(&self, granules: std::ops::Range<usize>, write: bool) -> bool {
        granules.into_iter().any(|g| match self.index[g] {
            0 => true,
            i => write && !self.touches[i as usize - 1].is(Touch::WRITTEN),
        })
    }

    pub(super) fn touch(&mut self, granules: std::ops::Range<usize>, write: bool) {
        for g in granules {
            match self.index[g] {
                0 => {
                    let flags = if write {
                        Touch::FIRST_WRITE | Touch::WRITTEN
                    } else {
                        0
                    };
                    self.touches.push(Touch {
                        granule: g as u32,
                        flags,
                    });
                    self.index[g] = self.touches.len() as u32;
                }
                i if write => self.touches[i as usize - 1].flags |= Touch::WRITTEN,
                _ => {}
            }
        }
    }

    /// Ends the message: `changed` says whether a written granule's bytes differ now.
    pub(super) fn finish(
        &mut self,
        freed: &[std::ops::Range<usize>],
        failed: bool,
        changed: impl Fn(usize) -> bool,
    ) {
        for t in &mut self.touches {
            self.index[t.granule as usize] = 0;
            if !failed && t.is(Touch::WRITTEN) && changed(t.granule as usize) {
                t.flags |= Touch::CHANGED;
            }
        }
        self.done.push(MessageTouches {
            touches: std::mem::take(&mut self.touches),
            freed: freed.iter().map(|r| r.start as u32..r.end as u32).collect(),
            failed,
        });
    }
}
