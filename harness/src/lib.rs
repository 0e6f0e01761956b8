//! The galloc lab harness: builds programs once per allocator variant and measures them.
//!
//! The modules follow the stages a measurement goes through (build, run, analyse, report), one
//! folder each, beside the two every stage shares (store, results):
//! - [`build`]: the Wasm artifacts, one per (package, variant, build kind), and where they live.
//! - [`run`]: the scenarios, the backends that run them (gtest, the wasmtime fuel meter, a
//!   node) and one case measured on one variant.
//! - [`analyse`]: verdicts across heap layouts, the ship rule, the gate, fuel against gas.
//! - [`report`]: the report and its charts, from the rows.
//! - [`store`]: a results directory read whole and written all or nothing, under a lock, its
//!   files' hashes recorded and checked.
//! - [`results`]: the flat result rows every command writes and every report reads, and the
//!   per-call allocation traces the wasmtime meter saves for replay.

pub mod analyse;
pub mod build;
pub mod report;
pub mod results;
pub mod run;
pub mod store;
