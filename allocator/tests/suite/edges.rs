//! Edge cases of the selected variant: zero-size and huge requests, running out of pages,
//! static-buffer pointers, the heap-base tail and page release.

use galloc::source::{HostConfig, PageSource, WASM_PAGE};
use galloc::variant::{HostAlloc, CELLS, FRONT_TAKES_TAIL, GRANULARITY, ID, RETURNS_PAGES, REUSES};
use std::alloc::{GlobalAlloc, Layout};

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).expect("valid layout")
}

fn fresh() -> HostAlloc {
    HostAlloc::new(HostConfig::default())
}

#[test]
fn zero_size_requests_get_distinct_aligned_pointers() {
    let heap = fresh();
    let mut blocks = Vec::new();
    for align in [1, 8, 16, 4096] {
        for _ in 0..3 {
            let l = layout(0, align);
            // SAFETY: zero-size requests are served by every variant (documented in heap.rs).
            let p = unsafe { heap.alloc(l) };
            assert!(!p.is_null(), "{ID}: alloc(0, {align})");
            assert_eq!(p as usize % align, 0);
            blocks.push((p, l));
        }
    }
    let mut addrs: Vec<usize> = blocks.iter().map(|(p, _)| *p as usize).collect();
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(
        addrs.len(),
        blocks.len(),
        "{ID}: zero-size blocks share an address"
    );
    // Growing a zero-size block works like a fresh allocation.
    let (p, l) = blocks.pop().unwrap();
    // SAFETY: live block with layout `l`.
    let q = unsafe { heap.realloc(p, l, 100) };
    assert!(!q.is_null() && (q as usize).is_multiple_of(l.align()));
    blocks.push((q, layout(100, l.align())));
    for (p, l) in blocks {
        // SAFETY: live blocks with their layouts.
        unsafe { heap.dealloc(p, l) };
    }
}

#[test]
fn huge_requests_fail_with_null_and_keep_the_old_block() {
    let heap = fresh();
    let mut huge = vec![isize::MAX as usize - 4095, 1 << 40];
    if heap.pages().is_some() {
        // Over simulated Gear memory (512 pages): more than it can ever hold. (`shipping` off
        // Linux runs on the OS's own pages, where these sizes can succeed.)
        huge.extend([u32::MAX as usize, 64 << 20]);
    }
    for &size in &huge {
        for align in [1, 16, 4096] {
            let Ok(l) = Layout::from_size_align(size, align) else {
                continue;
            };
            // SAFETY: a null result is what is tested; nothing is dereferenced.
            unsafe {
                assert!(heap.alloc(l).is_null(), "{ID}: alloc({size:#x}, {align})");
                assert!(
                    heap.alloc_zeroed(l).is_null(),
                    "{ID}: calloc({size:#x}, {align})"
                );
            }
        }
    }
    // A block from dlmalloc (a first large request gives the heap memory), then a small
    // one, which is a buffer cell only while the heap had none: here it comes from dlmalloc.
    let grow_fails_and_keeps = |p: *mut u8, l: Layout| {
        // SAFETY: `p` is live with `l`; failed reallocs leave it live; it is freed once.
        unsafe {
            p.write_bytes(0xab, l.size());
            for &size in &huge {
                assert!(
                    heap.realloc(p, l, size).is_null(),
                    "{ID}: realloc to {size:#x}"
                );
            }
            let bytes = std::slice::from_raw_parts(p, l.size());
            assert!(
                bytes.iter().all(|&b| b == 0xab),
                "{ID}: failed realloc changed the block"
            );
            heap.dealloc(p, l);
        }
    };
    if CELLS.is_some_and(|c| !c.is_empty()) {
        // Our buffer cells too: a failed move must keep the cell. (Not run for `shipping`:
        // gear-dlmalloc 0.2.1 frees the cell and copies it to the null pointer when the new
        // allocation fails — undefined behaviour, so it cannot be exercised here.)
        let cell = layout(8, 8);
        // SAFETY: freed by the closure.
        let p = unsafe { heap.alloc(cell) };
        assert_eq!(heap.in_buffer(p), Some(true));
        grow_fails_and_keeps(p, cell);
    }
    let big = layout(1000, 8);
    // SAFETY: freed at the end.
    let keep = unsafe { heap.alloc(big) };
    // SAFETY: freed by the closure.
    grow_fails_and_keeps(unsafe { heap.alloc(layout(64, 8)) }, layout(64, 8));
    // SAFETY: live block.
    unsafe { heap.dealloc(keep, big) };
    // The heap still works.
    // SAFETY: ordinary request, freed at once.
    unsafe {
        let p = heap.alloc(layout(1000, 8));
        assert!(!p.is_null());
        heap.dealloc(p, layout(1000, 8));
    }
}

#[test]
fn running_out_of_pages_returns_null_and_recovers() {
    let heap = fresh();
    let Some(pages) = heap.pages() else {
        eprintln!("{ID}: skipped: gear-dlmalloc has no page-source hook to run dry");
        return;
    };
    pages.set_budget(8);
    let l = layout(100 * 1024, 8);
    let mut blocks = Vec::new();
    loop {
        // SAFETY: blocks are freed below.
        let p = unsafe { heap.alloc(l) };
        if p.is_null() {
            break;
        }
        blocks.push(p);
        assert!(
            blocks.len() < 16,
            "{ID}: an 8-page budget served {} blocks of 100 KiB",
            blocks.len()
        );
    }
    assert!(!blocks.is_empty() && pages.pages_in_use() <= 8);
    // Small requests still succeed from what is left, and after freeing, big ones do again.
    // SAFETY: a small block, freed at once; then every block above, once.
    unsafe {
        let small = heap.alloc(layout(24, 8));
        assert!(!small.is_null(), "{ID}: small request after running dry");
        heap.dealloc(small, layout(24, 8));
        if !REUSES {
            eprintln!("{ID}: recovery not checked: it never reuses freed memory");
            return;
        }
        for p in blocks.drain(..) {
            heap.dealloc(p, l);
        }
        let again = heap.alloc(l);
        assert!(!again.is_null(), "{ID}: no recovery after freeing");
        heap.dealloc(again, l);
    }
}

#[test]
fn static_buffer_serves_exactly_its_cells_until_the_heap_has_memory() {
    let heap = fresh();
    let Some(cells) = CELLS else {
        eprintln!("{ID}: skipped: no fixed cells to inspect");
        return;
    };
    // Largest class first, so each request can only land in cells of its own class.
    let mut taken = Vec::new();
    for class in cells.iter().rev() {
        for _ in 0..class.count {
            let l = layout(class.size, 8);
            // SAFETY: freed below.
            let p = unsafe { heap.alloc(l) };
            assert_eq!(
                heap.in_buffer(p),
                Some(true),
                "{ID}: {} B request",
                class.size
            );
            taken.push((p, l));
        }
    }
    // The buffer is full (or absent): the next request goes to the heap, which closes it.
    // SAFETY: freed below.
    let spill = unsafe { heap.alloc(layout(8, 8)) };
    assert_eq!(heap.in_buffer(spill), Some(false));
    if let Some(&(cell, l)) = taken.first() {
        // SAFETY: the cell is live; once freed, a new small request must not reuse it.
        unsafe {
            heap.dealloc(cell, l);
            let p = heap.alloc(layout(8, 8));
            assert_eq!(
                heap.in_buffer(p),
                Some(false),
                "{ID}: buffer reopened after heap use"
            );
            heap.dealloc(p, layout(8, 8));
        }
        taken.remove(0);
    }
    // SAFETY: live blocks with their layouts.
    unsafe {
        heap.dealloc(spill, layout(8, 8));
        for (p, l) in taken {
            heap.dealloc(p, l);
        }
    }
}

#[test]
fn buffer_pointers_through_realloc_and_free_keep_their_bytes() {
    // Runs for every variant: for `shipping` the first small blocks are gear-dlmalloc's own
    // buffer cells, unless another test in this process used its global instance first.
    let heap = fresh();
    let l = layout(8, 8);
    // SAFETY: each block is live until freed once; reads stay within written bytes.
    unsafe {
        let a = heap.alloc(l);
        let b = heap.alloc(l);
        a.copy_from(b"abcdefgh".as_ptr(), 8);
        b.copy_from(b"ABCDEFGH".as_ptr(), 8);
        // Shrinking or staying within the cell keeps the pointer.
        let a2 = heap.realloc(a, l, 6);
        if heap.in_buffer(a) == Some(true) {
            assert_eq!(a2, a, "{ID}: realloc within the cell moved it");
        }
        assert_eq!(std::slice::from_raw_parts(a2, 6), b"abcdef");
        // Growing past the cell moves it to the heap with the bytes.
        let b2 = heap.realloc(b, l, 1000);
        assert!(!b2.is_null());
        if CELLS.is_some_and(|c| !c.is_empty()) {
            assert_eq!(
                heap.in_buffer(b),
                Some(true),
                "{ID}: second 8 B request not in buffer"
            );
            assert_eq!(heap.in_buffer(b2), Some(false));
        }
        assert_eq!(std::slice::from_raw_parts(b2, 8), b"ABCDEFGH");
        heap.dealloc(a2, layout(6, 8));
        heap.dealloc(b2, layout(1000, 8));
    }
}

#[test]
fn the_heap_base_tail_is_used_before_any_page() {
    let config = HostConfig::default();
    let heap = HostAlloc::new(config);
    let Some(pages) = heap.pages() else {
        eprintln!("{ID}: skipped: gear-dlmalloc on the OS's pages (not Linux)");
        return;
    };
    if ID == "shipping" {
        // On Gear it does; its Linux layer, which the host build serves, offers none.
        eprintln!("{ID}: skipped: gear-dlmalloc's host layer has no heap-base tail");
        return;
    }
    if FRONT_TAKES_TAIL {
        // On the host the slabs have an arena of their own, the heap behind has no tail.
        eprintln!("{ID}: skipped: the tail is the slab front's (on Gear)");
        return;
    }
    let (base, tail) = (pages.heap_base() as usize, config.heap_tail);
    // Past any buffer cell: the first request dlmalloc serves.
    let l = layout(300, 8);
    // SAFETY: freed at once.
    unsafe {
        let p = heap.alloc(l) as usize;
        assert!(
            (base..base + tail).contains(&p),
            "{ID}: {p:#x} not in the tail at {base:#x}"
        );
        heap.dealloc(p as *mut u8, l);
    }
    // dlmalloc's first region is one granularity: with 64 KiB the tail plus one page form it;
    // a smaller granularity that fits in the tail takes no page at all, nor does an allocator
    // that takes just what a request needs (granularity 1).
    let expected = u32::from(GRANULARITY >= WASM_PAGE || tail < GRANULARITY);
    assert_eq!(
        pages.pages_in_use(),
        expected,
        "{ID}: granularity {GRANULARITY}"
    );
}

#[test]
fn a_page_aligned_heap_base_has_no_tail() {
    let heap = HostAlloc::new(HostConfig {
        heap_tail: 0,
        ..HostConfig::default()
    });
    let Some(pages) = heap.pages() else { return };
    let first_heap_page = pages.page_addr(pages.config().static_pages) as usize;
    let l = layout(300, 8);
    // SAFETY: freed at once.
    unsafe {
        let p = heap.alloc(l) as usize;
        assert!((first_heap_page..first_heap_page + WASM_PAGE).contains(&p));
        heap.dealloc(p as *mut u8, l);
    }
}

#[test]
fn freeing_a_large_block_returns_pages_to_the_source() {
    let heap = fresh();
    let Some(pages) = heap.pages() else {
        eprintln!("{ID}: skipped: gear-dlmalloc's pages cannot be observed on the host");
        return;
    };
    if !RETURNS_PAGES {
        eprintln!("{ID}: skipped: it keeps every page it takes");
        return;
    }
    let l = layout(4 << 20, 8);
    // SAFETY: freed once.
    unsafe {
        let p = heap.alloc(l);
        assert!(!p.is_null());
        let held = pages.pages_in_use();
        assert!(held >= 64, "{held} pages for 4 MiB");
        heap.dealloc(p, l);
    }
    // dlmalloc trims a top chunk above its 2 MiB threshold through `free_part`.
    let after = pages.pages_in_use();
    assert!(
        after < 64,
        "{ID}: {after} pages still held after freeing 4 MiB"
    );
    let (_, frees) = pages.calls();
    assert!(frees >= 1);
}
