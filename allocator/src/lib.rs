//! `galloc`, lab edition: the allocator Gear programs link, with its variants as cargo features.
//!
//! A drop-in replacement for Gear's `galloc` 2.0 (swap it in with
//! `[patch.crates-io] galloc = { path = "allocator" }`). On `wasm32` it installs the
//! `#[global_allocator]`; on the host it is an ordinary library so the very same algorithm can
//! be tested against a simulated page source.
//!
//! The layers, bottom up:
//! - [`source`]: where 64 KiB pages come from ([`source::PageSource`]): Gear's `alloc` /
//!   `free_range` syscalls on Wasm, an arena on the host.
//! - [`platform`]: `dlmalloc`'s platform boundary (its "system allocator") over any page
//!   source, reusing the part of `__heap_base`'s page that static data leaves free.
//! - [`buffer`]: the static-buffer front of Gear's dlmalloc fork, with configurable cells.
//! - [`slab`]: the lab's first front, small-block slabs with out-of-band metadata in the
//!   heap-base tail.
//! - [`compact`]: the lab's design, a small coalescing allocator on Gear pages.
//! - [`heap`]: a `GlobalAlloc` composing dlmalloc and a front.
//! - [`bump`]: the floor, a bump allocator that never frees.
//! - [`others`]: allocators other ecosystems pick (talc, rlsf), on the same page source.
//! - [`composed`]: what the lab reads off every allocator it composes.
//! - [`variant`]: which composition each cargo feature selects.
//! - [`probe`]: a gas probe around any `GlobalAlloc` (feature `probe`).
#![no_std]
#![warn(missing_docs)]

#[cfg(not(target_family = "wasm"))]
extern crate std;

pub mod buffer;
pub mod bump;
pub mod platform;
// Only where it runs: in every other variant's Wasm, even unused, it changes the bytes (not the
// size) of the program, and so every cached measurement of it.
#[cfg(any(feature = "lab", not(target_family = "wasm")))]
pub mod compact;
pub mod composed;
pub mod heap;
mod lock;
pub mod others;
pub mod prelude;
pub mod probe;
// On Linux hosts also beside another variant (the `shipping` feature is on by default): the
// suite's capacity test holds every variant to the reference over the same simulated memory.
#[cfg(any(
    galloc_shipping,
    all(feature = "shipping", not(target_family = "wasm"), target_os = "linux")
))]
mod shipping;
pub mod slab;
pub mod source;
pub mod variant;

/// Padding the lab adds to a build's static state (see `build.rs`); 0 otherwise.
#[cfg(target_arch = "wasm32")]
mod layout {
    include!(concat!(env!("OUT_DIR"), "/layout_pad.rs"));

    /// Never read; kept by `#[used]` so static data ends `LAYOUT_PAD` bytes later.
    #[used]
    static PAD: [u8; LAYOUT_PAD] = [0; LAYOUT_PAD];
}

#[cfg(all(feature = "probe", feature = "probe-twin"))]
compile_error!("`probe` and `probe-twin` are two builds: enable one");

/// The allocator this build installs: the selected variant, wrapped in the gas probe when the
/// `probe` feature is on, or in its unmeasuring twin with `probe-twin`.
#[cfg(all(
    target_arch = "wasm32",
    not(any(feature = "probe", feature = "probe-twin"))
))]
pub type Global = variant::Selected;
/// The allocator this build installs: the selected variant, wrapped in the gas probe when the
/// `probe` feature is on, or in its unmeasuring twin with `probe-twin`.
#[cfg(all(target_arch = "wasm32", feature = "probe"))]
pub type Global = probe::Probe<variant::Selected, probe::GearGas>;
/// The allocator this build installs: the selected variant, wrapped in the gas probe when the
/// `probe` feature is on, or in its unmeasuring twin with `probe-twin`.
#[cfg(all(target_arch = "wasm32", feature = "probe-twin"))]
pub type Global = probe::Twin<variant::Selected, probe::GearGas>;

/// Global allocator instance, as Gear's `galloc` names it.
#[cfg(target_arch = "wasm32")]
#[global_allocator]
pub static ALLOC: Global = {
    #[cfg(not(any(feature = "probe", feature = "probe-twin")))]
    {
        variant::selected()
    }
    #[cfg(feature = "probe")]
    {
        probe::Probe::new(variant::selected(), probe::GearGas)
    }
    #[cfg(feature = "probe-twin")]
    {
        probe::Twin::new(variant::selected(), probe::GearGas)
    }
};

/// The selected variant's instance inside [`ALLOC`] (under the probe when there is one).
#[cfg(target_arch = "wasm32")]
#[allow(
    dead_code,
    reason = "only variants that act at the end of a message use it"
)]
fn installed() -> &'static variant::Selected {
    #[cfg(not(any(feature = "probe", feature = "probe-twin")))]
    {
        &ALLOC
    }
    #[cfg(any(feature = "probe", feature = "probe-twin"))]
    {
        ALLOC.inner()
    }
}
