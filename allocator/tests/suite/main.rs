//! galloc's correctness suite on the variant selected by a cargo feature, as one test binary:
//! `just test` builds it once per variant (14), and five binaries each were 70 compilations
//! and links (about 12 s a variant in CI against about 5 s as one).

mod capacity;
mod common;
mod edges;
mod gear_next;
mod long_run;
mod registry;
mod regressions;
mod stress;
