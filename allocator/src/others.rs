//! Allocators other Wasm ecosystems pick, on the same Gear page source as the lab's own.
//!
//! Each comes from crates.io unchanged; what is written here is only its memory-source hook
//! over [`PageSource`](crate::source::PageSource) (they all call `memory.grow` on Wasm, which
//! Gear rejects) and a `GlobalAlloc` around it. `lol_alloc` is not here: its page source is a
//! crate-private trait whose only implementation executes `memory.grow` (docs/variants.md).

#[cfg(feature = "rlsf")]
pub mod rlsf;
#[cfg(feature = "talc")]
pub mod talc;
