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
