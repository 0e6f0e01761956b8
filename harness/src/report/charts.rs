//! The report's charts: PNGs in `images/`, drawn with plotters from the same rows the tables
//! are rendered from (and the committed traces), never by hand.
//!
//! Every chart colours a variant the same way (its place in the registry), says its unit on
//! the axis, and comes from committed results alone, so `lab report` redraws them anywhere.

use crate::report::inputs::Inputs;
use crate::results::{headline_backend, nearest_rank, MessageRow, OpRow, TotalRow};
use crate::trace::TraceRecord;
use anyhow::{anyhow, Context, Result};
use galloc_variants::{Variant, REFERENCE, VARIANTS};
use plotters::coord::Shift;
use plotters::prelude::*;
use sha2::Digest;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the fonts are looked for (Debian's `fonts-dejavu-core`, which `just setup` installs).
const FONT_PATHS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];
pub(crate) const FONT: &str = "sans-serif";
const W: u32 = 1400;
const H: u32 = 800;

/// One colour per variant, by registry position (Tableau 10, then dark shades for the rest;
/// the reference is first, grey). A test keeps it at least as long as the registry.
const PALETTE: [RGBColor; 16] = [
    RGBColor(110, 110, 110),
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 0, 0),
    RGBColor(0, 100, 0),
    RGBColor(0, 0, 0),
    RGBColor(128, 128, 0),
    RGBColor(0, 128, 128),
];

/// A variant's colour in every chart.
pub fn colour(variant: &str) -> RGBColor {
    let i = VARIANTS.iter().position(|v| v.id == variant).unwrap_or(0);
    PALETTE[i % PALETTE.len()]
}

/// What a chart shows.
#[derive(Clone, Debug)]
enum Kind {
    /// Allocator share of the total per case, one bar per variant, on a backend.
    Share { backend: String },
    /// Average cost per call per op and variant, one panel per backend.
    Ops { case: String },
    /// Per case, each variant's lowest, median and highest difference to shipping across
    /// the heap layouts, on a backend.
    Layouts { backend: String },
    /// The lab's design against shipping per case and the geometric mean, against the target.
    Design,
    /// Distribution of every call's fuel per op and variant, from the traces.
    Distribution { case: String },
    /// Cost per message over the scenario per variant, and the running total against the
    /// reference, on a backend.
    Messages { case: String, backend: String },
}

/// A chart the results support.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File name under `images/`.
    pub file: String,
    /// What it shows.
    pub caption: String,
    kind: Kind,
}

impl Chart {
    /// The case it is about, for a chart of one case (drawn on that case's page).
    pub fn case(&self) -> Option<&str> {
        match &self.kind {
            Kind::Ops { case } | Kind::Distribution { case } | Kind::Messages { case, .. } => {
                Some(case)
            }
            _ => None,
        }
    }
}

/// The charts `inputs` support, in report order.
pub fn plan(inputs: &Inputs) -> Vec<Chart> {
    let mut charts = Vec::new();
    let headline = headline_backend(&inputs.totals);
    if let Some(backend) = headline {
        if inputs.layouts.iter().any(|r| r.backend == backend) {
            charts.push(Chart {
                file: "layout-ranges.png".into(),
                caption: format!(
                    "per case, each variant's {} against shipping at the same heap layout: \
                     lowest, median and highest over the layouts ({backend})",
                    unit_of(&inputs.totals, backend)
                ),
                kind: Kind::Layouts {
                    backend: backend.into(),
                },
            });
        }
        if let Some((backend, st)) = crate::report::verdicts::standing(inputs) {
            charts.push(Chart {
                file: "design.png".into(),
                caption: format!(
                    "the lab's design (`{}`) against shipping on every case: median over the heap \
                     layouts (bar), lowest … highest (line), the geometric mean and the target \
                     ({backend} {})",
                    st.variant,
                    unit_of(&inputs.totals, &backend)
                ),
                kind: Kind::Design,
            });
        }
        charts.push(Chart {
            file: "total-performance-comparison.png".into(),
            caption: format!(
                "allocator share of total {} per case, one bar per variant ({backend})",
                unit_of(&inputs.totals, backend)
            ),
            kind: Kind::Share {
                backend: backend.into(),
            },
        });
    }
    for case in cases(&inputs.totals) {
        if inputs.ops.iter().any(|o| o.case == case && o.count > 0) {
            charts.push(Chart {
                file: format!("{case}-ops.png"),
                caption: format!("{case}: average cost per allocator call, per op and variant"),
                kind: Kind::Ops { case: case.clone() },
            });
        }
        if inputs
            .traces
            .iter()
            .any(|((c, _), calls)| *c == case && !calls.is_empty())
        {
            charts.push(Chart {
                file: format!("{case}-distribution.png"),
                caption: format!(
                    "{case}: distribution of the fuel of every allocator call per op and variant \
                     (exact records)"
                ),
                kind: Kind::Distribution { case: case.clone() },
            });
        }
        if let Some(backend) = headline {
            if inputs
                .messages
                .iter()
                .any(|m| m.case == case && m.backend == backend)
            {
                charts.push(Chart {
                    file: format!("{case}-messages.png"),
                    caption: format!(
                        "{case}: {} per message over the scenario per variant, and the running \
                         total against {REFERENCE} ({backend})",
                        unit_of(&inputs.totals, backend)
                    ),
                    kind: Kind::Messages {
                        case: case.clone(),
                        backend: backend.into(),
                    },
                });
            }
        }
    }
    charts
}

/// Draws every chart of [`plan`] into `images`; returns them.
pub fn draw(inputs: &Inputs, images: &Path) -> Result<Vec<Chart>> {
    load_font()?;
    std::fs::create_dir_all(images)
        .with_context(|| format!("cannot create {}", images.display()))?;
    let charts = plan(inputs);
    let one = |c: &Chart| -> Result<()> {
        let path = images.join(&c.file);
        match &c.kind {
            Kind::Share { backend } => total_share(&inputs.totals, backend, &path),
            Kind::Layouts { backend } => layout_ranges(inputs, backend, &path),
            Kind::Design => design(inputs, &path),
            Kind::Ops { case } => avg_per_op(&inputs.ops, case, &path),
            Kind::Distribution { case } => distribution(case, &inputs.traces, &path),
            Kind::Messages { case, backend } => per_message(&inputs.messages, case, backend, &path),
        }
    };
    // Each chart is its own file drawn from shared, read-only inputs: on every core (30 charts
    // took ~2 s on one). The first error, in chart order, is the one reported.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let mut results: Vec<(usize, Result<()>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(c) = charts.get(i) else { return done };
                        done.push((i, one(c)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a chart does not panic"))
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    for (_, r) in results {
        r?;
    }
    Ok(charts)
}

/// The font the charts are drawn with (its path and SHA-256), or what is missing: part of what
/// the charts are made from.
pub fn font_identity() -> String {
    FONT_PATHS
        .iter()
        .find_map(|p| {
            let bytes = std::fs::read(p).ok()?;
            Some(format!(
                "{p} {}",
                crate::build::artifact::hex(&sha2::Sha256::digest(&bytes))
            ))
        })
        .unwrap_or_else(|| "no font".into())
}

/// Registers the system's DejaVu Sans with plotters (once per process).
pub(crate) fn load_font() -> Result<()> {
    static LOADED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    LOADED
        .get_or_init(|| {
            let path = FONT_PATHS
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
                .ok_or_else(|| {
                    format!(
                        "no DejaVu Sans font (looked at {}); run `just setup`, which installs \
                         Debian's fonts-dejavu-core",
                        FONT_PATHS.join(", ")
                    )
                })?;
            let bytes =
                std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            // plotters keeps fonts for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            for style in [FontStyle::Normal, FontStyle::Bold] {
                plotters::style::register_font(FONT, style, bytes)
                    .map_err(|_| format!("{} is not a font plotters reads", path.display()))?;
            }
            Ok(())
        })
        .clone()
        .map_err(|e| anyhow!(e))
}

fn unit_of<'a>(totals: &'a [TotalRow], backend: &str) -> &'a str {
    totals
        .iter()
        .find(|t| t.backend == backend)
        .map_or("cost", |t| t.unit.as_str())
}

/// Cases in result order.
fn cases(totals: &[TotalRow]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in totals {
        if !out.contains(&t.case) {
            out.push(t.case.clone());
        }
    }
    out
}

/// Variants in registry order among `present`.
fn ordered<'a>(present: impl Iterator<Item = &'a str>) -> Vec<&'static Variant> {
    let present: Vec<&str> = present.collect();
    VARIANTS
        .iter()
        .filter(|v| present.contains(&v.id))
        .collect()
}

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
fn row_label(names: &[&str], y: f64) -> String {
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
fn grouped_bars(
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
        let c = colour(variant.id);
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

/// `layout-ranges.png`: one panel per case; per variant a bar from its lowest to its highest
/// difference to shipping across the layouts, a dot at the median, and the zero line. A bar
/// that crosses zero is a comparison the layout decides.
fn layout_ranges(inputs: &Inputs, backend: &str, path: &Path) -> Result<()> {
    let summaries = crate::analyse::layout::summarise(&inputs.layouts);
    let cases = cases(&inputs.totals);
    let series = ordered(
        inputs
            .layouts
            .iter()
            .filter(|r| r.backend == backend && r.variant != crate::analyse::layout::SHIPPING)
            .map(|r| r.variant.as_str()),
    );
    let cols = 2usize;
    let rows = cases.len().div_ceil(cols).max(1);
    let panel_h = (series.len() as u32 * 26 + 90).max(240);
    let root = canvas(path, W, panel_h * rows as u32 + 50);
    let (title, body) = root.split_vertically(50);
    title
        .titled(
            &format!(
                "{} against shipping at the same heap layout: lowest … highest, dot at the median ({backend})",
                unit_of(&inputs.totals, backend)
            ),
            (FONT, 22),
        )
        .map_err(draw_err(path))?;
    let panels = body.split_evenly((rows, cols));
    for (case, area) in cases.iter().zip(panels.iter()) {
        let ranges: Vec<(&'static Variant, (f64, f64, f64))> = series
            .iter()
            .filter_map(|v| {
                summaries
                    .get(&(backend.to_owned(), case.clone(), v.id.to_owned()))
                    .and_then(|s| s.vs_shipping)
                    .map(|(m, lo, hi)| (*v, (lo, m, hi)))
            })
            .collect();
        if ranges.is_empty() {
            continue;
        }
        let (lo, hi) = ranges.iter().fold((0f64, 0f64), |(a, b), (_, (l, _, h))| {
            (a.min(*l), b.max(*h))
        });
        let pad = ((hi - lo) * 0.08).max(0.5);
        let n = ranges.len();
        let mut chart = ChartBuilder::on(area)
            .caption(case, (FONT, 20))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(150)
            .build_cartesian_2d((lo - pad)..(hi + pad), -0.5f64..n as f64 - 0.5)
            .map_err(draw_err(path))?;
        let names: Vec<&str> = ranges.iter().map(|(v, _)| v.id).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n * 2 + 1)
            .y_label_formatter(&|y| row_label(&names, *y))
            // Whole percents unless the panel spans only a few: then tenths, or the labels repeat.
            .x_label_formatter(&|x| {
                if hi - lo < 4.0 {
                    format!("{x:+.1}%")
                } else {
                    format!("{x:+.0}%")
                }
            })
            .label_style((FONT, 15))
            .draw()
            .map_err(draw_err(path))?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                [(0.0, -0.5), (0.0, n as f64 - 0.5)],
                BLACK.stroke_width(1),
            )))
            .map_err(draw_err(path))?;
        for (i, (v, (l, m, h))) in ranges.iter().enumerate() {
            let y = (n - 1 - i) as f64;
            let c = colour(v.id);
            chart
                .draw_series([Rectangle::new(
                    [(*l, y - 0.3), (*h, y + 0.3)],
                    c.mix(0.6).filled(),
                )])
                .map_err(draw_err(path))?;
            chart
                .draw_series([Circle::new((*m, y), 5, BLACK.filled())])
                .map_err(draw_err(path))?;
        }
    }
    root.present().map_err(draw_err(path))?;
    Ok(())
}

/// `design.png`: one row per case and one for the geometric mean; a bar to the design's
/// median difference to shipping, a line over its lowest … highest, the target dashed.
fn design(inputs: &Inputs, path: &Path) -> Result<()> {
    let Some((backend, st)) = crate::report::verdicts::standing(inputs) else {
        return Ok(());
    };
    // (label, lowest … highest, median, colour); the geometric mean has no range.
    type Bar = (String, Option<(f64, f64)>, f64, RGBColor);
    let mut rows: Vec<Bar> = st
        .cases
        .iter()
        .map(|c| {
            let label = format!("{}{}", c.case, if c.held_out { " (held out)" } else { "" });
            // Held out: the design's colour lightened, so the split reads at a glance.
            let RGBColor(r, g, b) = colour(st.variant);
            let light = |v: u8| v + ((255 - v) as f64 * 0.6) as u8;
            let colour = if c.held_out {
                RGBColor(light(r), light(g), light(b))
            } else {
                RGBColor(r, g, b)
            };
            (label, Some((c.lowest, c.highest)), c.median, colour)
        })
        .collect();
    rows.push((
        "geometric mean".into(),
        None,
        st.geomean_pct,
        RGBColor(0, 120, 60),
    ));
    let target = crate::analyse::layout::TARGET_GEOMEAN_PCT;
    let (lo, hi) = rows.iter().fold((target, 0f64), |(a, b), (_, r, m, _)| {
        let (l, h) = r.unwrap_or((*m, *m));
        (a.min(l).min(*m), b.max(h).max(*m))
    });
    let pad = ((hi - lo) * 0.08).max(0.5);
    let n = rows.len();
    let root = canvas(path, W, (n as u32 * 44 + 140).max(400));
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{} against shipping ({backend} {}): median over the heap layouts, lowest … \
                 highest; dashed: the target's geometric mean ({target:+.0}%), {}",
                st.variant,
                unit_of(&inputs.totals, &backend),
                if st.meets_target() { "met" } else { "not met" }
            ),
            (FONT, 20),
        )
        .margin(14)
        .x_label_area_size(40)
        .y_label_area_size(300)
        .build_cartesian_2d((lo - pad)..(hi + pad), -0.5f64..n as f64 - 0.5)
        .map_err(draw_err(path))?;
    let names: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n * 2 + 1)
        .y_label_formatter(&|y| row_label(&names, *y))
        .x_label_formatter(&|x| format!("{x:+.0}%"))
        .x_desc(format!(
            "{} against shipping at the same layout",
            unit_of(&inputs.totals, &backend)
        ))
        .label_style((FONT, 16))
        .draw()
        .map_err(draw_err(path))?;
    let column =
        |x: f64, style: ShapeStyle| PathElement::new([(x, -0.5), (x, n as f64 - 0.5)], style);
    chart
        .draw_series([column(0.0, BLACK.stroke_width(1))])
        .map_err(draw_err(path))?;
    // Dashed: short segments down the target's column.
    chart
        .draw_series((0..n * 4).map(|k| {
            let y = -0.5 + k as f64 / 4.0;
            PathElement::new([(target, y), (target, y + 0.125)], RED.stroke_width(2))
        }))
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
                (hi + pad * 0.1, y + 0.15),
                (FONT, 15),
            )])
            .map_err(draw_err(path))?;
    }
    root.present().map_err(draw_err(path))?;
    Ok(())
}

/// `total-performance-comparison.png`: allocator share of the total per case per variant.
fn total_share(totals: &[TotalRow], backend: &str, path: &Path) -> Result<()> {
    let rows: Vec<&TotalRow> = totals.iter().filter(|t| t.backend == backend).collect();
    let groups = cases(totals);
    let series = ordered(rows.iter().map(|t| t.variant.as_str()));
    let values: Vec<Vec<Option<f64>>> = groups
        .iter()
        .map(|case| {
            series
                .iter()
                .map(|v| {
                    rows.iter()
                        .find(|t| &t.case == case && t.variant == v.id)
                        .map(|t| t.allocator_share_pct)
                })
                .collect()
        })
        .collect();
    let unit = unit_of(totals, backend);
    let root = canvas(path, W, H);
    let body = header(
        &root,
        path,
        &format!("Allocator share of total {unit} per case ({backend})"),
        series.iter().copied(),
    )?;
    grouped_bars(
        &body,
        path,
        None,
        &format!("allocator {unit} / total {unit} (%)"),
        &groups,
        &series,
        &values,
        |v| format!("{v:.2}%"),
    )?;
    root.present().map_err(draw_err(path))
}

/// `<case>-ops.png`: average cost per call, per op, per variant; one panel per backend.
fn avg_per_op(ops: &[OpRow], case: &str, path: &Path) -> Result<()> {
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
fn distribution(
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
            "{case}: fuel of every allocator call (wasmtime, exact records): box p25–p75, \
             black bar median, whiskers p5–p95, dot p99, × max"
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
                format!("{op} ({} calls per variant)", counts_label(&counts)),
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
            let c = colour(v.id);
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
fn header<'a, 'b>(
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
    top.draw(&Text::new(title.to_string(), (20, 12), (FONT, 22)))
        .map_err(draw_err(path))?;
    for (v, x, row) in keys {
        let y = TITLE + row * ROW;
        let c = colour(v.id);
        top.draw(&Rectangle::new([(x, y), (x + 16, y + 16)], c.filled()))
            .map_err(draw_err(path))?;
        top.draw(&Text::new(v.id, (x + 22, y), (FONT, 18)))
            .map_err(draw_err(path))?;
    }
    Ok(body)
}

fn counts_label(counts: &[usize]) -> String {
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

/// `<case>-messages.png`: above, each message's cost per variant over the scenario; below,
/// the running total against the reference, in percent.
fn per_message(messages: &[MessageRow], case: &str, backend: &str, path: &Path) -> Result<()> {
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
        &format!("{case}: {unit} per message over the scenario ({backend})"),
        series.values().map(|(v, _)| *v),
    )?;
    let height = body.dim_in_pixel().1;
    let (upper, lower) = body.split_vertically(height / 2);
    let mut chart = ChartBuilder::on(&upper)
        .caption(format!("{unit} per message"), (FONT, 20))
        .margin(14)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(0f64..last.max(1.0), 0f64..top)
        .map_err(draw_err(path))?;
    chart
        .configure_mesh()
        .x_desc("message (0 = init)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc(format!("{unit} per message"))
        .y_label_formatter(&|y| short(*y))
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(draw_err(path))?;
    for (v, points) in series.values() {
        let c = colour(v.id);
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|&(i, cost)| (i as f64, cost as f64)),
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
    // The first few messages swing the ratio wildly (small sums); the scale follows the rest
    // and the early swings are clipped at its edge.
    let settled = (last * 0.05).max(3.0);
    let (lo, hi) = relative
        .iter()
        .flat_map(|(_, l)| l.iter().filter(|(x, _)| *x >= settled).map(|(_, y)| *y))
        .fold((0f64, 0f64), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let pad = ((hi - lo) * 0.08).max(0.5);
    let (lo, hi) = (lo - pad, hi + pad);
    let mut chart = ChartBuilder::on(&lower)
        .caption(
            format!("running total {unit} against {REFERENCE} (%)"),
            (FONT, 20),
        )
        .margin(14)
        .x_label_area_size(45)
        .y_label_area_size(90)
        .build_cartesian_2d(0f64..last.max(1.0), lo..hi)
        .map_err(draw_err(path))?;
    chart
        .configure_mesh()
        .x_desc("message (0 = init)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc(format!("total {unit} so far vs {REFERENCE} (%)"))
        .y_label_formatter(&|y| format!("{y:+.1}%"))
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(draw_err(path))?;
    for (v, line) in relative {
        let clipped = line.into_iter().map(|(x, y)| (x, y.clamp(lo, hi)));
        chart
            .draw_series(LineSeries::new(clipped, colour(v.id).stroke_width(2)))
            .map_err(draw_err(path))?;
    }
    root.present().map_err(draw_err(path))
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
    #[test]
    fn every_variant_has_a_colour_of_its_own() {
        assert!(super::PALETTE.len() >= galloc_variants::VARIANTS.len());
        let mut seen: Vec<(u8, u8, u8)> = galloc_variants::VARIANTS
            .iter()
            .map(|v| {
                let c = super::colour(v.id);
                (c.0, c.1, c.2)
            })
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), galloc_variants::VARIANTS.len());
    }
}
