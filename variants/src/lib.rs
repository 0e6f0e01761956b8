//! The registry of allocator variants: id, cargo feature, label and origin of each.
//!
//! Adding a variant means one entry here and its code behind a feature in `allocator/`
//! (`tests/features.rs` fails until both agree).

use serde::Serialize;
use std::fmt;

/// Where a variant's design comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// What galloc 2.0 ships today.
    Shipping,
    /// The 2023 static-buffer study.
    Study2023,
    /// The 2025 upstream-dlmalloc study.
    Study2025,
    /// What other chains' and Wasm toolchains' contracts ship.
    Elsewhere,
    /// Designed in this lab.
    Lab,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Shipping => "shipping",
            Origin::Study2023 => "2023 study",
            Origin::Study2025 => "2025 study",
            Origin::Elsewhere => "other chains",
            Origin::Lab => "lab",
        })
    }
}

/// One allocator variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Variant {
    /// Stable id used on the command line, in file names and in results.
    pub id: &'static str,
    /// The `galloc` cargo feature that selects it.
    pub feature: &'static str,
    /// Short label for tables and chart legends.
    pub label: &'static str,
    /// Where the design comes from.
    pub origin: Origin,
    /// One line on what it changes.
    pub summary: &'static str,
    /// A test of the lab's own the variant is known to fail (the test asserts that it still
    /// does): the lab measures it, and never recommends it.
    pub fails: Option<KnownFailure>,
    /// A reproduction of someone else's allocator as it was measured, kept to show a finding
    /// about it, not a candidate: the case it is measured on. It is in no `all` (not in
    /// `just compare`, the per-variant tests or the fuzzing), only where a command names it,
    /// and never recommended.
    pub reproduces: Option<&'static str>,
}

/// A lab test a variant fails, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KnownFailure {
    /// The test: its file and function.
    pub test: &'static str,
    /// What goes wrong, in a few words.
    pub failure: &'static str,
}

/// Every variant, the reference first and reproductions last; reports keep this order (and
/// chart colours follow it).
pub const VARIANTS: &[Variant] = &[
    Variant {
        id: "shipping",
        feature: "shipping",
        label: "shipping (gear-dlmalloc 0.2.1)",
        origin: Origin::Shipping,
        summary:
            "What galloc 2.0 ships: Gear's dlmalloc fork with its static buffer; the reference.",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "static-buffer",
        feature: "static-buffer",
        label: "static buffer",
        origin: Origin::Study2023,
        summary:
            "Upstream dlmalloc on Gear's `alloc` (64 KiB Wasm pages) with the fork's buffer of 8, 8, 48, 48, 64 B cells \
                  in front while the heap is empty (the 2023 study's \"current\").",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "no-buffer",
        feature: "no-buffer",
        label: "no buffer",
        origin: Origin::Study2023,
        summary: "The same allocator without the static buffer.",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "doubled-buffer",
        feature: "doubled-buffer",
        label: "doubled buffer",
        origin: Origin::Study2023,
        summary: "Every buffer cell doubled in count: 4 × 8 B, 4 × 48 B, 2 × 64 B.",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "multi-buffers",
        feature: "multi-buffers",
        label: "multiple buffers",
        origin: Origin::Study2023,
        summary: "Cells of 8 B ×2, 16 B ×2, 32 B ×4, 48 B ×4, 64 B ×8, 256 B ×4 (the study's \
                  \"1, 2, 4, 6, 8, 32\" as multiples of the 8-byte alignment).",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "granularity-32k",
        feature: "granularity-32k",
        label: "granularity 32 KiB",
        origin: Origin::Study2025,
        summary: "Upstream dlmalloc without a buffer, taking memory from Gear in 32 KiB steps \
                  (dlmalloc's granularity; `no-buffer` is the 64 KiB default).",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "granularity-16k",
        feature: "granularity-16k",
        label: "granularity 16 KiB",
        origin: Origin::Study2025,
        summary: "Upstream dlmalloc without a buffer, taking memory from Gear in 16 KiB steps \
                  (dlmalloc's granularity; `no-buffer` is the 64 KiB default).",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "granularity-8k",
        feature: "granularity-8k",
        label: "granularity 8 KiB",
        origin: Origin::Study2025,
        summary: "Upstream dlmalloc without a buffer, taking memory from Gear in 8 KiB steps \
                  (dlmalloc's granularity; `no-buffer` is the 64 KiB default).",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "gear-next",
        feature: "gear-next",
        label: "Gear's next (PR #4853, pages fixed)",
        origin: Origin::Study2025,
        summary: "The 2025 study's answer as Gear PR #4853's `new-allocator` builds it (not \
                  merged): upstream dlmalloc at granularity 16 KiB over whole 64 KiB Wasm pages from Gear's `alloc`, \
                  release checks off, `trim(0)` at the end of every message, with correct page \
                  arithmetic (a trim frees whole pages only; `pr4853` keeps the PR's).",
        fails: Some(KnownFailure {
            test: "allocator/tests/suite/long_run.rs \
                   (long_run_on_gear_memory_refuses_nothing_it_could_serve_and_returns_pages)",
            failure: "refuses large requests it could serve, with most of Gear's memory free: \
                      its per-message trims strand the rest of a page",
        }),
        reproduces: None,
    },
    Variant {
        id: "bump",
        feature: "bump",
        label: "bump (never frees)",
        origin: Origin::Elsewhere,
        summary: "The floor: a bump allocator that never frees, as ink! and most other chains \
                  ship; the least work per call, paid for in pages.",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "talc",
        feature: "talc",
        label: "talc 5",
        origin: Origin::Elsewhere,
        summary: "talc 5.1 from crates.io (the allocator talc's authors offer for Wasm), through \
                  its memory-source hook on Gear's `alloc` instead of `memory.grow`.",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "rlsf",
        feature: "rlsf",
        label: "rlsf (TLSF)",
        origin: Origin::Elsewhere,
        summary: "rlsf 0.2 from crates.io (two-level segregated fit, constant-time), through its \
                  memory-source hook on Gear's `alloc` instead of `memory.grow`.",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "slabs",
        feature: "slabs",
        label: "slabs (lab)",
        origin: Origin::Lab,
        summary: "Upstream dlmalloc behind small-block slabs: 16/32/64 B slots in 1 KiB runs \
                  carved lowest first from the heap-base tail, with the used-slot bitmaps in the \
                  allocator's state, not in the heap: a small malloc or free touches no heap \
                  page.",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "lab",
        feature: "lab",
        label: "lab: compact (4 KB, coalescing)",
        origin: Origin::Lab,
        summary: "The lab's design (`allocator/src/compact.rs`): one header word a block, \
                  free neighbours merged at once, free lists by size found through a bitmap, \
                  lowest address first from the heap-base tail; blocks over 32 KiB are whole \
                  64 KiB Wasm pages from Gear's `alloc`; pages go back once empty.",
        fails: None,
        reproduces: None,
    },
    Variant {
        id: "pr4853",
        feature: "pr4853",
        label: "reproduction: PR #4853's page release",
        origin: Origin::Study2025,
        summary: "A reproduction, not a candidate: `gear-next` with Gear PR #4853's own page \
                  release, `floor(ptr / 64 KiB) ..= floor((ptr + size) / 64 KiB) - 1`, which \
                  frees the page a trimmed segment's kept part ends in (measured on `ft-4853` \
                  only).",
        fails: Some(KnownFailure {
            test: "harness/tests/suite/cases.rs \
                   (pr4853_loses_the_balance_map_where_the_study_went_flat)",
            failure: "frees a page that still holds live data: on `ft-4853` every message \
                      from the balance map's first growth on fails",
        }),
        reproduces: Some("ft-4853"),
    },
];

/// The id every other variant is compared with.
pub const REFERENCE: &str = "shipping";

/// The floor: the least allocator work possible per call; reports show each variant's
/// distance to it.
pub const FLOOR: &str = "bump";

/// The lab's current design: the variant the report holds to the design target
/// (`harness/src/analyse/target.rs`, docs/design.md "The target") and shows case by case in
/// its own table and chart, and the allocator suite's capacity test holds to shipping.
pub const DESIGN: &str = "lab";

/// The variant a build gets when it names none (cargo's `default`): the reference, so that a
/// program patched onto the lab's galloc without a feature builds exactly what galloc 2.0 ships.
pub const DEFAULT: &str = REFERENCE;

/// Why the lab never recommends `id`, if it does not: the floor never frees (on Gear memory
/// persists, so a program on it only grows until it runs out of pages), and a variant that
/// fails one of the lab's own tests is not a safe choice however cheap.
pub fn never_recommended(id: &str) -> Option<String> {
    if id == FLOOR {
        return Some("the floor: it never frees, and Gear's memory persists".to_owned());
    }
    let fails = find(id).ok()?.fails?;
    Some(format!("fails {}: {}", fails.test, fails.failure))
}

/// A variant id that is not in the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVariant(pub String);

impl fmt::Display for UnknownVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<&str> = VARIANTS.iter().map(|v| v.id).collect();
        if self.0.is_empty() {
            // An empty list is a mistake (an unset shell variable), not a request for all.
            return write!(
                f,
                "no variant given (an empty list); pass `all` or some of: {}",
                known.join(", ")
            );
        }
        write!(
            f,
            "unknown variant `{}`; known variants: {} (see variants/src/lib.rs)",
            self.0,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownVariant {}

/// The variant with id `id`.
pub fn find(id: &str) -> Result<&'static Variant, UnknownVariant> {
    VARIANTS
        .iter()
        .find(|v| v.id == id)
        .ok_or_else(|| UnknownVariant(id.to_owned()))
}

/// The variants named in a comma-separated list (`all` = every variant), in registry order,
/// without duplicates; an empty list is an error.
pub fn select(list: &str) -> Result<Vec<&'static Variant>, UnknownVariant> {
    let wanted: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if wanted.is_empty() {
        return Err(UnknownVariant(String::new()));
    }
    if wanted == ["all"] {
        return Ok(VARIANTS.iter().filter(|v| v.reproduces.is_none()).collect());
    }
    for id in &wanted {
        find(id)?;
    }
    Ok(VARIANTS.iter().filter(|v| wanted.contains(&v.id)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_reference_and_default_exist() {
        for (i, a) in VARIANTS.iter().enumerate() {
            assert!(VARIANTS[i + 1..].iter().all(|b| b.id != a.id), "{}", a.id);
        }
        assert_eq!(VARIANTS[0].id, REFERENCE);
        find(DEFAULT).unwrap();
        find(FLOOR).unwrap();
        find(DESIGN).unwrap();
    }

    #[test]
    fn the_floor_and_known_failures_are_never_recommended() {
        assert!(never_recommended("bump").unwrap().starts_with("the floor"));
        let why = never_recommended("gear-next").unwrap();
        assert!(
            why.starts_with("fails allocator/tests/suite/long_run.rs"),
            "{why}"
        );
        assert!(never_recommended("pr4853").is_some());
        assert_eq!(never_recommended("lab"), None);
        assert_eq!(never_recommended("shipping"), None);
    }

    #[test]
    fn select_keeps_registry_order_and_names_unknown_ids() {
        let picked = select("no-buffer, shipping,no-buffer").unwrap();
        assert_eq!(
            picked.iter().map(|v| v.id).collect::<Vec<_>>(),
            ["shipping", "no-buffer"]
        );
        assert_eq!(select("all").unwrap().len(), VARIANTS.len() - 1);
        assert!(select("all").unwrap().iter().all(|v| v.id != "pr4853"));
        assert_eq!(select("pr4853,shipping").unwrap().len(), 2);
        let err = select("no-buffer,bogus").unwrap_err().to_string();
        assert!(
            err.starts_with("unknown variant `bogus`; known variants: shipping, "),
            "{err}"
        );
    }
}
