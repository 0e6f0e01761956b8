//! The harness's integration tests, as one test binary: each binary links gtest's runtime and
//! wasmtime, so six of them cost six links and six times the disk.

mod allocations;
mod anatomy;
mod arguments;
mod authors_crate;
// Named to come early: libtest starts tests in name order. Every default case on every variant
// (70 builds, ~7 min of a clean CI run) was one test named `scenarios`, started last and run
// alone while the other test thread sat idle; now one test per case, started first.
mod cases;
mod cli;
mod codebase;
mod contracts;
mod counting;
mod counts;
mod dropin;
mod explained;
mod fates;
mod heap;
mod identity;
mod integrity;
mod layout;
mod layout_model;
mod layouts;
mod links;
mod one_program;
mod probe;
mod recipes;
mod relink;
mod report;
mod reproduction;
mod ship;
mod stages;
mod studies;
mod survival;
mod wasmtime;
