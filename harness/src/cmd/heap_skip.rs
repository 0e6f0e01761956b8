//! `lab heap-skip`: what share of a program's layout spread is the allocator's (issue 50,
//! step 1).
//!
//! The layout sweep moves every static, and with them the heap base: a program's gas then
//! moves both with where its static data falls against Gear's 16 KiB pages (which no
//! allocator controls) and with where its heap starts (which an allocator can choose). This
//! separates the two: each program's plain build at the linker's own layout, re-linked with
//! only its heap base moved up by `skip` bytes over one Gear page
//! ([`galloc_lab::build::artifact::BuildRequest::heap_skip`]), statics left in place, run on
//! gtest. A variant's spread over the skips beside its spread over the sweep's layouts
//! (`results/`, `results/corpus/`) is the share its heap's start explains.

use anyhow::{bail, Context, Result};
use galloc_lab::analyse::population::{spread_pct, Totals};
use galloc_lab::analyse::ship;
use galloc_lab::build::artifact::{build, BuildRequest};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::results::{write_csv, SkipRow};
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::execute::{on_every_core, run_case, ProbeReads};
use galloc_lab::run::scenario;
use galloc_variants::REFERENCE;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One Gear page: the skips span it.
const GEAR_PAGE: u32 = 16 * 1024;

#[derive(clap::Args)]
pub struct Args {
    /// Cases (default: the programs the lab's design was shaped on, and two held out).
    #[arg(
        long,
        default_value = "nft-stress,vft-stress,synthetic-map,synthetic-strings,dex,market,dao,game,nft,vesting"
    )]
    cases: String,
    /// Variants, comma-separated; `shipping` is always run.
    #[arg(long, default_value = "shipping,lab")]
    variants: String,
    /// Skips over one Gear page, 0 (the plain build) first, each a multiple of 16 bytes.
    #[arg(long, default_value_t = 16)]
    points: u32,
    /// Where `skips.csv` is written (default: `target/lab/heap-skip/`).
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    if !(1..=GEAR_PAGE / 16).contains(&args.points) {
        bail!("--points {}: give 1 to {}", args.points, GEAR_PAGE / 16);
    }
    let cases = scenario::select(&args.cases)?;
    let mut variants = galloc_variants::select(&args.variants)?;
    if !variants.iter().any(|v| v.id == REFERENCE) {
        variants.insert(0, galloc_variants::find(REFERENCE)?);
    }
    let skips: Vec<u32> = (0..args.points)
        .map(|i| i * GEAR_PAGE / args.points / 16 * 16)
        .collect();
    let out = args
        .out
        .unwrap_or_else(|| ws.root().join("target/lab/heap-skip"));

    // Builds first, one at a time (cargo locks its target directory; each skip is a re-link).
    let scenarios: Vec<_> = cases.iter().map(|c| (c.make)()).collect();
    let mut jobs = Vec::new();
    for (case, scenario) in cases.iter().zip(&scenarios) {
        for v in &variants {
            let plain = BuildRequest::deployed(scenario.package, v);
            for &skip in &skips {
                eprintln!(
                    "building {} for {} with its heap {skip} bytes on",
                    scenario.package, v.id
                );
                let artifact = build(
                    ws,
                    BuildRequest {
                        heap_skip: skip,
                        ..plain
                    },
                )?;
                jobs.push((case.id, scenario, v.id, skip, artifact));
            }
        }
    }
    // Then the runs on every core, each on a fresh gtest chain.
    let mut rows = on_every_core(&jobs, |(case, scenario, variant, skip, artifact)| {
        let mut backend = BackendKind::Gtest.create()?;
        let run = run_case(
            backend.as_mut(),
            &artifact.bytes,
            scenario,
            ProbeReads::Never,
            || {},
        )
        .with_context(|| format!("{case} on gtest ({})", artifact.config))?;
        Ok(SkipRow {
            backend: "gtest".into(),
            case: (*case).into(),
            variant: (*variant).into(),
            unit: "gas".into(),
            skip: *skip,
            heap_base: artifact.heap_base.unwrap_or(0),
            total: run.total_cost(),
        })
    })?;
    rows.sort_by(|a, b| (&a.case, &a.variant, a.skip).cmp(&(&b.case, &b.variant, b.skip)));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let csv = out.join("skips.csv");
    write_csv(&csv, &rows)?;

    // Beside each spread over the skips, the same program's spread over the sweep's layouts.
    let results = ws.results_dir();
    let (layouts, _) = ship::read_sweeps(&[&results, &results.join(ship::CORPUS_DIR)])?;
    let sweep = Totals::of_sweep(&layouts, "gtest");
    let mut by: BTreeMap<(&str, &str), Vec<u64>> = BTreeMap::new();
    for r in &rows {
        by.entry((r.case.as_str(), r.variant.as_str()))
            .or_default()
            .push(r.total);
    }
    println!(
        "gas on gtest, heap base moved over one Gear page in {} steps (statics in place) against \
         the layout sweep's statics and heap moved together:",
        skips.len()
    );
    println!("| case | variant | spread over the skips | spread over the layouts | share |");
    println!("| --- | --- | ---: | ---: | ---: |");
    for case in &cases {
        for v in &variants {
            let Some(totals) = by.get(&(case.id, v.id)) else {
                continue;
            };
            let over_skips = spread_pct(totals.iter().copied());
            let over_layouts = spread_pct(sweep.of_variant(case.id, v.id).values().copied());
            println!(
                "| {} | {} | {over_skips:.2} % | {over_layouts:.2} % | {:.0} % |",
                case.id,
                v.id,
                100.0 * over_skips / over_layouts
            );
        }
    }
    println!("wrote {}", csv.display());
    Ok(())
}
