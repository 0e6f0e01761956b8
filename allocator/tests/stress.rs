//! Seeded randomized stress of the selected variant against a shadow model.
//!
//! Run once per variant feature (`just test` does). Every op is checked: blocks are non-null
//! (the simulated memory is large enough that a null is a bug), aligned, disjoint from every
//! live block; `calloc` memory is zero; `realloc` and `free` find the bytes last written;
//! freed addresses are handed out again. `GALLOC_STRESS_OPS` and `GALLOC_STRESS_SEED`
//! override the defaults (1,000,000 ops, seed 2023; 20,000 ops for the never-freeing `bump`,
//! whose memory only grows).

use galloc::source::HostConfig;
use galloc::variant::{HostAlloc, ID, REUSES};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::alloc::{GlobalAlloc, Layout};
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

const MAX_LIVE: usize = 1_000;

struct Block {
    ptr: *mut u8,
    layout: Layout,
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
struct Shadow {
    by_addr: BTreeMap<usize, usize>,
    live: Vec<Block>,
    live_bytes: usize,
    peak_live_bytes: usize,
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

fn random_layout(rng: &mut SmallRng) -> Layout {
    // Mostly the small objects contracts make, with a tail up to 256 KiB.
    let size = match rng.gen_range(0..100) {
        0..=69 => rng.gen_range(0..=64),
        70..=89 => rng.gen_range(65..=1024),
        90..=97 => rng.gen_range(1025..=16 * 1024),
        _ => rng.gen_range(16 * 1024 + 1..=256 * 1024),
    };
    let align = match rng.gen_range(0..100) {
        0..=84 => 1 << rng.gen_range(0..=3),
        85..=94 => 16,
        _ => 1 << rng.gen_range(5..=12),
    };
    Layout::from_size_align(size, align).expect("valid layout")
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number")),
        Err(_) => default,
    }
}

#[test]
fn randomized_ops_against_a_shadow_model() {
    let ops: u64 = env_or("GALLOC_STRESS_OPS", if REUSES { 1_000_000 } else { 20_000 });
    let seed: u64 = env_or("GALLOC_STRESS_SEED", 2023);
    // Larger than Gear's 512 pages so that fragmentation under this synthetic load never
    // runs the source dry: a null here is an allocator bug.
    let heap = HostAlloc::new(HostConfig {
        max_pages: 2048,
        ..HostConfig::default()
    });
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut shadow = Shadow::default();
    let mut counts = [0u64; 4]; // malloc, calloc, realloc, free
    let mut seen_addrs: HashSet<usize> = HashSet::new();
    let (mut new_blocks, mut reused) = (0u64, 0u64);
    let started = Instant::now();

    for n in 0..ops {
        let full = shadow.live.len() >= MAX_LIVE;
        let roll = if shadow.live.is_empty() {
            0
        } else {
            rng.gen_range(0..100)
        };
        match roll {
            0..=44 if !full => {
                // malloc 35 times in 45, calloc the rest.
                let zeroed = roll >= 35;
                let layout = random_layout(&mut rng);
                // SAFETY: the pointer is checked and owned by the shadow until freed.
                let ptr = unsafe {
                    if zeroed {
                        heap.alloc_zeroed(layout)
                    } else {
                        heap.alloc(layout)
                    }
                };
                assert!(
                    !ptr.is_null(),
                    "op {n}: {layout:?} (zeroed: {zeroed}) returned null"
                );
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
                block.fill(rng.gen_range(1..=255), n);
                reused += u64::from(!seen_addrs.insert(ptr as usize));
                new_blocks += 1;
                shadow.insert(block);
                counts[usize::from(zeroed)] += 1;
            }
            45..=64 => {
                let index = rng.gen_range(0..shadow.live.len());
                let mut block = shadow.remove(index);
                let new_size = random_layout(&mut rng).size();
                // SAFETY: the block is live with this layout; a null keeps it live.
                let ptr = unsafe { heap.realloc(block.ptr, block.layout, new_size) };
                assert!(
                    !ptr.is_null(),
                    "op {n}: realloc to {new_size} returned null"
                );
                block.check(
                    ptr,
                    block.layout.size().min(new_size),
                    "realloc kept contents",
                );
                block.ptr = ptr;
                block.layout = Layout::from_size_align(new_size, block.layout.align()).unwrap();
                block.fill(rng.gen_range(1..=255), n);
                seen_addrs.insert(ptr as usize);
                shadow.insert(block);
                counts[2] += 1;
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
    let elapsed = started.elapsed();

    let reuse_pct = 100.0 * reused as f64 / new_blocks as f64;
    let pages = heap.pages().map(|p| p.peak_pages());
    eprintln!(
        "stress: variant={ID} seed={seed} ops={ops} malloc={} calloc={} realloc={} free={} \
         time={:.2}s peak_live_bytes={} peak_pages={pages:?} reused_addresses={reuse_pct:.1}%",
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        elapsed.as_secs_f64(),
        shadow.peak_live_bytes,
    );
    assert_eq!(counts.iter().sum::<u64>(), ops);
    if !REUSES {
        // A floor that never frees: no address comes back, and the test's bound is memory.
        assert_eq!(reused, 0, "{ID} handed out an address twice");
        return;
    }
    // Freed memory comes back: most new blocks start where an earlier block did.
    assert!(
        reuse_pct > 50.0,
        "only {reuse_pct:.1}% of new blocks reused an address"
    );
    // ...and the heap does not grow without bound: pages stay within a small multiple of
    // the most bytes ever live at once.
    if let Some(peak) = pages {
        let peak_bytes = peak as usize * galloc::source::PAGE_SIZE;
        assert!(
            peak_bytes <= 4 * shadow.peak_live_bytes + (1 << 20),
            "{peak} pages for at most {} live bytes",
            shadow.peak_live_bytes
        );
    }
}
