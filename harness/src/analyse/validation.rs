//! The probe validation: the probe build's cost minus its twin's, message by message, is a
//! constant per message plus a constant per call of each op (the counter reads and nothing
//! else). Fitted once per build over all its cases ([`crate::analyse::fit::exact_fit`]), then
//! each case's messages are held to the fit: how many it matches to the unit.

use crate::analyse::fit::exact_fit;
use crate::results::{round, ProbeDifferences, ValidationRow};
use galloc::probe::Op;

/// One message's allocator calls per op and the probe build's cost minus its twin's.
type Difference = ([i64; 4], i64);

/// Fits `probe - twin = per_message + sum over ops of per_op[op] * calls[op]` once for a
/// build (the constants belong to the code, not to a case), over the messages after `init`
/// of every case run on it (`init` also pays the probe's one-time calibration), then gives
/// each case's row: how many of its messages the fit matches to the unit.
///
/// `stored`: the overheads already fitted for this build over more cases than `runs` holds
/// (a partial rerun); they are used as they are, so a rerun of one case that measures what it
/// measured before writes the very row it wrote before.
pub fn validate(
    variant: &str,
    runs: &[ProbeDifferences],
    stored: Option<Overheads>,
) -> Vec<ValidationRow> {
    // Every message but the one that calibrates: the first with an allocator call (`init` in
    // most programs, the first message where `init` allocates nothing), which also pays the
    // probe's one-time calibration.
    let others = |points: &[Option<Difference>]| -> Vec<Difference> {
        let at = calibrating(points);
        points
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != at)
            .filter_map(|(_, p)| *p)
            .collect()
    };
    let pooled: Vec<Difference> = runs.iter().flat_map(|r| others(&r.messages)).collect();
    let (per_message, per_op) = stored.unwrap_or_else(|| exact_fit(&pooled));
    let residual = |(calls, diff): &Difference| {
        diff - per_message - (0..4).map(|i| per_op[i] * calls[i]).sum::<i64>()
    };
    runs.iter()
        .map(|r| {
            let points = &r.messages;
            let residuals: Vec<u64> = others(points)
                .iter()
                .map(|p| residual(p).unsigned_abs())
                .collect();
            ValidationRow {
                backend: r.backend.clone(),
                case: r.case.clone(),
                variant: variant.into(),
                unit: r.unit.clone(),
                // The messages compared: a failed one whose calls the backend cannot see
                // is left out.
                messages: points.iter().flatten().count() as u64,
                layout_shift: r.layout_shift,
                overhead_per_message: per_message,
                overhead_malloc: per_op[Op::Malloc as usize],
                overhead_calloc: per_op[Op::Calloc as usize],
                overhead_realloc: per_op[Op::Realloc as usize],
                overhead_free: per_op[Op::Free as usize],
                calibration: points
                    .get(calibrating(points))
                    .copied()
                    .flatten()
                    .map_or(0, |p| residual(&p)),
                exact_messages: residuals.iter().filter(|r| **r == 0).count() as u64,
                max_abs_residual: residuals.iter().copied().max().unwrap_or(0),
                residual_pct: round(
                    100.0 * residuals.iter().sum::<u64>() as f64 / r.twin_total as f64,
                    6,
                ),
            }
        })
        .collect()
}

/// The message that pays the probe's one-time calibration: the first with an allocator call
/// (0, `init`, when there is none).
fn calibrating(points: &[Option<Difference>]) -> usize {
    points
        .iter()
        .position(|p| p.is_some_and(|(calls, _)| calls.iter().any(|c| *c != 0)))
        .unwrap_or(0)
}

/// Whether a build's probe validation holds on a case: the fit matches every message it
/// compares to the unit (all but the one that calibrates). Where it does not, the probe's
/// model of its own cost (a constant per message and per call) does not hold for the program,
/// so what rests on subtracting it (the allocator's share, its cost per call) is not
/// measured and is not shown as measured.
pub fn holds(row: &ValidationRow) -> bool {
    row.exact_messages + 1 >= row.messages
}

/// The probe's fitted overheads for one build: per message, and per call of each op.
pub type Overheads = (i64, [i64; 4]);

/// The overheads a stored validation row was computed with.
pub fn overheads_of(row: &ValidationRow) -> Overheads {
    (
        row.overhead_per_message,
        [
            row.overhead_malloc,
            row.overhead_calloc,
            row.overhead_realloc,
            row.overhead_free,
        ],
    )
}
