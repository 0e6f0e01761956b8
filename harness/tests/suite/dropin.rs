//! The drop-in: a program that patches the lab's galloc in and names no feature builds exactly
//! what galloc 2.0 ships (`shipping`), byte for byte as deployed, on a gstd and a Sails program.
//! Naming no feature is what a program gets from the patch line alone (docs/your-program.md, "Using a variant
//! in your program"): it must never cost more than changing nothing.

use galloc_lab::build::artifact::{build, BuildRequest};
use galloc_lab::build::workspace::Workspace;
use galloc_variants::{Origin, Variant, DEFAULT, REFERENCE};

#[test]
fn galloc_with_no_feature_builds_shipping_byte_for_byte() {
    assert_eq!(DEFAULT, REFERENCE, "the registry's default is shipping");
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).expect("workspace");
    let shipping = galloc_variants::find(REFERENCE).expect("shipping");
    // No feature at all: cargo's default through gstd, as in an author's program. Its own id
    // keeps its artifact apart from shipping's.
    let unnamed: &'static Variant = Box::leak(Box::new(Variant {
        id: "no-feature",
        feature: "",
        label: "galloc with no feature",
        origin: Origin::Shipping,
        summary: "the patch line alone",
        fails: None,
        reproduces: None,
    }));
    for package in ["lab-nft", "lab-vft"] {
        let named = build(&ws, BuildRequest::deployed(package, shipping)).unwrap();
        let plain = build(&ws, BuildRequest::deployed(package, unnamed)).unwrap();
        assert_eq!(
            plain.sha256,
            named.sha256,
            "{package}: no feature vs `shipping`: {} vs {}",
            plain.path.display(),
            named.path.display()
        );
        assert_eq!(plain.bytes, named.bytes, "{package}");
        assert_eq!(plain.heap_base, named.heap_base, "{package}");
    }
}
