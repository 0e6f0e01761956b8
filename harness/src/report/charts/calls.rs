//! The charts of one case's allocator calls: the average cost per call by op and variant, and
//! the distribution of every call's cost (from the traces).

use super::{
    canvas, colour, counts_label, draw_err, grouped_bars, header, ordered, short, FONT, H, W,
};
use crate::results::trace::TraceRecord;
use crate::results::{nearest_rank, OpRow};
use anyhow::Result;
use galloc_variants::{Variant, VARIANTS};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// `<case>-ops.png`: average cost per call, per op, per variant; one panel per backend.
pub fn avg_per_op(ops: &[OpRow], case: &str, path: &Path) -> Result<()> {
    let rows: Vec<&OpRow> = ops.iter().filter(|o| o.case == case).collect();
    let mut backends: Vec<&str> = Vec::new();
    for r in &rows {
        if !backends.contains(&r.backend.as_str()) {
            backends.push(&r.backend);
        }
    }
    let root = canvas(path, W, H);
    let body = header(
        &root,
        path,
        &format!("{case}: average cost of an allocator call, per op"),
        ordered(rows.iter().map(|r| r.variant.as_str())),
    )?;
    let panels = body.split_evenly((1, backends.len()));
    for (panel, backend) in panels.iter().zip(&backends) {
        let mine: Vec<&&OpRow> = rows.iter().filter(|r| r.backend == *backend).collect();
        let groups: Vec<String> = galloc::probe::Op::ALL
            .iter()
            .map(|op| op.name().to_string())
            .filter(|op| mine.iter().any(|r| &r.op == op && r.count > 0))
            .collect();
        let series = ordered(mine.iter().map(|r| r.variant.as_str()));
        let values: Vec<Vec<Option<f64>>> = groups
            .iter()
            .map(|op| {
                series
                    .iter()
                    .map(|v| {
                        mine.iter()
                            .find(|r| &r.op == op && r.variant == v.id && r.count > 0)
                            .map(|r| r.avg as f64)
                    })
                    .collect()
            })
            .collect();
        let unit = mine.first().map_or("cost", |r| r.unit.as_str());
        grouped_bars(
            panel,
            path,
            Some(&format!("average {unit} per call ({backend})")),
            &format!("{unit} per call"),
            &groups,
            &series,
            &values,
            short,
        )?;
    }
    root.present().map_err(draw_err(path))
}

/// `<case>-distribution.png`: per op, a box per variant of every call's fuel (p25–p75 box,
/// median bar, p5–p95 whiskers, p99 dot, max cross), from the committed traces.
pub fn distribution(
    case: &str,
    traces: &BTreeMap<(String, String), Vec<TraceRecord>>,
    path: &Path,
) -> Result<()> {
    let per_variant: Vec<(&'static Variant, &Vec<TraceRecord>)> = VARIANTS
        .iter()
        .filter_map(|v| Some((v, traces.get(&(case.to_string(), v.id.to_string()))?)))
        .collect();
    let ops: Vec<&str> = galloc::probe::Op::ALL
        .iter()
        .map(|op| op.name())
        .filter(|op| {
            per_variant
                .iter()
                .any(|(_, t)| t.iter().any(|r| r.op == *op))
        })
        .collect();
    let root = canvas(path, W, H);
    let body = header(
        &root,
        path,
        &format!(
            "{case}: fuel a call (wasmtime): box p25–p75, bar p50, whiskers p5–p95, \
             dot p99, × max"
        ),
        per_variant.iter().map(|(v, _)| *v),
    )?;
    let panels = body.split_evenly((1, ops.len()));
    for (panel, op) in panels.iter().zip(&ops) {
        let sets: Vec<(&Variant, Vec<u64>)> = per_variant
            .iter()
            .map(|(v, t)| {
                let mut costs: Vec<u64> =
                    t.iter().filter(|r| r.op == *op).map(|r| r.fuel).collect();
                costs.sort_unstable();
                (*v, costs)
            })
            .filter(|(_, c)| !c.is_empty())
            .collect();
        let top = sets
            .iter()
            .filter_map(|(_, c)| c.last())
            .max()
            .copied()
            .unwrap_or(1) as f64
            * 1.08;
        let counts: Vec<usize> = sets.iter().map(|(_, c)| c.len()).collect();
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("{op}, {} calls each", counts_label(&counts)),
                (FONT, 20),
            )
            .margin(12)
            .x_label_area_size(10)
            .y_label_area_size(70)
            .build_cartesian_2d(-0.5f64..sets.len() as f64 - 0.5, 0f64..top)
            .map_err(draw_err(path))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .label_style((FONT, 16))
            .y_desc("fuel per call")
            .y_label_formatter(&|y| short(*y))
            .axis_desc_style((FONT, 18))
            .draw()
            .map_err(draw_err(path))?;
        for (i, (v, costs)) in sets.iter().enumerate() {
            let c = colour(v.id)?;
            let x = i as f64;
            let [p5, p25, p50, p75, p95, p99] = [5.0, 25.0, 50.0, 75.0, 95.0, 99.0]
                .map(|p| nearest_rank(costs, p).expect("non-empty") as f64);
            let max = *costs.last().expect("non-empty") as f64;
            let line = c.stroke_width(2);
            chart
                .draw_series([
                    PathElement::new(vec![(x, p5), (x, p25)], line),
                    PathElement::new(vec![(x, p75), (x, p95)], line),
                    PathElement::new(vec![(x - 0.15, p5), (x + 0.15, p5)], line),
                    PathElement::new(vec![(x - 0.15, p95), (x + 0.15, p95)], line),
                ])
                .map_err(draw_err(path))?;
            chart
                .draw_series([Rectangle::new(
                    [(x - 0.3, p25), (x + 0.3, p75)],
                    c.mix(0.35).filled(),
                )])
                .map_err(draw_err(path))?;
            chart
                .draw_series([Rectangle::new(
                    [(x - 0.3, p25), (x + 0.3, p75)],
                    c.stroke_width(2),
                )])
                .map_err(draw_err(path))?;
            chart
                .draw_series([PathElement::new(
                    vec![(x - 0.3, p50), (x + 0.3, p50)],
                    BLACK.stroke_width(3),
                )])
                .map_err(draw_err(path))?;
            chart
                .draw_series([Circle::new((x, p99), 5, c.filled())])
                .map_err(draw_err(path))?;
            chart
                .draw_series([Cross::new((x, max), 7, c.stroke_width(2))])
                .map_err(draw_err(path))?;
        }
    }
    root.present().map_err(draw_err(path))
}
