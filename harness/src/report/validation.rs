//! The probe validation as the report shows it: per build, the fitted overheads and how many
//! messages they match, and, where it fails, one line saying so and what is therefore not shown
//! as measured (the tables print [`UNVALIDATED`] in place of those figures).

use super::inputs::Inputs;
use super::tables::{thousands, UNVALIDATED};
use std::fmt::Write;

/// One line naming the cases whose probe validation failed (by backend, how many of their
/// builds), and what is therefore not shown as measured; empty when it holds everywhere.
pub fn validation_note(inputs: &Inputs) -> String {
    let mut failed: Vec<(String, String, usize, usize)> = Vec::new();
    for c in &inputs.checks {
        let bad = usize::from(!crate::analyse::validation::holds(c));
        match failed
            .iter_mut()
            .find(|f| (f.0.as_str(), f.1.as_str()) == (c.case.as_str(), c.backend.as_str()))
        {
            Some(f) => {
                f.2 += bad;
                f.3 += 1;
            }
            None => failed.push((c.case.clone(), c.backend.clone(), bad, 1)),
        }
    }
    failed.sort();
    let failed: Vec<String> = failed
        .into_iter()
        .filter(|f| f.2 > 0)
        .map(|(case, backend, bad, all)| format!("`{case}` on {backend} ({bad} of {all} builds)"))
        .collect();
    if failed.is_empty() {
        return String::new();
    }
    format!(
        "**Probe validation failed** for {}: the probe's overhead is not a constant per message \
         and per call there, so the allocator's part of those costs (its share, its cost per \
         call) is not measured and is shown as `{UNVALIDATED}`; totals, pages and verdicts do not \
         rest on the probe and stand (\"Probe validation\" on each case's page).\n\n",
        failed.join(", ")
    )
}

/// The probe validation: per build, the fitted overheads and how many messages they match.
pub fn probe_validation(inputs: &Inputs) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n## Probe validation\n");
    let _ = writeln!(
        out,
        "Per message, the probe build's cost minus the cost of its *twin* (the probe build with \
         a meter that reads nothing: the same statics at the same addresses, so both touch the \
         same pages and hash alike, and the same code around the allocator), fitted as a \
         per-message part plus a part per call of each op (the counter reads). The first \
         message with an allocator call (`init`, unless it allocates nothing) also pays the \
         one-time calibration and is left out of `exact`. `layout shift` is what the probe's statics alone changed \
         (they move the heap base): twin total minus plain total. Each row is in its backend's unit.\n"
    );
    let _ = writeln!(
        out,
        "| backend | case | variant | unit | layout shift | per message | per malloc / calloc / realloc / free | calibration | exact | max residual | residual |"
    );
    let _ = writeln!(
        out,
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for c in &inputs.checks {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} / {} / {} / {} | {} | {}/{} | {} | {:.6}% |",
            c.backend,
            c.case,
            c.variant,
            c.unit,
            c.layout_shift,
            c.overhead_per_message,
            c.overhead_malloc,
            c.overhead_calloc,
            c.overhead_realloc,
            c.overhead_free,
            c.calibration,
            c.exact_messages,
            c.messages - 1,
            thousands(c.max_abs_residual),
            c.residual_pct
        );
    }
    out
}
