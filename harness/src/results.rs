//! The lab's result rows: flat, serde-derived, written by the runner and read by the report.

use anyhow::{Context, Result};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::path::Path;

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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// `total` as a percentage of the case's total cost (plain build), 4 decimals.
    pub share_pct: f64,
}

/// One case on one build: the whole cost and the allocator's part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TotalRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    pub unit: String,
    /// Messages sent, `init` included.
    pub messages: u64,
    /// Sum of every message's cost, measured on the plain (probe-free) build.
    pub total_gas: u64,
    /// Calibrated cost of every allocator call, measured on the probe build.
    pub allocator_gas: u64,
    /// `allocator_gas / total_gas` in percent, 4 decimals.
    pub allocator_share_pct: f64,
    /// Bytes of the deployed `.opt.wasm` (plain build).
    pub code_bytes: u64,
}

/// How well "probe build minus probe overhead = plain build" holds for one case and build.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ValidationRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    pub unit: String,
    pub messages: u64,
    /// Fitted cost the probe adds per allocator call (two counter reads and bookkeeping).
    pub overhead_per_op: u64,
    /// Fitted cost the probe build adds per message regardless of calls.
    pub overhead_per_message: i64,
    /// Messages where the relation holds exactly.
    pub exact_messages: u64,
    /// Largest |probe - overhead - plain| over the messages.
    pub max_abs_residual: u64,
    /// Sum of |residual| over the case, as a percentage of its total cost, 6 decimals.
    pub residual_pct: f64,
}

/// Rounds a percentage for results files: fixed decimals keep reruns byte-identical.
pub fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// Writes `rows` as CSV with a header.
pub fn write_csv<T: Serialize>(path: &Path, rows: &[T]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut writer =
        csv::Writer::from_path(path).with_context(|| format!("cannot write {}", path.display()))?;
    for row in rows {
        writer.serialize(row)?;
    }
    writer.flush()?;
    Ok(())
}

/// Reads CSV rows written by [`write_csv`].
pub fn read_csv<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let mut reader = csv::Reader::from_path(path).with_context(|| {
        format!(
            "cannot read {}; regenerate it with its recipe",
            path.display()
        )
    })?;
    reader
        .deserialize()
        .collect::<Result<_, _>>()
        .with_context(|| format!("{} does not match the current row format", path.display()))
}
