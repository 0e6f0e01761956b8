//! `anatomy.png`: where each variant's change against shipping comes from (docs/ship.md, "Where
//! the gas goes"). Above, every variant of the ship table, in its order, over every program;
//! below, the lab's design on each program. Each bar stacks a variant's parts in points: gains to
//! the left of zero, losses to the right; a diamond marks the change they sum to.

use super::{canvas, draw_err, FONT, W};
use crate::analyse::anatomy::{Part, PARTS};
use crate::analyse::ship::Ship;
use anyhow::Result;
use galloc_variants::{DESIGN, REFERENCE};
use plotters::prelude::*;
use std::path::Path;

/// One colour per part, in [`Part::ALL`]'s order: the page charges in greens and purples, the
/// instructions in reds, code blue, the rest olive.
const PART_COLOURS: [RGBColor; PARTS] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
];

/// Height of one bar's row.
const ROW_H: u32 = 26;
/// Height of the heading (title, key).
const HEAD_H: u32 = 96;
/// Room for a panel's caption and axis.
const PANEL_PAD: u32 = 70;

/// One bar: its label, its parts in points, the change they sum to.
type Bar = (String, [f64; PARTS], f64);

pub fn anatomy(ship: &Ship, path: &Path) -> Result<()> {
    let e = &ship.explained;
    let variants: Vec<Bar> = ship
        .rows
        .iter()
        .filter_map(|r| {
            let p = e.points.get(&r.variant)?;
            Some((r.variant.clone(), p.parts, p.expected_pct))
        })
        .collect();
    let programs: Vec<Bar> = e.points.get(DESIGN).map_or_else(Vec::new, |p| {
        p.programs
            .iter()
            .map(|q| {
                let (parts, change) = q.points();
                (q.program.clone(), parts, change)
            })
            .collect()
    });
    let height = |n: usize| PANEL_PAD + ROW_H * n.max(1) as u32;
    let root = canvas(
        path,
        W,
        HEAD_H + height(variants.len()) + height(programs.len()),
    );
    let (head, body) = root.split_vertically(HEAD_H);
    head.draw(&Text::new(
        format!(
            "Where the gas goes: each variant against {REFERENCE}, by what Gear charges (gtest)"
        ),
        (14, 8),
        (FONT, 19),
    ))
    .map_err(draw_err(path))?;
    head.draw(&Text::new(
        "points: 1 % of shipping's gas at the same deployment, averaged as the ship rule averages; \
         gains left of 0, losses right; ◆ the change the parts sum to",
        (14, 34),
        (FONT, 14),
    ))
    .map_err(draw_err(path))?;
    let mut x = 14;
    for (part, c) in Part::ALL.iter().zip(PART_COLOURS) {
        head.draw(&Rectangle::new([(x, 62), (x + 14, 76)], c.filled()))
            .map_err(draw_err(path))?;
        head.draw(&Text::new(part.name(), (x + 18, 62), (FONT, 13)))
            .map_err(draw_err(path))?;
        x += 28 + 6 * part.name().chars().count() as i32;
    }
    let (top, bottom) = body.split_vertically(height(variants.len()));
    panel(
        &top,
        path,
        &format!("every variant over all {} programs", ship.programs.len()),
        &variants,
    )?;
    panel(
        &bottom,
        path,
        &format!("{DESIGN} (the lab's design) on each program"),
        &programs,
    )
}

/// One panel of horizontal stacked bars.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    path: &Path,
    caption: &str,
    bars: &[Bar],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    // The axis spans every bar's gains and losses, with room on either side.
    let (mut lo, mut hi) = (-1.0f64, 1.0f64);
    for (_, parts, _) in bars {
        let gains: f64 = parts.iter().filter(|p| **p < 0.0).sum();
        let losses: f64 = parts.iter().filter(|p| **p > 0.0).sum();
        lo = lo.min(gains);
        hi = hi.max(losses);
    }
    let span = hi - lo;
    let (lo, hi) = (lo - 0.05 * span, hi + 0.05 * span);
    let n = bars.len().max(1) as u32;
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 15))
        .margin(8)
        .x_label_area_size(24)
        .y_label_area_size(150)
        .build_cartesian_2d(lo..hi, (0..n).into_segmented())
        .map_err(draw_err(path))?;
    // Row `i` from the top holds bar `i`.
    let label = |v: &SegmentValue<u32>| match v {
        SegmentValue::CenterOf(y) if *y < n => bars
            .get((n - 1 - y) as usize)
            .map(|b| b.0.clone())
            .unwrap_or_default(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(bars.len().max(1))
        .y_label_formatter(&label)
        .x_label_formatter(&|x| {
            if x.abs() < 1e-9 {
                "0".to_owned()
            } else {
                format!("{x:+.0}")
            }
        })
        .label_style((FONT, 12))
        .draw()
        .map_err(draw_err(path))?;
    let at = |row: u32, fraction: f64| -> (f64, SegmentValue<u32>) {
        // Plotters places a segment's points at its start: a fraction of the row is drawn as
        // the row's start or the next one's, the bar between them.
        (fraction, SegmentValue::Exact(row))
    };
    for (i, (_, parts, change)) in bars.iter().enumerate() {
        let row = n - 1 - i as u32;
        let (mut left, mut right) = (0.0, 0.0);
        for (part, c) in parts.iter().zip(PART_COLOURS) {
            let (from, to) = if *part < 0.0 {
                let from = left;
                left += part;
                (left, from)
            } else {
                let from = right;
                right += part;
                (from, right)
            };
            if to > from {
                let (bottom, top) = (at(row, from), at(row + 1, to));
                chart
                    .draw_series(std::iter::once(Rectangle::new([bottom, top], c.filled())))
                    .map_err(draw_err(path))?;
            }
        }
        let centre = SegmentValue::CenterOf(row);
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((*change, centre))
                    + Polygon::new(vec![(-5, 0), (0, -8), (5, 0), (0, 8)], BLACK.filled()),
            ))
            .map_err(draw_err(path))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::anatomy::{Explained, Points, ProgramPoints};
    use crate::analyse::ship::tests::{layout_row, second_row};
    use crate::analyse::ship::{judge, RULE};
    use std::collections::BTreeMap;

    /// Two made-up programs and two variants with parts of both signs: the chart draws (into
    /// the system's temporary directory, where it can be looked at: `galloc-lab-anatomy.png`).
    #[test]
    fn draws_every_variant_and_the_design_per_program() {
        let (mut l, mut s) = (Vec::new(), Vec::new());
        for case in ["a", "b"] {
            for (v, total) in [("shipping", 1000), ("lab", 960), ("talc", 990)] {
                for offset in [0, 4096] {
                    l.push(layout_row(case, v, offset, total));
                    s.push(second_row(case, v, offset, total));
                }
            }
        }
        let programs = ["a", "b"];
        let mut ship = judge(
            RULE,
            "gtest",
            &programs,
            &programs,
            &l,
            &s,
            &BTreeMap::new(),
        )
        .unwrap();
        let logs = [-0.6, 0.1, 0.0, -0.9, 1.6, -3.4, -0.2, 0.0, 0.0];
        let program = |p: &str, scale: f64| ProgramPoints {
            program: p.into(),
            deployments: 2,
            logs: logs.map(|x| x * scale),
        };
        let points = |scale: f64| Points {
            parts: logs.map(|x| x * scale),
            expected_pct: logs.iter().sum::<f64>() * scale,
            deployments: 4,
            programs: vec![program("a", scale), program("b", 2.0 * scale)],
        };
        ship.explained = Explained {
            points: [
                ("lab".to_owned(), points(1.0)),
                ("talc".to_owned(), points(0.3)),
            ]
            .into(),
            limits: None,
            designs: Vec::new(),
            anatomy: Default::default(),
        };
        super::super::load_font().unwrap();
        let path = std::env::temp_dir().join("galloc-lab-anatomy.png");
        // An earlier run's chart must not pass for this one's.
        let _ = std::fs::remove_file(&path);
        anatomy(&ship, &path).unwrap();
        let png = std::fs::read(&path).unwrap();
        // A PNG, as wide as every chart.
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), W);
    }
}
