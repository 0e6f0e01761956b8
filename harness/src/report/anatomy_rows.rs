//! The gas anatomy ([`Anatomy`]) a report, `lab verdict` and `lab pick` explain with: the ship's
//! (the lab's results and the corpus together), else a directory's own, borrowing the price the
//! lab's own results measure for a variant its messages price none of.

use crate::analyse::anatomy::Anatomy;
use crate::analyse::ship::Ship;
use crate::report::inputs::Inputs;
use crate::results::{read_csv, MessageRow};
use crate::run::backend::BackendKind;
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::Path;

/// The anatomy a report explains with: with the ship verdict, the one it was explained with
/// (the lab's results and the corpus together: one price per allocator across the ship table
/// and every case page); else `inputs`' own runs, borrowing the price measured on the lab's
/// results (`lab_results`) for a variant their messages price none of.
pub fn report_anatomy<'a>(
    lab_results: &Path,
    inputs: &Inputs,
    ship: Option<&'a Ship>,
) -> Result<std::borrow::Cow<'a, Anatomy>> {
    use std::borrow::Cow;
    match ship {
        Some(ship) => Ok(Cow::Borrowed(&ship.explained.anatomy)),
        None => {
            let variants: Vec<&str> = inputs.totals.iter().map(|t| t.variant.as_str()).collect();
            anatomy_borrowing(lab_results, inputs, &variants).map(Cow::Owned)
        }
    }
}

/// `inputs`' anatomy; when their messages price none of a variant among `needed`'s calls, the
/// price measured on the lab's own results (`lab_results`) stands in, read only then (a
/// million rows).
pub fn anatomy_borrowing(lab_results: &Path, inputs: &Inputs, needed: &[&str]) -> Result<Anatomy> {
    let own = Anatomy::of(&inputs.layouts, &inputs.messages, &inputs.ops);
    if needed.iter().all(|v| own.prices.allocator.contains_key(*v)) {
        return Ok(own);
    }
    Ok(Anatomy::of_with(
        &inputs.layouts,
        &inputs.messages,
        &inputs.ops,
        &lab_prices(lab_results)?,
    ))
}

/// Each variant's allocator price (gas per unit of fuel: [`Anatomy`]) measured on the lab's
/// own results, `results` and the corpus beside it: what a program whose own messages price
/// none of a variant's calls borrows. Empty where those results hold no messages.
pub fn lab_prices(results: &Path) -> Result<BTreeMap<String, f64>> {
    let mut messages = Vec::new();
    for dir in [
        results.to_path_buf(),
        results.join(crate::results::CORPUS_DIR),
    ] {
        for backend in [BackendKind::Gtest, BackendKind::Wasmtime] {
            let file = dir.join(backend.name()).join("messages.csv.zst");
            if file.exists() {
                messages.extend(read_csv::<MessageRow>(&file)?);
            }
        }
    }
    Ok(Anatomy::of(&[], &messages, &[]).prices.allocator)
}
