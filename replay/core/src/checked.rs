//! A whole sequence of requests on one allocator, on the host: every check of
//! [`execute`](crate::execute), plus overlap against every live block at once, with blocks
//! named by slot. The native replayer, the fuzz target and the regression tests all run
//! requests through [`Checked`].

use crate::{execute, Done, Fault, Kind, Request, REQUEST_BYTES};
use core::alloc::GlobalAlloc;
use std::collections::{BTreeMap, HashMap};

/// Requests carried out on `alloc`, with the live blocks they left.
pub struct Checked<'a, A: GlobalAlloc> {
    alloc: &'a A,
    /// Slot -> (address, size, align).
    by_slot: HashMap<u32, (usize, usize, usize)>,
    /// Address -> end, for overlap checks.
    by_addr: BTreeMap<usize, usize>,
}

impl<'a, A: GlobalAlloc> Checked<'a, A> {
    pub fn new(alloc: &'a A) -> Self {
        Checked {
            alloc,
            by_slot: HashMap::new(),
            by_addr: BTreeMap::new(),
        }
    }

    /// Whether `slot` has a live block.
    pub fn is_live(&self, slot: u32) -> bool {
        self.by_slot.contains_key(&slot)
    }

    fn overlaps(&self, start: usize, len: usize) -> bool {
        self.by_addr
            .range(..start + len)
            .next_back()
            .is_some_and(|(_, &end)| end > start)
    }

    fn insert(&mut self, slot: u32, ptr: usize, size: usize, align: usize) {
        self.by_slot.insert(slot, (ptr, size, align));
        self.by_addr.insert(ptr, ptr + size);
    }

    fn remove(&mut self, slot: u32) -> Option<(usize, usize, usize)> {
        let block = self.by_slot.remove(&slot)?;
        self.by_addr.remove(&block.0);
        Some(block)
    }

    /// Carries out `r` (for `realloc` and `free`, on the slot's live block whatever `r.ptr`
    /// says). A slot with no live block gives `BadRequest` and changes nothing.
    pub fn step(&mut self, r: &Request) -> Done {
        let mut r = *r;
        if matches!(r.kind, Kind::Realloc | Kind::Free) {
            let Some((ptr, size, align)) = self.remove(r.slot) else {
                return Done {
                    result: 0,
                    fault: Fault::BadRequest,
                };
            };
            (r.ptr, r.size, r.align) = (ptr, size, align);
        }
        // SAFETY: realloc/free get a live block of this allocator with its layout (above).
        let mut done = unsafe { execute(self.alloc, &r) };
        let size = if r.kind == Kind::Realloc {
            r.new_size
        } else {
            r.size
        };
        let refused = done.result == 0 && done.fault == Fault::None;
        if done.fault == Fault::None && done.result != 0 {
            if self.overlaps(done.result, size) {
                done.fault = Fault::Overlaps;
            } else {
                self.insert(r.slot, done.result, size, r.align);
            }
        } else if refused && r.kind == Kind::Realloc {
            // A refused realloc leaves the old block as it was.
            self.insert(r.slot, r.ptr, r.size, r.align);
        }
        done
    }

    /// Frees every live block (checking each): what is left must still be intact.
    pub fn free_all(&mut self) -> Option<Fault> {
        let mut slots: Vec<u32> = self.by_slot.keys().copied().collect();
        slots.sort_unstable();
        for slot in slots {
            let done = self.step(&Request {
                kind: Kind::Free,
                slot,
                ptr: 0,
                size: 0,
                align: 1,
                new_size: 0,
            });
            if done.fault != Fault::None {
                return Some(done.fault);
            }
        }
        None
    }
}

/// Carries out `requests` in order, stopping after the first fault; one [`Done`] per request
/// carried out.
pub fn run<A: GlobalAlloc>(alloc: &A, requests: &[Request]) -> Vec<Done> {
    let mut checked = Checked::new(alloc);
    let mut out = Vec::with_capacity(requests.len());
    for r in requests {
        let done = checked.step(r);
        out.push(done);
        if done.fault != Fault::None {
            break;
        }
    }
    out
}

/// Encoded requests (as the replayers read them) back to requests; `None` if malformed.
pub fn decode_all(bytes: &[u8]) -> Option<Vec<Request>> {
    if !bytes.len().is_multiple_of(REQUEST_BYTES) {
        return None;
    }
    bytes
        .chunks_exact(REQUEST_BYTES)
        .map(Request::decode)
        .collect()
}

/// Largest block a fuzz input asks for: 256 KiB, four Gear pages.
pub const FUZZ_MAX_SIZE: usize = 256 * 1024;

/// Arbitrary bytes (a fuzzer's input) as a valid request sequence: 4 bytes per request.
/// `realloc` and `free` pick among the slots this sequence has allocated and not freed, as if
/// every allocation succeeded; a slot the allocator refused is skipped when run (see
/// [`fuzz`]). Sizes are mostly small (as contracts ask), sometimes up to
/// [`FUZZ_MAX_SIZE`]; alignments 1 to 4096.
pub fn requests_from_bytes(data: &[u8]) -> Vec<Request> {
    let mut live: Vec<(u32, usize, usize)> = Vec::new();
    let mut next = 0u32;
    let mut out = Vec::with_capacity(data.len() / 4);
    let size_of = |a: u8, b: u8| -> usize {
        let v = u16::from_le_bytes([a, b]) as usize;
        if a & 0xf0 == 0xf0 {
            // One in sixteen is large: up to FUZZ_MAX_SIZE.
            1 + (v * 8) % FUZZ_MAX_SIZE
        } else {
            1 + v % 512
        }
    };
    for c in data.chunks_exact(4) {
        let align = 1usize << (c[3] % 13).min(12);
        let pick = |live: &Vec<(u32, usize, usize)>| c[1] as usize % live.len().max(1);
        match c[0] % 4 {
            k @ (0 | 1) => {
                next += 1;
                let size = size_of(c[1], c[2]);
                let kind = if k == 0 { Kind::Malloc } else { Kind::Calloc };
                live.push((next, size, align));
                out.push(Request {
                    kind,
                    slot: next,
                    ptr: 0,
                    size,
                    align,
                    new_size: 0,
                });
            }
            2 if !live.is_empty() => {
                let i = pick(&live);
                let (slot, size, align) = live[i];
                let new_size = size_of(c[2], c[3]);
                live[i].1 = new_size;
                out.push(Request {
                    kind: Kind::Realloc,
                    slot,
                    ptr: 0,
                    size,
                    align,
                    new_size,
                });
            }
            3 if !live.is_empty() => {
                let (slot, size, align) = live.swap_remove(pick(&live));
                out.push(Request {
                    kind: Kind::Free,
                    slot,
                    ptr: 0,
                    size,
                    align,
                    new_size: 0,
                });
            }
            _ => {}
        }
    }
    out
}

/// A finding: the request index, the request and what was wrong.
#[derive(Debug, PartialEq, Eq)]
pub struct Finding {
    pub index: usize,
    pub request: Option<Request>,
    pub fault: Fault,
}

/// Runs `requests` on `alloc` as the fuzz target does: requests on a slot the allocator
/// refused earlier are skipped (a refusal is allowed; Gear memory is finite), everything else
/// must pass every check, and at the end every live block is freed, checked.
pub fn fuzz<A: GlobalAlloc>(alloc: &A, requests: &[Request]) -> Result<(), Finding> {
    let mut checked = Checked::new(alloc);
    for (index, r) in requests.iter().enumerate() {
        if matches!(r.kind, Kind::Realloc | Kind::Free) && !checked.is_live(r.slot) {
            continue;
        }
        let done = checked.step(r);
        if done.fault != Fault::None {
            return Err(Finding {
                index,
                request: Some(*r),
                fault: done.fault,
            });
        }
    }
    match checked.free_all() {
        None => Ok(()),
        Some(fault) => Err(Finding {
            index: requests.len(),
            request: None,
            fault,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{Layout, System};

    #[test]
    fn any_bytes_make_a_valid_sequence_that_the_system_allocator_passes() {
        let mut seed = 0x2023u64;
        let data: Vec<u8> = (0..12_000)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        let requests = requests_from_bytes(&data);
        assert!(requests.len() > 2_500, "{}", requests.len());
        assert!(requests.iter().any(|r| r.kind == Kind::Realloc));
        assert!(requests.iter().any(|r| r.size > 4096));
        assert_eq!(fuzz(&System, &requests), Ok(()));
    }

    #[test]
    fn an_allocator_that_hands_out_a_live_block_twice_is_caught_at_once() {
        /// Gives the same block to every request of 16 bytes.
        struct Twice(core::cell::Cell<usize>);
        unsafe impl GlobalAlloc for Twice {
            unsafe fn alloc(&self, l: Layout) -> *mut u8 {
                if self.0.get() == 0 {
                    self.0.set(
                        unsafe { System.alloc(Layout::from_size_align(64, 64).unwrap()) } as usize,
                    );
                }
                if l.size() == 16 {
                    self.0.get() as *mut u8
                } else {
                    unsafe { System.alloc(l) }
                }
            }
            unsafe fn dealloc(&self, _: *mut u8, _: Layout) {}
        }
        let twice = Twice(core::cell::Cell::new(0));
        let malloc = |slot| Request {
            kind: Kind::Malloc,
            slot,
            ptr: 0,
            size: 16,
            align: 8,
            new_size: 0,
        };
        let done = run(&twice, &[malloc(1), malloc(2), malloc(3)]);
        assert_eq!(done.len(), 2);
        assert_eq!(done[1].fault, Fault::Overlaps);
    }

    #[test]
    fn requests_on_an_unknown_slot_change_nothing() {
        let mut checked = Checked::new(&System);
        let free = Request {
            kind: Kind::Free,
            slot: 9,
            ptr: 0,
            size: 8,
            align: 8,
            new_size: 0,
        };
        assert_eq!(checked.step(&free).fault, Fault::BadRequest);
        assert_eq!(checked.free_all(), None);
    }
}
