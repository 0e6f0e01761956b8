//! The report: tables rendered from the result rows, and nothing else.

use crate::analyse::layout::{self, Verdict};
use crate::results::{
    read_csv, read_manifest, AgreementRow, LayoutRow, MeasuredRow, MessageRow, OpRow, PagesRow,
    SecondRow, TotalRow, ValidationRow, MANIFEST, SECOND,
};
use crate::run::backend::BackendKind;
use crate::trace::{self, TraceRecord};
use anyhow::{bail, Result};
use galloc_variants::{FLOOR, REFERENCE};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
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
}

impl Inputs {
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
        };
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
    /// offsets on its backend ([`layout::default_on`]).
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
                    .map(layout::default_on)
                    .unwrap_or_default()
            })
        })
    }

    /// What the second workloads lack: their rows must name the case's workload, and, as for
    /// the sweep ([`Self::missing_layouts`]), every (backend, case, variant) the manifest lists
    /// must be at the offsets of every other variant of its backend and case, in a full result
    /// set at exactly [`layout::default_second_on`] its backend (none on the fuel meter) for a
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
                    .map(layout::default_second_on)
                    .unwrap_or_default()
            })
        }));
        out
    }

    /// The verdict table: per case, every variant against shipping across the heap layouts,
    /// ordered by the median difference on gas (gtest) where it ran, else the first backend.
    pub fn verdicts(&self) -> String {
        verdicts(self)
    }

    /// The whole report; charts are linked as `<images>/<file>`. With `ship` (the committed
    /// results, when the corpus has been measured), it opens with the ship verdict.
    pub fn markdown(&self, images: &str, ship: Option<&crate::analyse::ship::Ship>) -> String {
        markdown(self, images, ship)
    }

    /// Pages the plain build of `variant` touched over `case` (first read, first written,
    /// read then written), where the wasmtime meter counted them.
    fn pages_touched(&self, case: &str, variant: &str) -> Option<u64> {
        self.pages
            .iter()
            .find(|p| p.case == case && p.variant == variant)
            .map(|p| p.read + p.written + p.write_after_read)
    }

    /// One line per backend, case and variant: total, allocator part, pages, code, and the
    /// change of each cost against the reference, each in the backend's unit.
    pub fn summary(&self) -> String {
        let totals = &self.totals;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "| backend | case | variant | messages | total | total vs {REFERENCE} | allocator | allocator vs {REFERENCE} | allocator vs {FLOOR} | unit | share | pages | code bytes |"
        );
        let _ = writeln!(
            out,
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"
        );
        for t in totals {
            let of = |variant: &str| {
                totals
                    .iter()
                    .find(|r| r.backend == t.backend && r.case == t.case && r.variant == variant)
            };
            let (reference, floor) = (of(REFERENCE), of(FLOOR));
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2}% | {} | {} |",
                t.backend,
                t.case,
                t.variant,
                t.messages,
                thousands(t.total),
                versus(t.total, reference.map(|r| r.total)),
                thousands(t.allocator),
                versus(t.allocator, reference.map(|r| r.allocator)),
                times(t.allocator, floor.map(|r| r.allocator)),
                t.unit,
                t.allocator_share_pct,
                self.pages_touched(&t.case, &t.variant)
                    .map_or("n/a".into(), thousands),
                thousands(t.code_bytes)
            );
        }
        out
    }
}

const OPS: [&str; 4] = ["malloc", "calloc", "realloc", "free"];

/// The cases `backend` has totals for, in result order.
fn cases_on<'a>(totals: &'a [TotalRow], backend: &str) -> Vec<&'a str> {
    let mut cases: Vec<&str> = Vec::new();
    for t in totals.iter().filter(|t| t.backend == backend) {
        if !cases.contains(&t.case.as_str()) {
            cases.push(&t.case);
        }
    }
    cases
}

/// The unit `backend`'s totals are in ("" without any).
fn unit_on<'a>(totals: &'a [TotalRow], backend: &str) -> &'a str {
    totals
        .iter()
        .find(|t| t.backend == backend)
        .map_or("", |t| t.unit.as_str())
}

/// A percentage with its sign, 2 decimals.
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

fn signed(p: f64) -> String {
    format!("{p:+.2}%")
}

fn verdicts(inputs: &Inputs) -> String {
    let mut out = String::new();
    let summaries = layout::summarise(&inputs.layouts);
    let second = layout::summarise_second(&inputs.second);
    let Some(lead) = crate::results::headline_backend(&inputs.totals) else {
        return "No results yet: run `just compare`.\n".into();
    };
    let other = BackendKind::EMBEDDED
        .iter()
        .map(|b| b.name())
        .find(|b| *b != lead && inputs.totals.iter().any(|t| t.backend == *b));
    let points = summaries
        .iter()
        .filter(|((b, _, _), _)| b == lead)
        .map(|(_, s)| s.points)
        .max()
        .unwrap_or(0);
    let _ = writeln!(out, "## Verdicts across heap layouts\n");
    let band = layout::BAND_PCT;
    let offsets_on = |backend: &str| -> Vec<String> {
        inputs
            .layouts
            .iter()
            .filter(|r| r.backend == backend)
            .map(|r| r.offset)
            .collect::<BTreeSet<u32>>()
            .iter()
            .map(u32::to_string)
            .collect()
    };
    let offsets = offsets_on(lead);
    // The fuel meter runs a thinner sweep (`layout::FUEL_STRIDE`): say which points.
    let other_offsets = other
        .map(|o| (o, offsets_on(o)))
        .filter(|(_, o)| *o != offsets)
        .map(|(o, offs)| format!(" (`{o}`: {} of them, {})", offs.len(), offs.join(", ")))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "Each case's plain build was run with its static data, and so its heap base, at {points} \
         offsets over the 64 KiB Wasm page ({} bytes{other_offsets}; 0 is the linker's own \
         layout, the one the tables below use). Per \
         offset, each variant's total is compared with `shipping`'s at the same offset, with a \
         minimum effect of {band} %: **better** (**worse**) means cheaper (dearer) by more than \
         {band} % at every offset, **same** within {band} % at every offset, **noise** neither \
         (the layout decides). The lab recommends, per case, the variant better than shipping \
         with the lowest median difference (in **bold**), and shipping where none is; never the \
         floor ({FLOOR}, which never frees: Gear's memory persists, so it only grows) nor a \
         variant that fails one of the lab's own tests ({}). `{lead}` decides; `{}` is beside it.\n",
        offsets.join(", "),
        galloc_variants::VARIANTS
            .iter()
            .filter(|v| v.reproduces.is_none())
            .filter_map(|v| v.fails.map(|f| format!("`{}`: {}", v.id, f.failure)))
            .collect::<Vec<_>>()
            .join("; "),
        other.unwrap_or("-")
    );
    let second_offsets: BTreeSet<u32> = inputs
        .second
        .iter()
        .filter(|r| r.backend == lead)
        .map(|r| r.offset)
        .collect();
    if !second_offsets.is_empty() {
        let workloads: Vec<String> = crate::run::scenario::CASES
            .iter()
            .filter_map(|c| c.second.map(|w| (c.id, w)))
            .filter(|(case, _)| inputs.second.iter().any(|r| r.case == *case))
            .map(|(case, w)| format!("`{case}`: `{}` ({})", w.id, w.summary))
            .collect();
        let _ = writeln!(
            out,
            "A verdict must also survive another traffic of the same program: every case has a \
             second workload, run on `{lead}` at {} of the offsets ({} bytes) with the same rule. \
             The column *second workload* gives its verdict and whether the case's verdict \
             **holds** there; a variant is recommended only where its **better** holds. The \
             workloads: {}.\n",
            second_offsets.len(),
            second_offsets
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            workloads.join("; ")
        );
    }
    if let Some((pairs, luck)) = layout::layout_luck(&summaries, lead) {
        let _ = writeln!(
            out,
            "Why {band} %: on {lead}, {pairs} variant–case pairs change sign with the layout, and \
             the smaller of their two excursions has a median of {luck:.2} %: that much \
             difference, either way, the heap's place alone produces.\n"
        );
    }
    let unit_of = |backend: &str| unit_on(&inputs.totals, backend);
    let (lead_unit, other_unit) = (unit_of(lead), other.map_or("", unit_of));
    let _ = writeln!(
        out,
        "| case | variant | {lead_unit} vs shipping, median | lowest … highest | verdict | second workload | {other_unit} median | {other_unit} verdict |"
    );
    let _ = writeln!(out, "| --- | --- | ---: | ---: | --- | --- | ---: | --- |");
    let cases = cases_on(&inputs.totals, lead);
    let mut picks = Vec::new();
    for case in cases {
        let best = layout::recommended_holding(&summaries, &second, lead, case);
        picks.push(format!("{case}: **{best}**"));
        let mut rows: Vec<(&str, &layout::Summary)> = summaries
            .iter()
            .filter(|((b, c, _), _)| b == lead && c == case)
            .map(|((_, _, v), s)| (v.as_str(), s))
            .collect();
        let median_of = |s: &layout::Summary| s.vs_shipping.map_or(0.0, |d| d.0);
        rows.sort_by(|a, b| median_of(a.1).total_cmp(&median_of(b.1)).then(a.0.cmp(b.0)));
        for (i, (variant, s)) in rows.iter().enumerate() {
            let name = if *variant == best {
                format!("**{variant}**")
            } else {
                (*variant).to_owned()
            };
            let (median, range) = match s.vs_shipping {
                Some((m, lo, hi)) => (signed(m), format!("{} … {}", signed(lo), signed(hi))),
                None => ("-".into(), "-".into()),
            };
            let beside = other.and_then(|o| {
                summaries.get(&(o.to_owned(), case.to_owned(), (*variant).to_owned()))
            });
            let (o_median, o_verdict) = match beside {
                Some(b) => (
                    b.vs_shipping.map_or("-".into(), |d| signed(d.0)),
                    mark(b.verdict),
                ),
                None => ("-".into(), "-".into()),
            };
            let key = (lead.to_owned(), case.to_owned(), (*variant).to_owned());
            let second_cell = match (second.get(&key), layout::holds(s.verdict, second.get(&key))) {
                _ if s.verdict == Verdict::Baseline => "-".to_owned(),
                (_, layout::Holds::Untested) | (None, _) => "-".to_owned(),
                (Some(w), h) => {
                    let median = w.vs_shipping.map_or("-".into(), |d| signed(d.0));
                    match h {
                        layout::Holds::Nothing => format!("{median} {}", mark(w.verdict)),
                        _ => format!("{median} {}: {}", mark(w.verdict), h.name()),
                    }
                }
            };
            let _ = writeln!(
                out,
                "| {} | {name} | {median} | {range} | {} | {second_cell} | {o_median} | {o_verdict} |",
                if i == 0 { case } else { "" },
                mark(s.verdict)
            );
        }
    }
    let _ = writeln!(out, "\nRecommended per case: {}.", picks.join("; "));
    let flips = summaries
        .iter()
        .filter(|((b, _, _), s)| b == lead && s.verdict == Verdict::Noise)
        .count();
    let _ = writeln!(
        out,
        "{flips} variant–case pairs on {lead} are within layout noise: one layout alone would \
         have named a winner that another layout reverses.\n"
    );
    let tally = |h: layout::Holds| {
        summaries
            .iter()
            .filter(|(k, s)| k.0 == lead && layout::holds(s.verdict, second.get(*k)) == h)
            .count()
    };
    let (held, not_held) = (tally(layout::Holds::Yes), tally(layout::Holds::No));
    if held + not_held > 0 {
        let _ = writeln!(
            out,
            "Under the second workloads, {held} of the {} verdicts other than noise on {lead} hold \
             and {not_held} do not.\n",
            held + not_held
        );
    }
    out
}

/// The lab's design against shipping on the deciding backend, case by case, against the
/// target ([`layout::Standing`]); empty without a sweep of it and shipping on every case.
pub fn standing(inputs: &Inputs) -> Option<(String, layout::Standing)> {
    let lead = crate::results::headline_backend(&inputs.totals)?;
    let cases: Vec<(&str, bool)> = cases_on(&inputs.totals, lead)
        .into_iter()
        .map(|c| (c, crate::run::scenario::held_out(c)))
        .collect();
    let summaries = layout::summarise(&inputs.layouts);
    Some((lead.to_owned(), layout::standing(&summaries, lead, &cases)?))
}

fn design(inputs: &Inputs) -> String {
    let mut out = String::new();
    let Some((lead, st)) = standing(inputs) else {
        return out;
    };
    let lead = lead.as_str();
    let unit = unit_on(&inputs.totals, lead);
    let names = |held: bool| -> String {
        let c: Vec<String> = st
            .cases
            .iter()
            .filter(|c| c.held_out == held)
            .map(|c| format!("`{}`", c.case))
            .collect();
        if c.is_empty() {
            "none".into()
        } else {
            c.join(", ")
        }
    };
    let _ = writeln!(out, "## The lab's design against shipping\n");
    let _ = writeln!(
        out,
        "`{}` (the registry's `DESIGN`) on every case, {lead} {unit} against `shipping` at the same \
         heap layout over the sweep. The target: its median below shipping's on every case, and \
         the geometric mean of its medians (as ratios) at most {:+.1}%. Designed on {}; held out, \
         only confirmed on: {} (the split is in the case registry, `held_out`, decided before \
         the design was measured). `images/design.png` draws this table.\n",
        st.variant,
        layout::TARGET_GEOMEAN_PCT,
        names(false),
        names(true)
    );
    let _ = writeln!(
        out,
        "| case | split | median | lowest … highest | verdict |\n| --- | --- | ---: | ---: | --- |"
    );
    for c in &st.cases {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} … {} | {} |",
            c.case,
            if c.held_out {
                "held out"
            } else {
                "designed on"
            },
            signed(c.median),
            signed(c.lowest),
            signed(c.highest),
            mark(c.verdict)
        );
    }
    let sub = |held: bool| {
        let cases = st.cases.iter().filter(|c| c.held_out == held);
        layout::geomean_pct(cases.map(|c| c.median))
    };
    let _ = writeln!(
        out,
        "| geometric mean | all | **{}** | | |\n| geometric mean | designed on | {} | | |\n| geometric mean | held out | {} | | |",
        signed(st.geomean_pct),
        signed(sub(false)),
        signed(sub(true))
    );
    let _ = writeln!(
        out,
        "\nTarget {}: below shipping at the median on {} of {} cases; geometric mean {} \
         (target {:+.1}%).\n",
        if st.meets_target() { "met" } else { "not met" },
        st.below(),
        st.cases.len(),
        signed(st.geomean_pct),
        layout::TARGET_GEOMEAN_PCT
    );
    out
}

/// Where each probe-build page was first touched, per message, from `pages.csv` (wasmtime).
fn first_touches(pages: &[PagesRow]) -> String {
    let mut out = String::new();
    if pages.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\n## Where the pages come from (wasmtime, probe build)\n"
    );
    let _ = writeln!(
        out,
        "Per message, the 16 KiB pages the probe build's messages touched above the stack, each \
         placed where it was first touched. The probe's counter reads bracket every allocator \
         call, so the meter knows when one runs; the call's record then says which blocks it \
         handled. *Inside a call*: in static data (the allocator's state), in the heap outside \
         the call's blocks (headers, free-list links, footers), or in a block the call handed \
         out or took back (`calloc`'s clearing, `realloc`'s copy). *Outside*: the program's \
         static data (the probe's records included), or the heap (blocks the program uses). \
         The five add up to the pages (first read plus first written) exactly. `allocator \
         only`: pages first touched in a call that the program did not touch outside calls in \
         that message, the pages the allocator alone added; each costs at least a first read \
         (28.5M gas) and, written, its upload. The probe build's heap base is ~1.2 KiB above \
         the plain build's, so its pages are those of one more layout, not of the plain \
         build.\n"
    );
    let _ = writeln!(
        out,
        "| case | variant | pages | in a call: static | in a call: heap | in a call: block | static | heap | allocator only |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for p in pages {
        let per = |n: u64| format!("{:.2}", n as f64 / p.messages.max(1) as f64);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.case,
            p.variant,
            per(p.probe_pages),
            per(p.first_allocator_static),
            per(p.first_allocator_heap),
            per(p.first_allocator_block),
            per(p.first_program_static),
            per(p.first_program_heap),
            per(p.allocator_only)
        );
    }
    out
}

/// Allocator calls per message per case, and what refused operations cost: the allocator's
/// workload differs by an order of magnitude between programs, which is why a verdict on one
/// case does not carry to another.
fn calls(inputs: &Inputs) -> String {
    let mut out = String::new();
    let Some(lead) = crate::results::headline_backend(&inputs.totals) else {
        return out;
    };
    let _ = writeln!(out, "\n## Allocator calls per message\n");
    let _ = writeln!(
        out,
        "Calls the probe build of `{REFERENCE}` recorded on `{lead}`, per message sent \
         (`init` included). The gstd cases (`ft*`, `nft*`) decode and encode messages on the \
         stack (gstd 2.0), so they call the allocator only where their state grows; Sails \
         programs (`vft-stress`, `vnft-stress`, in a run that includes them) decode every call's arguments into owned values (`String`, \
         `Vec`) and encode every reply and event into a `Vec`, so each message allocates and \
         frees, as the 2023 study's programs did (~7 calls a message). `failed`: messages the \
         program refused by throwing (Gear rolls their changes back and still charges their \
         gas). These counts are of the messages that succeeded: on gtest a failed message's \
         calls roll back with the probe's records; the wasmtime meter sees them (per message, \
         `messages.csv`).\n"
    );
    let _ = writeln!(
        out,
        "| case | messages | malloc | calloc | realloc | free | calls per message | allocator share | failed |"
    );
    let _ = writeln!(
        out,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let reference: Vec<&TotalRow> = inputs
        .totals
        .iter()
        .filter(|t| t.backend == lead && t.variant == REFERENCE)
        .collect();
    for t in &reference {
        let count = |op: &str| {
            inputs
                .ops
                .iter()
                .find(|r| {
                    (&r.backend, &r.case, &r.variant, r.op.as_str())
                        == (&t.backend, &t.case, &t.variant, op)
                })
                .map_or("-".into(), |r| thousands(r.count))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {:.2} | {:.2}% | {} |",
            t.case,
            thousands(t.messages),
            count("malloc"),
            count("calloc"),
            count("realloc"),
            count("free"),
            t.calls_per_message,
            t.allocator_share_pct,
            thousands(t.failed_messages)
        );
    }
    let refused: Vec<&TotalRow> = inputs
        .totals
        .iter()
        .filter(|t| t.backend == lead && t.failed_messages > 0)
        .collect();
    if refused.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\n### Refused operations ({lead})\n");
    let _ = writeln!(
        out,
        "What a refused (failed) message costs on average, beside a message that succeeded, at \
         the linker's layout; a refusal is paid for by its sender, so an allocator that makes \
         it dearer costs users even though its work is rolled back.\n"
    );
    let _ = writeln!(
        out,
        "| case | variant | failed | mean per failed message | vs {REFERENCE} | mean per other message |"
    );
    let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: | ---: |");
    let mean_failed = |t: &TotalRow| t.failed_total / t.failed_messages.max(1);
    for (i, t) in refused.iter().enumerate() {
        let shipping = refused
            .iter()
            .find(|r| r.case == t.case && r.variant == REFERENCE)
            .map(|r| mean_failed(r));
        let others = (t.total - t.failed_total) / (t.messages - t.failed_messages).max(1);
        let first = i == 0 || refused[i - 1].case != t.case;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            if first { t.case.as_str() } else { "" },
            t.variant,
            thousands(t.failed_messages),
            thousands(mean_failed(t)),
            if t.variant == REFERENCE {
                "baseline".into()
            } else {
                versus(mean_failed(t), shipping)
            },
            thousands(others)
        );
    }
    out
}

/// How a verdict reads in the report.
fn mark(v: Verdict) -> String {
    match v {
        Verdict::Better | Verdict::Worse => format!("**{}**", v.name()),
        Verdict::Baseline => "baseline".into(),
        Verdict::Unpaired => "-".into(),
        _ => v.name().into(),
    }
}

pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `value` as a multiple of `floor`: 1.0× is the floor itself.
fn times(value: u64, floor: Option<u64>) -> String {
    match floor {
        Some(base) if base > 0 => {
            let x = value as f64 / base as f64;
            if x < 100.0 {
                format!("{x:.1}×")
            } else {
                format!("{x:.0}×")
            }
        }
        _ => "n/a".into(),
    }
}

fn versus(value: u64, reference: Option<u64>) -> String {
    match reference {
        Some(base) if base > 0 => format!("{:+.2}%", 100.0 * (value as f64 / base as f64 - 1.0)),
        _ => "n/a".into(),
    }
}

/// Why fuel and gas rank a case's variants differently, from the numbers: fuel counts
/// instructions only, so the allocator's gas per unit of its fuel shows where page charges
/// (first touches inside allocator calls) or syscalls (`alloc`, `free_range`) weigh.
fn disagreement(a: &AgreementRow, totals: &[TotalRow]) -> String {
    if a.rank_by_fuel == a.rank_by_gas {
        let ties = if a.spearman < 1.0 {
            " (rho is below 1 only because ties differ: variants equal under one meter are \
             not under the other)"
        } else {
            ""
        };
        return format!(
            "- **{}**: fuel and gas rank the variants alike{ties}.\n",
            a.case
        );
    }
    let of = |backend: &str, variant: &str| {
        totals
            .iter()
            .find(|t| t.backend == backend && t.case == a.case && t.variant == variant)
            .map(|t| t.allocator)
    };
    let ratios: Vec<String> = a
        .rank_by_fuel
        .split(" < ")
        .filter_map(|v| {
            let (fuel, gas) = (of("wasmtime", v)?, of("gtest", v)?);
            (fuel > 0).then(|| format!("{v} {}", thousands(gas / fuel)))
        })
        .collect();
    format!(
        "- **{}**: the ranks differ (rho {:.2}). Allocator gas per unit of allocator fuel: {}. \
         Fuel counts the allocator's instructions alone; where this ratio is higher, more of \
         the variant's gas is page charges for memory its calls touch first in a message, or \
         the `alloc`/`free_range` syscalls, which fuel prices at one unit.\n",
        a.case,
        a.spearman,
        ratios.join(", ")
    )
}

/// A row of the per-op table: its name and how a cell is drawn from an op's row.
type Line<'a> = (&'a str, &'a dyn Fn(&OpRow) -> String);

/// The seed study's table for one case and variant: rows avg/min/max/count/total/share,
/// columns malloc/calloc/realloc/free.
fn op_table(out: &mut String, rows: &[&OpRow]) {
    let cell = |op: &str, f: &dyn Fn(&OpRow) -> String| {
        rows.iter()
            .find(|r| r.op == op)
            .map(|r| f(r))
            .unwrap_or_else(|| "-".into())
    };
    let _ = writeln!(out, "| | {} |", OPS.join(" | "));
    let _ = writeln!(out, "| --- |{}", " ---: |".repeat(OPS.len()));
    let pct = |p: Option<u64>| p.map_or_else(|| "-".into(), thousands);
    let lines: [Line; 9] = [
        ("avg", &|r| thousands(r.avg)),
        ("min", &|r| thousands(r.min)),
        ("p50", &|r| pct(r.p50)),
        ("p95", &|r| pct(r.p95)),
        ("p99", &|r| pct(r.p99)),
        ("max", &|r| thousands(r.max)),
        ("count", &|r| thousands(r.count)),
        ("total", &|r| thousands(r.total)),
        ("% of total", &|r| format!("{:.4}%", r.share_pct)),
    ];
    let exact = rows.iter().any(|r| r.p50.is_some());
    for (name, f) in lines {
        if name.starts_with('p') && !exact {
            continue;
        }
        let cells: Vec<String> = OPS.iter().map(|op| cell(op, f)).collect();
        let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
    }
}

fn markdown(inputs: &Inputs, images: &str, ship: Option<&crate::analyse::ship::Ship>) -> String {
    let Inputs {
        totals,
        ops,
        checks,
        pages,
        agreement,
        ..
    } = inputs;
    let mut out = String::new();
    let _ = writeln!(out, "# galloc lab results\n");
    let _ = writeln!(
        out,
        "Generated by `just compare` from `results/<backend>/*.csv`; do not edit. Every program \
         is its `.opt.wasm` (gear-wasm-builder's post-processing, `wasm-opt -O4`), the same bytes \
         on every backend. **gtest** is Gear 2.0's runtime: gas, default schedule. **wasmtime** \
         is the lab's fuel meter (wasmtime 44): fuel, one unit per Wasm instruction, blind to \
         Gear's page and syscall charges, which it counts separately (pages). Fuel is not gas: \
         each table says its unit. Totals come from the plain build; allocator cost from the \
         probe build's calibrated per-call records; exact percentiles from every call of that \
         build, which the wasmtime meter collects. First-touch page costs inside an allocator \
         call count as that call's cost. Cases named `synthetic-*` are **synthetic** workloads, \
         not contracts: request lists the synthetic program (`replay/synthetic`) carries out \
         and checks (filling and verifying every block), so their totals include that checking \
         work; compare their allocator columns.\n"
    );
    if let Some(ship) = ship {
        out.push_str(&crate::report::ship_table::markdown(ship));
    }
    out.push_str(&verdicts(inputs));
    out.push_str(&design(inputs));
    let _ = writeln!(out, "\n## Summary at the linker's layout\n");
    let _ = writeln!(
        out,
        "`pages`: 16 KiB pages the plain build's messages touched above the stack (first read, \
         first written, read then written; counted by the wasmtime meter), summed over the case. `allocator vs {FLOOR}`: the distance \
         to the floor, as a multiple of the allocator cost of a bump allocator that never frees \
         (the least allocator work per call; what it costs instead is pages, in `total`).\n"
    );
    out.push_str(&inputs.summary());
    out.push_str(&calls(inputs));
    let charts = crate::report::charts::plan(inputs);
    if !charts.is_empty() {
        let _ = writeln!(out, "\n## Charts\n");
        for c in charts {
            let _ = writeln!(out, "- [{}]({images}/{}): {}", c.file, c.file, c.caption);
        }
    }
    if !agreement.is_empty() {
        let _ = writeln!(out, "\n## Fuel against gas\n");
        let _ = writeln!(
            out,
            "Variants ranked by allocator cost under each meter (cheapest first) and Spearman's \
             rank correlation; then, over every message of the case (all variants, plain \
             builds), how much of gtest's gas fuel explains (R², with an intercept), and how \
             much fuel plus the page gas of the pages each message touched (priced at gtest's \
             lazy-page weights) explains, with the fitted gas per fuel and page-gas weight; \
             then the full model, which adds what Gear charges before every message for \
             loading the pages the program holds through `alloc` (a storage read of 25M gas and \
             20,559 per run of pages, nothing when it holds none: gas fuel and page accesses do \
             not show) and the code's size, with that term's fitted weight, the fitted gas per \
             code byte and the largest residual of a message.\n"
        );
        let _ = writeln!(
            out,
            "| case | by fuel | by gas | rho | messages | R² fuel | R² fuel + pages | gas/fuel | page weight | R² full | allocations weight | gas/code byte | largest residual |"
        );
        let _ = writeln!(
            out,
            "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        for a in agreement {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.4} | {} | {:.4} | {:.4} | {:.1} | {:.4} | {:.4} | {:.4} | {:.1} | {} |",
                a.case,
                a.rank_by_fuel,
                a.rank_by_gas,
                a.spearman,
                a.messages,
                a.r2_fuel,
                a.r2_fuel_pages,
                a.gas_per_fuel,
                a.page_gas_weight,
                a.r2_fuel_pages_allocations,
                a.allocations_gas_weight,
                a.gas_per_code_byte,
                thousands(a.max_residual)
            );
        }
        out.push('\n');
        for a in agreement {
            out.push_str(&disagreement(a, totals));
        }
    }
    if !pages.is_empty() {
        let _ = writeln!(out, "\n## Pages touched (wasmtime)\n");
        let _ = writeln!(
            out,
            "16 KiB pages above the stack each case's messages touched on the plain build, in \
             Gear's charging categories, summed over the case; `page gas` prices them at gtest's \
             lazy-page weights (a first write includes the page's upload).\n"
        );
        let _ = writeln!(
            out,
            "| case | variant | messages | read | written | write after read | loaded | page gas |"
        );
        let _ = writeln!(
            out,
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        for p in pages {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                p.case,
                p.variant,
                p.messages,
                thousands(p.read),
                thousands(p.written),
                thousands(p.write_after_read),
                thousands(p.loaded),
                thousands(p.page_gas)
            );
        }
    }
    out.push_str(&first_touches(pages));
    let mut cases: Vec<(&str, &str, &str)> = Vec::new();
    for t in totals {
        if !cases
            .iter()
            .any(|c| (c.0, c.1) == (t.backend.as_str(), t.case.as_str()))
        {
            cases.push((&t.backend, &t.case, &t.unit));
        }
    }
    for (backend, case, unit) in cases {
        let _ = writeln!(out, "\n## {case} ({backend}, {unit})\n");
        for t in totals
            .iter()
            .filter(|t| t.backend == backend && t.case == case)
        {
            let _ = writeln!(out, "### {}\n", t.variant);
            let rows: Vec<&OpRow> = ops
                .iter()
                .filter(|r| r.backend == backend && r.case == case && r.variant == t.variant)
                .collect();
            op_table(&mut out, &rows);
            out.push('\n');
        }
    }
    let _ = writeln!(out, "## Probe validation\n");
    let _ = writeln!(
        out,
        "Per message, the probe build's cost minus the cost of its *twin* (the probe build with \
         a meter that reads nothing: the same statics at the same addresses, so both touch the \
         same pages and hash alike, and the same code around the allocator), fitted as a \
         per-message part plus a part per call of each op (the counter reads). The first \
         message with an allocator call (`init`, unless it allocates nothing) also pays the \
         one-time calibration and is left out of `exact`. `layout shift` is what the probe's statics alone changed \
         (they move the heap base): twin total minus plain total. Each row is in its backend's unit.\n"
    );
    let _ = writeln!(
        out,
        "| backend | case | variant | unit | layout shift | per message | per malloc / calloc / realloc / free | calibration | exact | max residual | residual |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for c in checks {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} / {} / {} / {} | {} | {}/{} | {} | {:.6}% |",
            c.backend,
            c.case,
            c.variant,
            c.unit,
            c.layout_shift,
            c.overhead_per_message,
            c.overhead_malloc,
            c.overhead_calloc,
            c.overhead_realloc,
            c.overhead_free,
            c.calibration,
            c.exact_messages,
            c.messages - 1,
            thousands(c.max_abs_residual),
            c.residual_pct
        );
    }
    out
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(148_000_123), "148,000,123");
    }
}
