//! Sums the `layout-pad-<bytes>` features into `LAYOUT_PAD` (default 0): static padding that
//! moves the heap base by exactly that much. `lab replay` gives its replay program (a probe
//! build) the `__heap_base` of the contract whose trace it replays, so the allocator sees the
//! same addresses. (The probe is validated against its twin, `probe-twin`, which needs no
//! padding: its statics are the probe build's.) Programs never enable these features.

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
