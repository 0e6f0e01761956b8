//! The charts of the verdicts: the headline (every variant on the decision metric, with its
//! pages and code beside it), the layout ranges per case, and the design against its target.
//! Rows are in the order of the tables they illustrate, and colours say the verdict.

use super::{canvas, draw_err, row_label, unit_of, FONT, W};
use crate::analyse::layout::{self, Verdict};
use crate::analyse::ship::Ship;
use crate::report::inputs::Inputs;
use crate::report::verdicts::Matrix;
use anyhow::Result;
use galloc_variants::REFERENCE;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// A verdict's colour: the same in every verdict chart and in its key.
pub fn verdict_colour(v: Verdict) -> RGBColor {
    match v {
        Verdict::Cheaper => RGBColor(0, 136, 86),
        Verdict::Dearer => RGBColor(190, 0, 50),
        Verdict::Same => RGBColor(0, 103, 165),
        _ => RGBColor(150, 150, 150),
    }
}

const VERDICTS: [Verdict; 4] = [
    Verdict::Cheaper,
    Verdict::Same,
    Verdict::Uncertain,
    Verdict::Dearer,
];

/// Draws a key of `(swatch, label)` in one row at `(x, y)` of `area`.
pub(super) fn key(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    path: &Path,
    (mut x, y): (i32, i32),
    items: &[(RGBColor, String)],
) -> Result<()> {
    for (c, label) in items {
        area.draw(&Rectangle::new([(x, y), (x + 14, y + 14)], c.filled()))
            .map_err(draw_err(path))?;
        area.draw(&Text::new(label.clone(), (x + 20, y - 1), (FONT, 16)))
            .map_err(draw_err(path))?;
        x += 34 + 9 * label.chars().count() as i32;
    }
    Ok(())
}

/// The zero line down a horizontal chart of `n` rows (rows at whole `y`, top row `n - 1`).
pub(super) fn zero_line(n: usize) -> PathElement<(f64, f64)> {
    PathElement::new([(0.0, -0.5), (0.0, n as f64 - 0.5)], BLACK.stroke_width(1))
}

pub(super) fn verdict_key() -> Vec<(RGBColor, String)> {
    VERDICTS
        .iter()
        .map(|v| (verdict_colour(*v), v.name().to_owned()))
        .collect()
}

/// `headline.png`: the verdict, the decision metric and what it is made of. Under the title,
/// what galloc should ship (the ship rule over every program, where it was judged). Left, per
/// variant (the matrix's rows, best geometric mean first), a dot per case at its mean total
/// against shipping over the heap layouts (the rule's statistic), coloured by its verdict, a ring on the case it is
/// recommended for, and a bar at the geometric mean over the cases; beside it, as
/// mimalloc-bench puts memory beside time, the pages the variant's messages touched (the fuel
/// meter's count, at the linker's layout) and its allocator's code bytes, each against
/// shipping.
pub fn headline(inputs: &Inputs, ship: Option<&Ship>, path: &Path) -> Result<()> {
    let Some(m) = Matrix::of(inputs) else {
        return Ok(());
    };
    let backend = m.backend();
    let unit = unit_of(&inputs.totals, backend);
    let n = m.rows.len();
    let root = canvas(path, W, n as u32 * 30 + 218);
    let (top, body) = root.split_vertically(112);
    top.draw(&Text::new(
        format!(
            "Every variant against {REFERENCE} on the {} cases: {unit} on {backend}, and what it is made of",
            m.cases.len()
        ),
        (14, 10),
        (FONT, 22),
    ))
    .map_err(draw_err(path))?;
    // The verdict these dots are the evidence for, where it was judged (`results/`).
    if let Some(ship) = ship {
        let text = if ship.named == REFERENCE {
            format!(
                "What galloc should ship: {REFERENCE}. The ship rule, over all {} programs at every \
                 layout, admits no variant",
                ship.programs.len()
            )
        } else {
            format!(
                "What galloc should ship: {}, the variant the ship rule names over all {} \
                 programs at every layout",
                ship.named,
                ship.programs.len()
            )
        };
        top.draw(&Text::new(text, (14, 40), (FONT, 17)))
            .map_err(draw_err(path))?;
    }
    let mut items = verdict_key();
    items.push((
        BLACK,
        format!("geomean of the {} cases' means", m.cases.len()),
    ));
    key(&top, path, (14, 74), &items)?;
    top.draw(&Circle::new((W as i32 - 150, 81), 7, BLACK.stroke_width(2)))
        .map_err(draw_err(path))?;
    top.draw(&Text::new("recommended", (W as i32 - 138, 72), (FONT, 16)))
        .map_err(draw_err(path))?;
    let (left, right) = body.split_horizontally(W * 58 / 100);
    let (pages_area, code_area) = right.split_horizontally(W * 21 / 100);

    // Left: the decision metric.
    let means: Vec<f64> = m
        .rows
        .iter()
        .flat_map(|(v, _)| m.cases.iter().filter_map(|c| m.cell(c, v)).map(|c| c.0))
        .collect();
    let (lo, hi) = means
        .iter()
        .fold((0f64, 0f64), |(a, b), x| (a.min(*x), b.max(*x)));
    let pad = ((hi - lo) * 0.05).max(0.5);
    let names: Vec<&str> = m.rows.iter().map(|(v, _)| *v).collect();
    let mut chart = rows_panel(
        &left,
        path,
        &names,
        (lo - pad)..(hi + pad),
        &format!("{unit} vs {REFERENCE}, per case: mean over the layouts"),
    )?;
    for (i, (variant, geomean)) in m.rows.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        chart
            .draw_series([Rectangle::new(
                [
                    (*geomean - (hi - lo) * 0.003, y - 0.38),
                    (*geomean + (hi - lo) * 0.003, y + 0.38),
                ],
                BLACK.filled(),
            )])
            .map_err(draw_err(path))?;
        for (case, pick) in m.cases.iter().zip(&m.picks) {
            let Some((mean, verdict)) = m.cell(case, variant) else {
                continue;
            };
            chart
                .draw_series([Circle::new(
                    (mean, y),
                    5,
                    verdict_colour(verdict).mix(0.85).filled(),
                )])
                .map_err(draw_err(path))?;
            if pick == variant {
                chart
                    .draw_series([Circle::new((mean, y), 9, BLACK.stroke_width(2))])
                    .map_err(draw_err(path))?;
            }
        }
    }

    // Right: pages (wasmtime's count at the linker's layout, summed over the cases) and code.
    let pages_of = |variant: &str| -> Option<u64> {
        let rows: Vec<u64> = m
            .cases
            .iter()
            .filter_map(|c| inputs.pages_touched(c, variant))
            .collect();
        (rows.len() == m.cases.len()).then(|| rows.iter().sum())
    };
    let pages: Vec<Option<f64>> = m
        .rows
        .iter()
        .map(|(v, _)| {
            let (mine, base) = (pages_of(v)?, pages_of(REFERENCE)?);
            (base > 0).then(|| 100.0 * (mine as f64 / base as f64 - 1.0))
        })
        .collect();
    bars(
        &pages_area,
        path,
        &pages,
        "pages touched (fuel meter)",
        &|x: &f64| format!("{x:+.0}%"),
        n,
    )?;
    let code_of = |variant: &str| inputs.allocator_code.get(variant).copied();
    let code: Vec<Option<f64>> = m
        .rows
        .iter()
        .map(|(v, _)| Some(code_of(v)? as f64 - code_of(REFERENCE)? as f64))
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

/// A headline's left panel: one row per name (the first at the top) over a percent axis
/// spanning `x`, with the zero line drawn.
pub(super) fn rows_panel<'a, 'b>(
    area: &'a DrawingArea<BitMapBackend<'b>, Shift>,
    path: &Path,
    names: &[&str],
    x: std::ops::Range<f64>,
    x_desc: &str,
) -> Result<
    ChartContext<
        'a,
        BitMapBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
> {
    let n = names.len();
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .x_label_area_size(52)
        .y_label_area_size(136)
        .build_cartesian_2d(x, -0.5f64..n as f64 - 0.5)
        .map_err(draw_err(path))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n * 2 + 1)
        .y_label_formatter(&|y| row_label(names, *y))
        .x_label_formatter(&|x| format!("{x:+.0}%"))
        .x_desc(x_desc)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(draw_err(path))?;
    chart.draw_series([zero_line(n)]).map_err(draw_err(path))?;
    Ok(chart)
}

/// A narrow panel of one horizontal bar per row (top row first) from zero, its value written
/// at its end; rows without a value are left empty.
pub(super) fn bars(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    path: &Path,
    values: &[Option<f64>],
    desc: &str,
    label: &dyn Fn(&f64) -> String,
    n: usize,
) -> Result<()> {
    let (lo, hi) = values
        .iter()
        .flatten()
        .fold((0f64, 0f64), |(a, b), x| (a.min(*x), b.max(*x)));
    let pad = ((hi - lo) * 0.12).max(1.0);
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .x_label_area_size(52)
        .y_label_area_size(4)
        .build_cartesian_2d((lo - pad)..(hi + pad), -0.5f64..n as f64 - 0.5)
        .map_err(draw_err(path))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(6)
        .x_label_formatter(label)
        .x_desc(desc)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(draw_err(path))?;
    chart.draw_series([zero_line(n)]).map_err(draw_err(path))?;
    for (i, v) in values.iter().enumerate() {
        let Some(v) = v else { continue };
        let y = (n - 1 - i) as f64;
        let c = if *v <= 0.0 {
            verdict_colour(Verdict::Cheaper)
        } else {
            verdict_colour(Verdict::Dearer)
        };
        chart
            .draw_series([Rectangle::new(
                [(0.0, y - 0.3), (*v, y + 0.3)],
                c.mix(0.7).filled(),
            )])
            .map_err(draw_err(path))?;
    }
    Ok(())
}

/// `layout-ranges.png`: one panel per case, its rows sorted as its page's table (by median);
/// per variant a bar from its lowest to its highest difference to shipping across the layouts
/// in its verdict's colour, a dot at the median, and the zero line. A bar that crosses zero is
/// a comparison the layout decides. Each panel has its own scale, labelled.
pub fn layout_ranges(inputs: &Inputs, backend: &str, path: &Path) -> Result<()> {
    let summaries = layout::summarise(&inputs.layouts);
    let cases = super::cases(&inputs.totals);
    let variants = super::ordered(
        inputs
            .layouts
            .iter()
            .filter(|r| r.backend == backend && r.variant != layout::SHIPPING)
            .map(|r| r.variant.as_str()),
    );
    let unit = unit_of(&inputs.totals, backend);
    let cols = 2usize;
    let rows = cases.len().div_ceil(cols).max(1);
    let panel_h = variants.len() as u32 * 24 + 110;
    let root = canvas(path, W, panel_h * rows as u32 + 96);
    let (title, body) = root.split_vertically(96);
    title
        .draw(&Text::new(
            format!(
                "{unit} against shipping at the same heap layout, on each of the {} cases \
                 ({backend})",
                cases.len()
            ),
            (14, 10),
            (FONT, 19),
        ))
        .map_err(draw_err(path))?;
    title
        .draw(&Text::new(
            format!(
                "lowest … highest over the layouts, dot at the median; shaded, the ±{}% minimum \
                 effect a verdict must clear at every layout",
                layout::BAND_PCT
            ),
            (14, 38),
            (FONT, 15),
        ))
        .map_err(draw_err(path))?;
    key(&title, path, (14, 66), &verdict_key())?;
    let panels = body.split_evenly((rows, cols));
    for (case, area) in cases.iter().zip(panels.iter()) {
        let mut ranges: Vec<(&str, (f64, f64, f64), Verdict)> = variants
            .iter()
            .filter_map(|v| {
                let s = summaries.get(&(backend.to_owned(), case.clone(), v.id.to_owned()))?;
                s.vs_shipping
                    .map(|(m, lo, hi)| (v.id, (lo, m, hi), s.verdict))
            })
            .collect();
        if ranges.is_empty() {
            continue;
        }
        ranges.sort_by(|a, b| a.1 .1.total_cmp(&b.1 .1).then(a.0.cmp(b.0)));
        // The band is always in view: whether a bar leaves it is the verdict.
        let band = layout::BAND_PCT;
        let (lo, hi) = ranges
            .iter()
            .fold((-band, band), |(a, b), (_, (l, _, h), _)| {
                (a.min(*l), b.max(*h))
            });
        let pad = ((hi - lo) * 0.08).max(0.5);
        let n = ranges.len();
        let mut chart = ChartBuilder::on(area)
            .caption(case, (FONT, 18))
            .margin(8)
            .x_label_area_size(46)
            .y_label_area_size(128)
            .build_cartesian_2d((lo - pad)..(hi + pad), -0.5f64..n as f64 - 0.5)
            .map_err(draw_err(path))?;
        let names: Vec<&str> = ranges.iter().map(|(v, _, _)| *v).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| row_label(&names, *y))
            .x_labels(6)
            // Whole percents unless the panel spans only a few: then tenths, or the labels repeat.
            .x_label_formatter(&|x| {
                if hi - lo < 4.0 {
                    format!("{x:+.1}%")
                } else {
                    format!("{x:+.0}%")
                }
            })
            .x_desc(format!("{unit} vs shipping"))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(draw_err(path))?;
        chart
            .draw_series([Rectangle::new(
                [(-band, -0.5), (band, n as f64 - 0.5)],
                RGBColor(0, 0, 0).mix(0.07).filled(),
            )])
            .map_err(draw_err(path))?;
        chart.draw_series([zero_line(n)]).map_err(draw_err(path))?;
        for (i, (_, (l, m, h), verdict)) in ranges.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            chart
                .draw_series([Rectangle::new(
                    [(*l, y - 0.3), (*h, y + 0.3)],
                    verdict_colour(*verdict).mix(0.75).filled(),
                )])
                .map_err(draw_err(path))?;
            chart
                .draw_series([Circle::new((*m, y), 4, BLACK.filled())])
                .map_err(draw_err(path))?;
        }
    }
    root.present().map_err(draw_err(path))?;
    Ok(())
}

/// `design.png`: one row per case and one for the geometric mean over them; a bar to the
/// design's mean difference to shipping over the layouts (lighter on the cases held out), a
/// line over its 95 % interval (the rule's statistic, as the table beside it); a key says which
/// is which. The design target is the ship table's (over
/// every deployment), not a line here.
pub fn design(inputs: &Inputs, path: &Path) -> Result<()> {
    let Some((backend, st)) = crate::report::verdicts::standing(inputs) else {
        return Ok(());
    };
    let designed = super::colour(st.variant)?;
    let RGBColor(r, g, b) = designed;
    let light = |v: u8| v + ((255 - v) as f64 * 0.6) as u8;
    let held_out = RGBColor(light(r), light(g), light(b));
    let mean = RGBColor(0, 120, 60);
    // (label, 95 % interval, mean, colour); the geometric mean has no interval drawn.
    type Bar = (String, Option<(f64, f64)>, f64, RGBColor);
    let mut rows: Vec<Bar> = st
        .cases
        .iter()
        .map(|c| {
            let colour = if c.held_out { held_out } else { designed };
            (c.case.clone(), Some(c.interval), c.mean, colour)
        })
        .collect();
    let cases = st.cases.len();
    rows.push((
        format!("geometric mean, {cases} cases"),
        None,
        st.geomean_pct,
        mean,
    ));
    let (lo, hi) = rows.iter().fold((0f64, 0f64), |(a, b), (_, r, m, _)| {
        let (l, h) = r.unwrap_or((*m, *m));
        (a.min(l).min(*m), b.max(h).max(*m))
    });
    let pad = ((hi - lo) * 0.1).max(0.5);
    let n = rows.len();
    let unit = unit_of(&inputs.totals, &backend);
    let root = canvas(path, W, n as u32 * 34 + 170);
    let (top, body) = root.split_vertically(80);
    top.draw(&Text::new(
        format!(
            "{} against shipping on the {cases} {} ({backend} {unit}, mean over the layouts)",
            st.variant,
            crate::report::verdicts::set_name(&st),
        ),
        (14, 10),
        (FONT, 20),
    ))
    .map_err(draw_err(path))?;
    key(
        &top,
        path,
        (14, 46),
        &[
            (designed, "mean, designed on".into()),
            (held_out, "mean, held out".into()),
            (mean, format!("geometric mean of the {cases} means")),
            (BLACK, "95 % interval".into()),
        ],
    )?;
    let mut chart = ChartBuilder::on(&body)
        .margin(10)
        .x_label_area_size(46)
        .y_label_area_size(190)
        .build_cartesian_2d((lo - pad)..(hi + pad), -0.5f64..n as f64 - 0.5)
        .map_err(draw_err(path))?;
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n * 2 + 1)
        .y_label_formatter(&|y| row_label(&names, *y))
        .x_label_formatter(&|x| format!("{x:+.0}%"))
        .x_desc(format!("{unit} against shipping at the same layout"))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 15))
        .draw()
        .map_err(draw_err(path))?;
    let column =
        |x: f64, style: ShapeStyle| PathElement::new([(x, -0.5), (x, n as f64 - 0.5)], style);
    chart
        .draw_series([column(0.0, BLACK.stroke_width(1))])
        .map_err(draw_err(path))?;
    for (i, (_, range, m, c)) in rows.iter().enumerate() {
        let y = (n - 1 - i) as f64;
        chart
            .draw_series([Rectangle::new([(0.0, y - 0.3), (*m, y + 0.3)], c.filled())])
            .map_err(draw_err(path))?;
        if let Some((l, h)) = range {
            chart
                .draw_series([PathElement::new([(*l, y), (*h, y)], BLACK.stroke_width(2))])
                .map_err(draw_err(path))?;
        }
        chart
            .draw_series([Text::new(
                format!("{m:+.2}%"),
                (hi + pad * 0.05, y + 0.15),
                (FONT, 14),
            )])
            .map_err(draw_err(path))?;
    }
    root.present().map_err(draw_err(path))
}
