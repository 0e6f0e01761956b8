//! The registry and the allocator's cargo features must name the same variants.

use galloc_variants::{DEFAULT, VARIANTS};
use std::collections::BTreeSet;

/// Allocator features that are not variants, each for a reason.
const NOT_VARIANTS: &[&str] = &[
    "default",     // `shipping`: gstd enables galloc's default features
    "probe",       // orthogonal: wraps whichever variant is selected
    "probe-twin",  // the probe with a meter that reads nothing: the reference it is validated on
    "debug",       // gstd's `debug` forwards here; must not change the allocator
    "gate-canary", // extra work per malloc, for the regression gate's own test
];

/// `layout-pad-<bytes>`: a bit of static padding (the replay program's, to line up heap bases).
fn is_layout_pad(feature: &str) -> bool {
    feature.starts_with("layout-pad-")
}

#[test]
fn registry_matches_allocator_features() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../allocator/Cargo.toml");
    let manifest: toml::Table = std::fs::read_to_string(path)
        .expect("read allocator/Cargo.toml")
        .parse()
        .expect("parse allocator/Cargo.toml");
    let features = manifest["features"].as_table().expect("[features] table");

    let declared: BTreeSet<&str> = features
        .keys()
        .map(String::as_str)
        .filter(|f| !NOT_VARIANTS.contains(f) && !is_layout_pad(f))
        .collect();
    let registered: BTreeSet<&str> = VARIANTS.iter().map(|v| v.feature).collect();
    assert_eq!(
        declared, registered,
        "allocator/Cargo.toml variant features vs variants/src/lib.rs"
    );
    for f in NOT_VARIANTS {
        assert!(features.contains_key(*f), "allocator feature `{f}` missing");
    }
    // The padding bits: every power of two from 16 B, so that every multiple of 16 below
    // 1 MiB has exactly one set of them (the lab's `layout_pad_features`).
    let mut pads: Vec<u32> = features
        .keys()
        .filter(|f| is_layout_pad(f))
        .map(|f| {
            f["layout-pad-".len()..]
                .parse()
                .expect("layout-pad-<bytes>")
        })
        .collect();
    let expected: Vec<u32> = (4..20).map(|k| 1 << k).collect();
    pads.sort_unstable();
    assert_eq!(pads, expected, "galloc's layout-pad-<bytes> features");
    assert_eq!(
        features["default"]
            .as_array()
            .map(|d| d.iter().filter_map(|f| f.as_str()).collect::<Vec<_>>()),
        Some(vec![DEFAULT]),
        "cargo's `default` is the default variant ({DEFAULT}), and only it"
    );
}

#[test]
fn build_script_knows_every_switch() {
    // build.rs selects `shipping` when no feature outside its SWITCHES is on: a switch missing
    // there would read as a variant and turn shipping off.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../allocator/build.rs");
    let source = std::fs::read_to_string(path).expect("read allocator/build.rs");
    let start = source.find("const SWITCHES").expect("SWITCHES in build.rs");
    let list = &source[start..start + source[start..].find(';').expect("end of SWITCHES")];
    let listed: BTreeSet<String> = list
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    let expected: BTreeSet<String> = NOT_VARIANTS
        .iter()
        .chain(&[DEFAULT])
        .map(|f| f.to_uppercase().replace('-', "_"))
        .collect();
    assert_eq!(listed, expected, "allocator/build.rs SWITCHES");
}

#[test]
fn allocator_source_names_the_same_variants() {
    // The compile-time exclusivity check lists every variant feature; one missing there would
    // let two variants be enabled at once unnoticed.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../allocator/src/variant.rs");
    let source = std::fs::read_to_string(path).expect("read allocator/src/variant.rs");
    let start = source
        .find("at_most_one_variant!(\n")
        .expect("exclusivity check");
    let list = &source[start..start + source[start..].find(");").expect("end of list")];
    // The default (`shipping`, on through cargo's `default`) is the one not listed: another
    // variant overrides it rather than clashing with it.
    for v in VARIANTS {
        assert_eq!(
            list.contains(&format!("\"{}\"", v.feature)),
            v.id != DEFAULT,
            "`{}` in at_most_one_variant! in allocator/src/variant.rs: listed iff not the default",
            v.feature
        );
    }
}

#[test]
fn readme_lists_every_variant() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    let readme = std::fs::read_to_string(path).expect("read README.md");
    for v in VARIANTS {
        let row = format!(
            "| `{}` | {} | {} | {} |",
            v.id, v.label, v.origin, v.summary
        );
        assert!(readme.contains(&row), "README.md's variant table lacks or misstates:\n{row}\n(regenerate with `cargo run -p galloc-variants --bin variants -- table`)");
    }
}
