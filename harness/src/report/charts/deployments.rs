//! `layouts.png`: where a program's heap starts, drawn. Per program of the ship verdict (small
//! multiples, the widest spread first), shipping's and the lab's design's gas at every heap
//! layout of the sweep, in percent above shipping's cheapest layout on that program: one shared
//! y axis, so a tall panel is a program whose layout matters.

use super::{canvas, colour, draw_err, FONT, W};
use crate::analyse::population::spread_pct;
use crate::analyse::ship::Ship;
use anyhow::Result;
use galloc_variants::{DESIGN, REFERENCE};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Panels across.
const COLS: usize = 3;
/// Height of one panel.
const PANEL_H: u32 = 150;
/// Height of the heading (title, key).
const HEAD_H: u32 = 84;

/// A program's panel: its id, shipping's and the design's totals by offset, shipping's spread.
struct Panel<'a> {
    program: &'a str,
    shipping: &'a BTreeMap<u32, u64>,
    design: &'a BTreeMap<u32, u64>,
    spread: f64,
}

/// (offset in KiB, percent) points of one line.
type Line = Vec<(f64, f64)>;

/// Points in percent above `floor`, by offset in KiB.
fn above(totals: &BTreeMap<u32, u64>, floor: u64) -> Line {
    totals
        .iter()
        .map(|(o, t)| {
            (
                f64::from(*o) / 1024.0,
                100.0 * (*t as f64 / floor as f64 - 1.0),
            )
        })
        .collect()
}

pub fn layouts(ship: &Ship, path: &Path) -> Result<()> {
    // Per program: shipping's and the design's totals, and shipping's spread.
    let mut programs: Vec<Panel> = ship
        .programs
        .iter()
        .map(|p| {
            let shipping = ship.sweep.of_variant(p, REFERENCE);
            Panel {
                program: p.as_str(),
                spread: spread_pct(shipping.values().copied()),
                design: ship.sweep.of_variant(p, DESIGN),
                shipping,
            }
        })
        .filter(|p| !p.shipping.is_empty())
        .collect();
    programs.sort_by(|a, b| b.spread.total_cmp(&a.spread).then(a.program.cmp(b.program)));
    let series: Vec<(Line, Line)> = programs
        .iter()
        .map(|p| {
            let floor = *p.shipping.values().min().expect("not empty");
            (above(p.shipping, floor), above(p.design, floor))
        })
        .collect();
    let top = series
        .iter()
        .flat_map(|(s, d)| s.iter().chain(d))
        .fold(0f64, |m, (_, y)| m.max(*y));
    let bottom = series
        .iter()
        .flat_map(|(s, d)| s.iter().chain(d))
        .fold(0f64, |m, (_, y)| m.min(*y));
    let (y0, y1) = ((bottom - 2.0).floor(), (top + 3.0).ceil());
    let x1 = series
        .iter()
        .flat_map(|(s, d)| s.iter().chain(d))
        .fold(0f64, |m, (x, _)| m.max(*x))
        .max(1.0);
    let rows = programs.len().div_ceil(COLS).max(1);
    let root = canvas(path, W, HEAD_H + PANEL_H * rows as u32);
    let (head, body) = root.split_vertically(HEAD_H);
    head.draw(&Text::new(
        format!(
            "Where the heap starts: gas (gtest) at each heap layout, % above {REFERENCE}'s cheapest \
             layout on the program"
        ),
        (14, 8),
        (FONT, 19),
    ))
    .map_err(draw_err(path))?;
    head.draw(&Text::new(
        format!(
            "{} programs, widest {REFERENCE} spread first (median {:.1} %); each panel: program: \
             {REFERENCE}'s spread / {DESIGN}'s; x: KiB the static data was moved up",
            programs.len(),
            ship.reference_spread_pct()
        ),
        (14, 34),
        (FONT, 15),
    ))
    .map_err(draw_err(path))?;
    let mut x = 14;
    for (variant, label) in [
        (REFERENCE, REFERENCE.to_owned()),
        (DESIGN, format!("{DESIGN} (the lab's design)")),
    ] {
        let c = colour(variant)?;
        head.draw(&PathElement::new(
            [(x, 66), (x + 24, 66)],
            c.stroke_width(3),
        ))
        .map_err(draw_err(path))?;
        head.draw(&Text::new(label.clone(), (x + 30, 58), (FONT, 15)))
            .map_err(draw_err(path))?;
        x += 60 + 8 * label.chars().count() as i32;
    }
    let panels = body.split_evenly((rows, COLS));
    for (panel, ((s, d), area)) in programs.iter().zip(series.iter().zip(panels.iter())) {
        let (program, spread) = (panel.program, panel.spread);
        let design_spread = spread_pct(panel.design.values().copied());
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{program}: {spread:.1} % / {DESIGN} {design_spread:.1} %"),
                (FONT, 14),
            )
            .margin(6)
            .x_label_area_size(18)
            .y_label_area_size(34)
            .build_cartesian_2d(0f64..x1, y0..y1)
            .map_err(draw_err(path))?;
        chart
            .configure_mesh()
            .x_labels(5)
            .y_labels(4)
            .light_line_style(WHITE)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}%"))
            .label_style((FONT, 11))
            .draw()
            .map_err(draw_err(path))?;
        for (points, variant) in [(s, REFERENCE), (d, DESIGN)] {
            let c = colour(variant)?;
            chart
                .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
                .map_err(draw_err(path))?;
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 2, c.filled())))
                .map_err(draw_err(path))?;
        }
    }
    Ok(())
}
