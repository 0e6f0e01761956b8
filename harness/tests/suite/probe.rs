//! The probe's validation relation: per message, probe-build gas minus the gas of its twin
//! (the probe build with the brackets taken out, galloc's `probe-twin`) is a per-message
//! constant plus a constant per call of each op.
//! Gas is deterministic, so the relation is asserted to hold exactly for most messages and to
//! within a few instructions for the rest: keeping each call's record for the host makes the
//! probe build's copy of `realloc` and `free` differ from the plain build's by a few
//! instructions on some paths (1-4 fuel, about 2K gas each). How many is up to LTO's inlining
//! and moves with unrelated changes (the crates' metadata hashes alone took shipping from 2
//! to 4 fuel), so the bounds below are the measured worst case, not a derived one.

use galloc_lab::backend::BackendKind;
use galloc_lab::measure::{measure_case, validate, Builds};
use galloc_lab::scenario::select;
use galloc_lab::workspace::Workspace;

fn check(variant_id: &str, backend: BackendKind, min_exact_pct: f64, max_residual: u64) {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let variant = galloc_variants::find(variant_id).unwrap();
    let case = select("nft-stress").unwrap()[0];
    let scenario = (case.make)();
    let builds = Builds::new(&ws, scenario.package, variant, |_| {}).unwrap();
    let m = measure_case(&builds, &scenario, backend, |_| {}).unwrap();
    let row = validate(variant, &[(&scenario, &m)], None).remove(0);
    eprintln!("{row:?}");

    // The twin really has the probe build's heap base, and is not the plain build.
    assert_eq!(builds.twin.heap_base, builds.probe.heap_base);
    assert_ne!(builds.twin.heap_base, builds.plain.heap_base);
    let after_init = row.messages - 1;
    let exact_pct = 100.0 * row.exact_messages as f64 / after_init as f64;
    assert!(
        exact_pct >= min_exact_pct,
        "{variant_id}: only {exact_pct:.2}% exact: {row:?}"
    );
    assert!(
        row.max_abs_residual <= max_residual,
        "{variant_id}: residual up to {}",
        row.max_abs_residual
    );

    // In gas, the counter's syscall weight dominates: each call pays two reads (one is the
    // calibration) plus bookkeeping. (In fuel a read is a few instructions and the
    // bookkeeping dominates, so there is no such bound.)
    if backend == BackendKind::Wasmtime {
        return;
    }
    let read = m.probe.probe.as_ref().unwrap().calibration as i64;
    for overhead in [row.overhead_malloc, row.overhead_free] {
        assert!(
            (2 * read..3 * read).contains(&overhead),
            "{overhead} vs read {read}"
        );
    }
    // `init` pays the one-time calibration: about two reads.
    assert!((read..3 * read).contains(&row.calibration), "{row:?}");
}

#[test]
fn relation_holds_for_shipping() {
    check("shipping", BackendKind::Gtest, 90.0, 8_000);
}

#[test]
fn relation_holds_for_the_default_variant() {
    // Up to 12,649 gas on a few messages: seen since the probe's
    // first version for the lab's variants, not for shipping; not yet explained.
    check(galloc_variants::DEFAULT, BackendKind::Gtest, 90.0, 15_000);
}

/// Fuel has no page charges: the same relation, in instructions.
#[test]
fn relation_holds_in_fuel() {
    check("shipping", BackendKind::Wasmtime, 90.0, 4);
    check(galloc_variants::DEFAULT, BackendKind::Wasmtime, 90.0, 10);
}

/// In every committed row the probe's relation holds (its residuals sum to under 0.1 % of the
/// total: instructions on some paths, never a page) and no fitted overhead is negative. On the
/// Sails cases `calloc` is called once a message, and an unconstrained fit once made it
/// negative (`an_op_called_once_a_message_stays_in_the_constant` tests the fit itself); and
/// before the twin was the probe build without brackets, the programs' address-seeded hasher
/// broke the relation on six variants, by page charges read as (negative) overheads (README,
/// "Validation on Sails programs").
#[test]
fn committed_overheads_are_never_negative_and_the_relation_holds_everywhere() {
    use galloc_lab::results::{read_csv, ValidationRow};
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    for backend in BackendKind::EMBEDDED {
        let path = ws
            .root()
            .join("results")
            .join(backend.name())
            .join("probe-validation.csv");
        let rows: Vec<ValidationRow> = read_csv(&path).unwrap();
        assert!(!rows.is_empty(), "{}", path.display());
        for r in &rows {
            let overheads = [
                r.overhead_per_message,
                r.overhead_malloc,
                r.overhead_calloc,
                r.overhead_realloc,
                r.overhead_free,
            ];
            assert!(r.residual_pct < 0.1, "the relation fails: {r:?}");
            assert!(overheads.iter().all(|o| *o >= 0), "{r:?}");
        }
    }
}
