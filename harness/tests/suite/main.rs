//! The harness's integration tests, as one test binary: each binary links gtest's runtime and
//! wasmtime, so six of them cost six links and six times the disk.

mod allocations;
mod cli;
mod contracts;
mod counting;
mod dropin;
mod integrity;
mod layouts;
mod probe;
mod relink;
mod report;
mod scenarios;
mod survival;
mod wasmtime;
