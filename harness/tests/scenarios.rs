//! Every default case passes on every variant: each reply is the one the host model expects.
//! (Plain builds only; `lab measure` runs the probe and twin builds through the same checks.)

use galloc_lab::backend::gtest::GtestBackend;
use galloc_lab::build::{build, BuildRequest, PostProcess};
use galloc_lab::run::run_case;
use galloc_lab::scenario::select;
use galloc_lab::workspace::Workspace;
use galloc_variants::VARIANTS;
use std::time::Instant;

#[test]
fn default_cases_pass_on_every_variant() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    for case in select("default").unwrap() {
        let scenario = (case.make)();
        for variant in VARIANTS {
            let req = BuildRequest {
                package: scenario.package,
                variant,
                probe: false,
                trace: false,
                post: PostProcess::Gear,
                layout_pad: 0,
            };
            let code = build(&ws, req).unwrap().bytes;
            let started = Instant::now();
            let run = run_case(&mut GtestBackend::new(), &code, &scenario, false, || {})
                .unwrap_or_else(|e| panic!("{} on {}: {e:#}", case.id, variant.id));
            assert_eq!(run.messages.len(), scenario.steps.len() + 1);
            eprintln!(
                "{} on {}: {} messages, {} gas, {:.1}s",
                case.id,
                variant.id,
                run.messages.len(),
                run.total_cost(),
                started.elapsed().as_secs_f64()
            );
        }
    }
}
