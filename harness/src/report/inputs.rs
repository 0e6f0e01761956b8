//! The results files a report is made from: read, and checked complete against the manifest
//! before anything is rendered from them (the rendering is in [`super::tables`] and
//! [`super::document`]).

use crate::analyse::anatomy::Anatomy;
use crate::analyse::ship::{judge, Ship, RULE};
use crate::results::trace::{self, TraceRecord};
use crate::results::{
    read_csv, read_manifest, AgreementRow, CodeSizeRow, LayoutRow, MeasuredRow, MessageRow, OpRow,
    PagesRow, SecondRow, TotalRow, ValidationRow, MANIFEST, SECOND,
};
use crate::run::backend::BackendKind;
use crate::run::plan;
use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What `results/` holds: every variant on every default case on both embedded backends
/// (reproductions only on their own case, `results/pr4853/`).
pub fn full_set() -> Vec<MeasuredRow> {
    let mut all = Vec::new();
    for backend in BackendKind::EMBEDDED {
        for case in crate::run::scenario::CASES.iter().filter(|c| c.default) {
            for v in galloc_variants::VARIANTS
                .iter()
                .filter(|v| v.reproduces.is_none())
            {
                all.push(MeasuredRow {
                    backend: backend.name().into(),
                    case: case.id.into(),
                    variant: v.id.into(),
                });
            }
        }
    }
    all
}

/// Every results file the report reads.
pub struct Inputs {
    /// Every backend's totals, backends in report order.
    pub totals: Vec<TotalRow>,
    pub ops: Vec<OpRow>,
    pub checks: Vec<ValidationRow>,
    pub pages: Vec<PagesRow>,
    pub agreement: Vec<AgreementRow>,
    /// Every message's cost (`results/<backend>/messages.csv.zst`), for the charts.
    pub messages: Vec<MessageRow>,
    /// Every allocator call by (case, variant), from `results/traces/`, for the charts.
    pub traces: BTreeMap<(String, String), Vec<TraceRecord>>,
    /// Every plain build's total at every heap layout (`results/<backend>/layouts.csv`).
    pub layouts: Vec<LayoutRow>,
    /// Every case's second workload at its layouts (`results/<backend>/second.csv`; gas only).
    pub second: Vec<SecondRow>,
    /// Each variant's allocator code bytes (`code-size.csv`, the allocator alone, plain), where
    /// measured: the directory's own, or those of the results it sits in (the corpus's are the
    /// default results': one allocator build per variant serves every program).
    pub allocator_code: BTreeMap<String, u64>,
    /// The backends a run was asked for and left out for a case, and why (`left-out.csv`).
    pub left_out: Vec<crate::results::LeftOutRow>,
}

impl Inputs {
    /// The probe validation row of (`backend`, `case`, `variant`) when it failed
    /// ([`crate::analyse::validation::holds`]): what rests on the probe there is not measured.
    pub fn unvalidated(&self, backend: &str, case: &str, variant: &str) -> Option<&ValidationRow> {
        self.checks.iter().find(|c| {
            (c.backend.as_str(), c.case.as_str(), c.variant.as_str()) == (backend, case, variant)
                && !crate::analyse::validation::holds(c)
        })
    }

    /// Reads `results/<backend>/*.csv` for every backend that has results, and
    /// `results/agreement.csv`.
    pub fn read(dir: &Path) -> Result<Self> {
        Self::read_parts(dir, true)
    }

    /// Reads only what the verdict table needs (every backend's totals and layouts): a run
    /// that found the results already up to date prints the table without the million rows
    /// of messages and traces the charts need.
    pub fn read_for_verdicts(dir: &Path) -> Result<Self> {
        Self::read_parts(dir, false)
    }

    fn read_parts(dir: &Path, all: bool) -> Result<Self> {
        let mut inputs = Inputs {
            totals: Vec::new(),
            ops: Vec::new(),
            checks: Vec::new(),
            pages: Vec::new(),
            agreement: Vec::new(),
            messages: Vec::new(),
            traces: BTreeMap::new(),
            layouts: Vec::new(),
            second: Vec::new(),
            allocator_code: BTreeMap::new(),
            left_out: Vec::new(),
        };
        let left_out = dir.join(crate::results::LEFT_OUT);
        if left_out.exists() {
            inputs.left_out = read_csv(&left_out)?;
        }
        for backend in BackendKind::ALL {
            let d = dir.join(backend.name());
            if !d.join("totals.csv").exists() {
                continue;
            }
            inputs
                .totals
                .extend(read_csv::<TotalRow>(&d.join("totals.csv"))?);
            if d.join("layouts.csv").exists() {
                inputs
                    .layouts
                    .extend(read_csv::<LayoutRow>(&d.join("layouts.csv"))?);
            }
            if d.join(SECOND).exists() {
                inputs
                    .second
                    .extend(read_csv::<SecondRow>(&d.join(SECOND))?);
            }
            if !all {
                continue;
            }
            inputs.ops.extend(read_csv::<OpRow>(&d.join("ops.csv"))?);
            inputs
                .checks
                .extend(read_csv::<ValidationRow>(&d.join("probe-validation.csv"))?);
            if d.join("pages.csv").exists() {
                inputs
                    .pages
                    .extend(read_csv::<PagesRow>(&d.join("pages.csv"))?);
            }
            if d.join("messages.csv.zst").exists() {
                inputs
                    .messages
                    .extend(read_csv::<MessageRow>(&d.join("messages.csv.zst"))?);
            }
        }
        if !all {
            return Ok(inputs);
        }
        for t in &inputs.totals {
            let key = (t.case.clone(), t.variant.clone());
            let path = dir
                .join("traces")
                .join(format!("{}-{}.csv.zst", t.case, t.variant));
            if !inputs.traces.contains_key(&key) && path.exists() {
                inputs.traces.insert(key, trace::read(&path)?);
            }
        }
        if dir.join("agreement.csv").exists() {
            inputs.agreement = read_csv(&dir.join("agreement.csv"))?;
        }
        inputs.allocator_code = allocator_code(dir)?;
        Ok(inputs)
    }

    /// Reads the result set in `dir` and checks it holds everything its manifest
    /// (`measured.csv`) lists: per (backend, case, variant) a total, four op rows, a probe
    /// validation row, one row per message, and where the backend gives them pages and a
    /// trace; and no total the manifest does not list. With `full`, the manifest must also
    /// list every variant × default case on both embedded backends (what `results/` holds).
    /// Anything missing is an error naming it and how to get it back.
    pub fn read_complete(dir: &Path, full: bool) -> Result<Self> {
        let manifest = read_manifest(dir)?;
        let inputs = Self::read(dir)?;
        let mut missing = inputs.missing(&manifest);
        missing.extend(inputs.missing_layouts(&manifest, full));
        missing.extend(inputs.missing_second(&manifest, full));
        if full {
            missing.extend(
                full_set()
                    .into_iter()
                    .filter(|m| !manifest.contains(m))
                    .map(|m| format!("{}/{}/{}: not measured", m.backend, m.case, m.variant)),
            );
        }
        let listed: BTreeSet<(&str, &str, &str)> = manifest
            .iter()
            .map(|m| (m.backend.as_str(), m.case.as_str(), m.variant.as_str()))
            .collect();
        for t in &inputs.totals {
            if !listed.contains(&(t.backend.as_str(), t.case.as_str(), t.variant.as_str())) {
                missing.push(format!(
                    "{}/{}/{}: a total that {MANIFEST} does not list",
                    t.backend, t.case, t.variant
                ));
            }
        }
        if missing.is_empty() {
            return Ok(inputs);
        }
        let shown: Vec<&str> = missing.iter().take(12).map(String::as_str).collect();
        bail!(
            "{} is incomplete: {} problems, e.g.\n  {}\n{}",
            dir.display(),
            missing.len(),
            shown.join("\n  "),
            crate::results::restore_hint(dir),
        )
    }

    /// What the manifest lists and the files lack, one line each. Each table is counted once
    /// by (backend, case, variant): scanning every table per manifest row was quadratic, and
    /// with ~250 rows against a million message rows it was most of a warm `just compare`.
    fn missing(&self, manifest: &[MeasuredRow]) -> Vec<String> {
        type Key<'a> = (&'a str, &'a str, &'a str);
        fn tally<'a, R>(rows: &'a [R], key: impl Fn(&'a R) -> Key<'a>) -> BTreeMap<Key<'a>, usize> {
            let mut n = BTreeMap::new();
            for r in rows {
                *n.entry(key(r)).or_insert(0) += 1;
            }
            n
        }
        let totals = tally(&self.totals, |r| (&r.backend, &r.case, &r.variant));
        let ops = tally(&self.ops, |r| (&r.backend, &r.case, &r.variant));
        let checks = tally(&self.checks, |r| (&r.backend, &r.case, &r.variant));
        let messages = tally(&self.messages, |r| (&r.backend, &r.case, &r.variant));
        let pages = tally(&self.pages, |r| (&r.backend, &r.case, &r.variant));
        let at_zero: BTreeMap<Key, u64> = self
            .layouts
            .iter()
            .filter(|r| r.offset == 0)
            .map(|r| {
                (
                    (r.backend.as_str(), r.case.as_str(), r.variant.as_str()),
                    r.total,
                )
            })
            .collect();
        let mut out = Vec::new();
        for m in manifest {
            let k: Key = (&m.backend, &m.case, &m.variant);
            let short = |table: &BTreeMap<Key, usize>, what: &str, want: usize| {
                let n = table.get(&k).copied().unwrap_or(0);
                (n != want).then(|| {
                    format!(
                        "{}/{}/{}: {n} {what} (want {want})",
                        m.backend, m.case, m.variant
                    )
                })
            };
            out.extend(short(&totals, "rows in totals.csv", 1));
            out.extend(short(&ops, "rows in ops.csv", 4));
            out.extend(short(&checks, "rows in probe-validation.csv", 1));
            if let Some(t) = self
                .totals
                .iter()
                .find(|r| (r.backend.as_str(), r.case.as_str(), r.variant.as_str()) == k)
            {
                match at_zero.get(&k) {
                    None => out.push(format!(
                        "{}/{}/{}: no row at offset 0 in layouts.csv",
                        m.backend, m.case, m.variant
                    )),
                    Some(&total) if total != t.total => out.push(format!(
                        "{}/{}/{}: layouts.csv has total {total} at offset 0, totals.csv {}",
                        m.backend, m.case, m.variant, t.total
                    )),
                    Some(_) => {}
                }
                out.extend(short(
                    &messages,
                    "rows in messages.csv.zst",
                    t.messages as usize,
                ));
            }
            let kind = BackendKind::ALL.into_iter().find(|k| k.name() == m.backend);
            if kind.is_some_and(BackendKind::records_calls) {
                out.extend(short(&pages, "rows in pages.csv", 1));
                if !self
                    .traces
                    .contains_key(&(m.case.clone(), m.variant.clone()))
                {
                    out.push(format!("traces/{}-{}.csv.zst: missing", m.case, m.variant));
                }
            }
        }
        out
    }

    /// What the sweep lacks: every (backend, case, variant) the manifest lists must be at the
    /// same offsets as every other variant of its backend and case (or a comparison at the
    /// same layout would lack pairs), and in a full result set at exactly the default sweep's
    /// offsets on its backend ([`plan::default_on`]).
    fn missing_layouts(&self, manifest: &[MeasuredRow], full: bool) -> Vec<String> {
        let at = |m: &MeasuredRow| -> Vec<u32> {
            self.layouts
                .iter()
                .filter(|r| (&r.backend, &r.case, &r.variant) == (&m.backend, &m.case, &m.variant))
                .map(|r| r.offset)
                .collect()
        };
        offset_gaps(manifest, "layouts.csv", at, |m| {
            full.then(|| {
                BackendKind::from_name(&m.backend)
                    .map(plan::default_on)
                    .unwrap_or_default()
            })
        })
    }

    /// What the second workloads lack: their rows must name the case's workload, and, as for
    /// the sweep ([`Self::missing_layouts`]), every (backend, case, variant) the manifest lists
    /// must be at the offsets of every other variant of its backend and case, in a full result
    /// set at exactly [`plan::default_second_on`] its backend (none on the fuel meter) for a
    /// case with a second workload.
    fn missing_second(&self, manifest: &[MeasuredRow], full: bool) -> Vec<String> {
        let workload_of = |case: &str| {
            crate::run::scenario::CASES
                .iter()
                .find(|c| c.id == case)
                .and_then(|c| c.second)
                .map(|w| w.id)
        };
        let mut out: Vec<String> = self
            .second
            .iter()
            .filter(|r| workload_of(&r.case) != Some(r.workload.as_str()))
            .map(|r| {
                format!(
                    "{}/{}/{}: {SECOND} has workload `{}`, not the case's second workload",
                    r.backend, r.case, r.variant, r.workload
                )
            })
            .collect();
        let at = |m: &MeasuredRow| -> Vec<u32> {
            self.second
                .iter()
                .filter(|r| (&r.backend, &r.case, &r.variant) == (&m.backend, &m.case, &m.variant))
                .map(|r| r.offset)
                .collect()
        };
        out.extend(offset_gaps(manifest, SECOND, at, |m| {
            (full && workload_of(&m.case).is_some()).then(|| {
                BackendKind::from_name(&m.backend)
                    .map(plan::default_second_on)
                    .unwrap_or_default()
            })
        }));
        out
    }

    /// The rows of `case` alone (every backend and variant), for its page: the same
    /// sections render over them. The per-message rows and traces, which only the charts
    /// read, are left out.
    pub fn of_case(&self, case: &str) -> Inputs {
        fn only<R: Clone>(rows: &[R], case: &str, of: impl Fn(&R) -> &str) -> Vec<R> {
            rows.iter().filter(|r| of(r) == case).cloned().collect()
        }
        Inputs {
            totals: only(&self.totals, case, |r| &r.case),
            ops: only(&self.ops, case, |r| &r.case),
            checks: only(&self.checks, case, |r| &r.case),
            pages: only(&self.pages, case, |r| &r.case),
            agreement: only(&self.agreement, case, |r| &r.case),
            messages: Vec::new(),
            traces: BTreeMap::new(),
            layouts: only(&self.layouts, case, |r| &r.case),
            second: only(&self.second, case, |r| &r.case),
            allocator_code: self.allocator_code.clone(),
            left_out: only(&self.left_out, case, |r| &r.case),
        }
    }

    /// Pages the plain build of `variant` touched over `case` (first read, first written,
    /// read then written), where the wasmtime meter counted them.
    pub fn pages_touched(&self, case: &str, variant: &str) -> Option<u64> {
        self.pages
            .iter()
            .find(|p| p.case == case && p.variant == variant)
            .map(|p| p.read + p.written + p.write_after_read)
    }
}

/// Every case with totals on any backend, in result order: each has a page, whichever backend
/// measured it (a case the fuel meter alone measured lost its page once another case had
/// gtest's rows).
pub fn every_case(totals: &[TotalRow]) -> Vec<&str> {
    let mut cases: Vec<&str> = Vec::new();
    for t in totals {
        if !cases.contains(&t.case.as_str()) {
            cases.push(&t.case);
        }
    }
    cases
}

/// The cases `backend` has totals for, in result order.
pub fn cases_on<'a>(totals: &'a [TotalRow], backend: &str) -> Vec<&'a str> {
    let mut cases: Vec<&str> = Vec::new();
    for t in totals.iter().filter(|t| t.backend == backend) {
        if !cases.contains(&t.case.as_str()) {
            cases.push(&t.case);
        }
    }
    cases
}

/// The unit `backend`'s totals are in ("" without any).
pub fn unit_on<'a>(totals: &'a [TotalRow], backend: &str) -> &'a str {
    totals
        .iter()
        .find(|t| t.backend == backend)
        .map_or("", |t| t.unit.as_str())
}

/// Every (backend, case, variant) of `manifest` whose offsets in `file` (`at`) are not those
/// `want` gives it, or, where it gives none, the union of its backend and case's (a comparison
/// at the same layout would lack pairs): one line each.
fn offset_gaps(
    manifest: &[MeasuredRow],
    file: &str,
    at: impl Fn(&MeasuredRow) -> Vec<u32>,
    want: impl Fn(&MeasuredRow) -> Option<Vec<u32>>,
) -> Vec<String> {
    let offsets_of = |m: &MeasuredRow| -> Vec<u32> {
        let mut got = at(m);
        got.sort_unstable();
        got
    };
    let mut union: BTreeMap<(&str, &str), BTreeSet<u32>> = BTreeMap::new();
    for m in manifest {
        union
            .entry((&m.backend, &m.case))
            .or_default()
            .extend(offsets_of(m));
    }
    manifest
        .iter()
        .filter_map(|m| {
            let want = want(m).unwrap_or_else(|| {
                union[&(m.backend.as_str(), m.case.as_str())]
                    .iter()
                    .copied()
                    .collect()
            });
            let got = offsets_of(m);
            (got != want).then(|| {
                format!(
                    "{}/{}/{}: {file} has offsets {got:?}, not {want:?}",
                    m.backend, m.case, m.variant
                )
            })
        })
        .collect()
}

/// Each variant's allocator code bytes from `code-size.csv` in `dir`; empty where it has none.
pub fn allocator_code(dir: &Path) -> Result<BTreeMap<String, u64>> {
    let file = dir.join("code-size.csv");
    if !file.exists() {
        return Ok(BTreeMap::new());
    }
    let sizes: Vec<CodeSizeRow> = read_csv(&file)?;
    Ok(sizes
        .into_iter()
        .filter(|r| r.package == "galloc-wasm-size" && !r.probe)
        .map(|r| (r.variant, r.code_bytes))
        .collect())
}

/// The programs the ship verdict is judged on: every default case, then the corpus, in the
/// registry's order.
pub fn ship_programs() -> Vec<&'static str> {
    let cases = crate::run::scenario::CASES.iter();
    cases
        .filter(|c| c.default || c.corpus)
        .map(|c| c.id)
        .collect()
}

/// The ship verdict from the committed results: the default cases' sweep and second workloads
/// in `results`, the corpus's in `corpus`, and the allocator's code bytes in
/// `results/code-size.csv`, and the scale cases' standing where `results/scale/` holds them.
/// The caller holds both directories' locks and has verified them.
pub fn ship(results: &Path, corpus: &Path) -> Result<Ship> {
    let mut ship = ship_given(results, corpus, None)?;
    ship.scale = scale_standing(results)?;
    Ok(ship)
}

/// [`ship`], with the rows of `results` already read (`read`: the report has them), so they are
/// not read again for the anatomy.
pub fn ship_given(results: &Path, corpus: &Path, read: Option<&Inputs>) -> Result<Ship> {
    if !corpus.join(crate::results::MANIFEST).exists() {
        bail!(
            "{}: no corpus results; `just corpus` measures the corpus there",
            corpus.display()
        );
    }
    let (layouts, second) = read_sweeps(&[results, corpus])?;
    let code_bytes = allocator_code(results)?;
    let programs = ship_programs();
    let held_out: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| crate::run::scenario::held_out(p))
        .collect();
    let mut ship = judge(
        RULE,
        "gtest",
        &programs,
        &held_out,
        &layouts,
        &second,
        &code_bytes,
    )?;
    let mut rows = AnatomyRows::default();
    match read {
        Some(inputs) => rows.add(inputs),
        None => rows.read(results)?,
    }
    rows.read(corpus)?;
    ship.explain(rows.anatomy());
    Ok(ship)
}

/// Each variant's standing on the scale cases measured beside the results in `results`
/// (`results/scale/`, `just scale`), empty where they were not.
pub fn scale_standing(
    results: &Path,
) -> Result<std::collections::BTreeMap<String, crate::analyse::scale::AtScale>> {
    let file = results.join(crate::results::SCALE_DIR).join("messages.csv");
    if !file.is_file() {
        return Ok(Default::default());
    }
    let rows: Vec<crate::results::ScaleRow> = crate::results::read_csv(&file)?;
    Ok(crate::analyse::scale::standing(&rows))
}

/// The rows an anatomy is made of ([`Anatomy::of`]), gathered from result sets.
#[derive(Default)]
struct AnatomyRows {
    layouts: Vec<LayoutRow>,
    messages: Vec<MessageRow>,
    ops: Vec<OpRow>,
}

impl AnatomyRows {
    /// The rows of `inputs`, already read.
    fn add(&mut self, inputs: &Inputs) {
        self.layouts.extend_from_slice(&inputs.layouts);
        self.messages.extend_from_slice(&inputs.messages);
        self.ops.extend_from_slice(&inputs.ops);
    }

    /// The layouts, messages and per-op rows of `dir` on both embedded backends.
    fn read(&mut self, dir: &Path) -> Result<()> {
        for backend in [BackendKind::Gtest, BackendKind::Wasmtime] {
            let d = dir.join(backend.name());
            let file = |name: &str| d.join(name).exists().then(|| d.join(name));
            if let Some(f) = file("layouts.csv") {
                self.layouts.extend(read_csv::<LayoutRow>(&f)?);
            }
            if let Some(f) = file("messages.csv.zst") {
                self.messages.extend(read_csv::<MessageRow>(&f)?);
            }
            if let Some(f) = file("ops.csv") {
                self.ops.extend(read_csv::<OpRow>(&f)?);
            }
        }
        Ok(())
    }

    fn anatomy(&self) -> Anatomy {
        Anatomy::of(&self.layouts, &self.messages, &self.ops)
    }
}

/// The layout sweep of the 17 programs: the default cases' (`results`) and the corpus's
/// (`results/corpus/`), what the studies hold their figures against.
pub fn read_programs_sweep(results: &Path) -> Result<(Vec<LayoutRow>, Vec<SecondRow>)> {
    read_sweeps(&[results, &results.join(crate::results::CORPUS_DIR)])
}

/// The sweep's and the second workloads' rows of every results directory in `dirs`.
pub fn read_sweeps(dirs: &[&Path]) -> Result<(Vec<LayoutRow>, Vec<SecondRow>)> {
    let mut layouts = Vec::new();
    let mut second = Vec::new();
    for dir in dirs {
        let inputs = Inputs::read_for_verdicts(dir)
            .with_context(|| format!("reading the sweep in {}", dir.display()))?;
        layouts.extend(inputs.layouts);
        second.extend(inputs.second);
    }
    Ok((layouts, second))
}
