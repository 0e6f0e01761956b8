//! One allocator request, carried out and checked the same way in Wasm (the replay program
//! under fuel) and natively (the replayer): what a replay of a trace does at each step.
//!
//! A request names its block by *slot*, not by address: the driver keeps which address each
//! slot's block got from the allocator under test, so one trace replays on any variant. Every
//! block is filled with a pattern derived from its slot; `realloc` and `free` check the pattern
//! first, so a block that another block overlapped, or that `realloc` failed to carry over,
//! is reported at the request that finds it. New blocks are checked for alignment, `calloc`
//! blocks for zeros.
//!
//! Over 600 lines because its tests are: the code is its first 476 lines, the rest checks every
//! request kind the same way on both sides.
#![cfg_attr(not(feature = "std"), no_std)]

#[cfg(feature = "std")]
pub mod checked;

/// Rust's allocation functions as a [`GlobalAlloc`]: the path a program's `Box` and `Vec` take
/// to the global allocator, for the replay programs.
#[cfg(target_arch = "wasm32")]
pub struct RustAlloc;

#[cfg(target_arch = "wasm32")]
extern crate alloc;

#[cfg(target_arch = "wasm32")]
// SAFETY: forwards to the global allocator with the caller's guarantees.
unsafe impl GlobalAlloc for RustAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees.
        unsafe { alloc::alloc::alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: the caller's guarantees.
        unsafe { alloc::alloc::alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: the caller's guarantees.
        unsafe { alloc::alloc::dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // SAFETY: the caller's guarantees.
        unsafe { alloc::alloc::realloc(p, l, n) }
    }
}

use core::alloc::{GlobalAlloc, Layout};

/// What a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// `alloc(size, align)`.
    Malloc = 0,
    /// `alloc_zeroed(size, align)`.
    Calloc = 1,
    /// `realloc(ptr, Layout(size, align), new_size)`.
    Realloc = 2,
    /// `dealloc(ptr, Layout(size, align))`.
    Free = 3,
}

impl Kind {
    /// Every kind, in the probe's op order.
    pub const ALL: [Kind; 4] = [Kind::Malloc, Kind::Calloc, Kind::Realloc, Kind::Free];

    fn from_u32(v: u32) -> Option<Kind> {
        Kind::ALL.get(v as usize).copied()
    }
}

/// One request, with the address of the block it works on (`realloc`, `free`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub kind: Kind,
    /// The block's slot: its fill pattern.
    pub slot: u32,
    /// The block (`realloc`, `free`); 0 otherwise.
    pub ptr: usize,
    /// The request (`malloc`, `calloc`) or the block's current size (`realloc`, `free`).
    pub size: usize,
    pub align: usize,
    /// `realloc`'s new size; 0 otherwise.
    pub new_size: usize,
}

/// Bytes of an encoded [`Request`]: six little-endian `u32`s (Wasm addresses are 32-bit).
pub const REQUEST_BYTES: usize = 24;
/// Bytes of an encoded [`Done`]: result and fault, two little-endian `u32`s.
pub const DONE_BYTES: usize = 8;

fn word(bytes: &[u8], i: usize) -> u32 {
    let mut w = [0; 4];
    w.copy_from_slice(&bytes[4 * i..4 * i + 4]);
    u32::from_le_bytes(w)
}

impl Request {
    /// The wire form the replay program reads.
    pub fn encode(&self) -> [u8; REQUEST_BYTES] {
        let mut out = [0; REQUEST_BYTES];
        let words = [
            self.kind as u32,
            self.slot,
            self.ptr as u32,
            self.size as u32,
            self.align as u32,
            self.new_size as u32,
        ];
        for (i, w) in words.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Reads [`Request::encode`]'s form; `None` for a wrong length or an unknown kind.
    pub fn decode(bytes: &[u8]) -> Option<Request> {
        if bytes.len() != REQUEST_BYTES {
            return None;
        }
        Some(Request {
            kind: Kind::from_u32(word(bytes, 0))?,
            slot: word(bytes, 1),
            ptr: word(bytes, 2) as usize,
            size: word(bytes, 3) as usize,
            align: word(bytes, 4) as usize,
            new_size: word(bytes, 5) as usize,
        })
    }
}

/// What a check found wrong; `None` when nothing was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Fault {
    None = 0,
    /// The block returned is not aligned as asked.
    Misaligned = 1,
    /// A `calloc` block held a non-zero byte.
    NotZeroed = 2,
    /// The block's bytes were not its own before `realloc` or `free`: something overlapped it.
    Overwritten = 3,
    /// `realloc` returned a block without the old contents.
    NotCarried = 4,
    /// The request itself is invalid (zero size, bad alignment): a bad trace, not a bad
    /// allocator.
    BadRequest = 5,
    /// The block returned overlaps a live block (found at once by the native replayer, which
    /// keeps every live block's extent; in Wasm it shows later as `Overwritten`).
    Overlaps = 6,
}

impl Fault {
    const ALL: [Fault; 7] = [
        Fault::None,
        Fault::Misaligned,
        Fault::NotZeroed,
        Fault::Overwritten,
        Fault::NotCarried,
        Fault::BadRequest,
        Fault::Overlaps,
    ];

    /// From its wire number.
    pub fn from_u32(v: u32) -> Option<Fault> {
        Fault::ALL.get(v as usize).copied()
    }

    /// As reports name it.
    pub fn name(self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::Misaligned => "misaligned block",
            Fault::NotZeroed => "calloc block not zeroed",
            Fault::Overwritten => "block overwritten (overlap)",
            Fault::NotCarried => "realloc lost the contents",
            Fault::BadRequest => "invalid request",
            Fault::Overlaps => "block overlaps a live block",
        }
    }
}

/// What a request did: the block returned (0 for `free` and for a refused request) and what
/// the checks found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    pub result: usize,
    pub fault: Fault,
}

impl Done {
    /// The wire form the replay program replies with.
    pub fn encode(&self) -> [u8; DONE_BYTES] {
        let mut out = [0; DONE_BYTES];
        out[..4].copy_from_slice(&(self.result as u32).to_le_bytes());
        out[4..].copy_from_slice(&(self.fault as u32).to_le_bytes());
        out
    }

    /// Reads [`Done::encode`]'s form.
    pub fn decode(bytes: &[u8]) -> Option<Done> {
        if bytes.len() != DONE_BYTES {
            return None;
        }
        Some(Done {
            result: word(bytes, 0) as usize,
            fault: Fault::from_u32(word(bytes, 1))?,
        })
    }
}

/// The byte at `offset` of slot `slot`'s block: differs between neighbouring slots and along
/// the block, so both an overlap and a shifted copy show.
pub fn pattern(slot: u32, offset: usize) -> u8 {
    let x = slot.wrapping_mul(0x9E37_79B9) ^ (offset as u32).wrapping_mul(0x85EB_CA6B);
    (x ^ (x >> 15) ^ (x >> 24)) as u8
}

// Filling and checking blocks, twice: the same bytes, the same values, written for where each
// runs. In Wasm this code is part of the measured programs (the synthetic cases' gas includes
// it), so it stays as it was measured. On the host it runs under the fuzzer's comparison
// tracing, where a loop step per byte was nine tenths of the fuzzer's time: that version works
// a word at a time and steps straight to the sampled offsets.
#[cfg(target_arch = "wasm32")]
mod sample {
    use super::pattern;

    /// Whether offset `i` of a block of `len` bytes is filled and checked: every byte of a small
    /// block; of a larger one its first and last 128 bytes and every 64th between (where a
    /// misplaced copy or an overlap shows; checking every byte of 256 KiB blocks made fuzzing 20
    /// times slower).
    pub(crate) fn sampled(i: usize, len: usize) -> bool {
        len <= 256 || i < 128 || i + 128 >= len || i.is_multiple_of(64)
    }

    /// Fills the sampled offsets of a block of `len` bytes.
    ///
    /// # Safety
    /// `ptr..ptr + len` must be writable.
    pub(crate) unsafe fn fill(ptr: *mut u8, len: usize, slot: u32) {
        for i in (0..len).filter(|&i| sampled(i, len)) {
            // SAFETY: within the block, per the caller.
            unsafe { ptr.add(i).write(pattern(slot, i)) };
        }
    }

    /// Whether the first `upto` bytes hold what [`fill`] wrote into a block of `len` bytes.
    ///
    /// # Safety
    /// `ptr..ptr + upto` must be readable.
    pub(crate) unsafe fn holds(ptr: *const u8, upto: usize, len: usize, slot: u32) -> bool {
        // SAFETY: within the block, per the caller.
        (0..upto)
            .filter(|&i| sampled(i, len))
            .all(|i| unsafe { ptr.add(i).read() } == pattern(slot, i))
    }

    /// # Safety
    /// `ptr..ptr + len` must be readable.
    pub(crate) unsafe fn zeroed(ptr: *const u8, len: usize) -> bool {
        // SAFETY: within the block, per the caller.
        (0..len)
            .filter(|&i| sampled(i, len))
            .all(|i| unsafe { ptr.add(i).read() } == 0)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod sample {
    use super::pattern;

    /// The sampled offsets below `upto` of a block of `len` bytes, as the rule in the Wasm
    /// version says, in three parts: `0..head`, every 64th of `head..tail`, `tail..end`.
    struct Sampled {
        head: usize,
        tail: usize,
        end: usize,
    }

    impl Sampled {
        fn new(upto: usize, len: usize) -> Sampled {
            let end = upto.min(len);
            let (head, tail) = if len <= 256 {
                (len, len)
            } else {
                (128, len - 128)
            };
            // Every part ends by `end`: the loops below step without overflow checks.
            Sampled {
                head: head.min(end),
                tail: tail.min(end),
                end,
            }
        }
    }

    /// Eight bytes of slot `slot`'s pattern from offset `i`, as a little-endian word.
    #[inline(always)]
    fn pattern_word(slot: u32, i: usize) -> u64 {
        let b = |k: usize| u64::from(pattern(slot, i.wrapping_add(k))) << (8 * k);
        b(0) | b(1) | b(2) | b(3) | b(4) | b(5) | b(6) | b(7)
    }

    // Steps wrap: the fuzz build checks overflow, and each check is a traced comparison
    // (offsets stay far below `usize::MAX`: they are inside a block).

    /// Fills the sampled offsets of a block of `len` bytes.
    ///
    /// # Safety
    /// `ptr..ptr + len` must be writable.
    pub(crate) unsafe fn fill(ptr: *mut u8, len: usize, slot: u32) {
        let s = Sampled::new(len, len);
        let run = |mut i: usize, end: usize| {
            while end.wrapping_sub(i) >= 8 {
                // SAFETY: `i..i + 8` is within the block, per the caller.
                unsafe {
                    ptr.add(i)
                        .cast::<u64>()
                        .write_unaligned(pattern_word(slot, i).to_le())
                };
                i = i.wrapping_add(8);
            }
            while i < end {
                // SAFETY: within the block, per the caller.
                unsafe { ptr.add(i).write(pattern(slot, i)) };
                i = i.wrapping_add(1);
            }
        };
        run(0, s.head);
        let mut i = s.head;
        while i < s.tail {
            // SAFETY: as above.
            unsafe { ptr.add(i).write(pattern(slot, i)) };
            i = i.wrapping_add(64);
        }
        run(s.tail, s.end);
    }

    /// Whether any sampled byte below `upto` of a block of `len` bytes differs from what
    /// `word(i)` / `byte(i)` expect at offset `i`. Differences are gathered and tested once,
    /// not byte by byte.
    ///
    /// # Safety
    /// `ptr..ptr + upto` must be readable.
    #[inline(always)]
    unsafe fn differs(
        ptr: *const u8,
        upto: usize,
        len: usize,
        word: impl Fn(usize) -> u64,
        byte: impl Fn(usize) -> u8,
    ) -> bool {
        let s = Sampled::new(upto, len);
        let mut diff = 0u64;
        let mut run = |mut i: usize, end: usize| {
            while end.wrapping_sub(i) >= 8 {
                // SAFETY: `i..i + 8` is within the first `upto` bytes, per the caller.
                let got = u64::from_le(unsafe { ptr.add(i).cast::<u64>().read_unaligned() });
                diff |= got ^ word(i);
                i = i.wrapping_add(8);
            }
            while i < end {
                // SAFETY: as above.
                diff |= u64::from(unsafe { ptr.add(i).read() } ^ byte(i));
                i = i.wrapping_add(1);
            }
        };
        run(0, s.head);
        run(s.tail, s.end);
        let mut i = s.head;
        while i < s.tail {
            // SAFETY: as above.
            diff |= u64::from(unsafe { ptr.add(i).read() } ^ byte(i));
            i = i.wrapping_add(64);
        }
        diff != 0
    }

    /// Whether the first `upto` bytes hold what [`fill`] wrote into a block of `len` bytes.
    ///
    /// # Safety
    /// `ptr..ptr + upto` must be readable.
    pub(crate) unsafe fn holds(ptr: *const u8, upto: usize, len: usize, slot: u32) -> bool {
        // SAFETY: the caller's.
        !unsafe {
            differs(
                ptr,
                upto,
                len,
                |i| pattern_word(slot, i),
                |i| pattern(slot, i),
            )
        }
    }

    /// # Safety
    /// `ptr..ptr + len` must be readable.
    pub(crate) unsafe fn zeroed(ptr: *const u8, len: usize) -> bool {
        // SAFETY: the caller's.
        !unsafe { differs(ptr, len, len, |_| 0, |_| 0) }
    }
}

use sample::{fill, holds, zeroed};

/// Carries out `r` on `alloc`, checking it.
///
/// # Safety
/// For `realloc` and `free`, `r.ptr` must be a live block of `alloc` with layout
/// `(r.size, r.align)`, filled by an earlier request of the same slot.
pub unsafe fn execute<A: GlobalAlloc>(alloc: &A, r: &Request) -> Done {
    let done = |result: usize, fault| Done { result, fault };
    let Ok(layout) = Layout::from_size_align(r.size, r.align) else {
        return done(0, Fault::BadRequest);
    };
    if r.size == 0 || (r.kind == Kind::Realloc && r.new_size == 0) {
        return done(0, Fault::BadRequest);
    }
    let misaligned = |p: *mut u8| !(p as usize).is_multiple_of(r.align);
    match r.kind {
        Kind::Malloc | Kind::Calloc => {
            // SAFETY: non-zero size, valid layout.
            let p = unsafe {
                if r.kind == Kind::Malloc {
                    alloc.alloc(layout)
                } else {
                    alloc.alloc_zeroed(layout)
                }
            };
            if p.is_null() {
                return done(0, Fault::None);
            }
            if misaligned(p) {
                return done(p as usize, Fault::Misaligned);
            }
            // SAFETY: a fresh block of `size` bytes.
            if r.kind == Kind::Calloc && !unsafe { zeroed(p, r.size) } {
                return done(p as usize, Fault::NotZeroed);
            }
            // SAFETY: as above.
            unsafe { fill(p, r.size, r.slot) };
            done(p as usize, Fault::None)
        }
        Kind::Realloc => {
            let old = r.ptr as *mut u8;
            // SAFETY: a live block of `size` bytes, per the caller.
            if !unsafe { holds(old, r.size, r.size, r.slot) } {
                return done(0, Fault::Overwritten);
            }
            // SAFETY: live block with this layout; non-zero new size.
            let p = unsafe { alloc.realloc(old, layout, r.new_size) };
            if p.is_null() {
                return done(0, Fault::None);
            }
            if misaligned(p) {
                return done(p as usize, Fault::Misaligned);
            }
            let kept = r.size.min(r.new_size);
            // SAFETY: the new block is `new_size` bytes.
            if !unsafe { holds(p, kept, r.size, r.slot) } {
                return done(p as usize, Fault::NotCarried);
            }
            // SAFETY: as above.
            unsafe { fill(p, r.new_size, r.slot) };
            done(p as usize, Fault::None)
        }
        Kind::Free => {
            let p = r.ptr as *mut u8;
            // SAFETY: a live block of `size` bytes, per the caller.
            if !unsafe { holds(p, r.size, r.size, r.slot) } {
                return done(0, Fault::Overwritten);
            }
            // SAFETY: live block with this layout.
            unsafe { alloc.dealloc(p, layout) };
            done(0, Fault::None)
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::alloc::System;
    use std::prelude::rust_2021::*;

    fn request(kind: Kind, slot: u32, ptr: usize, size: usize, new_size: usize) -> Request {
        Request {
            kind,
            slot,
            ptr,
            size,
            align: 8,
            new_size,
        }
    }

    #[test]
    fn requests_and_results_survive_the_wire() {
        let r = request(Kind::Realloc, 7, 0x10_0040, 24, 100);
        assert_eq!(Request::decode(&r.encode()), Some(r));
        assert_eq!(Request::decode(&r.encode()[..20]), None);
        let mut bad = r.encode();
        bad[0] = 9;
        assert_eq!(Request::decode(&bad), None, "unknown kind");
        let d = Done {
            result: 0x10_0040,
            fault: Fault::NotCarried,
        };
        assert_eq!(Done::decode(&d.encode()), Some(d));
    }

    #[test]
    fn a_block_lives_grows_and_dies_checked() {
        unsafe {
            let a = execute(&System, &request(Kind::Calloc, 1, 0, 40, 0));
            assert_eq!(a.fault, Fault::None);
            assert_eq!(a.result % 8, 0);
            let b = execute(&System, &request(Kind::Realloc, 1, a.result, 40, 4000));
            assert_eq!(b.fault, Fault::None);
            let c = execute(&System, &request(Kind::Free, 1, b.result, 4000, 0));
            assert_eq!(
                c,
                Done {
                    result: 0,
                    fault: Fault::None
                }
            );
        }
    }

    #[test]
    fn an_overwritten_block_is_found_before_it_is_freed() {
        unsafe {
            let a = execute(&System, &request(Kind::Malloc, 3, 0, 32, 0));
            // What an overlapping block of another slot would do.
            (a.result as *mut u8).add(8).write_bytes(0x5a, 8);
            let f = execute(&System, &request(Kind::Free, 3, a.result, 32, 0));
            assert_eq!(f.fault, Fault::Overwritten);
            System.dealloc(a.result as *mut u8, Layout::from_size_align(32, 8).unwrap());
        }
    }

    #[test]
    fn an_allocator_that_breaks_its_promises_is_caught() {
        /// Returns blocks one byte off, never zeroes, and forgets contents on realloc.
        struct Broken;
        unsafe impl GlobalAlloc for Broken {
            unsafe fn alloc(&self, l: Layout) -> *mut u8 {
                unsafe {
                    System
                        .alloc(Layout::from_size_align(l.size() + 1, l.align()).unwrap())
                        .add(1)
                }
            }
            unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
                let p = unsafe { System.alloc(l) };
                unsafe { p.write_bytes(0xff, l.size()) };
                p
            }
            unsafe fn dealloc(&self, _: *mut u8, _: Layout) {}
            unsafe fn realloc(&self, _: *mut u8, l: Layout, n: usize) -> *mut u8 {
                unsafe { System.alloc_zeroed(Layout::from_size_align(n, l.align()).unwrap()) }
            }
        }
        unsafe {
            assert_eq!(
                execute(&Broken, &request(Kind::Malloc, 1, 0, 16, 0)).fault,
                Fault::Misaligned
            );
            assert_eq!(
                execute(&Broken, &request(Kind::Calloc, 1, 0, 16, 0)).fault,
                Fault::NotZeroed
            );
            let a = execute(&System, &request(Kind::Malloc, 2, 0, 16, 0));
            let r = execute(&Broken, &request(Kind::Realloc, 2, a.result, 16, 64));
            assert_eq!(r.fault, Fault::NotCarried);
        }
    }

    #[test]
    fn zero_sizes_and_bad_alignments_are_the_trace_s_fault() {
        unsafe {
            assert_eq!(
                execute(&System, &request(Kind::Malloc, 1, 0, 0, 0)).fault,
                Fault::BadRequest
            );
            let mut r = request(Kind::Malloc, 1, 0, 8, 0);
            r.align = 3;
            assert_eq!(execute(&System, &r).fault, Fault::BadRequest);
        }
    }

    #[test]
    fn fill_and_the_checks_work_on_exactly_the_sampled_bytes() {
        // The rule the Wasm version applies offset by offset.
        let rule =
            |i: usize, len: usize| len <= 256 || i < 128 || i + 128 >= len || i.is_multiple_of(64);
        for len in [
            1, 5, 8, 13, 100, 255, 256, 257, 300, 383, 384, 385, 1000, 4096, 65_537,
        ] {
            let mut block = vec![0u8; len + 8];
            unsafe { fill(block.as_mut_ptr(), len, 9) };
            for (i, &b) in block.iter().enumerate() {
                let want = if i < len && rule(i, len) {
                    pattern(9, i)
                } else {
                    0
                };
                assert_eq!(b, want, "len {len}, byte {i}");
            }
            unsafe {
                assert!(holds(block.as_ptr(), len, len, 9));
                assert!(zeroed(vec![0u8; len].as_ptr(), len));
                assert!(!zeroed(block.as_ptr(), len) || (0..len).all(|i| pattern(9, i) == 0));
            }
            // Every sampled byte is checked, and only below `upto`.
            for i in (0..len).filter(|&i| rule(i, len)) {
                block[i] ^= 1;
                unsafe {
                    assert!(!holds(block.as_ptr(), len, len, 9), "len {len}, byte {i}");
                    assert!(holds(block.as_ptr(), i, len, 9), "len {len}, upto {i}");
                }
                let mut zeros = vec![0u8; len];
                zeros[i] = 1;
                assert!(
                    !unsafe { zeroed(zeros.as_ptr(), len) },
                    "len {len}, byte {i}"
                );
                block[i] ^= 1;
            }
        }
    }

    #[test]
    fn neighbouring_slots_and_offsets_differ() {
        let a: std::vec::Vec<u8> = (0..64).map(|i| pattern(1, i)).collect();
        let b: std::vec::Vec<u8> = (0..64).map(|i| pattern(2, i)).collect();
        assert!(a.iter().zip(&b).filter(|(x, y)| x == y).count() < 8);
        assert!(a.windows(2).filter(|w| w[0] == w[1]).count() < 8);
    }
}
