//! The report's charts: PNGs in `images/`, drawn with plotters from the same rows the tables
//! are rendered from (and the committed traces), never by hand.
//!
//! Every chart colours a variant the same way (its place in the registry), says its unit on
//! the axis, and comes from committed results alone, so `lab report` redraws them anywhere.

use crate::analyse::ship::Ship;
use crate::report::inputs::Inputs;
use crate::results::{headline_backend, TotalRow};
use anyhow::{Context, Result};
pub use font::font_identity;
pub(crate) use font::load_font;
use galloc_variants::{Variant, REFERENCE, VARIANTS};
pub(crate) use parts::{canvas, counts_label, draw_err, grouped_bars, header, row_label, short};
use plotters::prelude::*;
use std::path::Path;

mod anatomy;
mod calls;
mod deployments;
mod font;
mod headline;
mod messages;
pub mod page_map;
mod parts;
pub mod scale;
mod verdicts;

pub(crate) const FONT: &str = "sans-serif";
/// Every chart is this wide: GitHub shows a page's images at about 1,000 px, so a chart drawn
/// at that width is read at its own size, its labels as drawn.
const W: u32 = 1000;
const H: u32 = 640;

/// One colour per variant, keyed by its id, so adding a variant recolours none of the others:
/// the reference grey, the lab's design black, the rest chosen from Kelly's colours of maximum
/// contrast and Tableau's so that no two are closer than 35 in CIELAB (ΔE*76; a test holds it
/// above 30), none too light for white. A variant the registry gains needs a line here (a
/// test names it).
const COLOURS: [(&str, RGBColor); 15] = [
    ("shipping", RGBColor(132, 132, 130)),
    ("static-buffer", RGBColor(31, 119, 180)),
    ("no-buffer", RGBColor(246, 166, 0)),
    ("doubled-buffer", RGBColor(50, 205, 50)),
    ("multi-buffers", RGBColor(214, 39, 40)),
    ("granularity-32k", RGBColor(148, 103, 189)),
    ("granularity-16k", RGBColor(0, 206, 209)),
    ("granularity-8k", RGBColor(255, 20, 147)),
    ("gear-next", RGBColor(0, 136, 86)),
    ("bump", RGBColor(188, 189, 34)),
    ("talc", RGBColor(0, 0, 128)),
    ("rlsf", RGBColor(101, 69, 34)),
    ("slabs", RGBColor(249, 147, 121)),
    ("lab", RGBColor(0, 0, 0)),
    ("pr4853", RGBColor(179, 68, 108)),
];

/// A variant's colour in every chart; an id without one is an error that says where to add it.
pub fn colour(variant: &str) -> Result<RGBColor> {
    COLOURS
        .iter()
        .find(|(id, _)| *id == variant)
        .map(|(_, c)| *c)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "variant `{variant}` has no chart colour: give it one in COLOURS \
                 (harness/src/report/charts/mod.rs), far from the others"
            )
        })
}

/// What a chart shows.
#[derive(Clone, Debug)]
enum Kind {
    /// Every variant on the decision metric, with its pages and code beside it.
    Headline,
    /// Average cost per call per op and variant, one panel per backend.
    Ops { case: String },
    /// Per case, each variant's lowest, median and highest difference to shipping across
    /// the heap layouts, on a backend.
    Layouts { backend: String },
    /// The lab's design against shipping per case and the geometric mean of its medians.
    Design,
    /// Per program of the ship verdict, shipping's and the lab's design's gas over the heap
    /// layouts, against shipping's cheapest.
    Deployments,
    /// Where each variant's change comes from, by charge, and the lab's design per program.
    Anatomy,
    /// Distribution of every call's fuel per op and variant, from the traces.
    Distribution { case: String },
    /// Cost per message over the scenario per variant, and the running total against the
    /// reference, on a backend.
    /// `shown`: the variants whose every message is drawn (the rest only as running totals).
    Messages {
        case: String,
        backend: String,
        shown: Vec<&'static str>,
    },
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
    /// Whether it is the headline chart (the report shows it under the verdicts).
    pub fn is_headline(&self) -> bool {
        matches!(self.kind, Kind::Headline)
    }

    /// What a chart of one case shows, one of [`PER_CASE`] (`None` for a chart of every case).
    pub fn per_case_kind(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Ops { .. } => Some(PER_CASE[0]),
            Kind::Distribution { .. } => Some(PER_CASE[1]),
            Kind::Messages { .. } => Some(PER_CASE[2]),
            _ => None,
        }
    }

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

/// What each kind of chart of one case shows, in the order the report lists them.
pub const PER_CASE: [&str; 3] = [
    "the average cost per call by op",
    "the distribution of every call's cost",
    "the cost of every message over the scenario",
];

/// The charts `inputs` (and for `results/` the ship verdict) support, in report order.
pub fn plan(inputs: &Inputs, ship: Option<&Ship>) -> Vec<Chart> {
    let mut charts = Vec::new();
    if let Some(ship) = ship {
        charts.push(Chart {
            file: "layouts.png".into(),
            caption: format!(
                "where the heap starts: each of the {} programs' gas (gtest) at every heap layout \
                 of the sweep, for {REFERENCE} and the lab's design (`{}`), against {REFERENCE}'s \
                 cheapest layout; programs by {REFERENCE}'s spread",
                ship.programs.len(),
                galloc_variants::DESIGN
            ),
            kind: Kind::Deployments,
        });
        if !ship.explained.points.is_empty() {
            charts.push(Chart {
                file: "anatomy.png".into(),
                caption: format!(
                    "where the gas goes: each variant against {REFERENCE} over every program by \
                     what Gear charges, in points; below, the lab's design (`{}`) on each program",
                    galloc_variants::DESIGN
                ),
                kind: Kind::Anatomy,
            });
        }
    }
    let headline = headline_backend(&inputs.totals);
    let matrix = crate::report::verdicts::Matrix::of(inputs);
    if let Some(backend) = headline {
        if inputs.layouts.iter().any(|r| r.backend == backend) {
            let caption = match ship {
                // Where the rule judged, the headline is over what it judged.
                Some(ship) if !ship.rows.is_empty() => format!(
                    "every variant against {REFERENCE} over the {} programs at every heap layout \
                     (gas on gtest), as the ship rule judges them: the expected change with its \
                     95 % interval (black; the named variant ringed), each program's mean over \
                     the layouts coloured by its word; beside it, the page charges in points of \
                     the change (the anatomy) and allocator code bytes against {REFERENCE}",
                    ship.programs.len()
                ),
                _ => format!(
                    "every variant against shipping on the {} ({backend} {}): each case's \
                     mean over the heap layouts coloured by its verdict, the geometric mean, \
                     the recommended case ringed; beside it, {}allocator code bytes against \
                     shipping",
                    crate::report::tables::count(
                        matrix.as_ref().map_or(0, |m| m.cases.len()),
                        "case"
                    ),
                    unit_of(&inputs.totals, backend),
                    // Pages are the fuel meter's count: only where it ran.
                    if inputs.totals.iter().any(|t| t.backend == "wasmtime") {
                        "pages touched (the fuel meter's count) and "
                    } else {
                        ""
                    }
                ),
            };
            charts.push(Chart {
                file: "headline.png".into(),
                caption,
                kind: Kind::Headline,
            });
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
                    "the lab's design (`{}`) against shipping on each of the {} {}: \
                     mean over the heap layouts (bar), its 95 % interval (line), and the \
                     geometric mean of the means ({backend} {})",
                    st.variant,
                    st.cases.len(),
                    crate::report::verdicts::set_name(&st),
                    unit_of(&inputs.totals, &backend)
                ),
                kind: Kind::Design,
            });
        }
    }
    for case in cases(&inputs.totals) {
        if inputs.ops.iter().any(|o| o.case == case && o.count > 0) {
            charts.push(Chart {
                file: format!("{case}-ops.png"),
                caption: format!(
                    "{case}: average cost per allocator call, per op and variant, on each backend \
                     measured (a panel each)"
                ),
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
                     (the wasmtime fuel meter's exact records)"
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
                // Every message of 14 variants is a thicket: the upper panel draws shipping,
                // the lab's design and the case's pick; the running totals draw every variant.
                let mut shown = vec![REFERENCE, galloc_variants::DESIGN];
                let pick = matrix.as_ref().and_then(|m| {
                    m.cases
                        .iter()
                        .position(|c| *c == case.as_str())
                        .map(|i| m.picks[i])
                });
                shown.extend(pick.filter(|p| !shown.contains(p)));
                charts.push(Chart {
                    file: format!("{case}-messages.png"),
                    caption: format!(
                        "{case}: {} per message over the scenario at the linker's layout (heap \
                         offset 0) for {}, and every variant's running total against \
                         {REFERENCE} ({backend})",
                        unit_of(&inputs.totals, backend),
                        shown.join(", ")
                    ),
                    kind: Kind::Messages {
                        case: case.clone(),
                        backend: backend.into(),
                        shown,
                    },
                });
            }
        }
    }
    charts
}

/// Draws every chart of [`plan`] into `images`; returns them.
pub fn draw(inputs: &Inputs, ship: Option<&Ship>, images: &Path) -> Result<Vec<Chart>> {
    load_font()?;
    std::fs::create_dir_all(images)
        .with_context(|| format!("cannot create {}", images.display()))?;
    let charts = plan(inputs, ship);
    let one = |c: &Chart| -> Result<()> {
        let path = images.join(&c.file);
        match &c.kind {
            Kind::Headline => match ship {
                Some(ship) if !ship.rows.is_empty() => headline::over_programs(ship, &path),
                _ => verdicts::headline(inputs, ship, &path),
            },
            Kind::Layouts { backend } => verdicts::layout_ranges(inputs, backend, &path),
            Kind::Design => verdicts::design(inputs, &path),
            Kind::Deployments => match ship {
                Some(ship) => deployments::layouts(ship, &path),
                None => Ok(()),
            },
            Kind::Anatomy => match ship {
                Some(ship) => anatomy::anatomy(ship, &path),
                None => Ok(()),
            },
            Kind::Ops { case } => calls::avg_per_op(&inputs.ops, case, &path),
            Kind::Distribution { case } => calls::distribution(case, &inputs.traces, &path),
            Kind::Messages {
                case,
                backend,
                shown,
            } => messages::per_message(&inputs.messages, case, backend, shown, &path),
        }
    };
    // Each chart is its own file drawn from shared, read-only inputs: on every core.
    crate::run::cores::on_every_core(&charts, one)?;
    Ok(charts)
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

#[cfg(test)]
mod tests {
    #[test]
    fn every_variant_has_a_colour_of_its_own() {
        let mut seen: Vec<(u8, u8, u8)> = galloc_variants::VARIANTS
            .iter()
            .map(|v| {
                let c = super::colour(v.id).unwrap();
                (c.0, c.1, c.2)
            })
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), galloc_variants::VARIANTS.len());
        let e = super::colour("no-such-variant").unwrap_err().to_string();
        assert!(e.contains("`no-such-variant` has no chart colour"), "{e}");
    }

    /// CIELAB (D65) of an sRGB colour.
    fn lab((r, g, b): (u8, u8, u8)) -> [f64; 3] {
        let lin = |u: u8| {
            let u = u as f64 / 255.0;
            if u > 0.04045 {
                ((u + 0.055) / 1.055).powf(2.4)
            } else {
                u / 12.92
            }
        };
        let (r, g, b) = (lin(r), lin(g), lin(b));
        let x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
        let z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
        let f = |t: f64| {
            if t > 0.008856 {
                t.cbrt()
            } else {
                7.787 * t + 16.0 / 116.0
            }
        };
        [
            116.0 * f(y) - 16.0,
            500.0 * (f(x) - f(y)),
            200.0 * (f(y) - f(z)),
        ]
    }

    /// Any two variants' colours differ by more than 30 in CIELAB (ΔE*76), and none is so light
    /// (L* above 85) that it fades into the white background.
    #[test]
    fn every_two_variants_colours_are_far_apart() {
        let colours: Vec<(&str, [f64; 3])> = galloc_variants::VARIANTS
            .iter()
            .map(|v| {
                let c = super::colour(v.id).unwrap();
                (v.id, lab((c.0, c.1, c.2)))
            })
            .collect();
        for (i, (a, la)) in colours.iter().enumerate() {
            assert!(la[0] <= 85.0, "{a} is too light: L* {:.1}", la[0]);
            for (b, lb) in &colours[i + 1..] {
                let d = la
                    .iter()
                    .zip(lb)
                    .map(|(x, y)| (x - y).powi(2))
                    .sum::<f64>()
                    .sqrt();
                assert!(d > 30.0, "{a} and {b} are {d:.1} apart in CIELAB");
            }
        }
    }
}
