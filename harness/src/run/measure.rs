//! Measuring one case on one variant: the builds, one run of each per backend, and the rows
//! they give (totals, per-op, per-message, pages, and the probe's validation).

use crate::build::artifact::{build, Artifact, BuildRequest, PostProcess, TWIN_FEATURE};
use crate::build::workspace::Workspace;
use crate::results::{
    nearest_rank, round, ArtifactRow, LayoutRow, MessageRow, OpRow, PagesRow, ProbeDifferences,
    TotalRow,
};
use crate::run::backend::{BackendKind, FirstTouch, Unit};
use crate::run::execute::{run_case, CaseRun, MessageCost, ProbeReads};
use crate::run::scenario::Scenario;
use anyhow::{bail, Context, Result};
use galloc::probe::Op;
use galloc_variants::Variant;

/// The builds one (package, variant) is measured with.
pub struct Builds {
    /// As deployed: total gas comes from here.
    pub plain: Artifact,
    /// With the gas probe: allocator gas comes from here.
    pub probe: Artifact,
    /// The probe build with a meter that reads nothing (galloc's `probe-twin`: the same statics
    /// at the same addresses, the same code around the allocator): probe minus twin is the
    /// counter reads alone.
    pub twin: Artifact,
    /// The plain build re-linked at each other layout of the sweep, by offset
    /// ([`crate::analyse::layout`]); empty when only the linker's own layout is measured.
    pub layouts: Vec<(u32, Artifact)>,
}

impl Builds {
    /// The plain build at `offset` of the sweep (0: the linker's own layout).
    ///
    /// # Panics
    /// If no build was made at `offset` (the caller asks only for points it built).
    pub fn at(&self, offset: u32) -> &Artifact {
        if offset == 0 {
            return &self.plain;
        }
        self.layouts
            .iter()
            .find(|(o, _)| *o == offset)
            .map(|(_, a)| a)
            .unwrap_or_else(|| panic!("no build at offset {offset}"))
    }

    /// Builds (or finds up to date) the plain, probe and twin builds; `log` hears each step.
    pub fn new(
        ws: &Workspace,
        package: &'static str,
        variant: &'static Variant,
        log: impl Fn(&str),
    ) -> Result<Self> {
        Self::with_features(ws, package, None, variant, "", log)
    }

    /// [`Builds::new`] with more `galloc` features on every build, and for a program outside
    /// the lab's workspace when `external` is given ([`BuildRequest`]).
    pub fn with_features(
        ws: &Workspace,
        package: &'static str,
        external: Option<&crate::build::external::Program>,
        variant: &'static Variant,
        extra_features: &str,
        log: impl Fn(&str),
    ) -> Result<Self> {
        let twin_features = match extra_features {
            "" => TWIN_FEATURE.to_owned(),
            more => format!("{more},{TWIN_FEATURE}"),
        };
        let get = |probe: bool, extra_features: &str| -> Result<Artifact> {
            let req = BuildRequest {
                package,
                variant,
                probe,
                post: PostProcess::Gear,
                layout_pad: 0,
                layout_offset: 0,
                heap_skip: 0,
                extra_features,
                external,
            };
            log(&format!("building {package} for {}", req.config()));
            let artifact = build(ws, req)?;
            let info = artifact.inspect()?;
            if !probe && !req.is_twin() {
                entry_points(package, external, &info)?;
            }
            // Probe builds (and their twins) answer state reads; without the export the
            // galloc patch is not in effect and every figure would be Gear's own allocator's.
            let has_state = info.exports.iter().any(|e| e == "state");
            if (probe || req.is_twin()) != has_state {
                bail!(
                    "{package} ({}) {} a `state` export: is `[patch.crates-io] galloc` in the \
                     workspace Cargo.toml in effect?",
                    req.config(),
                    if has_state { "has" } else { "lacks" }
                );
            }
            Ok(artifact)
        };
        // The plain build first: its exports say, in one line, whether the probe build can be
        // made at all (a program of its own `state` cannot have the probe's).
        let plain = get(false, extra_features)?;
        let probe = get(true, extra_features)?;
        let twin = get(false, &twin_features)?;
        // Equal by construction (the twin holds the probe's records): checked, because the
        // validation means nothing if the two builds' statics differ.
        if twin.heap_base != probe.heap_base {
            bail!(
                "{package} ({}): the probe's twin has its heap base at {:?}, the probe build at \
                 {:?}: their statics differ, so probe minus twin would not be the probe's cost",
                variant.id,
                twin.heap_base,
                probe.heap_base
            );
        }
        Ok(Builds {
            plain,
            probe,
            twin,
            layouts: Vec::new(),
        })
    }
}

impl Builds {
    /// One row per distinct build, for `results/artifacts.csv`.
    pub fn rows(&self, package: &str, variant: &str) -> Vec<ArtifactRow> {
        let row = |build: &str, a: &Artifact| ArtifactRow {
            package: package.into(),
            variant: variant.into(),
            build: build.into(),
            layout_offset: 0,
            bytes: a.bytes.len() as u64,
            heap_base: a.heap_base.unwrap_or(0),
            sha256: a.sha256.clone(),
        };
        let mut rows = vec![
            row("plain", &self.plain),
            row("probe", &self.probe),
            row("twin", &self.twin),
        ];
        rows.extend(self.layouts.iter().map(|(offset, a)| ArtifactRow {
            layout_offset: *offset,
            ..row("layout", a)
        }));
        rows
    }
}

/// The runs of one case on one variant on one backend.
pub struct CaseMeasurement {
    /// The backend that ran it.
    pub backend: BackendKind,
    /// The unit of every cost in the runs.
    pub unit: Unit,
    /// The plain build, as deployed.
    pub plain: CaseRun,
    /// The probe build.
    pub probe: CaseRun,
    /// The probe's twin.
    pub twin: CaseRun,
}

/// Runs `scenario` on each build on `backend`, each on a fresh chain or meter.
/// `progress(config)` is called once per message.
pub fn measure_case(
    builds: &Builds,
    scenario: &Scenario,
    backend: BackendKind,
    mut progress: impl FnMut(&str),
) -> Result<CaseMeasurement> {
    let mut unit = Unit::Gas;
    let mut run = |artifact: &Artifact, reads: ProbeReads| -> Result<CaseRun> {
        let (run, u) = run_build(artifact, scenario, backend, reads, || {
            progress(&artifact.config)
        })?;
        unit = u;
        Ok(run)
    };
    let plain = run(&builds.plain, ProbeReads::Never)?;
    let probe = run(&builds.probe, ProbeReads::EveryMessage)?;
    let twin = run(&builds.twin, ProbeReads::Never)?;
    if backend.records_calls() {
        same_records(&probe).with_context(|| {
            format!(
                "{} ({}): per-call records",
                scenario.case, builds.probe.config
            )
        })?;
    }
    Ok(CaseMeasurement {
        backend,
        unit,
        plain,
        probe,
        twin,
    })
}

/// One run of `artifact` on a fresh chain or meter of `backend`, told the build's heap base (the
/// wasmtime meter places the pages a probe build touches by it), and the unit of its costs.
/// `progress()` is called once per message. Every run the lab makes goes through here: the
/// three builds of [`measure_case`] and each layout of the sweep.
pub fn run_build(
    artifact: &Artifact,
    scenario: &Scenario,
    backend: BackendKind,
    reads: ProbeReads,
    progress: impl FnMut(),
) -> Result<(CaseRun, Unit)> {
    let mut b = backend.create()?;
    let unit = b.unit();
    if let Some(heap_base) = artifact.heap_base {
        b.heap_base(heap_base);
    }
    let run =
        run_case(b.as_mut(), &artifact.bytes, scenario, reads, progress).with_context(|| {
            format!(
                "{} on {} ({}, {})",
                scenario.case,
                backend.name(),
                artifact.config,
                artifact.path.display()
            )
        })?;
    Ok((run, unit))
}

/// The row of one layout's run of a plain build (the layout sweep, [`crate::run::plan`]).
pub fn layout_row(
    scenario: &Scenario,
    variant: &str,
    backend: BackendKind,
    unit: Unit,
    offset: u32,
    artifact: &Artifact,
    run: &CaseRun,
) -> Result<LayoutRow> {
    let pages: Option<Vec<_>> = run.messages.iter().map(|m| m.pages).collect();
    let sum = |f: fn(&crate::results::pages::PageCounts) -> u32| {
        pages
            .as_ref()
            .map(|p| p.iter().map(|c| u64::from(f(c))).sum())
    };
    Ok(LayoutRow {
        backend: backend.name().into(),
        case: scenario.case.into(),
        variant: variant.into(),
        unit: unit.name().into(),
        offset,
        heap_base: artifact
            .heap_base
            .with_context(|| format!("{} exports no __heap_base", artifact.path.display()))?,
        total: run.total_cost(),
        pages_read: sum(|c| c.read),
        pages_written: sum(|c| c.write),
        pages_write_after_read: sum(|c| c.write_after_read),
        pages_loaded: sum(|c| c.loaded),
        allocation_intervals: sum(|c| c.allocation_intervals),
        holding_messages: sum(|c| u32::from(c.allocation_intervals > 0)),
        messages: Some(run.messages.len() as u64),
        code_gas: Some(
            crate::build::charge::code_gas(&artifact.bytes)
                .with_context(|| format!("{} ({})", artifact.path.display(), artifact.config))?,
        ),
    })
}

/// The calls the host collected must add up, op by op, to what the probe itself recorded.
fn same_records(probe: &CaseRun) -> Result<()> {
    let stats = probe.probe.as_ref().expect("probe records");
    for op in Op::ALL {
        let calls = probe.call_costs(op);
        let o = stats.op(op);
        if (calls.len() as u64, calls.iter().sum::<u64>()) != (o.count, o.total) {
            bail!(
                "{}: the probe recorded {} calls costing {}, the host collected {} costing {}",
                op.name(),
                o.count,
                o.total,
                calls.len(),
                calls.iter().sum::<u64>()
            );
        }
    }
    Ok(())
}

/// One row per message: the plain build's cost and pages (as deployed), with the probe
/// build's cost and allocator calls beside it.
pub fn message_rows(s: &Scenario, v: &Variant, m: &CaseMeasurement) -> Vec<MessageRow> {
    m.plain
        .messages
        .iter()
        .zip(&m.probe.messages)
        .map(|(p, q)| MessageRow {
            backend: m.backend.name().into(),
            case: s.case.into(),
            variant: v.id.into(),
            unit: m.unit.name().into(),
            message: p.index as u64,
            failed: p.failed,
            cost: p.cost,
            probe_build_cost: q.cost,
            malloc_calls: q.op_counts.map_or(0, |c| c[Op::Malloc as usize]),
            calloc_calls: q.op_counts.map_or(0, |c| c[Op::Calloc as usize]),
            realloc_calls: q.op_counts.map_or(0, |c| c[Op::Realloc as usize]),
            free_calls: q.op_counts.map_or(0, |c| c[Op::Free as usize]),
            allocator_cost: q.op_costs.map_or(0, |c| c.iter().sum()),
            pages_read: p.pages.map(|c| c.read),
            pages_written: p.pages.map(|c| c.write),
            pages_write_after_read: p.pages.map(|c| c.write_after_read),
            pages_loaded: p.pages.map(|c| c.loaded),
            allocation_intervals: p.pages.map(|c| c.allocation_intervals),
            probe_first_allocator_static: first(q, |t| t.allocator_static),
            probe_first_allocator_heap: first(q, |t| t.allocator_heap),
            probe_first_allocator_block: first(q, |t| t.allocator_block),
            probe_first_program_static: first(q, |t| t.program_static),
            probe_first_program_heap: first(q, |t| t.program_heap),
            probe_allocator_only: first(q, |t| t.allocator_only),
        })
        .collect()
}

/// The case's totals row and its per-op rows (exact percentiles where the backend collected
/// every call).
pub fn case_rows(
    s: &Scenario,
    v: &Variant,
    m: &CaseMeasurement,
    code_bytes: u64,
) -> (TotalRow, Vec<OpRow>) {
    let stats = m.probe.probe.as_ref().expect("probe build records");
    let total = m.plain.total_cost();
    let allocator = m.probe.allocator_cost().expect("probe build records");
    let pct = |part: u64| round(100.0 * part as f64 / total as f64, 4);
    let ops = Op::ALL
        .iter()
        .map(|&op| {
            let o = stats.op(op);
            let mut costs = m.probe.call_costs(op);
            costs.sort_unstable();
            let percentile = |p: f64| -> Option<u64> {
                nearest_rank(&costs, p).filter(|_| m.backend.records_calls())
            };
            OpRow {
                backend: m.backend.name().into(),
                case: s.case.into(),
                variant: v.id.into(),
                unit: m.unit.name().into(),
                op: op.name().into(),
                count: o.count,
                total: o.total,
                avg: o.total.checked_div(o.count).unwrap_or(0),
                min: if o.count == 0 { 0 } else { o.min },
                max: o.max,
                p50: percentile(50.0),
                p95: percentile(95.0),
                p99: percentile(99.0),
                share_pct: pct(o.total),
            }
        })
        .collect();
    let total = TotalRow {
        backend: m.backend.name().into(),
        case: s.case.into(),
        variant: v.id.into(),
        unit: m.unit.name().into(),
        messages: m.plain.messages.len() as u64,
        total,
        allocator,
        allocator_share_pct: pct(allocator),
        code_bytes,
        calls_per_message: round(
            Op::ALL.iter().map(|&op| stats.op(op).count).sum::<u64>() as f64
                / m.plain.messages.len() as f64,
            4,
        ),
        failed_messages: m.plain.messages.iter().filter(|x| x.failed).count() as u64,
        failed_total: m
            .plain
            .messages
            .iter()
            .filter(|x| x.failed)
            .map(|x| x.cost)
            .sum(),
        // The layout columns are filled once every point is in ([`crate::analyse::layout::summarise`]).
        ..TotalRow::default()
    };
    (total, ops)
}

/// One part of where a probe-build message's pages were first touched, where the backend
/// attributes them.
fn first(q: &MessageCost, part: fn(&FirstTouch) -> u32) -> Option<u32> {
    q.pages.and_then(|c| c.first_touch).as_ref().map(part)
}

/// Pages the plain build touched over the case, and where the probe build's were first
/// touched, where the backend counts them.
pub fn pages_row(s: &Scenario, v: &Variant, m: &CaseMeasurement) -> Option<PagesRow> {
    let counts: Vec<_> = m
        .plain
        .messages
        .iter()
        .map(|msg| msg.pages)
        .collect::<Option<_>>()?;
    let sum =
        |f: fn(&crate::run::backend::PageCounts) -> u32| counts.iter().map(|c| f(c) as u64).sum();
    let probe: Vec<FirstTouch> = m
        .probe
        .messages
        .iter()
        .map(|msg| msg.pages.and_then(|c| c.first_touch))
        .collect::<Option<_>>()?;
    let part = |f: fn(&FirstTouch) -> u32| probe.iter().map(|t| f(t) as u64).sum();
    Some(PagesRow {
        backend: m.backend.name().into(),
        case: s.case.into(),
        variant: v.id.into(),
        messages: counts.len() as u64,
        read: sum(|c| c.read),
        written: sum(|c| c.write),
        write_after_read: sum(|c| c.write_after_read),
        loaded: sum(|c| c.loaded),
        page_gas: counts.iter().map(crate::results::pages::page_gas).sum(),
        // Counted apart from the split (first reads plus first writes), so that the two adding
        // up is a check (tests), not a definition.
        probe_pages: m
            .probe
            .messages
            .iter()
            .filter_map(|msg| msg.pages)
            .map(|c| u64::from(c.read + c.write))
            .sum(),
        first_allocator_static: part(|t| t.allocator_static),
        first_allocator_heap: part(|t| t.allocator_heap),
        first_allocator_block: part(|t| t.allocator_block),
        first_program_static: part(|t| t.program_static),
        first_program_heap: part(|t| t.program_heap),
        allocator_only: part(|t| t.allocator_only),
    })
}

/// One case's probe build against its twin, message by message, `init` first: each message's
/// allocator calls per op and the probe's cost minus the twin's; `None` for a failed message on
/// a backend that cannot see its calls (Gear rolled the probe's records back with it, so its
/// counts would read zero for calls that were made and paid for). What the probe validation
/// fits ([`crate::analyse::validation`]).
pub fn probe_differences(s: &Scenario, m: &CaseMeasurement) -> ProbeDifferences {
    let messages = m
        .twin
        .messages
        .iter()
        .zip(&m.probe.messages)
        .map(|(p, q)| {
            if q.failed && !m.backend.records_calls() {
                return None;
            }
            let calls = q.op_counts.expect("probe counts").map(|c| c as i64);
            Some((calls, q.cost as i64 - p.cost as i64))
        })
        .collect();
    ProbeDifferences {
        backend: m.backend.name().into(),
        case: s.case.into(),
        unit: m.unit.name().into(),
        messages,
        layout_shift: m.twin.total_cost() as i64 - m.plain.total_cost() as i64,
        twin_total: m.twin.total_cost(),
    }
}

/// Checks the entry points of a plain build (as Gear receives it, post-processed): the ones
/// Gear accepts, and no `state` of the program's own, which the probe build would define a
/// second time (its records are read through `state`): caught here, in one line naming the
/// export, instead of minutes later as a link error that points at galloc.
fn entry_points(
    package: &str,
    external: Option<&crate::build::external::Program>,
    info: &crate::build::wasm::WasmInfo,
) -> Result<()> {
    let who = match external {
        Some(p) => format!("{package} ({})", p.manifest.display()),
        None => package.to_owned(),
    };
    // Any export of that name, a function or a static: Gear keeps both through its
    // post-processing, and a static `state` was taken for a probe build's own export (and
    // refused as "is the galloc patch in effect?").
    if info.exports.iter().any(|e| e == "state") {
        bail!(
            "{who} exports `state` (a gmeta-era state query, in whatever form: `#[no_mangle] \
             extern fn state()`, `extern \"C\"`, `export_name`, or a `#[no_mangle] static`): \
             the lab reads its probe's records through Gear's `state` entry point, so the \
             probe build cannot be made; measure a copy without that export (gstd 2.0 programs \
             answer queries through `handle`)"
        );
    }
    let allowed = gear_core::code::ALLOWED_EXPORTS;
    if let Some(e) = info
        .function_exports
        .iter()
        .find(|e| !allowed.contains(&e.as_str()))
    {
        bail!(
            "{who} exports `{e}`, which Gear refuses (a program's exported functions are only {}): \
             remove its `#[no_mangle]` or `export_name`",
            allowed.join(", ")
        );
    }
    let required = gear_core::code::REQUIRED_EXPORTS;
    if !info
        .function_exports
        .iter()
        .any(|e| required.contains(&e.as_str()))
    {
        bail!(
            "{who} exports neither {}: Gear refuses a program without an entry point; is it a \
             gstd or Sails program (`gstd::main`/`#[program]`, or `extern \"C\" fn init`)?",
            required.join(" nor ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::wasm::WasmInfo;

    fn exporting(names: &[&str]) -> WasmInfo {
        WasmInfo {
            function_exports: names.iter().map(|n| (*n).to_owned()).collect(),
            exports: names.iter().map(|n| (*n).to_owned()).collect(),
            ..WasmInfo::default()
        }
    }

    /// A plain build's entry points, as Gear receives it: `state` of the program's own (in any
    /// spelling it is one export), a function Gear refuses, or no entry point at all is one
    /// line naming it and what to do; Gear's own set passes.
    #[test]
    fn entry_points_gear_refuses_or_the_probe_needs_are_named() {
        let ok = exporting(&[
            "init",
            "handle",
            "handle_reply",
            "handle_signal",
            "metahash",
        ]);
        assert!(entry_points("p", None, &ok).is_ok());
        for (names, expect) in [
            (
                &["init", "handle", "state"][..],
                "p exports `state` (a gmeta-era state query",
            ),
            (
                &["init", "handle", "debug_dump"][..],
                "p exports `debug_dump`, which Gear refuses",
            ),
            (&["handle_reply"][..], "p exports neither init nor handle"),
        ] {
            let err = entry_points("p", None, &exporting(names))
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(expect), "{err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
        // A static named `state` is an export of that name too, not a function.
        let mut with_static = exporting(&["init", "handle"]);
        with_static.exports.push("state".into());
        let err = entry_points("p", None, &with_static)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("p exports `state`") && err.contains("static"),
            "{err}"
        );
    }
}
