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
        Stash::verified(&canonical).unwrap().is_some(),
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
