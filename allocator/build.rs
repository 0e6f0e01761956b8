//! Sums the `layout-pad-<bytes>` features into `LAYOUT_PAD` (default 0): static padding that
//! moves the heap base by exactly that much. `lab replay` gives its replay program (a probe
//! build) the `__heap_base` of the contract whose trace it replays, so the allocator sees the
//! same addresses. (The probe is validated against its twin, `probe-twin`, which needs no
//! padding: its statics are the probe build's.) Programs never enable these features.
//!
//! Also selects `shipping` (`cfg(galloc_shipping)`) when no other variant feature is on:
//! `shipping` is cargo's default, so it is on in every build through gstd, and another variant
//! feature overrides it.

use std::{env, fs, path::PathBuf};

/// galloc's features that are not variants (the registry, `variants/`, names the variants; its
/// test `features.rs` holds this list to the manifest).
const SWITCHES: &[&str] = &[
    "DEFAULT",
    "SHIPPING",
    "PROBE",
    "PROBE_TWIN",
    "DEBUG",
    "GATE_CANARY",
];

fn main() {
    println!("cargo::rustc-check-cfg=cfg(galloc_shipping)");
    let others: Vec<String> = env::vars()
        .filter_map(|(key, _)| key.strip_prefix("CARGO_FEATURE_").map(str::to_owned))
        .filter(|f| !SWITCHES.contains(&f.as_str()) && !f.starts_with("LAYOUT_PAD_"))
        .collect();
    // The variant features on, as cargo spells them (`STATIC_BUFFER`), for the host tests that
    // hold `variant::ID` (the code behind the feature) to the registry's entry for it.
    println!(
        "cargo::rustc-env=GALLOC_VARIANT_FEATURES={}",
        others.join(",")
    );
    if others.is_empty() {
        assert!(
            env::var_os("CARGO_FEATURE_SHIPPING").is_some(),
            "galloc: no variant feature is on and neither is `shipping` (cargo's default, off \
             through default-features = false): enable `shipping` or one variant feature"
        );
        println!("cargo::rustc-cfg=galloc_shipping");
    }
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
