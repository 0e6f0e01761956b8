//! A reproduction's report (`lab reproduce`; `results/<variant>/README.md` and its chart):
//! where the reproduced allocator goes wrong on its case, and what it and the variants it is
//! held against cost there, against shipping, over the heap layouts of the sweep.
//!
//! Rendered from the set's own rows alone (`<backend>/layouts.csv`, `outcomes.csv`,
//! `costs.csv`), so a test can hold the committed report to its render.

use crate::analyse::layout::{self, Verdict};
use crate::report::charts::{canvas, colour, draw_err, load_font, short, FONT};
use crate::report::tables::thousands;
use crate::results::{read_csv, write_csv, CostRow, LayoutRow, OutcomeRow};
use anyhow::{Context, Result};
use plotters::prelude::*;
use std::path::Path;

/// The backend a reproduction runs on: the published figures it checks are gas.
pub const BACKEND: &str = "gtest";

/// Messages per point of the chart.
const BIN: usize = 50;

/// A reproduction's rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Reproduction {
    /// The reproduction (a registry variant with `reproduces`).
    pub variant: String,
    /// Its case.
    pub case: String,
    /// Every variant's plain build at every layout: the totals.
    pub layouts: Vec<LayoutRow>,
    /// Every run's wrong outcomes.
    pub outcomes: Vec<OutcomeRow>,
    /// Every message's cost at the linker's layout.
    pub costs: Vec<CostRow>,
}

/// The chart's file, under the set's `images/`.
pub fn chart_file(case: &str) -> String {
    format!("{case}-messages.png")
}

impl Reproduction {
    /// The rows in `dir` (a set `lab reproduce` wrote for `variant`).
    pub fn read(dir: &Path, variant: &str) -> Result<Self> {
        let at = dir.join(BACKEND);
        let outcomes: Vec<OutcomeRow> = read_csv(&at.join("outcomes.csv"))?;
        let case = outcomes
            .iter()
            .find(|o| o.variant == variant)
            .map(|o| o.case.clone())
            .with_context(|| {
                format!(
                    "{}: no run of `{variant}`; `lab reproduce {variant}` writes them",
                    at.join("outcomes.csv").display()
                )
            })?;
        Ok(Reproduction {
            variant: variant.into(),
            case,
            layouts: read_csv(&at.join("layouts.csv"))?,
            outcomes,
            costs: read_csv(&at.join("costs.csv"))?,
        })
    }

    /// Writes the rows into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let at = dir.join(BACKEND);
        std::fs::create_dir_all(&at).with_context(|| format!("cannot create {}", at.display()))?;
        crate::results::write_layouts(&at.join("layouts.csv"), &self.layouts)?;
        write_csv(&at.join("outcomes.csv"), &self.outcomes)?;
        write_csv(&at.join("costs.csv"), &self.costs)
    }

    /// The variants in the rows, shipping first, the reproduction last (the order they were
    /// given in).
    fn variants(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for o in &self.outcomes {
            if !out.contains(&o.variant.as_str()) {
                out.push(&o.variant);
            }
        }
        out
    }

    /// The reproduction's run at the linker's layout.
    fn at_linker(&self) -> Option<&OutcomeRow> {
        self.outcomes
            .iter()
            .find(|o| o.variant == self.variant && o.offset == 0)
    }

    /// The reproduction's first wrong message at the linker's layout, if any.
    pub fn first_wrong(&self) -> Option<u64> {
        self.at_linker()?.first_wrong
    }

    /// Mean cost a message at the linker's layout of `variant` over messages `from..to`.
    fn mean(&self, variant: &str, from: u64, to: u64) -> Option<f64> {
        let costs: Vec<u64> = self
            .costs
            .iter()
            .filter(|c| c.variant == variant && (from..to).contains(&c.message))
            .map(|c| c.cost)
            .collect();
        (!costs.is_empty()).then(|| costs.iter().sum::<u64>() as f64 / costs.len() as f64)
    }

    /// The report, in markdown; `summary` says what the variant and the case are.
    pub fn markdown(&self, summary: &str) -> String {
        let summaries = layout::summarise(&self.layouts);
        let mut md = format!(
            "# A reproduction: `{}` on `{}`\n\n{summary}\n\nRegenerate with `just {}` (`lab \
             reproduce {}`): the plain build of each variant below at each heap layout of the \
             sweep, on {BACKEND} (gas), every message sent whatever came back and its outcome \
             checked against the program's rules. A run of a variant the lab measures stops at \
             the first wrong outcome; a reproduction's goes on, so that where and how it goes \
             wrong, and what its wrong executions cost, are measured.\n\n",
            self.variant, self.case, self.variant, self.variant
        );
        md.push_str(
            "| variant | layouts | messages | wrong outcomes: median (lowest … highest) | first \
             wrong message: lowest … highest | failed: median | gas vs shipping: median \
             (lowest … highest) | verdict |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | \
             --- |\n",
        );
        for v in self.variants() {
            let runs: Vec<&OutcomeRow> = self.outcomes.iter().filter(|o| o.variant == v).collect();
            let med = |f: fn(&OutcomeRow) -> u64| {
                layout::median(&mut runs.iter().map(|o| f(o) as f64).collect::<Vec<_>>())
            };
            let wrong: Vec<u64> = runs.iter().map(|o| o.wrong).collect();
            let (lo, hi) = (
                wrong.iter().min().copied().unwrap_or(0),
                wrong.iter().max().copied().unwrap_or(0),
            );
            let firsts: Vec<u64> = runs.iter().filter_map(|o| o.first_wrong).collect();
            let first = match (firsts.iter().min(), firsts.iter().max()) {
                (Some(a), Some(b)) if firsts.len() == runs.len() => {
                    format!("{} … {}", thousands(*a), thousands(*b))
                }
                (Some(a), Some(b)) => format!(
                    "{} … {} ({} of {} runs)",
                    thousands(*a),
                    thousands(*b),
                    firsts.len(),
                    runs.len()
                ),
                _ => "-".into(),
            };
            let s = summaries.get(&(BACKEND.into(), self.case.clone(), v.to_owned()));
            let (vs, verdict) = match s.and_then(|s| s.vs_shipping.map(|d| (d, s.verdict))) {
                Some(((m, l, h), verdict)) => (
                    format!("{m:+.2} % ({l:+.2} … {h:+.2})"),
                    if hi > 0 {
                        "not judged: wrong outcomes".to_owned()
                    } else {
                        verdict.name().to_owned()
                    },
                ),
                None => ("-".into(), Verdict::Baseline.name().to_owned()),
            };
            md.push_str(&format!(
                "| `{v}` | {} | {} | {} ({} … {}) | {first} | {} | {vs} | {verdict} |\n",
                runs.len(),
                runs.first().map_or("-".into(), |o| thousands(o.messages)),
                thousands(med(|o| o.wrong) as u64),
                thousands(lo),
                thousands(hi),
                thousands(med(|o| o.failed) as u64),
            ));
        }
        if let Some(first) = self.first_wrong() {
            let last = self.costs.iter().map(|c| c.message).max().unwrap_or(0);
            md.push_str(&format!(
                "\nAt the linker's layout, gas per message (mean) before `{}` first goes wrong \
                 and from there on:\n\n| variant | messages 1–{} | messages {}–{} | every \
                 message |\n| --- | ---: | ---: | ---: |\n",
                self.variant,
                thousands(first - 1),
                thousands(first),
                thousands(last)
            ));
            for v in self.variants() {
                let cell = |from, to| {
                    self.mean(v, from, to)
                        .map_or("-".into(), |m| thousands(m.round() as u64))
                };
                md.push_str(&format!(
                    "| `{v}` | {} | {} | {} |\n",
                    cell(1, first),
                    cell(first, last + 1),
                    cell(0, last + 1)
                ));
            }
            let why = self.at_linker().map_or("", |o| o.first_wrong_why.as_str());
            md.push_str(&format!("\nIts first wrong outcome there: {why}.\n"));
        }
        md.push_str(&format!(
            "\n![{BACKEND} gas per message of `{}` at the linker's layout](images/{})\n",
            self.case,
            chart_file(&self.case)
        ));
        md
    }

    /// Mean gas per message of `variant` at the linker's layout over each [`BIN`] messages
    /// from message 1 (init left out), at the middle of each bin.
    fn binned(&self, variant: &str) -> Vec<(f64, f64)> {
        let costs: Vec<u64> = self
            .costs
            .iter()
            .filter(|c| c.variant == variant && c.message > 0)
            .map(|c| c.cost)
            .collect();
        costs
            .chunks(BIN)
            .enumerate()
            .map(|(i, bin)| {
                let mid = 1.0 + (i * BIN) as f64 + bin.len() as f64 / 2.0;
                (mid, bin.iter().sum::<u64>() as f64 / bin.len() as f64)
            })
            .collect()
    }

    /// Gas per message at the linker's layout (means over [`BIN`] messages: a mint and a
    /// transfer alternate, and one message a line would be two bands), one line per variant,
    /// and the reproduction's first wrong message marked.
    pub fn chart(&self, path: &Path) -> Result<()> {
        load_font()?;
        let last = self.costs.iter().map(|c| c.message).max().unwrap_or(1) as f64;
        let lines: Vec<(&str, Vec<(f64, f64)>)> = self
            .variants()
            .into_iter()
            .map(|v| (v, self.binned(v)))
            .collect();
        let top = lines
            .iter()
            .flat_map(|(_, l)| l.iter().map(|p| p.1))
            .fold(1.0, f64::max)
            * 1.1;
        let root = canvas(path, 1000, 600);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{}: gas per message at the linker's layout ({BACKEND})",
                    self.case
                ),
                (FONT, 24),
            )
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(0f64..last, 0f64..top)
            .map_err(draw_err(path))?;
        chart
            .configure_mesh()
            .x_desc("message (0 = init)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc(format!("gas per message (mean of {BIN})"))
            .y_label_formatter(&|y| short(*y))
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 18))
            .draw()
            .map_err(draw_err(path))?;
        for (v, points) in lines {
            // The reproduction in red: its registry colour is an olive close to gear-next's.
            let c = if v == self.variant {
                RGBColor(200, 0, 0)
            } else {
                colour(v)?
            };
            chart
                .draw_series(LineSeries::new(points, c.stroke_width(3)))
                .map_err(draw_err(path))?
                .label(v.to_owned())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(3))
                });
        }
        if let Some(first) = self.first_wrong() {
            let x = first as f64;
            chart
                .draw_series(LineSeries::new(
                    [(x, 0.0), (x, top)],
                    BLACK.mix(0.6).stroke_width(1),
                ))
                .map_err(draw_err(path))?
                .label(format!(
                    "{}: first wrong outcome (message {first})",
                    self.variant
                ))
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(1))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FONT, 16))
            .draw()
            .map_err(draw_err(path))?;
        root.present().map_err(draw_err(path))
    }
}
