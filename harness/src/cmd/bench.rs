//! `lab bench`: wall time of each scenario on each backend (plain builds), and the ratio.
//!
//! A benchmark, not a test: wall time depends on the machine. Nothing here goes to
//! `results/` (which must be byte-identical on a rerun); the table is printed and written to
//! `target/lab/bench.csv`.

use anyhow::Result;
use galloc_lab::build::artifact::{build, BuildRequest};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::results::write_csv;
use galloc_lab::run::backend::wasmtime::WasmtimeBackend;
use galloc_lab::run::backend::{Backend, BackendKind};
use galloc_lab::run::execute::{run_case, ProbeReads};
use serde::Serialize;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    selection: super::Selection,
    /// Runs per measurement; the fastest is kept.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true, value_parser = super::count)]
    repeat: u32,
}

#[derive(Serialize)]
struct BenchRow {
    case: String,
    variant: String,
    messages: u64,
    gtest_s: f64,
    wasmtime_s: f64,
    /// The meter without page hooks (no page counts).
    wasmtime_no_pages_s: f64,
    /// `gtest_s / wasmtime_s`.
    speedup: f64,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let (cases, variants) = args.selection.resolve()?;
    let mut rows = Vec::new();
    println!("| case | variant | messages | gtest s | wasmtime s | wasmtime, no page hooks, s | gtest / wasmtime |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for case in cases {
        let s = (case.make)();
        for v in &variants {
            let code = build(ws, BuildRequest::deployed(s.package, v))?.bytes;
            // Each run starts from a fresh backend, as `lab measure` does: setup counts.
            let time = |make: &dyn Fn() -> Result<Box<dyn Backend>>| -> Result<f64> {
                let mut best = f64::MAX;
                for _ in 0..args.repeat.max(1) {
                    let started = Instant::now();
                    let mut b = make()?;
                    run_case(b.as_mut(), &code, &s, ProbeReads::Never, || {})?;
                    best = best.min(started.elapsed().as_secs_f64());
                }
                Ok(best)
            };
            let gtest_s = time(&|| BackendKind::Gtest.create())?;
            let wasmtime_s = time(&|| BackendKind::Wasmtime.create())?;
            let wasmtime_no_pages_s = time(&|| {
                Ok(Box::new(WasmtimeBackend::with_page_tracking(false)?) as Box<dyn Backend>)
            })?;
            let row = BenchRow {
                case: s.case.into(),
                variant: v.id.into(),
                messages: s.steps.len() as u64 + 1,
                gtest_s,
                wasmtime_s,
                wasmtime_no_pages_s,
                speedup: gtest_s / wasmtime_s,
            };
            println!(
                "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.1}x |",
                row.case,
                row.variant,
                row.messages,
                row.gtest_s,
                row.wasmtime_s,
                row.wasmtime_no_pages_s,
                row.speedup
            );
            rows.push(row);
        }
    }
    let path = ws.root().join("target/lab/bench.csv");
    write_csv(&path, &rows)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}
