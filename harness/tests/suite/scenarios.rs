//! Every default case passes on every variant on both embedded backends: each reply is the
//! one the host model expects, and the wasmtime meter's replies are byte-identical to gtest's,
//! message by message. (Plain builds; `lab measure` runs the probe and twin builds
//! through the same checks.)

use galloc_lab::backend::BackendKind;
use galloc_lab::build::{build, BuildRequest};
use galloc_lab::run::{run_case, CaseRun, ProbeReads};
use galloc_lab::scenario::select;
use galloc_lab::workspace::Workspace;
use galloc_variants::VARIANTS;
use std::time::Instant;

#[test]
fn default_cases_pass_on_every_variant_with_identical_replies() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    for case in select("default").unwrap() {
        let scenario = (case.make)();
        for variant in VARIANTS {
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
}
