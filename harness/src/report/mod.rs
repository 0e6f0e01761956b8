//! Reporting: the Markdown report and the charts, from the result rows (the store writes them:
//! [`crate::store`]).
//!
//! - [`inputs`]: the results files a report is made from, read and checked complete.
//! - [`document`]: the report's pages: `README.md` and one page per case under `cases/`.
//! - [`verdicts`]: the verdicts over the heap layouts, and the design against its target.
//! - [`tables`]: every other table, over every case or one case's rows.
//! - [`validation`]: the probe validation, and what is not shown as measured where it fails.
//! - [`charts`]: the report's charts (plotters PNGs in `images/`), from the same rows.
//! - [`ship_table`]: the ship verdict's table.
//! - [`anatomy`]: where the gas goes: a variant's change against shipping, by charge.
//! - [`anatomy_rows`]: the anatomy a report explains with, and the lab's prices a program borrows.
//! - [`pick`]: `lab pick`'s answer for one program.
//! - [`heap`]: where the heap starts (`results/heap-skip/`): the heap-skip study and page maps.
//! - [`layout_model`]: the layout model held against the sweep, and the layout rules judged on
//!   the second workloads (`results/layout-model/`).
//! - [`reproduction`]: a reproduction of someone else's allocator on its case, rendered.
//! - [`scale`]: the scale cases (`results/scale/`): each variant's dearest checkpoint and every
//!   checkpoint against shipping.

pub mod anatomy;
pub mod anatomy_rows;
pub mod charts;
pub mod document;
pub mod heap;
pub mod inputs;
pub mod layout_model;
pub mod pick;
pub mod reproduction;
pub mod scale;
pub mod ship_table;
pub mod tables;
pub mod validation;
pub mod verdicts;
