//! The lab's design (variant `lab`): a small coalescing allocator, lowest address first, with
//! its state on the static page and large blocks as Gear's own pages. Designed on the corpus's
//! designed-on half and judged on the held-out half and the default cases (docs/design.md, "The
//! design, re-aimed").
//! Over 600 lines because its tests are: the allocator is its first 523 lines.
//! Why this shape, from what the lab measured (docs/design.md, "The design, re-aimed"): on Gear an
//! allocator costs mostly the 16 KiB pages a message touches and its code bytes (every message
//! pays for every byte of the program), not instructions. So:
//!
//! - **Small code.** One header word a block, boundary tags (a free block's size also in its
//!   last word), segregated free lists with a bitmap: what dlmalloc does for small blocks, in
//!   a fraction of its code, without its trees, segments, footers at region ends or checks.
//! - **Coalescing.** A freed block merges with free neighbours at once. Collections that grow
//!   free their old buffer each time they double; merged, those holes take the next buffers,
//!   so the heap stays on the pages it has. (The first form of this design had size classes
//!   without coalescing: on the DEX program the freed hash tables stranded 7 KB and its heap
//!   reached a 16 KiB page more than shipping's, +8 % gas; docs/design.md, ideas table.)
//! - **Lowest first.** The heap starts in the heap-base tail (the page static data is on,
//!   touched by every message anyway) and grows upward; a freed block next to the top goes
//!   back into the top, so a message's temporaries land where the last message's did.
//! - **Large blocks are Gear's.** Above [`LARGE`] bytes a block is whole 64 KiB pages from the
//!   `alloc` syscall, given back with `free_range` when freed; Gear's page allocator does the
//!   bookkeeping.
//! - **Growing in place.** A growing `realloc` takes the top or a free block after it before
//!   it moves the block: a collection that grows by doubling copies nothing and leaves no
//!   hole behind (without it, `lab` was 3–8 % dearer than shipping on the batches of the scale
//!   cases; docs/design.md, "Step 3").
//! - **Pages go back.** The top keeps at most one page beyond the page it ends in; a region
//!   left behind (the next page was not free) goes back whole once every block in it is free.

use crate::lock::Locked;
use crate::source::{PageSource, WASM_PAGE};
use core::alloc::{GlobalAlloc, Layout};
use core::ptr;

/// A word: the header before every block's bytes.
const W: usize = core::mem::size_of::<usize>();
/// The alignment of every block's bytes, and the step of every block size.
const G: usize = 2 * W;
/// The smallest block: header, two links and the size at its end, once free.
const MIN: usize = 4 * W;
/// Requests above this many bytes are whole pages.
pub const LARGE: usize = 32 * 1024;

/// Alignments above this are whole pages.
const MAX_ALIGN: usize = 4096;

/// Header bits: the block is in use.
const INUSE: usize = 1;
/// The block before this one is in use (or there is none): do not look behind.
const PINUSE: usize = 2;
/// The first block of a region of pages: when it spans the region, the pages go back.
const FIRST: usize = 4;
/// The header at a left-behind region's end: in use, size 0.
const FENCE: usize = INUSE;
const FLAGS: usize = 7;

/// Free lists, by size: two a doubling (`[2^k, 1.5 * 2^k)` and `[1.5 * 2^k, 2^(k+1))`) from
/// the smallest block up to 1 MiB on Wasm (the lists' map is one 32-bit word), the last list
/// also holding everything larger.
const BINS: usize = 32;

const _: () = assert!(G.is_power_of_two() && MIN.is_multiple_of(G) && MIN >= 4 * W);
const _: () = assert!(FLAGS < G && MIN >= 16);
// The largest block asked of the top, with a new region's first header and fence, fits a page.
const _: () = assert!(LARGE + W + G + MAX_ALIGN + MIN + 2 * G <= WASM_PAGE);

/// The list a free block of `size` bytes (at least [`MIN`]) goes on. Any order-keeping map
/// works with [`State::take`]: a block on a later list than a request's is larger than it.
#[inline(never)]
fn bin_of(size: usize) -> usize {
    let log = (usize::BITS - 1 - size.leading_zeros()) as usize;
    (2 * log + ((size >> (log - 1)) & 1) - 8).min(BINS - 1)
}

/// `at` rounded up to `align`, a power of two.
#[inline(always)]
const fn align_up(at: usize, align: usize) -> usize {
    at.wrapping_add(align - 1) & !(align - 1)
}

/// The block a small request of `size` bytes takes: with its header, a whole number of
/// steps, and room for the links once freed.
#[inline(always)]
fn block_size(size: usize) -> usize {
    align_up(size + W, G).max(MIN)
}

/// Whether a request is whole pages, and how many.
#[inline(always)]
fn large_pages(size: usize, align: usize) -> Option<usize> {
    (size > LARGE || align > MAX_ALIGN).then(|| size.div_ceil(WASM_PAGE).max(1))
}

// Blocks are addressed by their bytes `p` (G-aligned); the header is the word before.
#[inline(always)]
unsafe fn head(p: usize) -> usize {
    // SAFETY: the caller's `p` is a block (or the top) of this allocator.
    unsafe { *((p - W) as *const usize) }
}
#[inline(always)]
unsafe fn set_head(p: usize, value: usize) {
    // SAFETY: as `head`.
    unsafe { *((p - W) as *mut usize) = value }
}
#[inline(always)]
unsafe fn word(at: usize) -> usize {
    // SAFETY: the caller's `at` is a word of this allocator's memory.
    unsafe { *(at as *const usize) }
}
#[inline(always)]
unsafe fn set_word(at: usize, value: usize) {
    // SAFETY: as `word`.
    unsafe { *(at as *mut usize) = value }
}

struct State {
    /// The first free block of each list (0: empty); a free block's first two words link the
    /// next and the previous.
    bins: [usize; BINS],
    /// Bit `b`: list `b` is not empty.
    map: u32,
    /// The top: `top..end` (with `top`'s header word before it) is not yet carved; `end` is 0
    /// until the first block is asked for.
    top: usize,
    end: usize,
    /// The first block of the top's region, when that region is pages of its own (0 for the
    /// heap-base tail, which is never given back).
    base: usize,
}

/// The allocator over pages of `S`.
pub struct Compact<S> {
    source: S,
    state: Locked<State>,
}

impl<S> Compact<S> {
    /// An allocator that has handed out nothing yet.
    pub const fn new(source: S) -> Self {
        Compact {
            source,
            state: Locked::new(State {
                bins: [0; BINS],
                map: 0,
                top: 0,
                end: 0,
                base: 0,
            }),
        }
    }
}

impl State {
    /// The head of list `b` (`b < BINS`: [`bin_of`] and a set bit of the map), without the
    /// bounds check every index would otherwise compile a panic path for.
    #[inline(always)]
    fn list(&mut self, b: usize) -> &mut usize {
        debug_assert!(b < BINS);
        // SAFETY: every caller's `b` is below `BINS` (above).
        unsafe { self.bins.get_unchecked_mut(b) }
    }

    /// Puts the free block `p` of `size` bytes on its list, writing its header (its
    /// predecessor is in use: free neighbours are always merged), its last word and the next
    /// block's "predecessor free".
    #[inline(never)]
    unsafe fn link(&mut self, p: usize, size: usize, first: usize) {
        let b = bin_of(size);
        // SAFETY: `p..p + size` is a free block of this allocator, the header before it too.
        unsafe {
            set_head(p, size | PINUSE | first);
            set_word(p + size - 2 * W, size);
            set_head(p + size, head(p + size) & !PINUSE);
            let next = *self.list(b);
            set_word(p, next);
            set_word(p + W, 0);
            if next != 0 {
                set_word(next + W, p);
            }
        }
        *self.list(b) = p;
        self.map |= 1 << b;
    }

    /// Takes the free block `p` of `size` bytes off its list.
    #[inline(never)]
    unsafe fn unlink(&mut self, p: usize, size: usize) {
        let b = bin_of(size);
        // SAFETY: a free block on list `b`; its links are blocks of the same list or 0.
        unsafe {
            let (next, prev) = (word(p), word(p + W));
            if prev == 0 {
                *self.list(b) = next;
                if next == 0 {
                    self.map &= !(1 << b);
                }
            } else {
                set_word(prev, next);
            }
            if next != 0 {
                set_word(next + W, prev);
            }
        }
    }

    /// Makes the `have` bytes at `p` (off the lists, the top not among them) a block in use of
    /// `need` of them, the rest on a list when it can stand alone, else kept in the block.
    #[inline(never)]
    unsafe fn carve(&mut self, p: usize, have: usize, need: usize, flags: usize) {
        // SAFETY: `p..p + have` is this allocator's and no block's; a header follows it.
        unsafe {
            if have - need >= MIN {
                set_head(p, need | INUSE | flags);
                self.link(p + need, have - need, 0);
            } else {
                set_head(p, have | INUSE | flags);
                set_head(p + have, head(p + have) | PINUSE);
            }
        }
    }

    /// A free block of at least `size` bytes off the lists, or 0: the first of the smallest
    /// list's if big enough, else the first of the next non-empty list (each of whose blocks
    /// is).
    #[inline(always)]
    unsafe fn take(&mut self, size: usize) -> usize {
        let b = bin_of(size);
        let first = *self.list(b);
        // SAFETY: list heads are free blocks.
        let p = if first != 0 && unsafe { head(first) } & !FLAGS >= size {
            first
        } else {
            let above = self.map & (!0u32 << b << 1);
            if above == 0 {
                return 0;
            }
            *self.list(above.trailing_zeros() as usize)
        };
        // SAFETY: as above.
        unsafe { self.unlink(p, head(p) & !FLAGS) };
        p
    }
}

impl<S: PageSource> Compact<S> {
    /// A block of `size` bytes at `align`: from the lists, else from the top, else whole
    /// pages when large. It is `alloc` itself: `alloc_zeroed` and `realloc` call that.
    #[inline(always)]
    fn get(&self, size: usize, align: usize) -> *mut u8 {
        if let Some(pages) = large_pages(size, align) {
            return self.pages(pages, align);
        }
        // An alignment above G asks for enough to cut an aligned block out of.
        let need = block_size(size);
        let ask = if align > G { need + align + MIN } else { need };
        self.state.with(|s| {
            // SAFETY: blocks and the top are this allocator's memory; see each step.
            unsafe {
                let mut p = s.take(ask);
                let from_top = p == 0;
                if from_top {
                    if s.top + ask > s.end && !self.grow(s, ask) {
                        return ptr::null_mut();
                    }
                    // From the top: the block before it is in use.
                    p = s.top;
                    let first = if p == s.base { FIRST } else { 0 };
                    set_head(p, ask | PINUSE | first);
                }
                let mut have = head(p) & !FLAGS;
                if align > G {
                    // The front, at least MIN long, back on a list; the block after it.
                    let q = align_up(p + MIN, align);
                    s.link(p, q - p, head(p) & FIRST);
                    have -= q - p;
                    p = q;
                    set_head(p, have);
                }
                let flags = head(p) & (PINUSE | FIRST);
                if from_top {
                    // The top starts where the block ends. An aligned block's rest stays in it:
                    // on a list it would sit free before the next block carved from the top,
                    // which is marked as having a block in use before it, and the two would
                    // never merge (pages held with nothing live).
                    s.top = p + need;
                    set_head(p, need | INUSE | flags);
                } else {
                    s.carve(p, have, need, flags);
                }
                p as *mut u8
            }
        })
    }

    /// Grows the block `p` to `need` bytes where it is: into the top when it ends there and the
    /// top's region has room, or over a free block after it that is large enough. Both are
    /// needed: a collection at the top grows there, one that has moved grows over the hole
    /// its last move left (docs/design.md, "Step 3": with either alone, a 40,000-token
    /// collection's dearest checkpoint was 5–6 % above shipping's, against +0.7 % with both). Inlined into `realloc`, its one
    /// caller, where it costs 42 code bytes fewer than as a call.
    #[inline(always)]
    fn grow_in_place(&self, p: usize, need: usize) -> bool {
        self.state.with(|s| {
            // SAFETY: `p` is a live block; the block after it (or the top) is this allocator's.
            unsafe {
                let h = head(p);
                let size = h & !FLAGS;
                let next = p + size;
                if next == s.top {
                    if p + need > s.end {
                        return false;
                    }
                    s.top = p + need;
                    set_head(p, need | (h & FLAGS));
                    return true;
                }
                let after = head(next);
                let more = after & !FLAGS;
                if after & INUSE != 0 || size + more < need {
                    return false;
                }
                s.unlink(next, more);
                s.carve(p, size + more, need, h & (PINUSE | FIRST));
                true
            }
        })
    }

    /// `pages` whole pages from Gear (page-aligned: an alignment above a page is refused,
    /// as `GlobalAlloc` allows; no Gear program asks for one).
    #[inline(always)]
    fn pages(&self, pages: usize, align: usize) -> *mut u8 {
        if align > WASM_PAGE {
            return ptr::null_mut();
        }
        self.source
            .alloc(pages.min(u32::MAX as usize) as u32)
            .map_or(ptr::null_mut(), |first| self.source.page_addr(first))
    }

    /// Room for `need` bytes at the top: the next pages when they follow the top's region,
    /// else a new region (the old one's rest becoming a free block before a fence).
    #[inline(never)]
    unsafe fn grow(&self, s: &mut State, need: usize) -> bool {
        if s.end == 0 {
            // The first time: the heap-base tail, if there is room in it.
            let (start, len) = crate::source::heap_tail(&self.source, G);
            if len >= 2 * G + MIN {
                (s.top, s.end) = (start as usize + G, start as usize + len);
                if s.top + need <= s.end {
                    return true;
                }
            }
        }
        // Block, the new region's first header and the fence.
        let count = (need + 2 * G).div_ceil(WASM_PAGE);
        let Some(first) = u32::try_from(count).ok().and_then(|n| self.source.alloc(n)) else {
            return false;
        };
        let at = self.source.page_addr(first) as usize;
        if s.end != 0 {
            // Pages extend a region of pages, never the heap-base tail: a region that starts
            // there is never given back, so pages joined to it would stay held for ever.
            if at == s.end && s.base != 0 {
                s.end += count * WASM_PAGE;
                return true;
            }
            // SAFETY: the top's region, this allocator's; see `retire`.
            unsafe { self.retire(s) };
        }
        (s.top, s.base) = (at + G, at + G);
        s.end = at + count * WASM_PAGE;
        true
    }

    /// Leaves the top's region behind: given back if nothing in it is in use, else its rest is
    /// a free block, and a fence ends the region.
    #[inline(always)]
    unsafe fn retire(&self, s: &mut State) {
        if s.top == s.base {
            self.give_back(s.base, s.end - W);
            return;
        }
        let rest = s.end - s.top;
        // SAFETY: `top - W .. end` is this allocator's and not handed out.
        unsafe {
            if rest >= MIN {
                set_head(s.end, FENCE | PINUSE);
                s.link(s.top, rest, 0);
            } else {
                // Too short to be a block: the fence comes early (in the same page), so that
                // nothing in use pins the region.
                set_head(s.top, FENCE | PINUSE);
            }
        }
    }

    /// Gives back the pages of a region from its first block `p` to its fence at `fence`.
    fn give_back(&self, p: usize, fence: usize) {
        let first = self.source.page_of(p as *const u8);
        let last = self.source.page_of(fence as *const u8);
        self.source.free_range(first, last);
    }

    /// Takes back the block `p` of `size` bytes at `align`. It is `dealloc` itself: `realloc`
    /// calls that.
    #[inline(always)]
    fn put(&self, p: *mut u8, size: usize, align: usize) {
        if large_pages(size, align).is_some() {
            // Its pages run to the one its last byte is in (its first, for no bytes).
            let last = self.source.page_of(p.wrapping_add(size.saturating_sub(1)));
            self.source.free_range(self.source.page_of(p), last);
            return;
        }
        self.state.with(|s| {
            // SAFETY: `p` is a live block of this allocator; its neighbours' headers and the
            // last word of a free predecessor are this allocator's too.
            unsafe {
                let mut p = p as usize;
                let mut size = head(p) & !FLAGS;
                let mut first = head(p) & FIRST;
                if head(p) & PINUSE == 0 {
                    let before = word(p - 2 * W);
                    p -= before;
                    size += before;
                    first = head(p) & FIRST;
                    s.unlink(p, before);
                }
                let next = p + size;
                // Into the top; pages more than one past its end go back.
                if next == s.top {
                    s.top = p;
                    let keep = align_up(p, WASM_PAGE) + WASM_PAGE;
                    if keep < s.end {
                        self.give_back(keep, s.end - W);
                        s.end = keep;
                    }
                    return;
                }
                // No free block ends at the top (one that would is the top), so merging with
                // the next block never reaches it.
                let after = head(next);
                if after & INUSE == 0 {
                    let more = after & !FLAGS;
                    s.unlink(next, more);
                    size += more;
                }
                if first != 0 && head(p + size) & !PINUSE == FENCE {
                    // A left-behind region with nothing in use.
                    self.give_back(p, p + size - W);
                    return;
                }
                s.link(p, size, first);
            }
        })
    }
}

// The entry points are never inlined, as the heap's are (see `heap.rs`): the probe then
// measures the very code a plain build runs.
// SAFETY: every block is a distinct range of the heap-base tail or of pages this allocator
// took, aligned as asked, in use until freed (headers say which, and free blocks are only on
// the lists or in the top); a large block is pages of its own, found again from its layout,
// which `GlobalAlloc`'s caller passes back unchanged.
unsafe impl<S: PageSource> GlobalAlloc for Compact<S> {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.get(layout.size(), layout.align())
    }

    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout.
        let block = unsafe { self.alloc(layout) };
        // Free blocks keep their bytes, and so do pages Gear hands out again within a message.
        if !block.is_null() {
            // SAFETY: a fresh block of `layout.size()` bytes.
            unsafe { ptr::write_bytes(block, 0, layout.size()) };
        }
        block
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.put(ptr, layout.size(), layout.align());
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (old, align) = (layout.size(), layout.align());
        let (from, to) = (large_pages(old, align), large_pages(new_size, align));
        if from.is_none() && to.is_none() {
            let need = block_size(new_size);
            // Shrinking, or growing within the block's rounding or in place, keeps it: no
            // copy, no new page touched. Else it moves (into the top when nothing freed fits).
            // SAFETY: `ptr` is a live block: its header is this allocator's.
            if need <= unsafe { head(ptr as usize) } & !FLAGS
                || self.grow_in_place(ptr as usize, need)
            {
                return ptr;
            }
        } else if from == to {
            return ptr;
        }
        // SAFETY: `new_size` rounded up to `align` does not overflow (`realloc`'s contract).
        let new = unsafe { self.alloc(Layout::from_size_align_unchecked(new_size, align)) };
        if !new.is_null() {
            // SAFETY: both blocks are live and distinct; the copy is as long as the shorter;
            // `ptr` is freed once, with its layout.
            unsafe {
                ptr::copy_nonoverlapping(ptr, new, old.min(new_size));
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

impl<S: PageSource> crate::composed::Composed for Compact<S> {
    const GRANULARITY: usize = 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{HostConfig, HostPages};
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    use std::vec::Vec;

    #[test]
    fn lists_keep_the_order_of_sizes() {
        let mut last = 0;
        for size in (MIN..=1 << 20).step_by(G) {
            let b = bin_of(size);
            assert!(b >= last && b < BINS, "{size}");
            last = b;
        }
        assert_eq!(bin_of(MIN), if W == 4 { 0 } else { 2 });
        assert_eq!(bin_of(usize::MAX & !(G - 1)), BINS - 1);
    }

    /// Random requests (small, medium, large, aligned up to 4 KiB) against a shadow of every
    /// live block's bytes; then everything freed, and the pages must be back but the tail's.
    #[test]
    fn random_requests_keep_every_byte_and_give_the_pages_back() {
        let pages = HostPages::new(HostConfig::default());
        let heap = std::boxed::Box::new(Compact::new(pages.clone()));
        let mut rng = SmallRng::seed_from_u64(15);
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        // Under Miri (`just miri`) far fewer: a step is thousands of times slower there, and
        // 2,000 steps took over 15 minutes.
        let steps = if cfg!(miri) { 300 } else { 200_000u32 };
        for step in 0..steps {
            let r: u64 = rng.gen();
            if live.len() < 2_000 && (!r.is_multiple_of(3) || live.is_empty()) {
                let size = match r % 100 {
                    0..=79 => (r >> 8) as usize % 128,
                    80..=98 => (r >> 8) as usize % 8_192,
                    _ => (r >> 8) as usize % 200_000,
                };
                let align = 1 << ((r >> 40) % 13).min(if r.is_multiple_of(50) { 12 } else { 3 });
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a valid layout; the block is freed below, once.
                let p = unsafe {
                    if r & (1 << 60) != 0 {
                        heap.alloc_zeroed(layout)
                    } else {
                        heap.alloc(layout)
                    }
                };
                assert!(
                    !p.is_null() && (p as usize).is_multiple_of(align),
                    "{layout:?}"
                );
                let mark = step as u8;
                // SAFETY: a fresh block of `size` bytes.
                unsafe { ptr::write_bytes(p, mark, size) };
                live.push((p, layout, mark));
            } else {
                let (p, layout, mark) = live.swap_remove((r >> 8) as usize % live.len());
                // SAFETY: a live block of `layout.size()` bytes.
                let bytes = unsafe { core::slice::from_raw_parts(p, layout.size()) };
                assert!(
                    bytes.iter().all(|b| *b == mark),
                    "block {p:?} {layout:?} overwritten"
                );
                if r.is_multiple_of(4) {
                    let new_size = (r >> 20) as usize % 10_000;
                    // SAFETY: a live block with its layout; the new size is valid for it.
                    let q = unsafe { heap.realloc(p, layout, new_size) };
                    assert!(!q.is_null());
                    // SAFETY: the kept bytes, then the whole new block.
                    unsafe {
                        let kept = core::slice::from_raw_parts(q, layout.size().min(new_size));
                        assert!(kept.iter().all(|b| *b == mark));
                        ptr::write_bytes(q, mark, new_size);
                    }
                    live.push((
                        q,
                        Layout::from_size_align(new_size, layout.align()).unwrap(),
                        mark,
                    ));
                } else {
                    // SAFETY: freed once, with its layout.
                    unsafe { heap.dealloc(p, layout) };
                }
            }
        }
        for (p, layout, _) in live.drain(..) {
            // SAFETY: every live block, once.
            unsafe { heap.dealloc(p, layout) };
        }
        // The top keeps the page it ends in and one more.
        assert!(
            pages.pages_in_use() <= 3,
            "{} pages held with nothing live",
            pages.pages_in_use()
        );
    }

    /// Pages held once everything is freed after `requests` (size, align), freed in `order`
    /// (indices into `requests`).
    fn held_after(requests: &[(usize, usize)], order: &[usize]) -> u32 {
        let pages = HostPages::new(HostConfig::default());
        let heap = std::boxed::Box::new(Compact::new(pages.clone()));
        let layouts: Vec<Layout> = requests
            .iter()
            .map(|(size, align)| Layout::from_size_align(*size, *align).unwrap())
            .collect();
        // SAFETY: valid layouts; each block freed once, with its layout.
        let blocks: Vec<*mut u8> = layouts.iter().map(|l| unsafe { heap.alloc(*l) }).collect();
        assert!(blocks.iter().all(|b| !b.is_null()));
        for i in order {
            // SAFETY: as above.
            unsafe { heap.dealloc(blocks[*i], layouts[*i]) };
        }
        pages.pages_in_use()
    }

    /// The smallest case of pages held with nothing live: an aligned block carved from the top left its rest as a free
    /// block ending at the top, and the next block carved was marked as having a block in use
    /// before it, so the two free neighbours never merged and the region stayed held.
    #[test]
    fn an_aligned_blocks_rest_at_the_top_goes_back_into_it() {
        let sizes = |align16: usize| {
            let mut r = std::vec![(32000, 8), (10408, 8)];
            r.extend([(32000, 8); 6]);
            r.extend([(16, align16), (5000, 8), (5000, 8)]);
            r
        };
        let order = [0, 1, 2, 3, 4, 5, 6, 7, 9, 8, 10];
        assert_eq!(held_after(&sizes(8), &order), 2);
        assert_eq!(held_after(&sizes(4096), &order), 2);
    }

    /// A growing `realloc` keeps the block where it is when the top, or a free block after it,
    /// has room (the rest of that block staying free for the next request), and moves it only
    /// when neither has; its bytes go with it every time.
    #[test]
    fn growing_takes_the_top_or_the_free_block_after_it() {
        let pages = HostPages::new(HostConfig::default());
        let heap = std::boxed::Box::new(Compact::new(pages.clone()));
        let l = |n| Layout::from_size_align(n, 8).unwrap();
        let kept = |p: *mut u8| {
            // SAFETY: `p` is live with at least 100 bytes.
            unsafe { core::slice::from_raw_parts(p, 100) }
                .iter()
                .all(|b| *b == 7)
        };
        // SAFETY: every block is live with the layout it is passed with, freed once.
        unsafe {
            let a = heap.alloc(l(100));
            a.write_bytes(7, 100);
            assert_eq!(heap.realloc(a, l(100), 4000), a, "the top");
            let b = heap.alloc(l(2000));
            let c = heap.alloc(l(16));
            heap.dealloc(b, l(2000));
            assert_eq!(heap.realloc(a, l(4000), 5000), a, "the free block after it");
            assert!(kept(a));
            // The free block's rest, after the grown block, takes the next request that fits.
            let d = heap.alloc(l(900));
            assert_eq!(d as usize, a as usize + block_size(5000));
            let moved = heap.realloc(a, l(5000), 9000);
            assert_ne!(moved, a, "a block in use after it");
            assert!(kept(moved));
            for (p, n) in [(moved, 9000), (c, 16), (d, 900)] {
                heap.dealloc(p, l(n));
            }
        }
        assert!(pages.pages_in_use() <= 2);
    }

    /// Random runs with sizes at the edges that matter (the smallest block, list boundaries,
    /// [`LARGE`], Gear's and Wasm's pages) and alignments up to [`MAX_ALIGN`], over heap-base
    /// tails of every kind: at every moment nothing is live, at most the top's page and one
    /// more are held (the bound the test above states at the end), not only at the end.
    #[test]
    fn no_pages_are_held_whenever_nothing_is_live() {
        let edges = [
            1,
            8,
            16,
            24,
            25,
            32,
            48,
            64,
            96,
            100,
            128,
            192,
            256,
            1000,
            4095,
            4096,
            4097,
            10408,
            16383,
            16384,
            16385,
            32000,
            LARGE - W,
            LARGE,
            LARGE + 1,
            65535,
            65536,
            65537,
        ];
        for (seed, tail) in [
            (8u64, 0usize),
            (9, 16),
            (10, 1200),
            (11, 15_000),
            (12, 40_000),
            (13, 65_000),
        ] {
            let config = HostConfig {
                heap_tail: tail,
                ..HostConfig::default()
            };
            let pages = HostPages::new(config);
            let heap = std::boxed::Box::new(Compact::new(pages.clone()));
            let mut rng = SmallRng::seed_from_u64(seed);
            let mut live: Vec<(*mut u8, Layout)> = Vec::new();
            let steps = if cfg!(miri) { 200 } else { 1_000_000u32 };
            for step in 0..steps {
                let r: u64 = rng.gen();
                if live.len() < 64 && (r % 5 < 2 || live.is_empty()) {
                    let edge = edges[(r >> 8) as usize % edges.len()];
                    let size = (edge as i64 + ((r >> 16) % 3) as i64 - 1).max(0) as usize;
                    let align = 1usize << ((r >> 24) % 13);
                    let layout = Layout::from_size_align(size, align).unwrap();
                    // SAFETY: a valid layout; freed below, once.
                    let p = unsafe { heap.alloc(layout) };
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "{layout:?}"
                    );
                    live.push((p, layout));
                } else if r % 5 == 2 {
                    // Grown or shrunk: in place into the top or a free block after it, or
                    // moved; either way nothing may stay held for it once it is freed.
                    let i = (r >> 8) as usize % live.len();
                    let (p, layout) = live[i];
                    let edge = edges[(r >> 32) as usize % edges.len()];
                    // SAFETY: a live block with its layout; the new size is valid for it.
                    let q = unsafe { heap.realloc(p, layout, edge) };
                    assert!(!q.is_null() && (q as usize).is_multiple_of(layout.align()));
                    live[i] = (q, Layout::from_size_align(edge, layout.align()).unwrap());
                } else {
                    let (p, layout) = live.swap_remove((r >> 8) as usize % live.len());
                    // SAFETY: a live block, freed once with its layout.
                    unsafe { heap.dealloc(p, layout) };
                    if live.is_empty() {
                        assert!(
                            pages.pages_in_use() <= 3,
                            "seed {seed}, tail {tail}, step {step}: {} pages held with nothing live",
                            pages.pages_in_use()
                        );
                    }
                }
            }
        }
    }
}
