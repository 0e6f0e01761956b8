//! Running: the cases on the backends, every reply checked.
//!
//! - [`scenario`]: the cases, as message sequences with expected replies.
//! - [`backend`]: the seam every meter implements: gtest, the wasmtime fuel meter, a node.
//! - [`execute`]: one scenario on one backend and build, every reply checked.
//! - [`measure`]: one case on one variant: three builds, three runs, their rows.
//! - [`cache`]: runs already made, keyed by what they depend on.
//! - [`replay`]: a recorded allocation trace replayed against an allocator on the host.

pub mod backend;
pub mod cache;
pub mod cores;
pub mod execute;
pub mod expect;
pub mod measure;
pub mod plan;
pub mod replay;
pub mod scenario;
