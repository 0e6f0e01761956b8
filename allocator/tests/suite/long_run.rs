//! A long run over Gear's memory as a program has it: 512 pages of 64 KiB, pages from the
//! lowest free run, large blocks mixed in. It asks two things the shorter stress suite (2,048
//! pages, blocks up to 256 KiB) cannot see:
//!
//! - **no refusal while memory is there.** A request may be refused only when what is live
//!   plus what it asks for is more than [`SERVED_LIVE_BYTES`] (why that number: below). A
//!   variant that strands free memory in pages nobody can reuse fails here long before.
//! - **pages go back.** A variant that says it returns pages (`RETURNS_PAGES`) holds at most
//!   [`EMPTY_PAGES`] once every block is freed.
//!
//! Run once per variant feature (`just test` does). `GALLOC_LONG_RUN_OPS` and
//! `GALLOC_LONG_RUN_SEED` override the defaults (5,000,000 ops, seed 15; 20,000 for the
//! never-freeing `bump`, whose memory only grows).

use crate::common::{drive, env_or, message_ops, with_random_align, Mix};
use galloc::source::{HostConfig, WASM_PAGE};
use galloc::variant::{HostAlloc, ID, RETURNS_PAGES, REUSES};
use rand::rngs::SmallRng;
use rand::Rng;
use std::alloc::Layout;

/// Gear's memory: 512 pages (32 MiB).
const MAX_PAGES: u32 = 512;

/// Live bytes below which no request may be refused: half of Gear's memory (16 MiB).
///
/// Why half: `no-buffer` (dlmalloc at its own 64 KiB granularity, the most compact dlmalloc
/// variant) runs this whole sequence without a refusal, and the pages it holds never exceed
/// twice the bytes live (the test prints both). An allocator that needs more than twice the
/// live bytes in pages on this load is stranding memory, so below half the memory, with the
/// request itself counted, every request must be served.
const SERVED_LIVE_BYTES: usize = MAX_PAGES as usize * WASM_PAGE / 2;

/// Pages a variant that returns pages may still hold with nothing live: dlmalloc keeps a free
/// top of up to its trim threshold (2 MiB = 32 pages) before it gives pages back, plus the
/// page its segment record and fences sit on.
const EMPTY_PAGES: u32 = 33;

/// Variants whose pages come back only when dlmalloc trims (still so): dlmalloc releases a
/// segment other than the top one only inside a trim or every 4,095th free of a large chunk,
/// and a free that merges into its "designated victim" chunk counts for neither. With
/// sub-page regions Gear's first-fit hands dlmalloc non-adjacent pages more often, so it holds
/// more segments, and up to ~150 pages can stay with nothing live (`no-buffer`: at most 20 on
/// the same seeds). Gear's next allocator calls `trim(0)` at the end of every message for this.
const HOLDS_UNTIL_TRIMMED: &[&str] = &["granularity-32k", "granularity-16k", "granularity-8k"];

/// Whether the variant is a yardstick known to strand pages on this load, so the test asserts
/// that it still does (a change in either direction then shows). The registry says so
/// (`fails` in `variants/src/lib.rs`), and `lab pick` and the report never recommend it:
/// `gear-next`, the design of Gear's next allocator. Its trims at the end of each message give
/// up the top in 16 KiB steps over a whole-page platform; each trim that ends inside a page
/// leaves the rest of that page to nobody (dlmalloc forgets it, Gear still counts it held),
/// and those pages cut Gear's page space into runs too short for a large block
/// (docs/long-runs.md, "Gear's next allocator").
fn strands_pages(id: &str) -> bool {
    galloc_variants::find(id)
        .ok()
        .and_then(|v| v.fails)
        .is_some_and(|f| f.test.starts_with("allocator/tests/suite/long_run.rs"))
}

/// The load: mostly the small objects contracts make (1–128 B), some buffers up to 4 KiB, and
/// now and then (1 in 1,000) a block of up to 1 MiB; alignments mostly up to 16, up to 4,096.
fn layout(rng: &mut SmallRng) -> Layout {
    let size = match rng.gen_range(0..10_000) {
        0..=8499 => rng.gen_range(1..=128),
        8500..=9989 => rng.gen_range(129..=4096),
        _ => rng.gen_range(4097..=1 << 20),
    };
    with_random_align(rng, size)
}

#[test]
fn long_run_on_gear_memory_refuses_nothing_it_could_serve_and_returns_pages() {
    let ops: u64 = env_or(
        "GALLOC_LONG_RUN_OPS",
        if REUSES { 5_000_000 } else { 20_000 },
    );
    let seed: u64 = env_or("GALLOC_LONG_RUN_SEED", 15);
    let heap = HostAlloc::new(HostConfig {
        max_pages: MAX_PAGES,
        ..HostConfig::default()
    });
    let mix = Mix {
        layout,
        max_live: 5_000,
        message_ops: message_ops(),
    };
    let run = drive(&heap, ops, seed, &mix);
    let peak_pages = heap.pages().map(|p| p.peak_pages());
    eprintln!(
        "long run: variant={ID} seed={seed} ops={ops} time={:.2}s peak_live_bytes={} \
         peak_pages={peak_pages:?} pages_when_empty={:?} refused={}",
        run.elapsed.as_secs_f64(),
        run.peak_live_bytes,
        run.pages_when_empty,
        run.nulls.len(),
    );
    if let Some(first) = run.nulls.first() {
        eprintln!("long run: variant={ID} first refusal {first:?}");
    }
    let wrongly_refused: Vec<_> = run
        .nulls
        .iter()
        .filter(|n| n.live_bytes + n.size <= SERVED_LIVE_BYTES)
        .collect();
    if strands_pages(ID) {
        // The expectation is for the default run; with other settings the figures are printed.
        let defaults = [
            "GALLOC_MESSAGE_OPS",
            "GALLOC_LONG_RUN_OPS",
            "GALLOC_LONG_RUN_SEED",
        ]
        .iter()
        .all(|v| std::env::var_os(v).is_none());
        assert!(
            !defaults || !wrongly_refused.is_empty(),
            "{ID} was expected to refuse requests with memory free (docs/long-runs.md, \"Gear's next \
             allocator\") and refused none: update the README and the registry's `fails` (variants/src/lib.rs)"
        );
        return;
    }
    assert!(
        wrongly_refused.is_empty(),
        "{ID}: {} of {} refusals with at most {SERVED_LIVE_BYTES} bytes live (request \
         included); the first: {:?}",
        wrongly_refused.len(),
        run.nulls.len(),
        wrongly_refused[0],
    );
    if !RETURNS_PAGES {
        return;
    }
    let Some(empty) = run.pages_when_empty else {
        return; // `shipping` off Linux runs on the OS's pages: no Gear pages to count.
    };
    if HOLDS_UNTIL_TRIMMED.contains(&ID) {
        // Pages held by segments dlmalloc has not yet looked at must come back when it is asked:
        // nothing is stranded.
        heap.trim();
        let trimmed = heap.pages().map_or(0, |p| p.pages_in_use());
        eprintln!(
            "long run: variant={ID} held {empty} pages with nothing live, {trimmed} after trim(0)"
        );
        assert!(
            trimmed <= EMPTY_PAGES,
            "{ID} holds {trimmed} pages with nothing live even after trim(0) (at most {EMPTY_PAGES})"
        );
    } else {
        assert!(
            empty <= EMPTY_PAGES,
            "{ID} says it returns pages but holds {empty} with nothing live (at most {EMPTY_PAGES})"
        );
    }
}
