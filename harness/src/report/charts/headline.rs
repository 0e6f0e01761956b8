//! `headline.png` where the ship rule judged (`results/`): every variant over the same programs
//! and deployments as the verdict the report opens with, in the rule's own figures. An outside
//! report, which has no ship verdict, keeps the per-case headline (`verdicts::headline`).

use super::verdicts::{bars, key, rows_panel, verdict_colour, verdict_key};
use super::{canvas, draw_err, FONT, W};
use crate::analyse::layout::Verdict;
use crate::analyse::ship::Ship;
use anyhow::Result;
use galloc_variants::REFERENCE;
use plotters::prelude::*;
use std::path::Path;

/// Per variant (the ship table's rows, lowest expected change first): its expected change over
/// every program at every layout with the 95 % interval (the black tick and line), and each
/// program's mean over its layouts as a dot in its word's colour. Beside it, the page charges
/// in points of the change (the anatomy, over the same programs) and the allocator's code bytes,
/// each against shipping.
pub fn over_programs(ship: &Ship, path: &Path) -> Result<()> {
    let n = ship.rows.len();
    let root = canvas(path, W, n as u32 * 30 + 218);
    let (top, body) = root.split_vertically(112);
    top.draw(&Text::new(
        format!(
            "Every variant against {REFERENCE} over the {} programs at every heap layout (gas, gtest)",
            ship.programs.len()
        ),
        (14, 10),
        (FONT, 22),
    ))
    .map_err(draw_err(path))?;
    let named = if ship.named == REFERENCE {
        format!("What galloc should ship: {REFERENCE}; the ship rule admits no variant")
    } else {
        format!(
            "What galloc should ship: {}, the variant the ship rule names (ringed)",
            ship.named
        )
    };
    top.draw(&Text::new(named, (14, 40), (FONT, 17)))
        .map_err(draw_err(path))?;
    let mut items = verdict_key();
    items.push((BLACK, "expected change, 95 % interval".to_owned()));
    key(&top, path, (14, 74), &items)?;
    let (left, right) = body.split_horizontally(W * 58 / 100);
    let (pages_area, code_area) = right.split_horizontally(W * 21 / 100);

    // Each program's mean and its word, as the ship table has them.
    let dots: Vec<Vec<(f64, Verdict)>> = (ship.rows.iter())
        .map(|r| r.programs.iter().map(|p| (p.mean, p.verdict)).collect())
        .collect();
    let (lo, hi) = (dots.iter().flatten().map(|d| d.0))
        .chain(ship.rows.iter().flat_map(|r| {
            let (a, b) = r.all.interval_pct;
            [a, b]
        }))
        .fold((0f64, 0f64), |(a, b), x| (a.min(x), b.max(x)));
    let pad = ((hi - lo) * 0.05).max(0.5);
    let names: Vec<&str> = ship.rows.iter().map(|r| r.variant.as_str()).collect();
    let mut chart = rows_panel(
        &left,
        path,
        &names,
        (lo - pad)..(hi + pad),
        &format!("gas vs {REFERENCE}: each program's mean over the layouts"),
    )?;
    let tick = (hi - lo + 2.0 * pad) * 0.003;
    for (i, (row, dots)) in ship.rows.iter().zip(&dots).enumerate() {
        let y = (n - 1 - i) as f64;
        for &(mean, word) in dots {
            chart
                .draw_series([Circle::new(
                    (mean, y),
                    5,
                    verdict_colour(word).mix(0.85).filled(),
                )])
                .map_err(draw_err(path))?;
        }
        let (a, b) = row.all.interval_pct;
        let e = row.all.expected_pct;
        chart
            .draw_series([
                PathElement::new([(a, y), (b, y)], BLACK.stroke_width(2)),
                PathElement::new([(a, y - 0.2), (a, y + 0.2)], BLACK.stroke_width(2)),
                PathElement::new([(b, y - 0.2), (b, y + 0.2)], BLACK.stroke_width(2)),
            ])
            .map_err(draw_err(path))?;
        chart
            .draw_series([Rectangle::new(
                [(e - tick, y - 0.38), (e + tick, y + 0.38)],
                BLACK.filled(),
            )])
            .map_err(draw_err(path))?;
        if row.variant == ship.named {
            chart
                .draw_series([Circle::new((e, y), 11, BLACK.stroke_width(2))])
                .map_err(draw_err(path))?;
        }
    }

    let pages: Vec<Option<f64>> = (ship.rows.iter())
        .map(|r| ship.explained.points.get(&r.variant).map(|p| p.pages()))
        .collect();
    bars(
        &pages_area,
        path,
        &pages,
        "page charges (points)",
        &|x: &f64| format!("{x:+.0}"),
        n,
    )?;
    let code: Vec<Option<f64>> = (ship.rows.iter())
        .map(|r| Some(r.code_bytes? as f64 - ship.reference_code_bytes? as f64))
        .collect();
    bars(
        &code_area,
        path,
        &code,
        "allocator code bytes",
        &|x: &f64| format!("{x:+.0}"),
        n,
    )?;
    root.present().map_err(draw_err(path))
}
