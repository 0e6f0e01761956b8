//! `lab layout CRATE [SCENARIO]...`: where an author's program should place its statics and
//! heap, the setting that does it, and what it is worth (docs/layout-rule.md).
//!
//! The first scenario is the one the layout is chosen from, by the rule the lab judged out of
//! sample (the robust layout rule, [`galloc_lab::analyse::layout_choice::robust_choice`]):
//! the program's plain build runs once on the wasmtime meter at the linker's layout keeping
//! every granule each message touches, once on gtest there, and the layout model predicts its
//! gas at each layout of the sweep with the heap's blocks where the run put them and shifted
//! by [`HEAP_SHIFTS`]; a layout qualifies only if it is predicted cheaper than the linker's at
//! every shift, and the one whose dearest prediction is lowest is chosen. The choice is then
//! built (the same code, its statics placed higher) and measured on gtest on every scenario
//! given, against the linker's layout: the later scenarios are workloads the choice did not
//! see, the author's own out-of-sample check. It recommends the setting only where every
//! scenario measured it cheaper; and it says what the lab found when it judged the rule on
//! the 17 programs' second workloads (`results/layout-model/`), from those files.
//!
//! The setting is `--global-base`, as rustflags for `wasm32v1-none` in the crate's
//! `.cargo/config.toml`: gear-wasm-builder 2.0 builds the Wasm through a nested `cargo rustc`
//! with `RUSTFLAGS` and `CARGO_ENCODED_RUSTFLAGS` removed (gear-wasm-optimizer's
//! `CargoCommand::run`), so a flag in the environment never reaches it, and cargo's own
//! configuration does; a crate built with cargo alone reads it the same way.

use anyhow::{bail, Context, Result};
use galloc_lab::analyse::layout_choice::{robust_choice, ChoiceRule, Standing};
use galloc_lab::analyse::layout_model::{
    page_charges, predicted, shifted_charges, Heap, HEAP_SHIFTS,
};
use galloc_lab::build::artifact::{
    build, from_linker, Artifact, BuildRequest, PostProcess, MAX_LAYOUT_OFFSET,
};
use galloc_lab::build::external::{case_of, Program};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::report::tables::thousands;
use galloc_lab::results::pages::GEAR_PAGE;
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::execute::{run_case, ProbeReads};
use galloc_lab::run::plan;
use galloc_lab::run::scenario::Scenario;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The program's crate directory (or its `Cargo.toml`).
    program: PathBuf,
    /// Its scenario files (docs/your-program.md, "Measuring another program"): the layout is
    /// chosen from the first, and measured on every one. Default: `<package>.json` in the
    /// crate's directory.
    scenarios: Vec<PathBuf>,
    /// The allocator the program links: `shipping` (gstd's own, the default) or the variant
    /// `lab pick` named.
    #[arg(long, default_value = "shipping")]
    variant: String,
    /// Instead of the rule's choice, the setting that places the statics this many bytes
    /// higher (a multiple of 16), predicted and measured the same way.
    #[arg(long, allow_negative_numbers = true, value_parser = offset)]
    offset: Option<u32>,
}

/// `--offset`: bytes the statics move up, so a whole number, 0 or more (a negative one reached
/// clap's own message, which named no layout).
fn offset(text: &str) -> Result<u32, String> {
    match text.trim().parse::<i64>() {
        Ok(n) if n >= 0 => u32::try_from(n).map_err(|_| format!("{n} bytes is far too far")),
        Ok(n) => Err(format!(
            "{n}: a layout moves the statics up from the linker's layout, never below it; give 0 \
             or more bytes (a multiple of 16)"
        )),
        Err(e) => Err(format!(
            "`{text}`: {e}; give a number of bytes, a multiple of 16"
        )),
    }
}

/// Everything measured at one layout: the build, and gtest's total on each scenario.
struct Measured {
    artifact: Artifact,
    totals: Vec<u64>,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let advice = advise(
        ws,
        &args.program,
        &args.scenarios,
        &args.variant,
        args.offset,
    )?;
    print!("{advice}");
    Ok(())
}

/// The layout for the program at `crate_dir` with `variant`, chosen from the first of
/// `scenarios` (the crate's `<package>.json` when none is given) and measured on all, or the one
/// `offset` bytes up: what `lab layout` prints, and `lab pick` beside its variant.
pub fn advise(
    ws: &Workspace,
    crate_dir: &std::path::Path,
    scenarios: &[PathBuf],
    variant: &str,
    offset: Option<u32>,
) -> Result<String> {
    use std::fmt::Write;
    let program = Program::at(crate_dir)?;
    let variant = galloc_variants::find(variant)?;
    if variant.reproduces.is_some() {
        bail!(
            "`{}` is a reproduction, not an allocator a program links (its runs go wrong by \
             design): give `shipping` or a candidate variant",
            variant.id
        );
    }
    if offset == Some(0) {
        bail!(
            "--offset 0 is the linker's layout itself: there is nothing to move or compare; give \
             the bytes to move the statics by (a multiple of 16), or no --offset for the rule's \
             choice"
        );
    }
    if let Some(o) = offset {
        if !o.is_multiple_of(16) || o > MAX_LAYOUT_OFFSET {
            bail!(
                "--offset {o}: a layout moves the statics by a multiple of 16 bytes (their \
                 alignment), up to {MAX_LAYOUT_OFFSET}"
            );
        }
    }
    let files = match scenarios {
        [] => {
            let beside = program
                .manifest
                .with_file_name(format!("{}.json", program.package));
            if !beside.is_file() {
                bail!(
                    "no scenario given, and none at {}: the layout is chosen from one run of the \
                     program, so give a scenario file (docs/your-program.md, \"Measuring another \
                     program\")",
                    beside.display()
                );
            }
            vec![beside]
        }
        given => given.to_vec(),
    };
    let mut read = Vec::new();
    for file in &files {
        let case: &'static str = Box::leak(case_of(file)?.to_owned().into_boxed_str());
        read.push(Scenario::read(file, case, &program)?);
    }
    let scenarios = read;
    // The rule's standing, read (and its files checked) before anything is built: a damaged
    // study failed the command after every build and run.
    let judged = judgement(ws, variant.id)?;
    let package: &'static str = Box::leak(program.package.clone().into_boxed_str());
    let request = |layout_offset: u32, post: PostProcess| BuildRequest {
        layout_offset,
        post,
        external: Some(&program),
        ..BuildRequest::deployed(package, variant)
    };

    // A crate whose own cargo config sets `--global-base` (an author who applied this
    // command's line) is placed from the linker's own layout all the same: its build re-linked
    // without that setting. So the choice is the same before and after it is applied, and the
    // crate's layout is measured as one of the sweep's.
    let crate_dir = program.manifest.parent().unwrap_or(crate_dir);
    let theirs =
        galloc_lab::build::config::global_base(&galloc_lab::build::config::rustflags(crate_dir)?);
    let at = |offset: u32, post: PostProcess| -> Result<Artifact> {
        match theirs {
            None => build(ws, request(offset, post)),
            Some(_) => from_linker(ws, request(0, post), offset),
        }
    };
    // The linker's layout: the build as deployed, and the one run the model needs.
    eprintln!(
        "building {package} for {} (the linker's layout)",
        variant.id
    );
    let linker = measured(at(0, PostProcess::Gear)?, &scenarios)?;
    let heap_base = heap_base_of(&linker.artifact)?;
    let (_, trace) = super::layout_model::traced_checked(
        &linker.artifact.bytes,
        heap_base,
        &scenarios[0],
        Heap::Moves,
    )
    .with_context(|| format!("{} on the granule-keeping meter", files[0].display()))?;
    let at_zero = linker.totals[0];
    let zero_pages = page_charges(&trace, 0, Heap::Moves);
    // Each layout of the sweep: the model's prediction, then at every shift of the heap's blocks.
    let predict = |offset: u32| -> Vec<u64> {
        let unshifted = page_charges(&trace, offset, Heap::Moves);
        let shifted = HEAP_SHIFTS
            .iter()
            .map(|&s| shifted_charges(&trace, offset, Heap::Moves, s));
        std::iter::once(unshifted)
            .chain(shifted)
            .map(|charges| predicted(at_zero, charges, zero_pages))
            .collect()
    };
    let predictions: BTreeMap<u32, Vec<u64>> = plan::default_sweep()
        .into_iter()
        .map(|offset| (offset, predict(offset)))
        .collect();
    let by_rule = robust_choice(&predictions)
        .context("the layout model gave no prediction at the linker's layout (a defect)")?;
    let given = offset;
    let offset = given.unwrap_or(by_rule);
    let mut out = String::new();

    writeln!(
        out,
        "{package} with `{}`: where its statics and heap fall (docs/layout-rule.md)",
        variant.id
    )?;
    writeln!(
        out,
        "  linker's layout: heap base {} ({} into its Gear page)",
        thousands(heap_base.into()),
        thousands((heap_base % GEAR_PAGE).into())
    )?;
    // Where the statics start at the linker's layout: the printed address is this plus the move.
    let raw = at(0, PostProcess::None)?;
    let start = galloc_lab::build::wasm::data_start(&raw.bytes)?.with_context(|| {
        format!(
            "{} has no static data: there is nothing a layout could move",
            raw.path.display()
        )
    })?;
    // The crate's own setting, as a move from the linker's layout (`None`: it sets none).
    let crates = match theirs {
        None => None,
        Some(base) => {
            let own = build(ws, request(0, PostProcess::Gear))?;
            let own_base = heap_base_of(&own)?;
            writeln!(
                out,
                "  the crate's layout: heap base {} ({} into its Gear page), set by \
                 `--global-base={base}` in its cargo config (statics {:+} bytes from the linker's)",
                thousands(own_base.into()),
                thousands((own_base % GEAR_PAGE).into()),
                base as i64 - i64::from(start)
            )?;
            Some(base as i64 - i64::from(start))
        }
    };
    if given.is_none() && crates == Some(i64::from(offset)) {
        writeln!(
            out,
            "  the crate's cargo config already places its statics where the robust layout rule \
             chooses ({:+} bytes): nothing further to apply",
            offset
        )?;
        writeln!(out, "{judged}")?;
        return Ok(out);
    }
    if given.is_none() && offset == 0 {
        if crates.is_some() {
            writeln!(
                out,
                "  the rule keeps the linker's layout, so the crate's own `--global-base` is not \
                 its choice: remove it from the crate's cargo config to deploy the linker's layout"
            )?;
        }
        writeln!(
            out,
            "  keep the linker's layout: no layout of the sweep is predicted cheaper than it with \
             the heap's blocks where {} put them and {} KiB either way (the robust layout rule)",
            files[0].display(),
            HEAP_SHIFTS
                .iter()
                .map(|s| s.unsigned_abs())
                .max()
                .unwrap_or(0)
                / 1024
        )?;
        writeln!(out, "{judged}")?;
        return Ok(out);
    }
    let chosen_by = match given {
        Some(_) => "`--offset`".to_owned(),
        None => "the robust layout rule".to_owned(),
    };
    eprintln!("building {package} for {} at +{offset}", variant.id);
    let moved = measured(at(offset, PostProcess::Gear)?, &scenarios)?;
    let moved_base = heap_base_of(&moved.artifact)?;
    if moved_base.checked_sub(heap_base) != Some(offset) {
        bail!(
            "{package} built at +{offset} has its heap base at {moved_base}, not {heap_base} + \
             {offset}: the setting does not move it as said (a defect in the lab's build)"
        );
    }
    // The absolute address the linker is given: where the build's statics start, plus the move.
    let global_base = u64::from(start) + u64::from(offset);
    let at = predict(offset);
    let pct = |a: u64, b: u64| 100.0 * (a as f64 / b as f64 - 1.0);
    writeln!(
        out,
        "  chosen by {chosen_by}: every static {} bytes higher; heap base {} ({} into its Gear page)",
        thousands(offset.into()),
        thousands(moved_base.into()),
        thousands((moved_base % GEAR_PAGE).into())
    )?;
    writeln!(
        out,
        "  predicted on {} (the model, from one run): {:+.2} %, {:+.2} % at worst with the heap's \
         blocks elsewhere",
        files[0].display(),
        pct(at[0], at_zero),
        pct(*at.iter().max().unwrap_or(&at[0]), at_zero)
    )?;
    let changes: Vec<f64> = moved
        .totals
        .iter()
        .zip(&linker.totals)
        .map(|(m, l)| pct(*m, *l))
        .collect();
    for ((file, change), (m, l)) in files
        .iter()
        .zip(&changes)
        .zip(moved.totals.iter().zip(&linker.totals))
    {
        writeln!(
            out,
            "  measured on {} (gtest): {change:+.2} % ({} gas against {} at the linker's layout){}",
            file.display(),
            thousands(*m),
            thousands(*l),
            if std::ptr::eq(file, &files[0]) {
                ""
            } else {
                "; not chosen from"
            }
        )?;
    }
    // Recommended only where a workload the choice did not see measured it cheaper too: on
    // the one it was chosen from alone, "cheaper" is the choice looking at itself (polls was
    // cheaper there and dearer on its second workload).
    let untested = changes.len() < 2;
    let cheaper = changes.iter().all(|c| *c < 0.0);
    writeln!(
        out,
        "  {}:\n    # {}.cargo/config.toml (merge it into any rustflags this table has: cargo reads \
         them instead of [build]'s; gear-wasm-builder reads this file, not RUSTFLAGS{})\n    [target.wasm32v1-none]\n    rustflags = [\"-C\", \
         \"link-arg=--global-base={global_base}\"]",
        if !cheaper {
            "not recommended (dearer on a scenario above); were it applied".to_owned()
        } else if untested {
            format!(
                "untested: measured only on the workload it was chosen from, so not recommended \
                 yet; give a second scenario it was not chosen from (`lab layout {} {} \
                 SECOND.json`) and apply it only where that is cheaper too; were it applied",
                galloc_lab::results::metadata::quote(&crate_dir.display().to_string()),
                galloc_lab::results::metadata::quote(&files[0].display().to_string())
            )
        } else {
            "to apply it".to_owned()
        },
        program
            .manifest
            .parent()
            .map(|d| format!("{}/", d.display()))
            .unwrap_or_default(),
        if crates.is_some() {
            "; in place of the crate's own `--global-base`"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "  (the address is where the statics start, {}, plus the move: the stack's size is \
         before it, so a change to the stack size changes it)",
        thousands(u64::from(start))
    )?;
    writeln!(out, "{judged}")?;
    Ok(out)
}

/// `artifact`'s heap base, or an error naming it.
fn heap_base_of(artifact: &Artifact) -> Result<u32> {
    artifact.heap_base.with_context(|| {
        format!(
            "{} exports no `__heap_base`: not a build the lab can place",
            artifact.path.display()
        )
    })
}

/// `artifact` run through each scenario on gtest.
fn measured(artifact: Artifact, scenarios: &[Scenario]) -> Result<Measured> {
    let mut totals = Vec::new();
    for s in scenarios {
        // gtest allows one `System` per thread: each run's is dropped before the next.
        let mut backend = BackendKind::Gtest.create()?;
        let run = run_case(
            backend.as_mut(),
            &artifact.bytes,
            s,
            ProbeReads::Never,
            || {},
        )
        .with_context(|| format!("{} on gtest ({})", s.case, artifact.config))?;
        totals.push(run.total_cost());
    }
    Ok(Measured { artifact, totals })
}

/// What the lab found when it judged the robust rule out of sample, from
/// `results/layout-model/` (or that it has not judged it with `variant`).
fn judgement(ws: &Workspace, variant: &str) -> Result<String> {
    let results = ws.results_dir();
    let corpus = results.join("corpus");
    // Read as the lab wrote them, under their locks: a hand edit is named, not judged.
    let mut _locks = galloc_lab::store::checked_studies(ws, &results)?;
    if !_locks.is_empty() {
        for dir in [&results, &corpus] {
            if dir.join(galloc_lab::results::MANIFEST).exists() {
                _locks.push(galloc_lab::store::checked(ws, dir)?);
            }
        }
    }
    let study = galloc_lab::report::layout_model::study(&results, &[&results, &corpus])?;
    let standing: Option<&Standing> = study.as_ref().and_then(|s| {
        s.standings
            .iter()
            .find(|s| s.rule == ChoiceRule::Robust && s.variant == variant)
    });
    Ok(match standing {
        None => format!(
            "  the lab has not judged this rule with `{variant}` (results/layout-model/: `just \
             layout-model`)"
        ),
        Some(s) => {
            let p = &s.population;
            // Where the rule kept every program's layout or made each cheaper, the "worst"
            // program is one left unchanged: say none was dearer rather than name it.
            let worst = if p.worst_program.1 >= 0.005 {
                format!("worst `{}` {:+.2} %", p.worst_program.0, p.worst_program.1)
            } else {
                "no program dearer".to_owned()
            };
            format!(
                "  the rule, judged on workloads it did not choose from (the 17 programs' second \
                 workloads, results/layout-model/README.md): {:+.2} % ({:+.2} … {:+.2}) against \
                 the linker's layout, {worst}; it {} the lab's bar (docs/layout-rule.md, \
                 \"Judged out of sample\"){}",
                p.expected_pct,
                p.interval_pct.0,
                p.interval_pct.1,
                if s.meets_target() { "meets" } else { "misses" },
                if s.meets_target() {
                    ""
                } else {
                    ": trust it where your own scenarios measure it cheaper"
                }
            )
        }
    })
}
