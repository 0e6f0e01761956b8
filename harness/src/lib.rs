//! The galloc lab harness: builds programs once per allocator variant and measures them.
//!
//! - [`workspace`]: where things are (the workspace root, per-variant target dirs, results).
//! - [`build`]: one Wasm artifact per (package, variant, probe), rebuilt only when stale.
//! - [`wasm`]: what an artifact imports and whether Gear would accept it.
//! - [`results`]: the flat result rows every command writes and every report reads.

pub mod build;
pub mod results;
pub mod wasm;
pub mod workspace;
