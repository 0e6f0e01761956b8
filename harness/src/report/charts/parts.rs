//! The drawing parts every chart is made of: a white canvas, grouped bars, a colour key above
//! the plot, and the short labels on axes and bars. Kept apart from `mod.rs`, which decides
//! which charts a report gets, so a chart's look changes in one place.

use super::{colour, FONT};
use anyhow::{anyhow, Result};
use galloc_variants::Variant;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Short numbers for axes and bar labels: 1.5G, 320M, 426k (at most 4 digits).
pub(crate) fn short(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e12 {
        (v / 1e12, "T")
    } else if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    if scaled.fract() == 0.0 || scaled.abs() >= 100.0 {
        format!("{scaled:.0}{suffix}")
    } else {
        format!("{scaled:.1}{suffix}")
    }
}

/// The label of a horizontal chart's row at `y`: rows are drawn top down at whole `y`, the
/// first name at the top; between rows, nothing.
pub(crate) fn row_label(names: &[&str], y: f64) -> String {
    let (n, i) = (names.len(), y.round());
    if (y - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
        names[n - 1 - i as usize].to_owned()
    } else {
        String::new()
    }
}

pub(crate) fn draw_err<E: std::fmt::Debug>(path: &Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow!("drawing {}: {e:?}", path.display())
}

pub(crate) fn canvas(
    path: &Path,
    width: u32,
    height: u32,
) -> DrawingArea<BitMapBackend<'_>, Shift> {
    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).ok();
    root
}

/// Grouped bars: one group per category, one bar per series in it; `values[g][s]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn grouped_bars(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    path: &Path,
    title: Option<&str>,
    y_desc: &str,
    groups: &[String],
    series: &[&'static Variant],
    values: &[Vec<Option<f64>>],
    value_label: impl Fn(f64) -> String,
) -> Result<()> {
    let max = values
        .iter()
        .flatten()
        .flatten()
        .fold(0f64, |a, &b| a.max(b));
    let top = if max > 0.0 { max * 1.15 } else { 1.0 };
    let n = series.len().max(1) as f64;
    let mut builder = ChartBuilder::on(area);
    if let Some(title) = title {
        builder.caption(title, (FONT, 24));
    }
    let mut chart = builder
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5f64..groups.len() as f64 - 0.5, 0f64..top)
        .map_err(draw_err(path))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < groups.len() {
                groups[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| short(*y))
        .y_desc(y_desc)
        .label_style((FONT, 18))
        .axis_desc_style((FONT, 20))
        .draw()
        .map_err(draw_err(path))?;
    let width = 0.8 / n;
    for (s, variant) in series.iter().enumerate() {
        let c = colour(variant.id)?;
        let bars: Vec<(f64, f64)> = values
            .iter()
            .enumerate()
            .filter_map(|(g, row)| row[s].map(|v| (g as f64 - 0.4 + width * s as f64, v)))
            .collect();
        chart
            .draw_series(bars.iter().map(|&(x, v)| {
                Rectangle::new([(x + width * 0.05, 0.0), (x + width * 0.95, v)], c.filled())
            }))
            .map_err(draw_err(path))?;
        // Value labels only where a bar is wide enough to hold one.
        let bar_px = area.dim_in_pixel().0 as usize / (series.len() * groups.len()).max(1);
        if bar_px >= 34 {
            chart
                .draw_series(bars.iter().map(|&(x, v)| {
                    Text::new(
                        value_label(v),
                        (x + width * 0.5, v),
                        (FONT, 13).into_font().color(&BLACK).pos(
                            plotters::style::text_anchor::Pos::new(
                                plotters::style::text_anchor::HPos::Center,
                                plotters::style::text_anchor::VPos::Bottom,
                            ),
                        ),
                    )
                }))
                .map_err(draw_err(path))?;
        }
    }
    Ok(())
}

/// Pixels from the left edge where each key of `variants` starts, and its row, wrapping at
/// `width`: every variant gets a key, however many there are.
fn key_layout<'a>(variants: &[&'a Variant], width: i32) -> Vec<(&'a Variant, i32, i32)> {
    let (mut x, mut row) = (20, 0);
    let mut keys = Vec::new();
    for v in variants {
        // A 16 px swatch, a gap, about 10 px per character of the id at 18 px, and a space.
        let w = 40 + 10 * v.id.len() as i32;
        if x + w > width - 10 && x > 20 {
            (x, row) = (20, row + 1);
        }
        keys.push((*v, x, row));
        x += w;
    }
    keys
}

/// Draws `title` and a colour key for `variants` across the top of `root`, and returns the
/// area below it for the plot: the key sits above the data, never over it.
pub(crate) fn header<'a, 'b>(
    root: &DrawingArea<BitMapBackend<'a>, Shift>,
    path: &Path,
    title: &str,
    variants: impl IntoIterator<Item = &'b Variant>,
) -> Result<DrawingArea<BitMapBackend<'a>, Shift>> {
    const TITLE: i32 = 46;
    const ROW: i32 = 26;
    let variants: Vec<&Variant> = variants.into_iter().collect();
    let keys = key_layout(&variants, root.dim_in_pixel().0 as i32);
    let rows = keys.iter().map(|(_, _, r)| r + 1).max().unwrap_or(0);
    let (top, body) = root.split_vertically(TITLE + rows * ROW + 8);
    // A long title (a long case name and a legend) is set smaller, so it fits the width.
    let size = if title.chars().count() > 84 { 19 } else { 22 };
    top.draw(&Text::new(title.to_string(), (20, 12), (FONT, size)))
        .map_err(draw_err(path))?;
    for (v, x, row) in keys {
        let y = TITLE + row * ROW;
        let c = colour(v.id)?;
        top.draw(&Rectangle::new([(x, y), (x + 16, y + 16)], c.filled()))
            .map_err(draw_err(path))?;
        top.draw(&Text::new(v.id, (x + 22, y), (FONT, 18)))
            .map_err(draw_err(path))?;
    }
    Ok(body)
}

pub(crate) fn counts_label(counts: &[usize]) -> String {
    let (lo, hi) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}–{hi}")
    }
}
