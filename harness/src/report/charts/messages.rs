//! The chart of one case's messages: each message's cost over the scenario, and the running
//! total against the reference.

use super::{canvas, colour, draw_err, header, short, FONT, H, W};
use crate::results::MessageRow;
use anyhow::Result;
use galloc_variants::{Variant, REFERENCE, VARIANTS};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// `<case>-messages.png`: above, each message's cost per variant over the scenario; below,
/// the running total against the reference, in percent.
pub fn per_message(
    messages: &[MessageRow],
    case: &str,
    backend: &str,
    shown: &[&str],
    path: &Path,
) -> Result<()> {
    // By registry position: (variant, [(message, cost)]).
    type Series = BTreeMap<usize, (&'static Variant, Vec<(u64, u64)>)>;
    let mut series: Series = BTreeMap::new();
    for m in messages
        .iter()
        .filter(|m| m.case == case && m.backend == backend)
    {
        let Some(i) = VARIANTS.iter().position(|v| v.id == m.variant) else {
            continue;
        };
        series
            .entry(i)
            .or_insert_with(|| (&VARIANTS[i], Vec::new()))
            .1
            .push((m.message, m.cost));
    }
    let unit = messages
        .iter()
        .find(|m| m.case == case && m.backend == backend)
        .map_or("cost", |m| m.unit.as_str());
    let last = series
        .values()
        .flat_map(|(_, p)| p.iter().map(|(i, _)| *i))
        .max()
        .unwrap_or(0) as f64;
    let top = series
        .values()
        .flat_map(|(_, p)| p.iter().map(|(_, c)| *c))
        .max()
        .unwrap_or(1) as f64
        * 1.05;
    let reference: Option<Vec<u64>> = series
        .values()
        .find(|(v, _)| v.id == REFERENCE)
        .map(|(_, p)| running(p));
    let root = canvas(path, W, H + 200);
    let body = header(
        &root,
        path,
        &format!("{case}: {unit} per message at the linker's layout (heap offset 0), {backend}"),
        series.values().map(|(v, _)| *v),
    )?;
    let height = body.dim_in_pixel().1;
    let (upper, lower) = body.split_vertically(height / 2);
    let mut chart = ChartBuilder::on(&upper)
        .caption(
            format!("{unit} per message: {}", shown.join(", ")),
            (FONT, 18),
        )
        .margin(14)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(0u64..last.max(1.0) as u64, 0f64..top)
        .map_err(draw_err(path))?;
    chart
        .configure_mesh()
        .x_desc("message (0 = init)")
        .x_labels(ticks(last))
        .y_desc(format!("{unit} per message"))
        .y_label_formatter(&|y| short(*y))
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(draw_err(path))?;
    // The reference first, underneath: the others' messages show on top of it.
    let mut upper: Vec<&(&Variant, Vec<(u64, u64)>)> = series
        .values()
        .filter(|(v, _)| shown.contains(&v.id))
        .collect();
    upper.sort_by_key(|(v, _)| v.id != REFERENCE);
    for (v, points) in upper {
        let c = colour(v.id)?;
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|&(i, cost)| (i, cost as f64)),
                c.stroke_width(1),
            ))
            .map_err(draw_err(path))?;
    }

    let Some(reference) = reference else {
        return root.present().map_err(draw_err(path));
    };
    let relative: Vec<(&Variant, Vec<(f64, f64)>)> = series
        .values()
        .map(|(v, p)| {
            let totals = running(p);
            let line = totals
                .iter()
                .zip(&reference)
                .enumerate()
                .filter(|(_, (_, r))| **r > 0)
                .map(|(i, (t, r))| (i as f64, (*t as f64 / *r as f64 - 1.0) * 100.0))
                .collect();
            (*v, line)
        })
        .collect();
    let (lo, hi) = running_range(relative.iter().map(|(_, l)| l.as_slice()), last);
    let mut chart = ChartBuilder::on(&lower)
        .caption(
            format!("running total {unit} against {REFERENCE} (%), every variant"),
            (FONT, 18),
        )
        .margin(14)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(0u64..last.max(1.0) as u64, lo..hi)
        .map_err(draw_err(path))?;
    chart
        .configure_mesh()
        .x_desc("message (0 = init)")
        .x_labels(ticks(last))
        .y_desc(format!("total {unit} so far vs {REFERENCE} (%)"))
        .y_label_formatter(&|y| format!("{y:+.1}%"))
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(draw_err(path))?;
    for (v, line) in relative {
        let clipped = line.into_iter().map(|(x, y)| (x as u64, y.clamp(lo, hi)));
        let width = if shown.contains(&v.id) { 3 } else { 2 };
        chart
            .draw_series(LineSeries::new(clipped, colour(v.id)?.stroke_width(width)))
            .map_err(draw_err(path))?;
    }
    root.present().map_err(draw_err(path))
}

/// Message ticks: one per message up to 10 messages (whole numbers: the axis is of messages),
/// plotters' round steps beyond.
fn ticks(last: f64) -> usize {
    (last as usize + 1).min(11)
}

/// The y-range of the running totals against the reference: the first few messages swing the
/// ratio wildly (small sums), so the scale follows the rest and clips the early swings at its
/// edge; but every line's last point (the whole scenario's difference) is always inside it,
/// however short the scenario (a 3-message case has nothing "after the first few").
fn running_range<'a>(
    lines: impl Iterator<Item = &'a [(f64, f64)]> + Clone,
    last: f64,
) -> (f64, f64) {
    let settled = (last * 0.05).max(3.0).min(last);
    let (lo, hi) = lines
        .clone()
        .flat_map(|l| l.iter().filter(|(x, _)| *x >= settled).map(|(_, y)| *y))
        .chain(lines.filter_map(|l| l.last().map(|(_, y)| *y)))
        .fold((0f64, 0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let pad = ((hi - lo) * 0.08).max(0.5);
    (lo - pad, hi + pad)
}

/// Running sums of the costs of `points` (in message order).
fn running(points: &[(u64, u64)]) -> Vec<u64> {
    let mut sorted = points.to_vec();
    sorted.sort_unstable();
    sorted
        .iter()
        .scan(0u64, |acc, (_, c)| {
            *acc += c;
            Some(*acc)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line's last point is inside the range: on a 3-message case (`nft`: init and two
    /// messages) a variant 10 % cheaper over the whole scenario used to be drawn at -0.5 %.
    #[test]
    fn every_line_ends_inside_the_range() {
        let short = [
            vec![(0.0, 0.0), (1.0, -3.0), (2.0, -10.0)],
            vec![(0.0, 0.0), (1.0, 1.0), (2.0, 2.5)],
        ];
        let (lo, hi) = running_range(short.iter().map(Vec::as_slice), 2.0);
        for line in &short {
            let y = line.last().unwrap().1;
            assert!(lo < y && y < hi, "{y} outside {lo}..{hi}");
        }
        // A long scenario's early swing is clipped; its end is not.
        let long: Vec<(f64, f64)> = (0..1000)
            .map(|i| (i as f64, if i < 5 { -80.0 } else { -2.0 }))
            .collect();
        let (lo, hi) = running_range([long.as_slice()].into_iter(), 999.0);
        assert!(lo > -80.0 && lo < -2.0 && hi > 0.0, "{lo}..{hi}");
        assert_eq!(ticks(2.0), 3);
        assert_eq!(ticks(983.0), 11);
    }
}
