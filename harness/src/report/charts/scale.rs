//! `scale.png` (`just scale`): on each scale case, the gas of each checkpoint's probes and of the
//! batches before it against shipping's, as the live heap grows.

use super::{canvas, colour, draw_err, header, FONT, H, W};
use crate::analyse::scale::{cases, changes, over_layouts, Change, Part};
use crate::analyse::target::TARGET;
use crate::results::ScaleRow;
use anyhow::Result;
use galloc_variants::{Variant, DESIGN, REFERENCE, VARIANTS};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Draws the chart at `path`: a column per case, the probes above, the batches below; a line per
/// variant (its mean over the layouts), the design's thicker, and the target's +1 % dashed.
pub fn scale(rows: &[ScaleRow], path: &Path) -> Result<()> {
    super::load_font()?;
    let cases = cases(rows);
    let parts = [
        (Part::Probes, "checkpoint probes"),
        (Part::Batches, "batches"),
    ];
    let by_part: Vec<BTreeMap<String, Vec<Change>>> =
        parts.iter().map(|(p, _)| changes(rows, *p)).collect();
    let shown: Vec<&'static Variant> = VARIANTS
        .iter()
        .filter(|v| v.id != REFERENCE && by_part[0].contains_key(v.id))
        .collect();
    let root = canvas(path, W, H + 260);
    let body = header(
        &root,
        path,
        "At scale: gas against shipping as the live heap grows (gtest, mean over the layouts)",
        shown.iter().copied(),
    )?;
    let panels = body.split_evenly((parts.len(), cases.len().max(1)));
    for (i, panel) in panels.iter().enumerate() {
        let (part, case) = (i / cases.len().max(1), cases[i % cases.len().max(1)]);
        let series: Vec<(&Variant, Vec<(f64, f64)>)> = shown
            .iter()
            .map(|v| {
                let at = over_layouts(&by_part[part][v.id], case);
                let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
                (
                    *v,
                    at.values()
                        .map(|o| (mib(o.live_bytes), o.mean_pct))
                        .collect(),
                )
            })
            .collect();
        let points = series.iter().flat_map(|(_, s)| s.iter());
        let (mut lo, mut hi, mut right) = (-1.0f64, 1.5f64, 1.0f64);
        for (x, y) in points {
            (lo, hi, right) = (lo.min(*y), hi.max(*y), right.max(*x));
        }
        let pad = (hi - lo) * 0.08;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{case}: {}", parts[part].1), (FONT, 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..right * 1.05, (lo - pad)..(hi + pad))
            .map_err(draw_err(path))?;
        chart
            .configure_mesh()
            .x_desc("live heap (MiB)")
            .y_desc("% against shipping")
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(draw_err(path))?;
        chart
            .draw_series(LineSeries::new(
                [(0.0, 0.0), (right * 1.05, 0.0)],
                colour(REFERENCE)?.stroke_width(1),
            ))
            .map_err(draw_err(path))?;
        chart
            .draw_series(DashedLineSeries::new(
                [
                    (0.0, TARGET.scale_dearer_pct),
                    (right * 1.05, TARGET.scale_dearer_pct),
                ],
                6,
                4,
                BLACK.stroke_width(1),
            ))
            .map_err(draw_err(path))?;
        for (v, s) in &series {
            let width = if v.id == DESIGN { 3 } else { 1 };
            let c = colour(v.id)?;
            chart
                .draw_series(LineSeries::new(s.iter().copied(), c.stroke_width(width)))
                .map_err(draw_err(path))?;
            chart
                .draw_series(s.iter().map(|p| Circle::new(*p, 2 + width, c.filled())))
                .map_err(draw_err(path))?;
        }
    }
    root.present().map_err(draw_err(path))?;
    Ok(())
}
