//! The layout sweep's plan: at which heap layouts each backend runs a case's plain build and
//! its second workload (docs/verdicts.md, "Verdicts across heap layouts").
//!
//! Gear charges per 16 KiB page a message touches, so a total depends on where `__heap_base`
//! lands, which the program's static data decides. The sweep re-links each plain build with its
//! statics moved up by [`stratified`] offsets over the 64 KiB Wasm page (covering every position
//! in the 16 KiB Gear page as well), and the verdicts ([`crate::analyse::layout`]) compare every
//! variant with `shipping` at the same offset. `just sweep-check` holds the plan against a dense
//! [`grid`].

use crate::results::pages::{GEAR_PAGE, WASM_PAGE};
use crate::run::backend::BackendKind;
use anyhow::{bail, Result};

/// Layouts `just compare` runs every case at on gas (offset 0 is the committed, linker's own),
/// [`stratified`] over the 64 KiB Wasm page: what `results/` holds. Held against a 64-point
/// grid over the Wasm page (`just sweep-check`, docs/verdicts.md, "Is the sweep enough?") these miss a
/// verdict or a median by more than the band on 1 of 8 pairs; the 8 points over one Gear page
/// the lab swept before ([`offsets`]) missed on 2, and 8 stratified points on 3.
pub const POINTS: u32 = 16;

/// The fuel meter runs every this many of the sweep's points (in offset order, 0 first): all
/// of them. Fuel itself barely moves with the layout (the grid: at most 0.17 points of percent
/// between a pair's lowest and highest difference), but the gas anatomy (docs/ship.md, "Where
/// the gas goes") prices each deployment's pages from the fuel meter's counts of them, so the
/// meter runs wherever gas does and nothing is assumed between its points. Its runs are the
/// cheap ones (wasmtime alone, not Gear's runtime): `just compare` took 46 min here with them.
pub const FUEL_STRIDE: usize = 1;

/// Second workloads run on gas at every this many of the sweep's points (0, 17, 34 and 51 KiB
/// of the default sweep: one in each Gear page of the Wasm page), which keeps `just compare`
/// within 1.5 times the runs of the earlier sweep ([`second_on`]).
pub const SECOND_STRIDE: usize = 4;

/// `points` offsets spread evenly over one Gear page, 0 first, each a multiple of 16 (static
/// data keeps its alignment): the sweep the lab ran before [`stratified`] (`--one-gear-page`),
/// and the position in a Gear page of each of its points.
pub fn offsets(points: u32) -> Result<Vec<u32>> {
    if points == 0 || points > GEAR_PAGE / 16 {
        bail!(
            "--layouts {points}: give 1 (the linker's layout only) to {} layouts",
            GEAR_PAGE / 16
        );
    }
    Ok((0..points)
        .map(|i| (u64::from(i) * u64::from(GEAR_PAGE) / u64::from(points)) as u32 / 16 * 16)
        .collect())
}

/// `points` offsets stratified over one Wasm page, ascending, 0 first, each a multiple of 16
/// (static data keeps its alignment). Point `i` sits at `i/points` of the way through a Gear
/// page (so the points cover the Gear page evenly, as they did when the sweep spanned only
/// one) and in Gear page `i mod 4` of the Wasm page (so they cover the Wasm page too): for 8,
/// every 2 KiB of the Gear page once and every quarter of the Wasm page twice.
pub fn stratified(points: u32) -> Result<Vec<u32>> {
    let per_wasm_page = WASM_PAGE / GEAR_PAGE;
    let mut offsets: Vec<u32> = offsets(points)?
        .into_iter()
        .zip(0..)
        .map(|(in_gear_page, i)| (i % per_wasm_page) * GEAR_PAGE + in_gear_page)
        .collect();
    offsets.sort_unstable();
    Ok(offsets)
}

/// The offsets of `offsets` (ascending, 0 first) that `backend` runs: all on gas (gtest, a
/// node), every `fuel_stride`th on the fuel meter.
pub fn on(backend: BackendKind, offsets: &[u32], fuel_stride: usize) -> Vec<u32> {
    match backend {
        BackendKind::Wasmtime => offsets
            .iter()
            .copied()
            .step_by(fuel_stride.max(1))
            .collect(),
        _ => offsets.to_vec(),
    }
}

/// `points` offsets of the sweep: [`stratified`] over the Wasm page, or with `one_gear_page`
/// spread over one Gear page ([`offsets`], the lab's earlier sweep, kept to compare with).
pub fn sweep(points: u32, one_gear_page: bool) -> Result<Vec<u32>> {
    if one_gear_page {
        offsets(points)
    } else {
        stratified(points)
    }
}

/// The default sweep's offsets, every backend's together.
pub fn default_sweep() -> Vec<u32> {
    stratified(POINTS).expect("a valid point count")
}

/// The default sweep's offsets on `backend`: what `results/` holds.
pub fn default_on(backend: BackendKind) -> Vec<u32> {
    on(backend, &default_sweep(), FUEL_STRIDE)
}

/// The offsets of `offsets` at which a case's second workload runs on `backend`: on gas every
/// `stride`th ([`SECOND_STRIDE`] in the default sweep); none on the fuel meter (its
/// verdicts barely move: docs/verdicts.md, "Is the sweep enough?") and none at a single layout (the gate
/// compares totals at the linker's layout, not verdicts).
pub fn second_on(backend: BackendKind, offsets: &[u32], stride: usize) -> Vec<u32> {
    if backend == BackendKind::Wasmtime || offsets.len() < 2 {
        return Vec::new();
    }
    offsets.iter().copied().step_by(stride.max(1)).collect()
}

/// Every `step` bytes over one Wasm page, 0 first: the dense grid `just sweep-check` holds
/// a sweep against (every point of `offsets(8)` and of `stratified(16)` is on the 1 KiB grid).
pub fn grid(step: u32) -> Result<Vec<u32>> {
    if step == 0 || !step.is_multiple_of(16) || step > WASM_PAGE {
        bail!("--layout-step {step}: give a multiple of 16 bytes from 16 to {WASM_PAGE}");
    }
    Ok((0..WASM_PAGE).step_by(step as usize).collect())
}

/// The default sweep's second-workload offsets on `backend`: what `results/` holds.
pub fn default_second_on(backend: BackendKind) -> Vec<u32> {
    second_on(backend, &default_sweep(), SECOND_STRIDE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_span_one_gear_page_evenly() {
        assert_eq!(
            offsets(8).unwrap(),
            [0, 2048, 4096, 6144, 8192, 10240, 12288, 14336]
        );
        assert_eq!(offsets(1).unwrap(), [0]);
        assert_eq!(offsets(3).unwrap(), [0, 5456, 10912]);
        assert!(offsets(0).is_err());
        assert_eq!(sweep(8, true).unwrap(), offsets(8).unwrap());
        assert_eq!(sweep(8, false).unwrap(), stratified(8).unwrap());
    }

    #[test]
    fn stratified_offsets_cover_the_gear_page_and_the_wasm_page() {
        let all = stratified(16).unwrap();
        assert_eq!(
            all,
            [
                0, 4096, 8192, 12288, 17408, 21504, 25600, 29696, 34816, 38912, 43008, 47104,
                52224, 56320, 60416, 64512
            ]
        );
        // Every 1 KiB of the Gear page once, every quarter of the Wasm page four times; a
        // stride of 4 (the second workloads') one point in each quarter.
        let mut in_gear_page: Vec<u32> = all.iter().map(|o| o % GEAR_PAGE).collect();
        in_gear_page.sort_unstable();
        assert_eq!(in_gear_page, (0..16).map(|i| i * 1024).collect::<Vec<_>>());
        assert_eq!(on(BackendKind::Gtest, &all, 4), all);
        assert_eq!(on(BackendKind::Wasmtime, &all, 4), [0, 17408, 34816, 52224]);
        // The default sweep is exactly this: 16 on gas and on fuel, second workloads at 4 on
        // gas and none on fuel.
        assert_eq!(default_on(BackendKind::Gtest), all);
        assert_eq!(default_on(BackendKind::Wasmtime), all);
        assert_eq!(
            default_second_on(BackendKind::Gtest),
            [0, 17408, 34816, 52224]
        );
        assert!(default_second_on(BackendKind::Wasmtime).is_empty());
        assert!(second_on(BackendKind::Gtest, &[0], 4).is_empty());
        assert_eq!(on(BackendKind::Wasmtime, &[0], 4), [0]);
        let eight = stratified(8).unwrap();
        assert_eq!(eight, [0, 8192, 18432, 26624, 36864, 45056, 55296, 63488]);
        for quarter in 0..4 {
            let n = eight.iter().filter(|o| *o / GEAR_PAGE == quarter).count();
            assert_eq!(n, 2, "quarter {quarter}");
        }
        assert!(all.iter().all(|o| *o < WASM_PAGE));
        assert_eq!(stratified(1).unwrap(), [0]);
        assert_eq!(stratified(3).unwrap(), [0, 21840, 43680]);
        assert!(stratified(0).is_err());
        // The dense grid of the sweep check holds every point of both designs.
        let dense = grid(1024).unwrap();
        assert_eq!(dense.len(), 64);
        assert!(all.iter().all(|o| dense.contains(o)));
        assert!(offsets(8).unwrap().iter().all(|o| dense.contains(o)));
        assert!(grid(1000).is_err() && grid(0).is_err());
    }
}
