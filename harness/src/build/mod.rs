//! Building: every program as Gear deploys it, once per variant.
//!
//! - [`workspace`]: where things are (the workspace root, per-variant target dirs, results).
//! - [`artifact`]: one Wasm artifact per (package, variant, build kind), rebuilt only when stale.
//! - [`config`]: the cargo config a build reads (its files, and the rustflags it gives the target).
//! - [`stamp`]: whether a build is fresh, without asking cargo.
//! - [`relink`]: the same artifact with its static data moved, for the layout sweep.
//! - [`sweep`]: the plain build re-linked at each offset of the layout sweep.
//! - [`external`]: a program outside the lab (`lab pick`, `just program`), built per variant.
//! - [`shared`]: the build directory every outside program shares, and what keeps two crates
//!   of one name in it apart.
//! - [`gear`]: gear-wasm-builder's own steps (its rustc flags, its post-processing).
//! - [`wasm`]: what an artifact imports and whether Gear would accept it.
//! - [`charge`]: what Gear charges every message for a build's code.
//! - [`process`]: the cargo runs a build starts, ended with the lab however it ends.
//! - [`toolchain`]: the target and the `rustc` every build uses.
//! - [`files`]: a build's files written whole, and named by content.

pub mod artifact;
pub mod charge;
pub mod config;
pub mod external;
pub mod files;
pub mod gear;
pub mod process;
pub mod relink;
pub mod shared;
pub mod stamp;
pub mod sweep;
pub mod toolchain;
pub mod wasm;
pub mod workspace;
