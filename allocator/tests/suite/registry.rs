//! The code behind a variant feature is the variant the registry names for it: the feature
//! cargo turned on (`variant::FEATURES_ON`, from `build.rs`) belongs to the registry entry whose
//! id the selected `active` module reports (`variant::ID`). `just test` runs this once per
//! variant, so every `active` module in `allocator/src/variant.rs` is held to the registry, as
//! `variants/tests/features.rs` holds the cargo features and the exclusivity list to it.

use galloc::variant::{FEATURES_ON, ID};
use galloc_variants::{DEFAULT, VARIANTS};

/// A feature as cargo spells it in a build script's environment.
fn env_name(feature: &str) -> String {
    feature.to_uppercase().replace('-', "_")
}

#[test]
fn the_selected_variant_is_the_registrys_for_the_feature_on() {
    let on: Vec<&str> = FEATURES_ON.split(',').filter(|f| !f.is_empty()).collect();
    let expected = match on.as_slice() {
        [] => DEFAULT,
        [feature] => VARIANTS
            .iter()
            .find(|v| env_name(v.feature) == *feature)
            .unwrap_or_else(|| {
                panic!("feature {feature} is on but no registry entry has it (variants/src/lib.rs)")
            })
            .id,
        more => panic!("more than one variant feature on: {more:?}"),
    };
    assert_eq!(
        ID, expected,
        "allocator/src/variant.rs selects `{ID}` for the feature(s) {on:?}, the registry says `{expected}`"
    );
}
