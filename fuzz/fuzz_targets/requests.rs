//! Any bytes become a valid sequence of `malloc`/`calloc`/`realloc`/`free` requests
//! (`galloc_replay::checked::requests_from_bytes`), carried out on a fresh instance of the
//! variant this target was built with over Gear's simulated memory; every block must be
//! aligned, disjoint from every live block, zeroed by `calloc`, carried over by `realloc` and
//! intact until freed. A refused request is allowed (memory is finite); a fault or a panic in
//! the allocator is a finding.
#![no_main]

use galloc::source::HostConfig;
use galloc::variant::HostAlloc;
use galloc_replay::checked::{fuzz, requests_from_bytes};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let requests = requests_from_bytes(data);
    let heap = HostAlloc::new(HostConfig::default());
    if let Err(finding) = fuzz(&heap, &requests) {
        panic!("{finding:?}");
    }
});
