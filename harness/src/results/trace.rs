//! Allocation traces: every allocator call of a scenario run, with its fuel, saved for replay.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How a trace file is laid out; written beside the traces as their README.
pub const FORMAT: &str = "# Allocation traces

Written by `lab measure` on the wasmtime backend (`just compare`); do not edit.

`<case>-<variant>.csv.zst`: every allocator call of the case, in order, as the wasmtime meter
collected them from the variant's probe build (the same build whose totals are reported;
calls of a failed message are rolled back with it and are not listed).
zstd-compressed CSV with a header row; `zstd -dc FILE | head` shows it. Columns:

| column | meaning |
| --- | --- |
| `message` | 0 is `init`, then one per scenario step |
| `op` | `malloc`, `calloc`, `realloc` or `free` |
| `ptr` | the block passed in (`realloc`, `free`); 0 otherwise |
| `size` | the layout's size: the request (`malloc`, `calloc`), the old size (`realloc`, `free`) |
| `align` | the layout's alignment |
| `new_size` | `realloc`'s new size; 0 otherwise |
| `result` | the block returned; 0 for `free` and for a failed request |
| `fuel` | the call's calibrated cost in wasmtime fuel (as the probe records it) |

Addresses are Wasm addresses of the program's memory; replaying a trace needs the same
`__heap_base` (results/artifacts.csv, build `probe`) to reproduce them.
";

/// One allocator call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRecord {
    pub message: u64,
    pub op: String,
    pub ptr: u64,
    pub size: u64,
    pub align: u64,
    pub new_size: u64,
    pub result: u64,
    pub fuel: u64,
}

/// Writes `records` to `path` (zstd-compressed CSV), and the format's README beside it.
pub fn write(path: &Path, records: &[TraceRecord]) -> Result<()> {
    let dir = path.parent().context("trace path has no directory")?;
    crate::results::write_csv(path, records)?;
    crate::results::write_file(&dir.join("README.md"), FORMAT.as_bytes())
}

/// Reads a trace written by [`write`].
pub fn read(path: &Path) -> Result<Vec<TraceRecord>> {
    if !path.exists() {
        anyhow::bail!(
            "no trace {}; `just compare` records traces on the wasmtime backend",
            path.display()
        );
    }
    crate::results::read_csv(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_round_trips_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case-variant.csv.zst");
        let records = vec![TraceRecord {
            message: 3,
            op: "realloc".into(),
            ptr: 1_053_568,
            size: 14,
            align: 1,
            new_size: 28,
            result: 1_053_600,
            fuel: 120,
        }];
        write(&path, &records).unwrap();
        let first = std::fs::read(&path).unwrap();
        assert_eq!(read(&path).unwrap(), records);
        write(&path, &records).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), first);
    }
}
