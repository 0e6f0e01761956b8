//! `lab measure`'s files: every backend's rows, the artifacts, the agreement and the manifest,
//! merged with the rows already in the results directory, and the digest that tells whether
//! they would be written again unchanged.

use anyhow::{Context, Result};
use galloc_lab::analyse::agreement::{agreement, Pair};
use galloc_lab::analyse::layout;
use galloc_lab::analyse::validation::{overheads_of, validate};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::results::trace;
use galloc_lab::results::{
    merge, read_csv, write_csv, AgreementRow, ArtifactRow, LayoutRow, LeftOutRow, MeasuredRow,
    MessageRow, OpRow, PagesRow, SecondRow, TotalRow, ValidationRow, LEFT_OUT, MANIFEST, SECOND,
};
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::cache::{digest_of_parts, RunCache};
use galloc_lab::run::measure::{
    case_rows, message_rows, pages_row, probe_differences, Builds, CaseMeasurement,
};
use galloc_lab::run::scenario::{self, Scenario};
use galloc_variants::Variant;
use std::collections::BTreeMap;
use std::path::Path;

use super::{Job, Measured, Part, Sending};

/// The digest of everything a run's files are made from: every run's cache key (which holds
/// the lab's own bytes, the backend, the scenario and the builds' hashes), every build (its
/// file and hash: what `artifacts.csv` is read from), the selection's shape, the toolchain and
/// crate versions the metadata records, and the charts' font.
pub(super) fn digest_of(
    ws: &Workspace,
    cache: &RunCache,
    jobs: &[Job],
    sending: &Sending,
    variants: &[&'static Variant],
    builds: &BTreeMap<(&str, &str), Builds>,
    (whole, features): (bool, &str),
) -> Result<String> {
    let mut parts = vec![
        format!("whole {whole}, features {features}"),
        format!("{:?}", sending.source),
    ];
    for &Job {
        backend,
        case: ci,
        variant: vi,
        part,
    } in jobs
    {
        let (s, v) = (&sending.scenarios[ci], variants[vi]);
        let b = &builds[&(s.package, v.id)];
        let print = &sending.prints[ci];
        parts.push(match part {
            Part::Case => cache.key(backend, print, b),
            Part::Point(p) => cache.key_of_run(backend, print, &b.layouts[p].1.sha256),
            Part::Second(i) => cache.key_of_run(
                backend,
                sending.second_prints[ci]
                    .as_ref()
                    .expect("a second workload's job has one"),
                &b.at(sending.second_on[&backend][i]).sha256,
            ),
        });
    }
    for b in builds.values() {
        let layouts = b.layouts.iter().map(|(_, a)| a);
        for a in [&b.plain, &b.probe, &b.twin].into_iter().chain(layouts) {
            parts.push(format!("{} {}", a.path.display(), a.sha256));
        }
    }
    parts.push(galloc_lab::store::metadata::sources(ws.root())?);
    parts.push(galloc_lab::report::charts::font_identity());
    Ok(digest_of_parts(parts.iter().map(String::as_str)))
}

/// Clears, in the staged copy `dir`, every file a whole run writes afresh (every backend's
/// rows, the artifacts, the agreement, the manifest and the traces), so no row of an earlier
/// format or selection survives it.
pub(super) fn clear(dir: &Path, backends: &[BackendKind]) -> Result<()> {
    let mut gone: Vec<std::path::PathBuf> = backends.iter().map(|b| dir.join(b.name())).collect();
    gone.extend(
        [
            "artifacts.csv",
            "agreement.csv",
            MANIFEST,
            LEFT_OUT,
            "traces",
        ]
        .map(|f| dir.join(f)),
    );
    for path in gone {
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else if path.exists() {
            std::fs::remove_file(&path)
        } else {
            Ok(())
        };
        removed.with_context(|| format!("cannot clear {}", path.display()))?;
    }
    Ok(())
}

/// Every results file of the run, the manifest and the report, into the staged copy.
pub(super) fn write_all(
    ws: &Workspace,
    staged: &galloc_lab::store::publish::Staged,
    out: &Path,
    backends: &[BackendKind],
    measured: &Measured,
    builds: &BTreeMap<(&str, &str), Builds>,
    sending: &Sending,
) -> Result<galloc_lab::store::publish::Published> {
    let dir = staged.dir.clone();
    // A backend that ran nothing (the fuel meter left out for a program it cannot run) writes
    // no files: the report then has no section for it.
    let ran = |b: &BackendKind| measured.keys().any(|(backend, _, _)| backend == b);
    for &backend in backends.iter().filter(|b| ran(b)) {
        write_backend(&dir, backend, measured, builds, sending.second_workloads)?;
    }
    write_artifacts(&dir, builds)?;
    write_agreement(&dir, sending.scenarios)?;
    let runs: Vec<MeasuredRow> = measured
        .values()
        .map(|(s, v, m, _, _)| MeasuredRow {
            backend: m.backend.name().into(),
            case: s.case.into(),
            variant: v.id.into(),
        })
        .collect();
    let manifest = merge(&dir.join(MANIFEST), runs, |r: &MeasuredRow| {
        (r.backend.clone(), key(&r.case, &r.variant))
    })?;
    write_csv(&dir.join(MANIFEST), &manifest)?;
    let left_out = write_left_out(&dir, backends, sending)?;
    let source = &sending.source;
    let given = (source.command(&manifest, &left_out), source.program.clone());
    galloc_lab::store::publish::publish(ws, &dir, &staged.images, out, Some(given))
}

/// `left-out.csv`: the backends this run was asked for and left out for a case, and why, in
/// place of what the directory said of the same backend and case (a case measured again on a
/// backend it was left off before is no longer listed); the others kept. No file when none.
/// Returns the rows the directory now lists.
fn write_left_out(
    dir: &Path,
    backends: &[BackendKind],
    sending: &Sending,
) -> Result<Vec<LeftOutRow>> {
    let path = dir.join(LEFT_OUT);
    let mut rows: Vec<LeftOutRow> = if path.exists() {
        read_csv(&path)?
    } else {
        Vec::new()
    };
    rows.retain(|r| {
        !(backends.iter().any(|b| b.name() == r.backend)
            && sending.scenarios.iter().any(|s| s.case == r.case))
    });
    rows.extend(sending.left_out.iter().cloned());
    rows.sort();
    if rows.is_empty() {
        if path.exists() {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
        return Ok(rows);
    }
    write_csv(&path, &rows)?;
    Ok(rows)
}

/// One backend's files: `results/<backend>/*.csv`, its per-message rows
/// (`messages.csv.zst`) and its traces.
fn write_backend(
    results: &Path,
    backend: BackendKind,
    measured: &Measured,
    builds: &BTreeMap<(&str, &str), Builds>,
    second_workloads: &[Option<(scenario::Workload, Scenario)>],
) -> Result<()> {
    let (mut totals, mut ops, mut pages, mut messages, mut layouts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut second_rows: Vec<SecondRow> = Vec::new();
    let mut per_build: BTreeMap<(&str, &str), Vec<(&Scenario, &CaseMeasurement)>> = BTreeMap::new();
    for ((_, ci, _), (s, v, m, points, second)) in
        measured.iter().filter(|((b, _, _), _)| *b == backend)
    {
        let build = &builds[&(s.package, v.id)];
        if let Some((workload, scenario)) = &second_workloads[*ci] {
            for (offset, run) in second {
                let row = galloc_lab::run::measure::layout_row(
                    scenario,
                    v.id,
                    backend,
                    m.unit,
                    *offset,
                    build.at(*offset),
                    run,
                )?;
                second_rows.push(SecondRow::of(row, workload.id));
            }
        }
        layouts.push(galloc_lab::run::measure::layout_row(
            s,
            v.id,
            backend,
            m.unit,
            0,
            &build.plain,
            &m.plain,
        )?);
        for (offset, run) in points {
            layouts.push(galloc_lab::run::measure::layout_row(
                s,
                v.id,
                backend,
                m.unit,
                *offset,
                build.at(*offset),
                run,
            )?);
        }
        let (total, op_rows) = case_rows(s, v, m, build.plain.bytes.len() as u64);
        totals.push(total);
        ops.extend(op_rows);
        pages.extend(pages_row(s, v, m));
        messages.extend(message_rows(s, v, m));
        if backend.records_calls() {
            let path = results
                .join("traces")
                .join(format!("{}-{}.csv.zst", s.case, v.id));
            trace::write(&path, &galloc_lab::run::execute::trace_records(&m.probe))?;
        }
        per_build.entry((s.package, v.id)).or_default().push((s, m));
    }
    let dir = results.join(backend.name());
    let save = |name: &str| dir.join(name);

    // The probe's overhead is a property of each build: fitted over all its cases at once. A
    // run of fewer of the build's cases than the stored rows cover keeps the stored fit.
    let stored: Vec<ValidationRow> = if save("probe-validation.csv").exists() {
        read_csv(&save("probe-validation.csv"))?
    } else {
        Vec::new()
    };
    let mut checks = Vec::new();
    for ((package, variant), runs) in &per_build {
        let v = galloc_variants::find(variant)?;
        let ran: Vec<&str> = runs.iter().map(|(s, _)| s.case).collect();
        let earlier: Vec<&ValidationRow> = stored
            .iter()
            .filter(|r| r.variant == *variant && package_of(&r.case, runs) == Some(*package))
            .collect();
        let partial = earlier.iter().any(|r| !ran.contains(&r.case.as_str()));
        let kept = partial.then(|| overheads_of(earlier[0]));
        let runs: Vec<_> = runs.iter().map(|(s, m)| probe_differences(s, m)).collect();
        checks.extend(validate(v.id, &runs, kept));
    }

    let layouts = merge_points(&save("layouts.csv"), layouts, |r: &LayoutRow| {
        (r.case.as_str(), r.variant.as_str(), r.offset)
    })?;
    if !galloc_lab::results::write_layouts(&save("layouts.csv"), &layouts)? {
        eprintln!(
            "{}: rows measured before the gas anatomy's columns existed stay as they were, so \
             the file keeps their format and has no anatomy; measuring every case and variant \
             again writes it whole (`just compare`, `just corpus`).",
            save("layouts.csv").display()
        );
    }
    // Only gas runs the second workloads (`plan::second_on`).
    if !second_rows.is_empty() || save(SECOND).exists() {
        let rows = merge_points(&save(SECOND), second_rows, |r: &SecondRow| {
            (r.case.as_str(), r.variant.as_str(), r.offset)
        })?;
        write_csv(&save(SECOND), &rows)?;
    }

    let mut totals = merge(&save("totals.csv"), totals, |r: &TotalRow| {
        key(&r.case, &r.variant)
    })?;
    // Derived from every layout row, so a rerun of shipping refreshes every variant's pairing.
    layout::fill(&mut totals, &layouts);
    write_csv(&save("totals.csv"), &totals)?;
    let ops = merge(&save("ops.csv"), ops, |r: &OpRow| {
        (key(&r.case, &r.variant), op_index(&r.op))
    })?;
    write_csv(&save("ops.csv"), &ops)?;
    let checks = merge(
        &save("probe-validation.csv"),
        checks,
        |r: &ValidationRow| key(&r.case, &r.variant),
    )?;
    write_csv(&save("probe-validation.csv"), &checks)?;
    if !pages.is_empty() {
        let pages = merge(&save("pages.csv"), pages, |r: &PagesRow| {
            key(&r.case, &r.variant)
        })?;
        write_csv(&save("pages.csv"), &pages)?;
    }
    // Each measured (case, variant) keeps this run's messages alone: merged message by
    // message, a scenario cut from 9 messages to 7 kept the old 8th and 9th beside the new.
    let path = save("messages.csv.zst");
    let messages = merge_points(&path, messages, |r: &MessageRow| {
        (r.case.as_str(), r.variant.as_str(), r.message)
    })?;
    write_csv(&path, &messages)
}

fn write_artifacts(dir: &Path, builds: &BTreeMap<(&str, &str), Builds>) -> Result<()> {
    let rows: Vec<ArtifactRow> = builds
        .iter()
        .flat_map(|((package, variant), b)| b.rows(package, variant))
        .collect();
    let path = dir.join("artifacts.csv");
    let fresh: std::collections::BTreeSet<(String, String)> = rows
        .iter()
        .map(|r| (r.package.clone(), r.variant.clone()))
        .collect();
    let made: std::collections::BTreeSet<(String, String, String, u32)> = rows
        .iter()
        .map(|r| {
            (
                r.package.clone(),
                r.variant.clone(),
                r.build.clone(),
                r.layout_offset,
            )
        })
        .collect();
    // The plain build (offset 0) of each (package, variant), as stored and as made now: a layout
    // point is its plain build re-linked, so it stays what it was while the plain build does.
    let plain_of = |rows: &[ArtifactRow]| -> BTreeMap<(String, String), String> {
        rows.iter()
            .filter(|r| r.build == "plain" && r.layout_offset == 0)
            .map(|r| ((r.package.clone(), r.variant.clone()), r.sha256.clone()))
            .collect()
    };
    let made_plain = plain_of(&rows);
    let stored_plain = if path.exists() {
        plain_of(&read_csv::<ArtifactRow>(&path)?)
    } else {
        BTreeMap::new()
    };
    let mut rows = merge(&path, rows, |r: &ArtifactRow| {
        (
            r.package.clone(),
            key("", &r.variant),
            build_index(&r.build),
            r.layout_offset,
        )
    })?;
    // Rows of builds the lab no longer makes would otherwise be kept forever: of a (package,
    // variant) built now only this run's builds stay, and the layout points it did not need
    // (the fuel meter alone runs fewer) where its plain build is the one they were linked from.
    rows.retain(|r| {
        let pv = (r.package.clone(), r.variant.clone());
        build_index(&r.build) != usize::MAX
            && (!fresh.contains(&pv)
                || made.contains(&(
                    r.package.clone(),
                    r.variant.clone(),
                    r.build.clone(),
                    r.layout_offset,
                ))
                || (r.build == "layout"
                    && stored_plain
                        .get(&pv)
                        .is_some_and(|s| made_plain.get(&pv) == Some(s))))
    });
    write_csv(&path, &rows)
}

/// For each case this run measured: do fuel and gas agree, over every variant the results
/// hold for it on both backends? Read back from the merged files, so a run of one variant
/// (`just compare X`) recomputes the case's row over all of them rather than over itself.
fn write_agreement(dir: &Path, scenarios: &[Scenario]) -> Result<()> {
    let read = |backend: BackendKind| -> Result<Option<(Vec<TotalRow>, Vec<MessageRow>)>> {
        let sub = dir.join(backend.name());
        if !sub.join("messages.csv.zst").is_file() {
            return Ok(None);
        }
        Ok(Some((
            read_csv(&sub.join("totals.csv"))?,
            read_csv(&sub.join("messages.csv.zst"))?,
        )))
    };
    let (Some((fuel_totals, fuel_msgs)), Some((gas_totals, gas_msgs))) =
        (read(BackendKind::Wasmtime)?, read(BackendKind::Gtest)?)
    else {
        return Ok(());
    };
    let mut rows = Vec::new();
    for s in scenarios {
        let pairs: Vec<Pair> = galloc_variants::VARIANTS
            .iter()
            .filter_map(|v| {
                let total = |rows: &[TotalRow]| {
                    rows.iter()
                        .find(|t| t.case == s.case && t.variant == v.id)
                        .map(|t| t.allocator)
                };
                let per_message = |rows: &[MessageRow]| -> Vec<MessageRow> {
                    rows.iter()
                        .filter(|m| m.case == s.case && m.variant == v.id)
                        .cloned()
                        .collect()
                };
                let (fuel, gas) = (per_message(&fuel_msgs), per_message(&gas_msgs));
                if fuel.is_empty() || fuel.len() != gas.len() {
                    return None;
                }
                Some(Pair {
                    variant: v.id,
                    allocator_fuel: total(&fuel_totals)?,
                    allocator_gas: total(&gas_totals)?,
                    code_bytes: gas_totals
                        .iter()
                        .find(|t| t.case == s.case && t.variant == v.id)?
                        .code_bytes,
                    messages: fuel
                        .iter()
                        .zip(&gas)
                        .map(|(f, g)| (f.cost, f.page_counts(), g.cost))
                        .collect(),
                })
            })
            .collect();
        if pairs.len() >= 2 {
            rows.push(agreement(s.case, &pairs));
        }
    }
    let path = dir.join("agreement.csv");
    let rows = merge(&path, rows, |r: &AgreementRow| key(&r.case, ""))?;
    write_csv(&path, &rows)
}

/// `rows` (this run's points of a sweep, or its messages) merged into the stored file at
/// `path`: a (case, variant) this run measured keeps only this run's points, so that no point
/// of an earlier build (or message of an earlier scenario) stays beside this one's; the others
/// keep theirs.
fn merge_points<R: serde::de::DeserializeOwned, P: Ord + Clone>(
    path: &Path,
    rows: Vec<R>,
    point: impl Fn(&R) -> (&str, &str, P),
) -> Result<Vec<R>> {
    let owned = |r: &R| {
        let (case, variant, offset) = point(r);
        (case.to_owned(), variant.to_owned(), offset)
    };
    let measured: std::collections::BTreeSet<(String, String, P)> =
        rows.iter().map(owned).collect();
    let fresh: std::collections::BTreeSet<(String, String)> = measured
        .iter()
        .map(|(c, v, _)| (c.clone(), v.clone()))
        .collect();
    let mut all = merge(path, rows, |r: &R| {
        let (case, variant, offset) = point(r);
        (key(case, variant), offset)
    })?;
    all.retain(|r| {
        let (case, variant, offset) = owned(r);
        !fresh.contains(&(case.clone(), variant.clone()))
            || measured.contains(&(case, variant, offset))
    });
    Ok(all)
}

/// The package a stored row's case runs: from this run's scenarios, else the lab's own cases,
/// else (a case the registry does not know, so another scenario of the outside program the
/// directory holds: a results directory holds one program) this run's outside program's.
fn package_of(case: &str, runs: &[(&Scenario, &CaseMeasurement)]) -> Option<&'static str> {
    if let Some((s, _)) = runs.iter().find(|(s, _)| s.case == case) {
        return Some(s.package);
    }
    let own = |id: &str| scenario::CASES.iter().find(|c| c.id == id);
    match own(case) {
        Some(c) => Some((c.make)().package),
        None => runs
            .iter()
            .find(|(s, _)| own(s.case).is_none())
            .map(|(s, _)| s.package),
    }
}

/// A row's key, by which the merges replace rows and sort them: the case's and the variant's
/// registry positions, then their names. A case the registry does not know (an outside
/// program's scenario) sorts after the lab's own by its name: keyed by position alone, every
/// such case shared one key, and a second scenario written into a directory replaced the
/// first's rows.
fn key(case: &str, variant: &str) -> RowKey {
    let case_at = scenario::CASES
        .iter()
        .position(|c| c.id == case)
        .unwrap_or(usize::MAX);
    let variant_at = galloc_variants::VARIANTS
        .iter()
        .position(|v| v.id == variant)
        .unwrap_or(usize::MAX);
    (case_at, case.to_owned(), variant_at, variant.to_owned())
}

/// See [`key`].
type RowKey = (usize, String, usize, String);

fn op_index(op: &str) -> usize {
    galloc::probe::Op::ALL
        .iter()
        .position(|o| o.name() == op)
        .unwrap_or(usize::MAX)
}

fn build_index(build: &str) -> usize {
    ["plain", "probe", "twin", "layout"]
        .iter()
        .position(|b| *b == build)
        .unwrap_or(usize::MAX)
}
