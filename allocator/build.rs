//! Sums the `layout-pad-<bytes>` features into `LAYOUT_PAD` (default 0) so a plain build can be
//! given the same static data size as its probe build. The lab uses it to validate the probe:
//! with equal `__heap_base`, both builds place every heap block at the same address and touch
//! the same pages, so their gas differs by the probe's own work alone; and `lab replay` gives
//! its replay program (a probe build) the `__heap_base` of the contract whose trace it replays.
//! Programs never enable these features.

use std::{env, fs, path::PathBuf};

fn main() {
    let pad: usize = env::vars()
        .filter_map(|(key, _)| {
            key.strip_prefix("CARGO_FEATURE_LAYOUT_PAD_")
                .map(|bytes| bytes.parse::<usize>().expect("layout-pad-<bytes>"))
        })
        .sum();
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(
        out.join("layout_pad.rs"),
        format!("/// Bytes of padding after the allocator's static state.\npub const LAYOUT_PAD: usize = {pad};\n"),
    )
    .expect("write layout_pad.rs");
}
