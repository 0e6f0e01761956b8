//! Which allocator each variant feature selects.
//!
//! `variants/` is the registry that names every variant for the tools; this module is the code
//! behind each name. At most one variant feature besides `shipping` may be on. `shipping` is in
//! cargo's `default` (gstd depends on galloc with default features on, so it is always on
//! through gstd), and it is what a build gets unless another variant is named: `build.rs` sets
//! `cfg(galloc_shipping)` then. A program that patches the lab's galloc in and names no feature
//! so builds exactly what galloc 2.0 ships, byte for byte (harness test `dropin`).

use crate::buffer::{CellClass, CellLayout};
pub use crate::composed::Composed;

/// The items of an `active` module whose allocator is the lab's dlmalloc heap on `$platform`
/// behind `$front`.
#[allow(unused_macros, reason = "bump and shipping are not dlmalloc heaps")]
macro_rules! heap {
    ($platform:ty, $front:ty) => {
        /// The variant's allocator over pages of `S`.
        pub type Alloc<S> = crate::heap::Heap<$platform, $front>;
        /// The variant's allocator over `source`, having served nothing.
        pub const fn new<S: crate::source::PageSource>(source: S) -> Alloc<S> {
            crate::heap::Heap::new(<$platform>::new(source))
        }
    };
}

/// Fails the build, naming both features, when two variant features are on.
macro_rules! at_most_one_variant {
    ($first:literal $(, $rest:literal)* $(,)?) => {
        $(
            #[cfg(all(feature = $first, feature = $rest))]
            compile_error!(concat!(
                "galloc: variant features `", $first, "` and `", $rest, "` are both enabled; ",
                "enable at most one variant feature (none means `shipping`)",
            ));
        )*
        at_most_one_variant!($($rest),*);
    };
    () => {};
}

at_most_one_variant!(
    "static-buffer",
    "no-buffer",
    "doubled-buffer",
    "multi-buffers",
    "granularity-32k",
    "granularity-16k",
    "granularity-8k",
    "gear-next",
    "pr4853",
    "bump",
    "talc",
    "rlsf",
    "slabs",
    "lab",
);

/// The cells of Gear's dlmalloc fork on wasm32: 8, 8, 48, 48 and 64 bytes.
pub struct CurrentCells;
impl CellLayout for CurrentCells {
    const CLASSES: &'static [CellClass] = &[
        CellClass { size: 8, count: 2 },
        CellClass { size: 48, count: 2 },
        CellClass { size: 64, count: 1 },
    ];
}

/// Every cell of [`CurrentCells`] twice (the 2023 study's "doubled buffer").
pub struct DoubledCells;
impl CellLayout for DoubledCells {
    const CLASSES: &'static [CellClass] = &[
        CellClass { size: 8, count: 4 },
        CellClass { size: 48, count: 4 },
        CellClass { size: 64, count: 2 },
    ];
}

/// The 2023 study's "multiple buffers": its sizes "1, 2, 4, 6, 8, 32" read as multiples of
/// the 8-byte alignment, i.e. 8 B ×2, 16 B ×2, 32 B ×4, 48 B ×4, 64 B ×8 and 256 B ×4.
pub struct MultiCells;
impl CellLayout for MultiCells {
    const CLASSES: &'static [CellClass] = &[
        CellClass { size: 8, count: 2 },
        CellClass { size: 16, count: 2 },
        CellClass { size: 32, count: 4 },
        CellClass { size: 48, count: 4 },
        CellClass { size: 64, count: 8 },
        CellClass {
            size: 256,
            count: 4,
        },
    ];
}

// One `active` module per variant: its id, its front and its cells.

#[cfg(feature = "static-buffer")]
mod active {
    use super::CurrentCells as Cells;
    use crate::buffer::{CellClass, CellLayout, StaticBuffer};
    pub const ID: &str = "static-buffer";
    pub const CELLS: Option<&[CellClass]> = Some(Cells::CLASSES);
    heap!(crate::platform::PagePlatform<S>, StaticBuffer<Cells, { Cells::BYTES }>);
}

#[cfg(feature = "no-buffer")]
mod active {
    use crate::buffer::{CellClass, NoBuffer};
    pub const ID: &str = "no-buffer";
    pub const CELLS: Option<&[CellClass]> = Some(&[]);
    heap!(crate::platform::PagePlatform<S>, NoBuffer);
}

#[cfg(feature = "doubled-buffer")]
mod active {
    use super::DoubledCells as Cells;
    use crate::buffer::{CellClass, CellLayout, StaticBuffer};
    pub const ID: &str = "doubled-buffer";
    pub const CELLS: Option<&[CellClass]> = Some(Cells::CLASSES);
    heap!(crate::platform::PagePlatform<S>, StaticBuffer<Cells, { Cells::BYTES }>);
}

#[cfg(feature = "multi-buffers")]
mod active {
    use super::MultiCells as Cells;
    use crate::buffer::{CellClass, CellLayout, StaticBuffer};
    pub const ID: &str = "multi-buffers";
    pub const CELLS: Option<&[CellClass]> = Some(Cells::CLASSES);
    heap!(crate::platform::PagePlatform<S>, StaticBuffer<Cells, { Cells::BYTES }>);
}

/// The 2025 study's configurations: upstream dlmalloc without a buffer, asking Gear for
/// memory in steps of 32, 16 or 8 KiB instead of whole 64 KiB pages (`no-buffer` is the
/// 64 KiB row: dlmalloc's default).
macro_rules! granularity_variant {
    ($feature:literal, $kib:literal) => {
        #[cfg(feature = $feature)]
        mod active {
            use crate::buffer::{CellClass, NoBuffer};
            pub const ID: &str = $feature;
            pub const CELLS: Option<&[CellClass]> = Some(&[]);
            heap!(crate::platform::ExactPlatform<S, { $kib * 1024 }>, NoBuffer);
        }
    };
}
granularity_variant!("granularity-32k", 32);
granularity_variant!("granularity-16k", 16);
granularity_variant!("granularity-8k", 8);

/// Gear's next allocator (Gear PR #4853, feature `new-allocator`): dlmalloc with granularity
/// 16 KiB over whole Gear pages, the periodic release pass off, and `trim(0)` at the end of
/// every message ([`TRIMS_AT_MESSAGE_END`]). One deliberate difference: a trim frees from the
/// first page boundary after the kept part, where Gear's frees the page the kept part ends in
/// (docs/long-runs.md, "Gear's next allocator").
///
/// `pr4853` is the same allocator with the PR's own page release, which frees
/// `floor(ptr / 64 KiB) ..= floor((ptr + size) / 64 KiB) - 1` for a range dlmalloc gives up
/// ([`crate::platform::PagePlatform`] under that feature), and so frees the page a trimmed
/// segment's kept part ends in: a reproduction, kept to show what that does to a program
/// (docs/gear-2025.md, "Gear's 2025 study (PR #4853), re-measured"), on its case only; never recommended.
#[cfg(any(feature = "gear-next", feature = "pr4853"))]
mod active {
    use crate::buffer::{CellClass, NoBuffer};
    pub const ID: &str = if cfg!(feature = "pr4853") {
        "pr4853"
    } else {
        "gear-next"
    };
    pub const CELLS: Option<&[CellClass]> = Some(&[]);
    /// The variant's allocator over pages of `S`.
    pub type Alloc<S> =
        crate::heap::Heap<crate::platform::PagePlatform<S, { crate::source::GEAR_PAGE }>, NoBuffer>;
    /// The variant's allocator over `source`, having served nothing.
    pub const fn new<S: crate::source::PageSource>(source: S) -> Alloc<S> {
        crate::heap::Heap::new(crate::platform::PagePlatform::new(source)).without_release_checks()
    }
}

/// Whether the selected variant gives back what it can (`Composed::trim`) at the end of every
/// message, as Gear's next allocator does from a `gcore` destructor. Host tests model a
/// message end by calling [`HostAlloc::trim`].
pub const TRIMS_AT_MESSAGE_END: bool = cfg!(any(feature = "gear-next", feature = "pr4853"));

// The trim at the end of every entry point (`init`, `handle`, ...): gcore's destructors run
// there (wasm-ld wraps each export), registered at the priority Gear's own allocator uses (20;
// gcore's own set-up runs at 10).
#[cfg(all(any(feature = "gear-next", feature = "pr4853"), target_arch = "wasm32"))]
gcore::dtor! {
    unsafe extern "C" fn 20() {
        Composed::trim(crate::installed());
    }
}

/// The lab's design: dlmalloc behind small-block slabs with out-of-band metadata.
#[cfg(feature = "slabs")]
mod active {
    use crate::buffer::CellClass;
    pub const ID: &str = "slabs";
    /// Slab slots are not the static buffer's fixed cells.
    pub const CELLS: Option<&[CellClass]> = None;
    /// The variant's allocator over pages of `S`.
    pub type Alloc<S> = crate::heap::Heap<crate::platform::PagePlatform<S>, crate::slab::Slabs>;
    /// The variant's allocator over `source`, having served nothing: the heap-base tail
    /// is the slabs', in the static-data page every message touches anyway.
    pub const fn new<S: crate::source::PageSource>(source: S) -> Alloc<S> {
        crate::heap::Heap::new(crate::platform::PagePlatform::without_tail(source))
    }
}

/// The items of an `active` module whose allocator works on the page source itself: the type
/// at `crate::$path`.
#[allow(
    unused_macros,
    reason = "only the variants that are not dlmalloc heaps use it"
)]
macro_rules! direct {
    ($($path:ident)::+) => {
        /// The variant's allocator over pages of `S`.
        pub type Alloc<S> = crate::$($path)::+<S>;
        /// The variant's allocator over `source`, having served nothing.
        pub const fn new<S: crate::source::PageSource>(source: S) -> Alloc<S> {
            <Alloc<S>>::new(source)
        }
    };
}

/// The lab's design (docs/design.md, "The design, re-aimed"): a small coalescing allocator, lowest
/// address first from the heap-base tail, large blocks as Gear's own pages
/// ([`crate::compact`]). Its earlier forms, slabs in the heap-base tail before talc and then
/// slots in runs carved from dlmalloc, lost on programs they were not shaped on and carried
/// 12 KB of code.
#[cfg(feature = "lab")]
mod active {
    pub const ID: &str = "lab";
    pub const CELLS: Option<&[crate::buffer::CellClass]> = Some(&[]);
    direct!(compact::Compact);
}

/// The floor: a bump allocator that never frees.
#[cfg(feature = "bump")]
mod active {
    pub const ID: &str = "bump";
    pub const CELLS: Option<&[crate::buffer::CellClass]> = Some(&[]);
    direct!(bump::Bump);
}

/// talc 5, through its memory-source hook.
#[cfg(feature = "talc")]
mod active {
    pub const ID: &str = "talc";
    pub const CELLS: Option<&[crate::buffer::CellClass]> = Some(&[]);
    direct!(others::talc::Talc);
}

/// rlsf (TLSF), through its memory-source hook.
#[cfg(feature = "rlsf")]
mod active {
    pub const ID: &str = "rlsf";
    pub const CELLS: Option<&[crate::buffer::CellClass]> = Some(&[]);
    direct!(others::rlsf::Rlsf);
}

#[cfg(galloc_shipping)]
mod active {
    use crate::buffer::CellClass;
    pub const ID: &str = "shipping";
    /// gear-dlmalloc's cells exist but are private: its pointers cannot be told apart.
    pub const CELLS: Option<&[CellClass]> = None;
}

/// The lab's own variants: the active module's allocator on Gear pages.
#[cfg(not(galloc_shipping))]
mod built {
    use super::active::{self, Alloc};
    use super::Composed;

    /// The selected allocator on Gear.
    #[cfg(target_arch = "wasm32")]
    pub type Selected = Alloc<crate::source::GearPages>;
    /// The instance a `static` starts as.
    #[cfg(target_arch = "wasm32")]
    pub const fn selected() -> Selected {
        active::new(crate::source::GearPages)
    }

    #[cfg(target_arch = "wasm32")]
    type Pages = crate::source::GearPages;
    #[cfg(not(target_family = "wasm"))]
    type Pages = crate::source::HostPages;
    /// The bytes the allocator takes from Gear at a time.
    pub const GRANULARITY: usize = <Alloc<Pages> as Composed>::GRANULARITY;
    /// Whether freed memory is handed out again.
    pub const REUSES: bool = <Alloc<Pages> as Composed>::REUSES;
    /// Whether pages go back to Gear once the memory on them is freed.
    pub const RETURNS_PAGES: bool = <Alloc<Pages> as Composed>::RETURNS_PAGES;
    /// Whether a front has the heap-base tail on Gear, not the heap behind it.
    pub const FRONT_TAKES_TAIL: bool = <Alloc<Pages> as Composed>::FRONT_TAKES_TAIL;

    /// The selected allocator on the host, over simulated Gear pages.
    #[cfg(not(target_family = "wasm"))]
    pub type Host = Alloc<crate::source::HostPages>;

    #[cfg(not(target_family = "wasm"))]
    pub fn host(
        config: crate::source::HostConfig,
    ) -> (std::boxed::Box<Host>, Option<crate::source::HostPages>) {
        let pages = crate::source::HostPages::new(config);
        (
            std::boxed::Box::new(active::new(pages.clone())),
            Some(pages),
        )
    }

    #[cfg(not(target_family = "wasm"))]
    pub fn in_buffer(host: &Host, ptr: *const u8) -> Option<bool> {
        Some(Composed::in_buffer(host, ptr))
    }

    #[cfg(not(target_family = "wasm"))]
    pub fn trim(host: &Host) -> bool {
        Composed::trim(host)
    }
}

/// The shipped allocator, unchanged.
#[cfg(galloc_shipping)]
mod built {
    pub use crate::shipping::Shipping as Selected;

    /// The instance a `static` starts as.
    pub const fn selected() -> Selected {
        Selected::NEW
    }
    /// On Linux, gear-dlmalloc's own code over simulated Gear pages (`shipping::host`).
    #[cfg(all(not(target_family = "wasm"), target_os = "linux"))]
    pub use crate::shipping::host::ShippingHost as Host;
    /// Elsewhere, gear-dlmalloc's global instance over the OS's own pages.
    #[cfg(all(not(target_family = "wasm"), not(target_os = "linux")))]
    pub use crate::shipping::Shipping as Host;

    #[cfg(all(not(target_family = "wasm"), target_os = "linux"))]
    pub fn host(
        config: crate::source::HostConfig,
    ) -> (std::boxed::Box<Host>, Option<crate::source::HostPages>) {
        let pages = crate::source::HostPages::new(config);
        (std::boxed::Box::new(Host::new(pages.clone())), Some(pages))
    }

    /// Without the Linux symbols to serve, gear-dlmalloc's global instance over the OS's
    /// pages: the configuration does not apply and its pages cannot be inspected.
    #[cfg(all(not(target_family = "wasm"), not(target_os = "linux")))]
    pub fn host(
        _config: crate::source::HostConfig,
    ) -> (std::boxed::Box<Host>, Option<crate::source::HostPages>) {
        (std::boxed::Box::new(Host::NEW), None)
    }

    /// gear-dlmalloc's cells are private: its pointers cannot be told apart.
    #[cfg(not(target_family = "wasm"))]
    pub fn in_buffer(_host: &Host, _ptr: *const u8) -> Option<bool> {
        None
    }

    /// gear-dlmalloc 0.2.1 has no trim entry point.
    #[cfg(not(target_family = "wasm"))]
    pub fn trim(_host: &Host) -> bool {
        false
    }
}

/// The id of the selected variant, as `variants/` names it.
pub const ID: &str = active::ID;

/// The variant features cargo turned on, as it spells them in the environment
/// (`STATIC_BUFFER`; empty when none is, and `shipping` is selected): set by `build.rs` so a
/// test can hold [`ID`], the code behind the feature, to the registry's entry for that feature
/// (`tests/suite/registry.rs`). Host builds only: a Wasm build keeps its bytes.
#[cfg(not(target_family = "wasm"))]
pub const FEATURES_ON: &str = env!("GALLOC_VARIANT_FEATURES");

/// The bytes the selected variant's dlmalloc takes from Gear at a time (its granularity;
/// gear-dlmalloc's is one page).
#[cfg(not(galloc_shipping))]
pub const GRANULARITY: usize = built::GRANULARITY;
/// The bytes the selected variant's dlmalloc takes from Gear at a time (its granularity;
/// gear-dlmalloc's is one page).
#[cfg(galloc_shipping)]
pub const GRANULARITY: usize = crate::source::WASM_PAGE;

/// Whether the selected variant hands freed memory out again (only the `bump` floor does not).
#[cfg(not(galloc_shipping))]
pub const REUSES: bool = built::REUSES;
/// Whether the selected variant hands freed memory out again (only the `bump` floor does not).
#[cfg(galloc_shipping)]
pub const REUSES: bool = true;

/// Whether the selected variant gives pages back to Gear once the memory on them is freed.
#[cfg(not(galloc_shipping))]
pub const RETURNS_PAGES: bool = built::RETURNS_PAGES;
/// Whether the selected variant gives pages back to Gear once the memory on them is freed.
#[cfg(galloc_shipping)]
pub const RETURNS_PAGES: bool = true;

/// Whether a front of the selected variant has the heap-base tail on Gear (the slabs).
#[cfg(not(galloc_shipping))]
pub const FRONT_TAKES_TAIL: bool = built::FRONT_TAKES_TAIL;
/// Whether a front of the selected variant has the heap-base tail on Gear (the slabs).
#[cfg(galloc_shipping)]
pub const FRONT_TAKES_TAIL: bool = false;

/// The static-buffer cells of the selected variant (empty without a buffer; `None` when they
/// are not the lab's to inspect, as in `shipping`).
pub const CELLS: Option<&[CellClass]> = active::CELLS;

/// The selected allocator as a Gear program links it.
#[cfg(any(target_arch = "wasm32", galloc_shipping))]
pub use built::{selected, Selected};

/// The reference (`shipping`: gear-dlmalloc's own code) on the host over simulated Gear pages,
/// whatever variant is selected: what a test holds the selected one to on the same memory.
#[cfg(all(not(target_family = "wasm"), target_os = "linux", feature = "shipping"))]
pub use crate::shipping::host::ShippingHost as ReferenceHost;

/// The selected variant on the host, for tests: a `GlobalAlloc` plus what can be inspected.
#[cfg(not(target_family = "wasm"))]
pub struct HostAlloc {
    alloc: std::boxed::Box<built::Host>,
    pages: Option<crate::source::HostPages>,
}

#[cfg(not(target_family = "wasm"))]
impl HostAlloc {
    /// A fresh instance of the selected variant over simulated memory shaped by `config`
    /// (`shipping` off Linux uses gear-dlmalloc's own global instance and ignores `config`).
    pub fn new(config: crate::source::HostConfig) -> Self {
        let (alloc, pages) = built::host(config);
        HostAlloc { alloc, pages }
    }

    /// Whether `ptr` is a static-buffer cell; `None` if the allocator cannot tell.
    pub fn in_buffer(&self, ptr: *const u8) -> Option<bool> {
        built::in_buffer(&self.alloc, ptr)
    }

    /// Gives back every page the allocator can, as Gear's next allocator does at the end of
    /// each message ([`Composed::trim`]); `true` if any went back.
    pub fn trim(&self) -> bool {
        built::trim(&self.alloc)
    }

    /// The simulated page source; `None` for `shipping` off Linux, which has the OS's.
    pub fn pages(&self) -> Option<&crate::source::HostPages> {
        self.pages.as_ref()
    }
}

#[cfg(not(target_family = "wasm"))]
// SAFETY: every call is forwarded unchanged to the selected allocator.
unsafe impl core::alloc::GlobalAlloc for HostAlloc {
    unsafe fn alloc(&self, layout: core::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.alloc.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: core::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.alloc.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: core::alloc::Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.alloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: core::alloc::Layout, size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { self.alloc.realloc(ptr, layout, size) }
    }
}
