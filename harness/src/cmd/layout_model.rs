//! `lab layout-model`: the layout model held against the sweep (docs/layout-rule.md, "Held
//! against the sweep").
//!
//! Each program's plain build at the linker's own layout runs once on the wasmtime meter with
//! every granule it touches kept ([`galloc_lab::results::touches`]); the model
//! ([`galloc_lab::analyse::layout_model`]) then predicts its total at each offset of the sweep
//! from its gtest total at offset 0, and the prediction is held against what the sweep
//! measured there (`results/`, `results/corpus/`): gtest's totals at all 16 offsets, and the
//! meter's own page charges where it ran (every 4th offset), which the model must match exactly
//! wherever the allocator places its blocks alike at every heap base. Then the layout rules
//! ([`galloc_lab::analyse::layout_choice`]) choose a layout per program from the main workload
//! and are judged on the second workloads (`--second`: run at every layout of the sweep by
//! `lab measure --second-stride 1`; docs/layout-rule.md, "Judged out of sample").
//!
//! Everything goes to `results/layout-model/` (README.md, model.csv, second.csv), written all
//! together or not at all.

use anyhow::{bail, Context, Result};
use galloc_lab::analyse::layout_choice::{judge, layouts as layouts_offered};
use galloc_lab::analyse::layout_model::{
    page_charges, page_counts, predicted, shifted_charges, Heap, HEAP_SHIFTS,
};
use galloc_lab::analyse::population::Totals;
use galloc_lab::build::artifact::{build, BuildRequest};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::report::layout_model::{choice_table, error_table, out_of_sample};
use galloc_lab::results::pages::{page_gas, PageCounts};
use galloc_lab::results::touches::TouchTrace;
use galloc_lab::results::{
    write_csv, write_file, LayoutRow, MeasuredRow, ModelRow, SecondRow, ShiftRow, LAYOUT_MODEL_DIR,
    MANIFEST, SECOND, SHIFTED,
};
use galloc_lab::run::backend::wasmtime::WasmtimeBackend;
use galloc_lab::run::backend::Backend;
use galloc_lab::run::cores::on_every_core;
use galloc_lab::run::execute::{run_case, ProbeReads};
use galloc_lab::run::scenario;
use galloc_lab::store::metadata;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Cases: `programs` (the default cases and the corpus: the 17 programs of the ship
    /// verdict), `default`, `corpus`, or some by name ([`scenario::select`]).
    #[arg(long, default_value = "programs")]
    cases: String,
    /// Variants, comma-separated.
    #[arg(long, default_value = "shipping,lab")]
    variants: String,
    /// Where the model puts the heap's blocks at another layout: `moves` (at the same distance
    /// from the heap base throughout) or `stays` (only those in the static pages' tail).
    #[arg(long, value_enum, default_value_t = Heap::Moves)]
    heap: Heap,
    /// A `lab measure --second-stride 1` of the same programs and variants on gtest (the
    /// recipe's `target/lab/layout-second`): its second workloads at every layout of the sweep,
    /// which the layout rules are judged on. Without it, they are judged at the four layouts
    /// where the committed sweep ran them.
    #[arg(long)]
    second: Option<PathBuf>,
    /// Where the study is written (default: `results/layout-model/`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Instead of the study: run each case's build at this offset too and print, message by
    /// message, where its granules differ from the run at the linker's layout moved by the
    /// model (the first few differences): why the model is wrong where it is.
    #[arg(long)]
    explain: Option<u32>,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let cases = scenario::select(&args.cases)?;
    let heap = args.heap;
    let variants = galloc_variants::select(&args.variants)?;
    let given = args.out.is_some();
    let out = args
        .out
        .unwrap_or_else(|| ws.results_dir().join(LAYOUT_MODEL_DIR));
    galloc_lab::store::destination::check(ws, &out, given)?;
    // The sweep first: what the model is held against, and a missing program is said before
    // anything is built.
    let results = ws.results_dir();
    let (layouts, committed) = galloc_lab::report::inputs::read_programs_sweep(&results)?;
    let second = match &args.second {
        Some(dir) => every_second(dir, &committed)?,
        None => committed
            .into_iter()
            .filter(|r| r.backend == "gtest")
            .collect(),
    };
    let gas = Totals::of_sweep(&layouts, "gtest");
    let meter: BTreeMap<(&str, &str, u32), &LayoutRow> = layouts
        .iter()
        .filter(|r| r.backend == "wasmtime")
        .map(|r| ((r.case.as_str(), r.variant.as_str(), r.offset), r))
        .collect();
    for case in &cases {
        for v in &variants {
            if !gas.of_variant(case.id, v.id).contains_key(&0) {
                bail!(
                    "{} with {}: no gtest total at the linker's layout in the sweep \
                     (results/gtest/layouts.csv, results/corpus/gtest/layouts.csv): regenerate \
                     it with `just compare` or `just corpus`",
                    case.id,
                    v.id
                );
            }
        }
    }

    // Builds first, one at a time (cargo locks its target directory); they are the sweep's own.
    let scenarios: Vec<_> = cases.iter().map(|c| (c.make)()).collect();
    let mut jobs = Vec::new();
    for (case, scenario) in cases.iter().zip(&scenarios) {
        for v in &variants {
            eprintln!("building {} for {}", scenario.package, v.id);
            let artifact = build(ws, BuildRequest::deployed(scenario.package, v))?;
            let Some(heap_base) = artifact.heap_base else {
                bail!(
                    "{} ({}): a build without a heap base",
                    scenario.package,
                    v.id
                );
            };
            jobs.push((case.id, scenario, v.id, heap_base, artifact));
        }
    }
    if let Some(offset) = args.explain {
        return explain(ws, &jobs, offset, heap);
    }
    // Then one run each on the granule-keeping meter, on every core.
    let rows = on_every_core(&jobs, |(case, scenario, variant, heap_base, artifact)| {
        let (_, trace) =
            traced_checked(&artifact.bytes, *heap_base, scenario, heap).with_context(|| {
                format!("{case} on the granule-keeping meter ({})", artifact.config)
            })?;
        let sweep = gas.of_variant(case, variant);
        let at_zero = sweep[&0];
        let zero_pages = page_charges(&trace, 0, heap);
        // The robust rule's predictions: each layout with the heap's blocks shifted besides.
        let shifted: Vec<ShiftRow> = sweep
            .keys()
            .flat_map(|&offset| HEAP_SHIFTS.iter().map(move |&shift| (offset, shift)))
            .map(|(offset, shift)| ShiftRow {
                case: (*case).into(),
                variant: (*variant).into(),
                offset,
                shift,
                predicted: predicted(
                    at_zero,
                    shifted_charges(&trace, offset, heap, shift),
                    zero_pages,
                ),
            })
            .collect();
        let modelled = sweep
            .iter()
            .map(|(&offset, &measured)| {
                let model_pages = page_charges(&trace, offset, heap);
                let metered = meter.get(&(*case, *variant, offset));
                let meter_pages = metered.map(|r| {
                    page_gas(&PageCounts {
                        read: r.pages_read.unwrap_or(0) as u32,
                        write: r.pages_written.unwrap_or(0) as u32,
                        write_after_read: r.pages_write_after_read.unwrap_or(0) as u32,
                        loaded: r.pages_loaded.unwrap_or(0) as u32,
                        ..Default::default()
                    })
                });
                ModelRow {
                    case: (*case).into(),
                    variant: (*variant).into(),
                    offset,
                    measured,
                    predicted: predicted(at_zero, model_pages, zero_pages),
                    model_pages_gas: model_pages,
                    meter_pages_gas: meter_pages,
                    meter_fuel: metered.map(|r| r.total),
                    model_pages_gas_at_zero: zero_pages,
                }
            })
            .collect::<Vec<_>>();
        Ok((modelled, shifted))
    })?;
    let (rows, shifted): (Vec<Vec<ModelRow>>, Vec<Vec<ShiftRow>>) = rows.into_iter().unzip();
    let rows: Vec<ModelRow> = rows.into_iter().flatten().collect();
    let shifted: Vec<ShiftRow> = shifted.into_iter().flatten().collect();

    let case_ids: Vec<&str> = cases.iter().map(|c| c.id).collect();
    let variant_ids: Vec<&str> = variants.iter().map(|v| v.id).collect();
    let table = error_table(&rows, &case_ids, &variant_ids);
    let standings = judge(&rows, &shifted, &layouts, &second, &case_ids, &variant_ids);
    let choices = choice_table(&standings);
    let judged_at = out_of_sample(layouts_offered(&standings));
    let staged = galloc_lab::store::publish::Staged::begin(ws, &out)?;
    let wrote = staged.explain((|| -> Result<()> {
        let dir = &staged.dir;
        let measured = MeasuredRow::every("gtest", &case_ids, &variant_ids);
        write_csv(&dir.join(MANIFEST), &measured)?;
        write_csv(&dir.join("model.csv"), &rows)?;
        write_csv(&dir.join(SHIFTED), &shifted)?;
        // What the rules were judged on, kept so the report judges them again from files.
        let judged: Vec<&SecondRow> = second
            .iter()
            .filter(|r| case_ids.contains(&r.case.as_str()) && variant_ids.contains(&r.variant.as_str()))
            .collect();
        write_csv(&dir.join(SECOND), &judged)?;
        let md = format!(
            "# A layout for every program: the model\n\nGenerated by `just layout-model` \
             (`lab layout-model --heap {}`) from `model.csv`; do not edit. Each program's plain build at the linker's layout ran \
             once on the wasmtime meter keeping every 16-byte granule each message touched; \
             the model moves the statics by each offset of the sweep, and the heap's blocks \
             {} (the last 32 bytes of each of the heap's Wasm pages stay at its end), and \
             counts the Gear pages they fall on. Its prediction at an offset is \
             gtest's total at offset 0 with the page charges at 0 replaced by those at the \
             offset; the sweep measured gtest at all 16 offsets (`results/`, \
             `results/corpus/`) and the meter's page charges there. The model holds where \
             its largest error is within a tenth of the program's own spread over the \
             layouts; \"of it, pages\" is the part of that error that is the model's page \
             charges against the meter's at the same layout (the rest moved other than \
             pages).\n\n{table}\n## Judged out of sample\n\nJudged out of sample: {judged_at}\n\n{choices}",
            heap.name(),
            heap.how(),
        );
        write_file(&dir.join("README.md"), md.as_bytes())?;
        metadata::write_for(ws.root(), dir, "just layout-model", None)
    })());
    wrote?;
    staged.commit()?;
    print!("{table}\n{choices}");
    println!("wrote {}", out.join("README.md").display());
    Ok(())
}

/// The second workloads on gtest that `dir` (a `lab measure --second-stride 1`) ran, held against
/// the committed sweep's (`committed`) where both ran: gas is deterministic, so they must be the
/// same to the unit, or the two were not measured alike and neither can judge the rules.
fn every_second(dir: &std::path::Path, committed: &[SecondRow]) -> Result<Vec<SecondRow>> {
    let file = dir.join("gtest").join(SECOND);
    if !file.is_file() {
        bail!(
            "{}: no second workloads on gtest there; measure them with `lab measure --backends \
             gtest --second-stride 1 --out {}` (what `just layout-model` runs first)",
            file.display(),
            dir.display()
        );
    }
    let rows: Vec<SecondRow> = galloc_lab::results::read_csv(&file)?;
    let theirs: BTreeMap<(&str, &str, u32), u64> = rows
        .iter()
        .map(|r| ((r.case.as_str(), r.variant.as_str(), r.offset), r.total))
        .collect();
    let mut shared = 0;
    for r in committed.iter().filter(|r| r.backend == "gtest") {
        if let Some(total) = theirs.get(&(r.case.as_str(), r.variant.as_str(), r.offset)) {
            if *total != r.total {
                bail!(
                    "{} ({}) at +{}: the second workload's gas is {} in {} and {} in the committed \
                     sweep; gas is deterministic, so one of them is stale: re-measure with `just \
                     layout-model` after `just compare` and `just corpus`",
                    r.case,
                    r.variant,
                    r.offset,
                    total,
                    file.display(),
                    r.total
                );
            }
            shared += 1;
        }
    }
    if shared == 0 {
        bail!(
            "{}: none of its second workloads is one the committed sweep ran, so it cannot be \
             held against it",
            file.display()
        );
    }
    eprintln!(
        "{}: {} second-workload runs, the {shared} the committed sweep also ran the same to the unit",
        file.display(),
        rows.len()
    );
    Ok(rows.into_iter().filter(|r| r.backend == "gtest").collect())
}

/// `--explain`: each job's run at `offset` against its run at 0 moved there.
fn explain(
    ws: &Workspace,
    jobs: &[(
        &str,
        &scenario::Scenario,
        &str,
        u32,
        galloc_lab::build::artifact::Artifact,
    )],
    offset: u32,
    heap: Heap,
) -> Result<()> {
    use galloc_lab::analyse::layout_model::Move;
    use galloc_lab::results::touches::GRANULE;
    for (case, scenario, variant, heap_base, artifact) in jobs {
        let v = galloc_variants::find(variant)?;
        let moved_build = build(
            ws,
            BuildRequest {
                layout_offset: offset,
                ..BuildRequest::deployed(scenario.package, v)
            },
        )?;
        let (_, at_zero) = traced(&artifact.bytes, *heap_base, scenario)?;
        let (_, there) = traced(
            &moved_build.bytes,
            moved_build.heap_base.unwrap_or(0),
            scenario,
        )?;
        let mv = Move::new(&at_zero, offset, heap);
        println!(
            "{case} ({variant}) at +{offset}: heap base {} -> {}, static pages {} -> {}, stack end {} -> {}",
            at_zero.heap_base, there.heap_base, at_zero.static_pages, there.static_pages,
            at_zero.stack_end, there.stack_end
        );
        let mut shown = 0;
        for (i, (a, b)) in at_zero.messages.iter().zip(&there.messages).enumerate() {
            let mut expect: Vec<(u32, u8)> = a
                .touches
                .iter()
                .map(|t| (mv.address(t.granule * GRANULE) / GRANULE, t.flags))
                .collect();
            let mut got: Vec<(u32, u8)> = b.touches.iter().map(|t| (t.granule, t.flags)).collect();
            expect.sort_unstable();
            got.sort_unstable();
            if expect != got {
                // The first few of `a` not in `b` (both sorted).
                let only = |a: &[(u32, u8)], b: &[(u32, u8)]| {
                    a.iter()
                        .filter(|x| b.binary_search(x).is_err())
                        .take(6)
                        .map(|(g, f)| format!("{:#x}/{f}", g * GRANULE))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                println!(
                    "  message {i}: {} granules moved, {} run; only moved: {}; only run: {}",
                    expect.len(),
                    got.len(),
                    only(&expect, &got),
                    only(&got, &expect)
                );
                shown += 1;
                if shown == 5 {
                    break;
                }
            }
        }
        if shown == 0 {
            println!("  every message's granules are the moved ones");
        }
    }
    Ok(())
}

/// [`traced`], with the model's foundation checked: at the layout the program ran, the model
/// gives the meter's own page counts, message by message (`lab layout` and `lab layout-model`
/// build on nothing else).
pub(super) fn traced_checked(
    bytes: &[u8],
    heap_base: u32,
    scenario: &scenario::Scenario,
    heap: Heap,
) -> Result<(galloc_lab::run::execute::CaseRun, TouchTrace)> {
    let (run, trace) = traced(bytes, heap_base, scenario)?;
    let counted: Vec<PageCounts> = run.messages.iter().filter_map(|m| m.pages).collect();
    let modelled = page_counts(&trace, 0, heap);
    let same = |a: &PageCounts, b: &PageCounts| {
        (a.read, a.write, a.write_after_read, a.loaded, a.changed)
            == (b.read, b.write, b.write_after_read, b.loaded, b.changed)
    };
    if counted.len() != modelled.len() || counted.iter().zip(&modelled).any(|(a, b)| !same(a, b)) {
        bail!(
            "the layout model does not reproduce the meter's page counts at the layout the \
             program ran (a defect in the granule trace or the model)"
        );
    }
    Ok((run, trace))
}

/// `bytes` (whose heap base is `heap_base`) run through `scenario` on a meter keeping every
/// granule: the run and its trace.
fn traced(
    bytes: &[u8],
    heap_base: u32,
    scenario: &scenario::Scenario,
) -> Result<(galloc_lab::run::execute::CaseRun, TouchTrace)> {
    let mut m = WasmtimeBackend::tracing_touches()?;
    m.heap_base(heap_base);
    let run = run_case(&mut m, bytes, scenario, ProbeReads::Never, || {})?;
    let trace = m.take_touches().into_iter().next().unwrap_or_default();
    Ok((run, trace))
}
