//! `lab heap-skip`: what share of a program's layout spread follows its heap base alone
//! (docs/design.md, "Where the heap starts").
//!
//! The layout sweep moves every static, and with them the heap base: a program's gas then
//! moves both with where its static data falls against Gear's 16 KiB pages and with where its
//! heap starts (an allocator may start its blocks at the base or later, never earlier). This
//! separates the two: each program's plain build at the linker's own layout, re-linked with
//! only its heap base moved up by `skip` bytes over one Gear page
//! ([`galloc_lab::build::artifact::BuildRequest::heap_skip`]), statics left in place, run on
//! gtest. A variant's spread over the skips beside its spread over the sweep's layouts
//! (`results/`, `results/corpus/`) is the share the heap's start explains.
//!
//! It also draws each program's page map: shipping and the lab's design at the design's
//! cheapest and dearest layout of the sweep, every page each message touches by kind, on the
//! wasmtime meter. Page kinds need the probe's call brackets, so the map is of a probe build
//! re-linked to put its heap base where the plain build's is in its Gear page (its own
//! records sit in its statics, so the plain build's exact base is not always reachable).
//!
//! Everything goes to `results/heap-skip/` (README.md, skips.csv, pages.csv.zst, images/), written
//! all together or not at all.

use anyhow::{bail, Context, Result};
use galloc_lab::analyse::population::Totals;
use galloc_lab::build::artifact::{build, BuildRequest};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::report::charts;
use galloc_lab::report::heap::{
    dear_minus_cheap, page_map_file, page_map_table, per_skip_table, spread_table,
};
use galloc_lab::results::pages::GEAR_PAGE;
use galloc_lab::results::{
    write_csv, write_file, MeasuredRow, PageMapRow, SkipRow, HEAP_DIR, MANIFEST,
};
use galloc_lab::run::backend::wasmtime::WasmtimeBackend;
use galloc_lab::run::backend::{Backend, BackendKind};
use galloc_lab::run::cores::on_every_core;
use galloc_lab::run::execute::{run_case, ProbeReads};
use galloc_lab::run::scenario;
use galloc_lab::store::metadata;
use galloc_variants::{DESIGN, REFERENCE};
use std::path::PathBuf;

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
    #[arg(long, default_value_t = 16, allow_negative_numbers = true, value_parser = super::count)]
    points: u32,
    /// Where the study is written (default: `results/heap-skip/`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Leave out the page maps.
    #[arg(long)]
    no_page_maps: bool,
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
    let given = args.out.is_some();
    let out = args.out.unwrap_or_else(|| ws.results_dir().join(HEAP_DIR));
    galloc_lab::store::destination::check(ws, &out, given)?;
    // The sweep first: the page maps are drawn at its layouts, and a missing one is said
    // before anything is built.
    let results = ws.results_dir();
    let (layouts, _) = galloc_lab::report::inputs::read_programs_sweep(&results)?;
    let sweep = Totals::of_sweep(&layouts, "gtest");

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

    let case_ids: Vec<&str> = cases.iter().map(|c| c.id).collect();
    let variant_ids: Vec<&str> = variants.iter().map(|v| v.id).collect();
    let maps = if args.no_page_maps {
        Vec::new()
    } else {
        page_maps(ws, &cases, &scenarios, &variants, &sweep)?
    };

    // Written to a staged copy and moved into place all at once: a failure writes nothing.
    let staged = galloc_lab::store::publish::Staged::begin(ws, &out)?;
    let spreads = spread_table(&rows, &sweep, &case_ids, &variant_ids);
    let wrote = staged.explain((|| -> Result<()> {
        let dir = &staged.dir;
        let measured = MeasuredRow::every("gtest", &case_ids, &variant_ids);
        write_csv(&dir.join(MANIFEST), &measured)?;
        write_csv(&dir.join("skips.csv"), &rows)?;
        if !maps.is_empty() {
            write_csv(&dir.join("pages.csv.zst"), &maps)?;
        }
        std::fs::create_dir_all(&staged.images)?;
        let mut md = format!(
            "# Where the heap starts\n\nGenerated by `just heap-skip` from `skips.csv` and \
             `pages.csv.zst`; do not edit. What share of each program's \
             layout spread is the allocator's, and what a message touches.\n\n\
             ## The heap base alone, moved\n\nEach program's plain build at the linker's own \
             layout, re-linked with only its heap base moved up by a skip over one Gear page in \
             {} steps (a zeroed block linked after the last static; statics stay where they \
             are), on gtest (gas). Beside each variant's spread over the skips (highest over \
             lowest total, minus 1), its spread over the 16 layouts of the sweep (`results/`, \
             `results/corpus/`), where statics and heap move together; the share is the first \
             over the second.\n\n{spreads}\n\
             Gas at each skip (KiB), in percent above the same variant's at skip 0:\n\n{}\n",
            skips.len(),
            per_skip_table(&rows, &case_ids, &variant_ids)
        );
        if !maps.is_empty() {
            md.push_str(&format!(
                "## What a dear layout adds\n\nPer program, the gas the dearest of the sweep's \
                 layouts costs over the cheapest, a message (in first-written Gear pages beside \
                 it), for `{REFERENCE}` and `{DESIGN}` (gtest, `results/`, `results/corpus/`); \
                 the spread is that difference over the cheapest. Where the two differences are \
                 alike, the cheaper allocator has the wider spread.\n\n{}\n",
                dear_minus_cheap(&sweep, &maps, &case_ids, REFERENCE, DESIGN)
            ));
            md.push_str(
                "## Page maps\n\nPer message, every 16 KiB Gear page it touched, by what touched \
                 it first: the stack (never charged), static data, the allocator's state \
                 (touched first inside an allocator call, outside the blocks it handled), a \
                 block given out in this message or in an earlier one, or heap memory in no \
                 block. Shipping and the lab's design, each at the design's cheapest and \
                 dearest layout of the sweep on gtest; on the wasmtime meter, with a probe \
                 build re-linked so that its heap base sits where the plain build's does in its \
                 Gear page. The table counts charged pages a message, and how many each kind \
                 first touched.\n\n",
            );
            for case in &case_ids {
                let file = page_map_file(case);
                charts::page_map::page_map(
                    &maps,
                    case,
                    &[REFERENCE, DESIGN],
                    &["cheap", "dear"],
                    &staged.images.join(&file),
                )?;
                let _ = std::fmt::Write::write_fmt(
                    &mut md,
                    format_args!(
                        "### {case}\n\n{}\n![{case}: page map](images/{file})\n\n",
                        page_map_table(&maps, case, &sweep)
                    ),
                );
            }
        }
        write_file(&dir.join("README.md"), md.as_bytes())?;
        metadata::write_for(ws.root(), dir, "just heap-skip", None)
    })());
    wrote?;
    staged.commit()?;
    println!(
        "gas on gtest, heap base moved over one Gear page in {} steps (statics in place) against \
         the layout sweep's statics and heap moved together:",
        skips.len()
    );
    print!("{spreads}");
    println!("wrote {}", out.join("README.md").display());
    Ok(())
}

/// Each case's page maps: shipping and the design at the design's cheapest and dearest layout
/// of the sweep on gtest, on a page-mapping wasmtime meter.
fn page_maps(
    ws: &Workspace,
    cases: &[&'static scenario::Case],
    scenarios: &[scenario::Scenario],
    variants: &[&'static galloc_variants::Variant],
    sweep: &Totals,
) -> Result<Vec<PageMapRow>> {
    let mut jobs = Vec::new();
    for (case, scenario) in cases.iter().zip(scenarios) {
        let design = sweep.of_variant(case.id, DESIGN);
        let (Some(cheap), Some(dear)) = (
            design.iter().min_by_key(|(_, t)| **t).map(|(o, _)| *o),
            design.iter().max_by_key(|(_, t)| **t).map(|(o, _)| *o),
        ) else {
            bail!(
                "{}: `{DESIGN}` has no layouts in the sweep (results/gtest/layouts.csv or \
                 results/corpus/gtest/layouts.csv): regenerate them with `just compare` or \
                 `just corpus`, or give --no-page-maps",
                case.id
            );
        };
        for v in variants
            .iter()
            .filter(|v| v.id == REFERENCE || v.id == DESIGN)
        {
            let deployed = BuildRequest::deployed(scenario.package, v);
            let probe_at_0 = build(
                ws,
                BuildRequest {
                    probe: true,
                    ..deployed
                },
            )?;
            for (layout, offset) in [("cheap", cheap), ("dear", dear)] {
                eprintln!(
                    "building {} for {} at +{offset} for its page map",
                    scenario.package, v.id
                );
                let plain = build(
                    ws,
                    BuildRequest {
                        layout_offset: offset,
                        ..deployed
                    },
                )?;
                let (Some(target), Some(base)) = (plain.heap_base, probe_at_0.heap_base) else {
                    bail!(
                        "{} ({}): a build without a heap base",
                        scenario.package,
                        v.id
                    );
                };
                // The probe's statics are larger: its heap base goes to the same place in
                // its Gear page, a page later if it cannot reach the plain one's.
                let mut to = i64::from(target) - i64::from(base);
                while to < 0 {
                    to += i64::from(GEAR_PAGE);
                }
                let probe = build(
                    ws,
                    BuildRequest {
                        probe: true,
                        layout_offset: to as u32,
                        ..deployed
                    },
                )?;
                jobs.push((case.id, scenario, v.id, layout, offset, target, probe));
            }
        }
    }
    let runs = on_every_core(
        &jobs,
        |(case, scenario, variant, layout, offset, target, probe)| {
            let mut meter = WasmtimeBackend::mapping_pages()?;
            let heap_base = probe.heap_base.unwrap_or(0);
            meter.heap_base(heap_base);
            run_case(&mut meter, &probe.bytes, scenario, ProbeReads::Never, || {})
                .with_context(|| format!("{case} on the page-mapping meter ({})", probe.config))?;
            let map = meter
                .take_page_maps()
                .into_iter()
                .next()
                .unwrap_or_default();
            Ok(map
                .into_iter()
                .enumerate()
                .flat_map(|(message, pages)| {
                    pages.into_iter().map(move |p| PageMapRow {
                        case: (*case).into(),
                        variant: (*variant).into(),
                        layout: (*layout).into(),
                        offset: *offset,
                        heap_base: *target,
                        probe_heap_base: heap_base,
                        message: message as u32,
                        page: p.page,
                        kind: p.kind.name().into(),
                        written: p.written,
                    })
                })
                .collect::<Vec<_>>())
        },
    )?;
    Ok(runs.into_iter().flatten().collect())
}
