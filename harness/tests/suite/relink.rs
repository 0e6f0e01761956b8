//! A layout point re-linked from the plain build's kept link is the point cargo builds: the
//! same module, byte for byte after Gear's post-processing (the raw files differ only in the
//! module's name, which cargo derives from its arguments and the post-processing strips).

use galloc_lab::build::artifact::{build, BuildRequest, PostProcess};
use galloc_lab::build::relink::{stash_of, Stash};
use galloc_lab::build::workspace::Workspace;

#[test]
fn a_relinked_layout_point_is_the_point_cargo_builds() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).expect("workspace");
    let variant = galloc_variants::find("static-buffer").expect("a variant");
    // A configuration of this test's own (a padding no run uses), so that no other test
    // builds it, or its stash, while this one moves files aside.
    let plain = BuildRequest {
        package: "lab-nft",
        variant,
        probe: false,
        post: PostProcess::Gear,
        layout_pad: 0,
        layout_offset: 0,
        heap_skip: 0,
        extra_features: "layout-pad-16",
        external: None,
    };
    let canonical = build(
        &ws,
        BuildRequest {
            post: PostProcess::None,
            ..plain
        },
    )
    .unwrap();
    assert!(
        Stash::verified(&canonical.path, &canonical.sha256, &canonical.bytes)
            .unwrap()
            .is_some(),
        "the plain build kept a link that reproduces it: {}",
        stash_of(&canonical.path).display()
    );
    let point = BuildRequest {
        layout_offset: 1040,
        ..plain
    };
    let raw = canonical
        .path
        .with_file_name(format!("{}.wasm", point.config()));
    let point_built = |relink: bool| {
        // Without the collected file its stamp cannot hold: the point is made again.
        let _ = std::fs::remove_file(&raw);
        let stash = stash_of(&canonical.path);
        let aside = stash.with_extension("link.aside");
        if !relink {
            std::fs::rename(&stash, &aside).unwrap();
        }
        let made = build(&ws, point);
        if !relink {
            std::fs::rename(&aside, &stash).unwrap();
        }
        made.unwrap()
    };
    let by_cargo = point_built(false);
    let relinked = point_built(true);
    assert_eq!(relinked.heap_base, by_cargo.heap_base);
    assert_eq!(
        relinked.heap_base,
        canonical.heap_base.map(|b| b + 1040),
        "statics and heap base move up by the offset"
    );
    assert!(
        relinked.bytes == by_cargo.bytes,
        "post-processed modules differ"
    );
}

/// The heap-skip knob (`lab heap-skip`) moves the heap base alone: the plain build
/// re-linked with a zeroed block after its last static has every static where it was (the same
/// data, at the same addresses) and its heap base `skip` bytes higher; after Gear's
/// post-processing the module is as long as the plain one and differs only in the constants
/// the heap base makes.
#[test]
fn a_heap_skip_moves_the_heap_base_and_nothing_else() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).expect("workspace");
    let variant = galloc_variants::find("shipping").expect("a variant");
    let plain = BuildRequest::deployed("lab-nft", variant);
    let base = build(&ws, plain).unwrap();
    let skipped = build(
        &ws,
        BuildRequest {
            heap_skip: 1040,
            ..plain
        },
    )
    .unwrap();
    assert!(skipped.config.ends_with("+skip1040"), "{}", skipped.config);
    assert_eq!(skipped.heap_base, base.heap_base.map(|b| b + 1040));
    use galloc_lab::build::wasm::data_start;
    assert_eq!(
        data_start(&skipped.bytes).unwrap(),
        data_start(&base.bytes).unwrap()
    );
    assert_eq!(
        skipped.bytes.len(),
        base.bytes.len(),
        "the skip's zeros are not in the module"
    );
    let differing = base
        .bytes
        .iter()
        .zip(&skipped.bytes)
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        (1..=12).contains(&differing),
        "{differing} bytes differ: more than the heap base's constants"
    );
    let err = build(
        &ws,
        BuildRequest {
            heap_skip: 1000,
            ..plain
        },
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("must be a multiple of 16"),
        "{err}"
    );
}
