//! Analysis: what the result rows say, computed without running anything.
//!
//! - [`layout`]: each program's word against shipping over the heap layouts of the sweep.
//! - [`layout_model`]: a program's page charges at a layout it was not run at, from the
//!   granules one run touched.
//! - [`layout_choice`]: rules that choose a program's layout, judged on the second workloads.
//! - [`rule`]: the ship rule's clauses, and why it refuses a variant.
//! - [`ship`]: the ship rule: every variant over the deployments of the default cases and the
//!   corpus, and the variant galloc should ship.
//! - [`pick`]: the ship rule for one program (`lab pick`, the report's pick per case).
//! - [`target`]: the design target: the ship rule's measures with stricter bounds,
//!   on every program, the held-out ones and the second workloads, code and the scale cases,
//!   each variant against it.
//! - [`scale`]: the scale cases: each checkpoint's gas against shipping's, and each variant's
//!   dearest checkpoint and refusals (what the target's scale clause reads).
//! - [`population`]: a variant over the deployments a release meets (every program at every
//!   layout): expected change, its interval, the worst program and deployment, the share dearer.
//! - [`gate`]: a run's totals against the committed baseline.
//! - [`agreement`]: whether fuel and gas rank variants alike, and what pages explain.
//! - [`anatomy`]: where the gas goes: each run split into what Gear charges, a variant's
//!   change against shipping split the same way, and the bounds over measured designs.
//! - [`fit`]: the probe validation's exact fit of its overheads, and least squares.
//! - [`validation`]: the probe validation: each case's messages held to its build's fit.
//! - [`sweep`]: whether the default sweep is enough, against a dense grid.

pub mod agreement;
pub mod anatomy;
pub mod fit;
pub mod gate;
pub mod layout;
pub mod layout_choice;
pub mod layout_model;
pub mod pick;
pub mod population;
pub mod rule;
pub mod scale;
pub mod ship;
pub mod sweep;
pub mod target;
pub mod validation;
