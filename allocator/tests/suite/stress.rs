//! Seeded randomized stress of the selected variant against a shadow model.
//!
//! Run once per variant feature (`just test` does). Every op is checked: blocks are non-null
//! (the simulated memory is large enough that a null is a bug), aligned, disjoint from every
//! live block; `calloc` memory is zero; `realloc` and `free` find the bytes last written;
//! freed addresses are handed out again. `GALLOC_STRESS_OPS` and `GALLOC_STRESS_SEED`
//! override the defaults (1,000,000 ops, seed 2023; 20,000 ops for the never-freeing `bump`,
//! whose memory only grows).

use crate::common::{drive, env_or, message_ops, with_random_align, Mix};
use galloc::source::HostConfig;
use galloc::variant::{HostAlloc, ID, REUSES};
use rand::rngs::SmallRng;
use rand::Rng;
use std::alloc::Layout;

fn random_layout(rng: &mut SmallRng) -> Layout {
    // Mostly the small objects contracts make, with a tail up to 256 KiB.
    let size = match rng.gen_range(0..100) {
        0..=69 => rng.gen_range(0..=64),
        70..=89 => rng.gen_range(65..=1024),
        90..=97 => rng.gen_range(1025..=16 * 1024),
        _ => rng.gen_range(16 * 1024 + 1..=256 * 1024),
    };
    with_random_align(rng, size)
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
    let mix = Mix {
        layout: random_layout,
        max_live: 1_000,
        message_ops: message_ops(),
    };
    let run = drive(&heap, ops, seed, &mix);
    assert!(run.nulls.is_empty(), "{ID}: refused {:?}", run.nulls[0]);
    let counts = run.counts;
    let reuse_pct = run.reuse_pct();
    let pages = heap.pages().map(|p| p.peak_pages());
    eprintln!(
        "stress: variant={ID} seed={seed} ops={ops} malloc={} calloc={} realloc={} free={} \
         time={:.2}s peak_live_bytes={} peak_pages={pages:?} reused_addresses={reuse_pct:.1}%",
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        run.elapsed.as_secs_f64(),
        run.peak_live_bytes,
    );
    assert_eq!(counts.iter().sum::<u64>(), ops);
    if !REUSES {
        // A floor that never frees: no address comes back, and the test's bound is memory.
        assert_eq!(run.reused, 0, "{ID} handed out an address twice");
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
        let peak_bytes = peak as usize * galloc::source::WASM_PAGE;
        assert!(
            peak_bytes <= 4 * run.peak_live_bytes + (1 << 20),
            "{peak} pages for at most {} live bytes",
            run.peak_live_bytes
        );
    }
}
