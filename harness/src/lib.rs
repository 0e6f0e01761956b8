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
//! - [`sweep`]: whether the default sweep is enough, against a dense grid.
//! - [`reproduction`]: a reproduction of someone else's allocator on its case, rendered.
//! - [`charts`]: the report's charts (plotters PNGs in `images/`), from the same rows.
//! - [`results`]: the flat result rows every command writes and every report reads.
//! - [`staging`]: a command's outputs reach the real directories all together or not at all.
//! - [`lock`]: one writer per results directory; readers wait for it.
//! - [`trace`]: per-call allocation traces from the wasmtime meter, saved for replay.
//! - [`gate`]: a run's totals against the committed baseline.
//! - [`agreement`]: whether fuel and gas rank variants alike, and what pages explain.

// The files are grouped on disk by the stage they serve (build, run, analyse, report; the
// results model and the trace format, which every stage shares, at the top), while each module
// keeps one flat name (`crate::build`, `crate::layout`, ...), so a module is named once and
// moving a file between stages changes no caller.
#[path = "analyse/agreement.rs"]
pub mod agreement;
#[path = "run/backend/mod.rs"]
pub mod backend;
#[path = "build/build.rs"]
pub mod build;
#[path = "run/cache.rs"]
pub mod cache;
#[path = "report/charts.rs"]
pub mod charts;
#[path = "build/external.rs"]
pub mod external;
#[path = "analyse/gate.rs"]
pub mod gate;
#[path = "analyse/layout.rs"]
pub mod layout;
#[path = "report/lock.rs"]
pub mod lock;
#[path = "run/measure.rs"]
pub mod measure;
#[path = "report/metadata.rs"]
pub mod metadata;
#[path = "run/replay.rs"]
pub mod replay;
#[path = "report/report.rs"]
pub mod report;
#[path = "report/reproduction.rs"]
pub mod reproduction;
pub mod results;
#[path = "run/run.rs"]
pub mod run;
#[path = "run/scenario/mod.rs"]
pub mod scenario;
#[path = "analyse/ship.rs"]
pub mod ship;
#[path = "report/ship_table.rs"]
pub mod ship_table;
#[path = "report/staging.rs"]
pub mod staging;
#[path = "analyse/sweep.rs"]
pub mod sweep;
pub mod trace;
#[path = "build/wasm.rs"]
pub mod wasm;
#[path = "build/workspace.rs"]
pub mod workspace;
