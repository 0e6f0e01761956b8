//! Every default case passes on every variant, and every corpus program's scenario on
//! shipping, on both embedded backends: each reply is the one the host model expects, and the
//! wasmtime meter's replies are byte-identical to gtest's, message by message. (Plain builds;
//! `lab measure` runs the probe and twin builds through the same checks; `just corpus` runs
//! the corpus on every variant.)

use galloc_lab::build::artifact::{build, BuildRequest};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::execute::{run_case, run_recording, CaseRun, ProbeReads};
use galloc_lab::run::scenario::select;
use galloc_variants::Variant;
use std::time::Instant;

/// One test per default case (each on every variant), so that libtest spreads them over its
/// threads among the others: as one test they were ~7 min of a clean CI run, its last ~6 min
/// alone on one thread.
macro_rules! every_variant {
    ($($test:ident: $case:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                passes_on_every_variant($case);
            }
        )*
        /// The tests above are exactly the default cases.
        #[test]
        fn every_default_case_has_its_test() {
            let ids: Vec<&str> = select("default").unwrap().iter().map(|c| c.id).collect();
            assert_eq!(ids, [$($case),*]);
        }
    };
}

every_variant! {
    nft: "nft",
    nft_stress: "nft-stress",
    ft_stress: "ft-stress",
    vft_stress: "vft-stress",
    vnft_stress: "vnft-stress",
    synthetic_small_objects: "synthetic-small-objects",
    synthetic_growing_vec: "synthetic-growing-vec",
    synthetic_map: "synthetic-map",
    synthetic_strings: "synthetic-strings",
}

/// One test per corpus program, on shipping only: CI runs each scenario once (the whole
/// corpus on every variant is `just corpus`, 14 times the builds).
macro_rules! on_shipping {
    ($($test:ident: $case:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                let shipping = galloc_variants::find(galloc_variants::REFERENCE).unwrap();
                passes_on($case, &[shipping]);
            }
        )*
        /// The tests above are exactly the corpus.
        #[test]
        fn every_corpus_program_has_its_test() {
            let ids: Vec<&str> = select("corpus").unwrap().iter().map(|c| c.id).collect();
            assert_eq!(ids, [$($case),*]);
        }
    };
}

on_shipping! {
    corpus_dex: "dex",
    corpus_market: "market",
    corpus_dao: "dao",
    corpus_game: "game",
    corpus_vesting: "vesting",
    corpus_lottery: "lottery",
    corpus_staking: "staking",
    corpus_profiles: "profiles",
}

/// The meter's conformance program (`contracts/conformance`: a message per group of Gear's
/// syscalls, from awaited replies and timeouts to signals and exit) answers on the meter
/// exactly as on gtest, and as Gear's rules say (`run/scenario/conformance.rs`), on shipping
/// and on the lab's design.
#[test]
fn conformance() {
    let variants: Vec<_> = [galloc_variants::REFERENCE, galloc_variants::DESIGN]
        .iter()
        .map(|id| galloc_variants::find(id).unwrap())
        .collect();
    passes_on("conformance", &variants);
}

fn passes_on_every_variant(id: &str) {
    passes_on(id, &galloc_variants::select("all").unwrap());
}

fn passes_on(id: &str, variants: &[&'static Variant]) {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let case = select(id).unwrap()[0];
    let scenario = (case.make)();
    for variant in variants {
        let req = BuildRequest::deployed(scenario.package, variant);
        let code = build(&ws, req).unwrap().bytes;
        let mut runs: Vec<CaseRun> = Vec::new();
        for backend in BackendKind::EMBEDDED {
            let started = Instant::now();
            let mut b = backend.create().unwrap();
            let run = run_case(b.as_mut(), &code, &scenario, ProbeReads::Never, || {})
                .unwrap_or_else(|e| {
                    panic!("{} on {} ({}): {e:#}", case.id, variant.id, backend.name())
                });
            assert_eq!(run.messages.len(), scenario.steps.len() + 1);
            eprintln!(
                "{} on {} ({}): {} messages, {} {}, {:.1}s",
                case.id,
                variant.id,
                backend.name(),
                run.messages.len(),
                run.total_cost(),
                b.unit().name(),
                started.elapsed().as_secs_f64()
            );
            runs.push(run);
        }
        let [fuel, gas] = &runs[..] else {
            unreachable!()
        };
        for (f, g) in fuel.messages.iter().zip(&gas.messages) {
            assert_eq!(
                f.reply, g.reply,
                "{} on {}: message {} replies differ",
                case.id, variant.id, f.index
            );
        }
    }
}

/// The reproduction of Gear PR #4853's allocator (`pr4853`, the registry's known failure) on
/// the study's test shape (`ft-4853`), at the linker's layout on gtest: every message before
/// the balance map's first growth to 1,024 buckets (message 746) is answered as the token's
/// rules say, and from message 747 on every message fails (the page freed under the map's
/// table is gone): the study's "state stops changing at message 747".
#[test]
fn pr4853_loses_the_balance_map_where_the_study_went_flat() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let repro = galloc_variants::find("pr4853").unwrap();
    let case = select(repro.reproduces.unwrap()).unwrap()[0];
    let scenario = (case.make)();
    let code = build(&ws, BuildRequest::deployed(scenario.package, repro))
        .unwrap()
        .bytes;
    let mut b = BackendKind::Gtest.create().unwrap();
    let (run, wrong) = run_recording(b.as_mut(), &code, &scenario, || {}).unwrap();
    assert_eq!(run.messages.len(), 2_903);
    let wrong: Vec<usize> = wrong.iter().map(|w| w.index).collect();
    assert_eq!(wrong, (747..2_903).collect::<Vec<_>>());
    let failed: Vec<usize> = run
        .messages
        .iter()
        .filter(|m| m.failed)
        .map(|m| m.index)
        .collect();
    assert_eq!(failed, wrong);
}
