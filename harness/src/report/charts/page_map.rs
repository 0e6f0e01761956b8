//! `pages-<case>.png`: a page map. For one program, shipping and the lab's
//! design at the design's cheapest and dearest layout of the sweep: per message (x), every
//! 16 KiB Gear page it touched (y), coloured by what touched it first (the stack, static
//! data, the allocator's state, a block given out in this message or an earlier one), pale
//! where the message only read it. Where the heap starts shows as where the block colours
//! begin against the page rows, and a dear layout as a row more per message.

use super::{canvas, draw_err, FONT, W};
use crate::results::pages::GEAR_PAGE;
use crate::results::PageMapRow;
use crate::run::backend::wasmtime::PageKind;
use anyhow::{bail, Result};
use plotters::prelude::*;
use std::path::Path;

/// Height of the heading (title, key).
const HEAD_H: u32 = 92;
/// Height of one panel.
const PANEL_H: u32 = 300;

/// A kind's colour; pale (mixed with white) where the message only read the page.
pub fn kind_colour(kind: PageKind) -> RGBColor {
    match kind {
        PageKind::Stack => RGBColor(170, 170, 170),
        PageKind::Static => RGBColor(31, 119, 180),
        PageKind::AllocatorState => RGBColor(214, 39, 40),
        PageKind::NewBlock => RGBColor(44, 160, 44),
        PageKind::OldBlock => RGBColor(246, 166, 0),
        PageKind::Heap => RGBColor(148, 103, 189),
    }
}

fn pale(c: RGBColor) -> RGBColor {
    let mix = |v: u8| ((u16::from(v) + 2 * 255) / 3) as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

fn kind_of(name: &str) -> Option<PageKind> {
    PageKind::ALL.into_iter().find(|k| k.name() == name)
}

/// Draws `case`'s page map from its rows; `panels` are the (variant, layout) pairs in order
/// (two columns: variants; rows: layouts).
pub fn page_map(
    rows: &[PageMapRow],
    case: &str,
    variants: &[&str],
    layouts: &[&str],
    path: &Path,
) -> Result<()> {
    super::load_font()?;
    let rows: Vec<&PageMapRow> = rows.iter().filter(|r| r.case == case).collect();
    if rows.is_empty() {
        bail!("no page map rows for {case}");
    }
    let (lo, hi) = rows.iter().fold((u32::MAX, 0), |(lo, hi), r| {
        (lo.min(r.page), hi.max(r.page))
    });
    let messages = rows.iter().map(|r| r.message).max().unwrap_or(0) + 1;
    let root = canvas(path, W, HEAD_H + PANEL_H * layouts.len() as u32);
    let (head, body) = root.split_vertically(HEAD_H);
    head.draw(&Text::new(
        format!(
            "{case}: the 16 KiB Gear pages each message touches, by what touched them first \
             (wasmtime meter, probe builds)"
        ),
        (14, 8),
        (FONT, 19),
    ))
    .map_err(draw_err(path))?;
    head.draw(&Text::new(
        "x: message (0 is init); y: Gear page; pale: read only. Columns: variants; rows: the \
         lab's design's cheapest and dearest layout of the sweep (gtest)",
        (14, 34),
        (FONT, 14),
    ))
    .map_err(draw_err(path))?;
    let mut x = 14;
    for kind in PageKind::ALL {
        head.draw(&Rectangle::new(
            [(x, 62), (x + 16, 76)],
            kind_colour(kind).filled(),
        ))
        .map_err(draw_err(path))?;
        head.draw(&Text::new(kind.name(), (x + 22, 61), (FONT, 15)))
            .map_err(draw_err(path))?;
        x += 44 + 8 * kind.name().len() as i32;
    }
    let panels = body.split_evenly((layouts.len(), variants.len()));
    let mut i = 0;
    for layout in layouts {
        for variant in variants {
            let area = &panels[i];
            i += 1;
            let mine: Vec<&&PageMapRow> = rows
                .iter()
                .filter(|r| r.variant == *variant && r.layout == *layout)
                .collect();
            let Some(first) = mine.first() else {
                continue;
            };
            let charged = mine
                .iter()
                .filter(|r| r.kind != PageKind::Stack.name())
                .count();
            let caption = format!(
                "{variant}, {layout} layout (+{} KiB; heap base {} B into its page): {:.2} \
                 pages/msg",
                first.offset / 1024,
                first.heap_base % GEAR_PAGE,
                charged as f64 / f64::from(messages)
            );
            let mut chart = ChartBuilder::on(area)
                .caption(caption, (FONT, 13))
                .margin(8)
                .x_label_area_size(22)
                .y_label_area_size(36)
                .build_cartesian_2d(
                    0f64..f64::from(messages),
                    f64::from(lo) - 0.5..f64::from(hi) + 0.5,
                )
                .map_err(draw_err(path))?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_labels(6)
                .y_labels((hi - lo + 1).min(12) as usize)
                .x_label_formatter(&|v| format!("{v:.0}"))
                .y_label_formatter(&|v| format!("{v:.0}"))
                .draw()
                .map_err(draw_err(path))?;
            chart
                .draw_series(mine.iter().map(|r| {
                    let kind = kind_of(&r.kind).unwrap_or(PageKind::Heap);
                    let c = if r.written {
                        kind_colour(kind)
                    } else {
                        pale(kind_colour(kind))
                    };
                    let (m, p) = (f64::from(r.message), f64::from(r.page));
                    Rectangle::new([(m, p - 0.45), (m + 1.0, p + 0.45)], c.filled())
                }))
                .map_err(draw_err(path))?;
        }
    }
    root.present().map_err(draw_err(path))?;
    Ok(())
}
