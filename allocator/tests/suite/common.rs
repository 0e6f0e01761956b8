//! The seeded workload driver both randomized suites share (`stress.rs`, `long_run.rs`): a
//! shadow model of the live blocks that checks every result, and one loop of
//! `malloc`/`calloc`/`realloc`/`free` whose request shapes and limits each suite chooses.
//!
//! Every op is checked: blocks are aligned and disjoint from every live block; `calloc` memory
//! is zero; `realloc` and `free` find the bytes last written. A null is not a failure here: it
//! is recorded with the state of the heap when it happened, and each suite decides which nulls
//! are allowed.
use galloc::variant::{HostAlloc, TRIMS_AT_MESSAGE_END};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::alloc::{GlobalAlloc, Layout};
use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

pub struct Block {
    pub ptr: *mut u8,
    pub layout: Layout,
    /// Every byte holds `tag`, except the first 8 (when there are 8) which hold `id`.
    tag: u8,
    id: u64,
}

impl Block {
    fn fill(&mut self, tag: u8, id: u64) {
        self.tag = tag;
        self.id = id;
        // SAFETY: the block is live and `layout.size()` bytes long.
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) };
        bytes.fill(tag);
        if bytes.len() >= 8 {
            bytes[..8].copy_from_slice(&id.to_le_bytes());
        }
    }

    /// Checks the first `len` bytes hold what `fill` wrote.
    fn check(&self, ptr: *const u8, len: usize, what: &str) {
        // SAFETY: the caller passes a live block of at least `len` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
        let full = self.layout.size() >= 8;
        let (head, rest) = bytes.split_at(if full { 8.min(len) } else { 0 });
        if full {
            assert_eq!(
                head,
                &self.id.to_le_bytes()[..head.len()],
                "{what}: id bytes"
            );
        }
        if let Some(bad) = rest.iter().position(|&b| b != self.tag) {
            panic!(
                "{what}: byte {} is {:#x}, expected {:#x}",
                bad + head.len(),
                rest[bad],
                self.tag
            );
        }
    }
}

/// Live blocks by start address (for overlap checks) and in a vector (for random picks).
#[derive(Default)]
pub struct Shadow {
    by_addr: BTreeMap<usize, usize>,
    pub live: Vec<Block>,
    pub live_bytes: usize,
    pub peak_live_bytes: usize,
}

impl Shadow {
    fn insert(&mut self, block: Block) {
        let start = block.ptr as usize;
        // Size-0 blocks still own their address.
        let end = start + block.layout.size().max(1);
        assert_eq!(
            start % block.layout.align(),
            0,
            "alignment of {:?}",
            block.layout
        );
        if let Some((&prev, &prev_end)) = self.by_addr.range(..=start).next_back() {
            assert!(
                prev_end <= start,
                "block {start:#x} overlaps live block {prev:#x}..{prev_end:#x}"
            );
        }
        if let Some((&next, _)) = self.by_addr.range(start + 1..).next() {
            assert!(
                end <= next,
                "block {start:#x}..{end:#x} overlaps live block at {next:#x}"
            );
        }
        self.by_addr.insert(start, end);
        self.live_bytes += block.layout.size();
        self.peak_live_bytes = self.peak_live_bytes.max(self.live_bytes);
        self.live.push(block);
    }

    fn remove(&mut self, index: usize) -> Block {
        let block = self.live.swap_remove(index);
        self.by_addr.remove(&(block.ptr as usize));
        self.live_bytes -= block.layout.size();
        block
    }
}

/// Allocator requests per simulated message, for variants that trim at the end of every
/// message: 8, about what Sails programs make (~7 a message for a fungible token, ~12 for a
/// non-fungible one, as first counted for the lab's Sails work).
pub const MESSAGE_OPS: u64 = 8;

/// Requests per simulated message, if message ends are simulated: [`MESSAGE_OPS`] for a
/// variant that trims at the end of every message (`TRIMS_AT_MESSAGE_END`), none for the
/// others; `GALLOC_MESSAGE_OPS=N` trims every `N` requests whatever the variant (to see what
/// Gear's message-end trim would do to it).
pub fn message_ops() -> Option<u64> {
    match std::env::var("GALLOC_MESSAGE_OPS") {
        Ok(_) => Some(env_or("GALLOC_MESSAGE_OPS", MESSAGE_OPS)),
        Err(_) => TRIMS_AT_MESSAGE_END.then_some(MESSAGE_OPS),
    }
}

/// A workload: how requests are shaped and how many blocks may be live at once.
pub struct Mix {
    pub layout: fn(&mut SmallRng) -> Layout,
    pub max_live: usize,
    /// Requests per simulated message, when message ends are simulated: the heap is trimmed
    /// after every this many ([`message_ops`]).
    pub message_ops: Option<u64>,
}

/// A request the allocator refused, and the heap's state when it did.
// Shown whole (`Debug`) when a suite meets a null it does not allow; which fields a suite reads
// itself depends on the variant.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy)]
pub struct Null {
    pub op: u64,
    pub what: &'static str,
    pub size: usize,
    pub align: usize,
    pub live_bytes: usize,
    pub live_blocks: usize,
    /// Pages handed out by the simulated Gear memory (`None` for `shipping` off Linux).
    pub pages_in_use: Option<u32>,
    /// The longest run of free pages then: the largest request Gear could still serve.
    pub longest_free_run: Option<u32>,
}

/// What a run did.
pub struct Outcome {
    /// malloc, calloc, realloc, free (a refused request counts as made).
    pub counts: [u64; 4],
    pub peak_live_bytes: usize,
    pub new_blocks: u64,
    /// New blocks that start where an earlier block did.
    pub reused: u64,
    pub nulls: Vec<Null>,
    /// Pages in use after every block was freed (`None` for `shipping` off Linux).
    pub pages_when_empty: Option<u32>,
    pub elapsed: Duration,
}

impl Outcome {
    pub fn reuse_pct(&self) -> f64 {
        100.0 * self.reused as f64 / self.new_blocks.max(1) as f64
    }
}

fn state(heap: &HostAlloc, shadow: &Shadow, op: u64, what: &'static str, l: Layout) -> Null {
    Null {
        op,
        what,
        size: l.size(),
        align: l.align(),
        live_bytes: shadow.live_bytes,
        live_blocks: shadow.live.len(),
        pages_in_use: heap.pages().map(|p| p.pages_in_use()),
        longest_free_run: heap.pages().map(|p| p.longest_free_run()),
    }
}

/// Runs `ops` seeded random requests of `mix` on `heap`, checking every result, then frees
/// what is still live. Roughly: 45 % new blocks (malloc 35, calloc 10), 20 % realloc, 35 %
/// free; new blocks are skipped (freed instead) while `max_live` blocks are live.
pub fn drive(heap: &HostAlloc, ops: u64, seed: u64, mix: &Mix) -> Outcome {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut shadow = Shadow::default();
    let mut counts = [0u64; 4];
    let mut seen_addrs: HashSet<usize> = HashSet::new();
    let (mut new_blocks, mut reused) = (0u64, 0u64);
    let mut nulls = Vec::new();
    let started = Instant::now();

    for n in 0..ops {
        if mix
            .message_ops
            .is_some_and(|k| n > 0 && n.is_multiple_of(k))
        {
            heap.trim();
        }
        let full = shadow.live.len() >= mix.max_live;
        let roll = if shadow.live.is_empty() {
            0
        } else {
            rng.gen_range(0..100)
        };
        match roll {
            0..=44 if !full => {
                // malloc 35 times in 45, calloc the rest.
                let zeroed = roll >= 35;
                let layout = (mix.layout)(&mut rng);
                let tag = rng.gen_range(1..=255);
                counts[usize::from(zeroed)] += 1;
                // SAFETY: the pointer is checked and owned by the shadow until freed.
                let ptr = unsafe {
                    if zeroed {
                        heap.alloc_zeroed(layout)
                    } else {
                        heap.alloc(layout)
                    }
                };
                if ptr.is_null() {
                    let what = if zeroed { "calloc" } else { "malloc" };
                    nulls.push(state(heap, &shadow, n, what, layout));
                    continue;
                }
                if zeroed {
                    // SAFETY: live block of `layout.size()` bytes.
                    let bytes = unsafe { std::slice::from_raw_parts(ptr, layout.size()) };
                    assert!(
                        bytes.iter().all(|&b| b == 0),
                        "op {n}: calloc {layout:?} not zeroed"
                    );
                }
                let mut block = Block {
                    ptr,
                    layout,
                    tag: 0,
                    id: 0,
                };
                block.fill(tag, n);
                reused += u64::from(!seen_addrs.insert(ptr as usize));
                new_blocks += 1;
                shadow.insert(block);
            }
            45..=64 => {
                let index = rng.gen_range(0..shadow.live.len());
                let new_size = (mix.layout)(&mut rng).size();
                let tag = rng.gen_range(1..=255);
                counts[2] += 1;
                let mut block = shadow.remove(index);
                // SAFETY: the block is live with this layout; a null keeps it live.
                let ptr = unsafe { heap.realloc(block.ptr, block.layout, new_size) };
                if ptr.is_null() {
                    let asked = Layout::from_size_align(new_size, block.layout.align()).unwrap();
                    // The old block is still live and must still hold its bytes.
                    block.check(block.ptr, block.layout.size(), "refused realloc kept");
                    shadow.insert(block);
                    nulls.push(state(heap, &shadow, n, "realloc", asked));
                    continue;
                }
                block.check(
                    ptr,
                    block.layout.size().min(new_size),
                    "realloc kept contents",
                );
                block.ptr = ptr;
                block.layout = Layout::from_size_align(new_size, block.layout.align()).unwrap();
                block.fill(tag, n);
                seen_addrs.insert(ptr as usize);
                shadow.insert(block);
            }
            _ => {
                let index = rng.gen_range(0..shadow.live.len());
                let block = shadow.remove(index);
                block.check(block.ptr, block.layout.size(), "contents before free");
                // SAFETY: live block with this layout, not used again.
                unsafe { heap.dealloc(block.ptr, block.layout) };
                counts[3] += 1;
            }
        }
    }
    while let Some(block) = shadow.live.pop() {
        block.check(block.ptr, block.layout.size(), "contents at the end");
        // SAFETY: live block with this layout.
        unsafe { heap.dealloc(block.ptr, block.layout) };
    }
    if mix.message_ops.is_some() {
        heap.trim();
    }
    // Gear refuses a `free_range` outside the heap or inverted, and the allocators ignore its
    // answer on Wasm: a refusal is their page arithmetic gone wrong, leaking the range.
    let refused = heap.pages().map_or(0, |p| p.refused_frees());
    assert_eq!(
        refused, 0,
        "{refused} free_range calls Gear would refuse (seed {seed})"
    );
    Outcome {
        counts,
        peak_live_bytes: shadow.peak_live_bytes,
        new_blocks,
        reused,
        nulls,
        pages_when_empty: heap.pages().map(|p| p.pages_in_use()),
        elapsed: started.elapsed(),
    }
}

/// `size` bytes with the alignments programs ask for: mostly 1–8, some 16, a few 32–4,096.
pub fn with_random_align(rng: &mut SmallRng, size: usize) -> Layout {
    let align = match rng.gen_range(0..100) {
        0..=84 => 1 << rng.gen_range(0..=3),
        85..=94 => 16,
        _ => 1 << rng.gen_range(5..=12),
    };
    Layout::from_size_align(size, align).expect("valid layout")
}

pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number")),
        Err(_) => default,
    }
}
