//! The lab's result rows: flat, serde-derived, written by the runner and read by the report.
//!
//! Costs are in the unit their row names (`gas` or `fuel`), and each backend's rows live in
//! their own directory (`results/<backend>/`), so no column ever holds both units. How they
//! are written and read (CSV, zstd for the large ones, merged with rows already there) is in
//! `files.rs`.

use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub mod case_name;
mod files;
pub mod metadata;
pub mod pages;
mod studies;
pub mod touches;
pub mod trace;

pub use case_name::check_case;
pub use files::{
    hex, keep_compressed_in, mark_working_copy, merge, read_csv, remove_temps_of,
    restore_files_hint, restore_hint, temp_of, write_csv, write_file, ZSTD_LEVEL,
};
pub use studies::{
    ModelRow, PageMapRow, ScaleRow, ShiftRow, SkipRow, HEAP_DIR, LAYOUT_MODEL_DIR, SCALE_DIR,
    SHIFTED,
};

/// One case's probe build against its twin, message by message, `init` first (made by
/// [`crate::run::measure::probe_differences`], fitted by [`crate::analyse::validation`]; not a
/// file's row).
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeDifferences {
    pub backend: String,
    pub case: String,
    pub unit: String,
    /// Per message: allocator calls per op (malloc, calloc, realloc, free) and the probe's
    /// cost minus the twin's; `None` where the backend cannot see a failed message's calls.
    pub messages: Vec<Option<([i64; 4], i64)>>,
    /// The twin's total minus the plain build's: what moving the heap base alone did.
    pub layout_shift: i64,
    /// The twin's total.
    pub twin_total: u64,
}

/// Code size of one variant's build of a package.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeSizeRow {
    /// Package built (`galloc-wasm-size` for the allocator alone).
    pub package: String,
    /// Variant id from the registry.
    pub variant: String,
    /// Whether the gas probe was linked.
    pub probe: bool,
    /// Size of the `.wasm` file in bytes.
    pub wasm_bytes: u64,
    /// Bytes of its code section.
    pub code_bytes: u64,
    /// Bytes of its data section (the allocator's initialised statics).
    pub data_bytes: u64,
    /// Function imports, `;`-separated.
    pub imports: String,
    /// Hex SHA-256 of the `.wasm`.
    pub sha256: String,
}

/// Allocator cost of one op over one case on one build.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    /// `gas` or `fuel`: the unit of every cost column in the row.
    pub unit: String,
    /// `malloc`, `calloc`, `realloc` or `free`.
    pub op: String,
    pub count: u64,
    /// Calibrated cost of all calls.
    pub total: u64,
    /// `total / count`, 0 when there were no calls.
    pub avg: u64,
    pub min: u64,
    pub max: u64,
    /// Exact percentiles (nearest rank) from the per-call records, where the backend
    /// collects them (wasmtime); empty otherwise.
    pub p50: Option<u64>,
    pub p95: Option<u64>,
    pub p99: Option<u64>,
    /// `total` as a percentage of the case's total cost (plain build), 4 decimals.
    pub share_pct: f64,
}

/// One case on one build: the whole cost and the allocator's part.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TotalRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    pub unit: String,
    /// Messages sent, `init` included.
    pub messages: u64,
    /// Sum of every message's cost, measured on the plain (probe-free) build.
    pub total: u64,
    /// Calibrated cost of every allocator call, measured on the probe build.
    pub allocator: u64,
    /// `allocator / total` in percent, 4 decimals.
    pub allocator_share_pct: f64,
    /// Bytes of the deployed `.opt.wasm` (plain build).
    pub code_bytes: u64,
    /// Heap layouts the plain build was run at (`<backend>/layouts.csv`; see
    /// [`crate::analyse::layout`]); `total` is the one at offset 0, the build as the linker lays it out.
    pub layouts: u64,
    /// The plain build's total over those layouts: median (mean of the middle two for an even
    /// count, 1 decimal), lowest and highest.
    pub total_median: f64,
    pub total_min: u64,
    pub total_max: u64,
    /// `100 * (total - shipping's) / shipping's` at each layout both were run at: median, lowest
    /// and highest, 4 decimals. Empty for shipping itself and where shipping was not run.
    pub vs_shipping_median_pct: Option<f64>,
    pub vs_shipping_min_pct: Option<f64>,
    pub vs_shipping_max_pct: Option<f64>,
    /// Against shipping, the case's layouts as the rule's deployments: `cheaper`, `dearer`,
    /// `same` or `uncertain` ([`crate::analyse::layout::Verdict`]); `baseline` for shipping,
    /// empty with no shipping run to pair with.
    pub verdict: String,
    /// Allocator calls the probe build recorded (every op, messages that succeeded) per
    /// message sent, `init` included, 4 decimals.
    pub calls_per_message: f64,
    /// Messages that failed (a Sails program's refused operation throws: Gear rolls the
    /// message back but charges its gas), and their cost on the plain build, part of `total`.
    pub failed_messages: u64,
    pub failed_total: u64,
}

/// The plain build of one case at one heap layout (the layout sweep, [`crate::analyse::layout`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    pub unit: String,
    /// Bytes every static (and so the heap base) was moved up from where the linker puts it.
    pub offset: u32,
    /// The linker's `__heap_base` at that offset.
    pub heap_base: u32,
    /// Sum of every message's cost, `init` included.
    pub total: u64,
    /// Pages first read and first written over the case, where the backend counts them.
    pub pages_read: Option<u64>,
    pub pages_written: Option<u64>,
    /// Pages read, then written, and pages whose stored data was loaded, over the case, where
    /// the backend counts them (Gear's other two page charges). Results written before these
    /// columns existed read as empty: so do all the anatomy's columns.
    #[serde(default)]
    pub pages_write_after_read: Option<u64>,
    #[serde(default)]
    pub pages_loaded: Option<u64>,
    /// Runs of held Wasm pages Gear loaded before each message, summed over the case, and the
    /// messages that held any (each of those also pays one storage read), where counted.
    #[serde(default)]
    pub allocation_intervals: Option<u64>,
    #[serde(default)]
    pub holding_messages: Option<u64>,
    /// Messages sent, `init` included.
    #[serde(default)]
    pub messages: Option<u64>,
    /// What Gear charges each message for this build's code, in gas, whatever the backend's
    /// unit ([`crate::build::charge`]): the same module on every backend.
    #[serde(default)]
    pub code_gas: Option<u64>,
}

/// A layout row as the lab wrote it before the anatomy's columns.
#[derive(Serialize)]
struct EarlierLayoutRow<'a> {
    backend: &'a str,
    case: &'a str,
    variant: &'a str,
    unit: &'a str,
    offset: u32,
    heap_base: u32,
    total: u64,
    pages_read: Option<u64>,
    pages_written: Option<u64>,
}

/// Writes `rows` to `path` (a `layouts.csv`): with the anatomy's columns when every row has
/// them, else every row in the earlier format. One file keeps one format: a partial rerun into
/// results measured before the columns existed leaves them as they were (and their anatomy
/// empty) until every row is measured again. Returns whether the columns were written.
pub fn write_layouts(path: &Path, rows: &[LayoutRow]) -> Result<bool> {
    if rows.iter().all(|r| r.code_gas.is_some()) {
        write_csv(path, rows)?;
        return Ok(true);
    }
    let earlier: Vec<EarlierLayoutRow> = rows
        .iter()
        .map(|r| EarlierLayoutRow {
            backend: &r.backend,
            case: &r.case,
            variant: &r.variant,
            unit: &r.unit,
            offset: r.offset,
            heap_base: r.heap_base,
            total: r.total,
            pages_read: r.pages_read,
            pages_written: r.pages_written,
        })
        .collect();
    write_csv(path, &earlier)?;
    Ok(false)
}

impl MessageRow {
    /// The plain build's page counts the row keeps (not `changed`, which no analysis uses; the
    /// first-touch split is the probe build's), zero where the backend counts none.
    pub fn page_counts(&self) -> pages::PageCounts {
        pages::PageCounts {
            read: self.pages_read.unwrap_or(0),
            write: self.pages_written.unwrap_or(0),
            write_after_read: self.pages_write_after_read.unwrap_or(0),
            loaded: self.pages_loaded.unwrap_or(0),
            changed: 0,
            allocation_intervals: self.allocation_intervals.unwrap_or(0),
            first_touch: None,
        }
    }
}

/// Where the corpus's results live, beside the default cases' (`results/corpus/`).
pub const CORPUS_DIR: &str = "corpus";

/// A case's second workload ([`crate::run::scenario::Workload`]) on one plain build at one heap
/// layout: what every verdict on the case is checked against (`<backend>/second.csv`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SecondRow {
    pub backend: String,
    pub case: String,
    /// The workload's id.
    pub workload: String,
    pub variant: String,
    pub unit: String,
    /// Bytes every static (and so the heap base) was moved up from where the linker puts it.
    pub offset: u32,
    /// The linker's `__heap_base` at that offset.
    pub heap_base: u32,
    /// Sum of every message's cost, `init` included.
    pub total: u64,
}

impl SecondRow {
    /// The row of `workload` from its run at a layout.
    pub fn of(row: LayoutRow, workload: &str) -> Self {
        SecondRow {
            backend: row.backend,
            case: row.case,
            workload: workload.to_owned(),
            variant: row.variant,
            unit: row.unit,
            offset: row.offset,
            heap_base: row.heap_base,
            total: row.total,
        }
    }

    /// The row as a layout of its case, for the sweep's arithmetic ([`crate::analyse::layout`]).
    pub fn as_layout(&self) -> LayoutRow {
        LayoutRow {
            backend: self.backend.clone(),
            case: self.case.clone(),
            variant: self.variant.clone(),
            unit: self.unit.clone(),
            offset: self.offset,
            heap_base: self.heap_base,
            total: self.total,
            ..Default::default()
        }
    }
}

/// The second workloads' file name in a backend's results directory.
pub const SECOND: &str = "second.csv";

/// How exactly "probe build minus probe overhead = plain build" holds for one case and build.
///
/// The comparison is made against the *twin*: the probe build with a meter that reads nothing
/// (galloc's `probe-twin`), so that the two have the same statics at the same addresses; what
/// the probe's statics alone change against the plain build is `layout_shift`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValidationRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    pub unit: String,
    /// Messages compared, `init` included: a failed message is left out on a backend that
    /// cannot see its calls (gtest: the probe's records roll back with it).
    pub messages: u64,
    /// Twin total minus plain total: what the probe's statics alone changed (they move the
    /// heap base and every static after them).
    pub layout_shift: i64,
    /// Fitted cost the probe build adds per message whatever it calls (larger code).
    pub overhead_per_message: i64,
    /// Fitted cost the probe adds per call of each op: its two counter reads (the twin runs
    /// the same bookkeeping with a meter that reads nothing).
    pub overhead_malloc: i64,
    pub overhead_calloc: i64,
    pub overhead_realloc: i64,
    pub overhead_free: i64,
    /// What the calibrating message (the first with an allocator call: `init`, unless it
    /// allocates nothing) costs beyond the fit: the probe's one-time calibration.
    pub calibration: i64,
    /// Messages but the calibrating one where the relation holds exactly.
    pub exact_messages: u64,
    /// Largest |probe - overhead - twin| over those messages.
    pub max_abs_residual: u64,
    /// Sum of those |residuals| as a percentage of the twin's total, 6 decimals.
    pub residual_pct: f64,
}

/// One deployed artifact: what was measured, byte for byte.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArtifactRow {
    pub package: String,
    pub variant: String,
    /// `plain`, `probe`, `twin`, or `layout` (a plain build of the layout sweep).
    pub build: String,
    /// Bytes the statics of a `layout` build were moved up ([`crate::analyse::layout`]), 0 otherwise.
    pub layout_offset: u32,
    /// Bytes of the `.opt.wasm`.
    pub bytes: u64,
    /// The linker's `__heap_base`.
    pub heap_base: u32,
    /// Hex SHA-256 of the `.opt.wasm`.
    pub sha256: String,
}

/// One message of one case on one build pair.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    pub unit: String,
    /// 0 is `init`.
    pub message: u64,
    /// Whether the message failed (Gear rolled it back; its cost was still charged). Its
    /// calls are those the backend saw happen (wasmtime) and zero where it cannot see them
    /// (gtest: the probe's records rolled back with it).
    pub failed: bool,
    /// Cost on the plain build.
    pub cost: u64,
    /// Cost on the probe build.
    pub probe_build_cost: u64,
    /// Allocator calls during the message, per op.
    pub malloc_calls: u64,
    pub calloc_calls: u64,
    pub realloc_calls: u64,
    pub free_calls: u64,
    /// Their calibrated cost.
    pub allocator_cost: u64,
    /// 16 KiB pages the plain build's message touched ([`crate::results::pages::PageCounts`]), where
    /// the backend sees them; empty otherwise.
    pub pages_read: Option<u32>,
    pub pages_written: Option<u32>,
    pub pages_write_after_read: Option<u32>,
    pub pages_loaded: Option<u32>,
    /// Runs of pages the program held through `alloc` when the message began (Gear charges
    /// for loading them, [`crate::results::pages::allocations_gas`]), where the backend sees them.
    pub allocation_intervals: Option<u32>,
    /// The probe build's pages of this message by where each was first touched
    /// ([`crate::results::pages::FirstTouch`]), where the backend sees them (wasmtime).
    pub probe_first_allocator_static: Option<u32>,
    pub probe_first_allocator_heap: Option<u32>,
    pub probe_first_allocator_block: Option<u32>,
    pub probe_first_program_static: Option<u32>,
    pub probe_first_program_heap: Option<u32>,
    /// Of the probe build's pages first touched inside allocator calls, those the program did
    /// not touch outside them in the message: pages the allocator alone added.
    pub probe_allocator_only: Option<u32>,
}

/// Pages one case touched on one variant's plain build (wasmtime), summed over its messages,
/// and what Gear's default schedule would charge for them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PagesRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    pub messages: u64,
    /// Pages first read, first written, read then written, and loaded from storage.
    pub read: u64,
    pub written: u64,
    pub write_after_read: u64,
    pub loaded: u64,
    /// Those counts at gtest 2.0's lazy-page weights (signal accesses; writes include the
    /// upload), in gas.
    pub page_gas: u64,
    /// The probe build's pages (first read or first written), summed over the case, and the
    /// same split by where each was first touched ([`crate::results::pages::FirstTouch`]): inside an
    /// allocator call in static data, in heap metadata, in the call's block; outside, in
    /// static data, in the heap. The five add up to `probe_pages`.
    pub probe_pages: u64,
    pub first_allocator_static: u64,
    pub first_allocator_heap: u64,
    pub first_allocator_block: u64,
    pub first_program_static: u64,
    pub first_program_heap: u64,
    /// Of the pages first touched inside allocator calls, those the program did not touch
    /// outside them in the same message: pages the allocator alone added.
    pub allocator_only: u64,
}

/// Whether fuel and gas agree on a case: variants ranked by allocator cost under each, and
/// per message how well fuel (and fuel plus page gas) explains gtest's gas.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgreementRow {
    pub case: String,
    /// Variants by allocator fuel, cheapest first: `a < b < c`.
    pub rank_by_fuel: String,
    /// Variants by allocator gas, cheapest first.
    pub rank_by_gas: String,
    /// Spearman's rank correlation of the two, 4 decimals (1 = same order).
    pub spearman: f64,
    /// Messages in the per-message fit (every variant's, pooled).
    pub messages: u64,
    /// R² of gtest gas per message against fuel alone, 4 decimals.
    pub r2_fuel: f64,
    /// R² against fuel and the page gas of the message's page counts, 4 decimals.
    pub r2_fuel_pages: f64,
    /// Fitted gas per unit of fuel in the second fit.
    pub gas_per_fuel: f64,
    /// Fitted weight of the page gas in the second fit (1 = the schedule's weights explain it).
    pub page_gas_weight: f64,
    /// R² against fuel, page gas and the gas of loading the program's allocations before the
    /// message ([`crate::results::pages::allocations_gas`]), 4 decimals.
    pub r2_fuel_pages_allocations: f64,
    /// Fitted weight of the allocations' gas in that fit (1 = the schedule's weights; 0 when
    /// no message of the case had any).
    pub allocations_gas_weight: f64,
    /// Fitted gas per byte of deployed code in that fit (code loading and instantiation).
    pub gas_per_code_byte: f64,
    /// Largest |gas - fitted gas| of a message in that fit, in gas.
    pub max_residual: u64,
}

/// Nearest-rank percentile of `sorted` (ascending): the smallest value at or above `p`% of
/// them; `None` when there are none.
pub fn nearest_rank(sorted: &[u64], p: f64) -> Option<u64> {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

/// The backend whose costs are gas, for headline figures: gtest where it ran, else the first
/// backend with results.
pub fn headline_backend(totals: &[TotalRow]) -> Option<&str> {
    totals
        .iter()
        .find(|t| t.backend == "gtest")
        .or_else(|| totals.first())
        .map(|t| t.backend.as_str())
}

/// Rounds a percentage for results files: fixed decimals keep reruns byte-identical.
pub fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// A reproduction's run on one plain build at one heap layout (`lab reproduce`,
/// `results/<variant>/<backend>/outcomes.csv`): every message was sent whatever came back,
/// and these are the ones that came back other than the scenario says. The run's total is
/// its row in `layouts.csv`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    /// Bytes every static (and so the heap base) was moved up from where the linker puts it.
    pub offset: u32,
    /// Messages sent, `init` included.
    pub messages: u64,
    /// Messages that failed (Gear rolled them back and charged their gas).
    pub failed: u64,
    /// Messages whose outcome was not the scenario's (a failure where a reply was due, or
    /// another reply).
    pub wrong: u64,
    /// The first of them, and what came instead of what was due; empty when none.
    pub first_wrong: Option<u64>,
    pub first_wrong_why: String,
}

/// One message of a reproduction's case at the linker's layout (`<backend>/costs.csv`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    pub unit: String,
    /// 0 is `init`.
    pub message: u64,
    pub cost: u64,
    pub failed: bool,
    /// Whether its outcome was not the scenario's.
    pub wrong: bool,
}

/// One (backend, case, variant) a result set holds: `measured.csv`, written by `lab measure`
/// beside the results, lists every one it ran, so a reader can tell a complete set from one
/// with rows or files missing.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MeasuredRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
}

impl MeasuredRow {
    /// Every case with every variant on `backend`, cases first: the manifest of a study that
    /// runs them all.
    pub fn every(backend: &str, cases: &[&str], variants: &[&str]) -> Vec<MeasuredRow> {
        cases
            .iter()
            .flat_map(|case| {
                variants.iter().map(move |variant| MeasuredRow {
                    backend: backend.into(),
                    case: (*case).into(),
                    variant: (*variant).into(),
                })
            })
            .collect()
    }
}

/// The manifest's file name in a results directory.
pub const MANIFEST: &str = "measured.csv";

/// A backend a run was asked for and did not run a case on, and why (`left-out.csv`): the
/// report says so beside what ran, so a case measured on fewer backends than asked is never
/// silent (only a line on standard error said it).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LeftOutRow {
    pub backend: String,
    pub case: String,
    pub why: String,
}

/// The file of [`LeftOutRow`]s in a results directory (absent when nothing was left out).
pub const LEFT_OUT: &str = "left-out.csv";

/// The manifest of the result set in `dir`; an error that says how to get one when it is
/// missing.
pub fn read_manifest(dir: &Path) -> Result<Vec<MeasuredRow>> {
    let path = dir.join(MANIFEST);
    if !path.is_file() {
        anyhow::bail!(
            "{} is missing, so what these results should hold is unknown: they were not \
             written by `lab measure` or the file was deleted; {}",
            path.display(),
            restore_hint(dir)
        );
    }
    let rows: Vec<MeasuredRow> = read_csv(&path)?;
    if rows.is_empty() {
        anyhow::bail!("{} lists no run; {}", path.display(), restore_hint(&path));
    }
    Ok(rows)
}
