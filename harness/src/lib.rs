//! The galloc lab harness: builds programs once per allocator variant and measures them.
//!
//! - [`backend`]: the seam every meter implements: gtest, and the wasmtime fuel meter.
//! - [`workspace`]: where things are (the workspace root, per-variant target dirs, results).
//! - [`build`]: one Wasm artifact per (package, variant, probe), rebuilt only when stale.
//! - [`wasm`]: what an artifact imports and whether Gear would accept it.
//! - [`scenario`]: the cases, as message sequences with expected replies.
//! - [`run`]: one scenario on one backend and build, every reply checked.
//! - [`cache`]: runs already made, keyed by what they depend on.
//! - [`metadata`]: `results/metadata.json`, what produced the results.
//! - [`measure`]: one case on one variant: three builds, three runs, their rows.
//! - [`report`]: tables rendered from result rows.
//! - [`layout`]: the layout sweep, and verdicts that hold at every heap layout.
//! - [`charts`]: the report's charts (plotters PNGs in `images/`), from the same rows.
//! - [`results`]: the flat result rows every command writes and every report reads.
//! - [`staging`]: a command's outputs reach the real directories only if it succeeds.
//! - [`trace`]: per-call allocation traces from the wasmtime meter, saved for replay.
//! - [`gate`]: a run's totals against the committed baseline.
//! - [`agreement`]: whether fuel and gas rank variants alike, and what pages explain.

pub mod agreement;
pub mod backend;
pub mod build;
pub mod cache;
pub mod charts;
pub mod external;
pub mod gate;
pub mod layout;
pub mod measure;
pub mod metadata;
pub mod replay;
pub mod report;
pub mod results;
pub mod run;
pub mod scenario;
pub mod staging;
pub mod trace;
pub mod wasm;
pub mod workspace;
