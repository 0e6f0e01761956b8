//! `lab report`: re-renders `results/README.md`, `results/metadata.json` and the charts in
//! `images/` from the results files alone, without running anything (what `lab measure`
//! does at its end), once it has checked they are the files the lab wrote; the verdict
//! columns of `totals.csv` are judged again first, so a changed rule needs no run.

use anyhow::Result;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::results;
use galloc_lab::store::metadata;
use galloc_lab::store::publish::{publish, Staged};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// The results directory to render (default: the committed `results/`, whose charts go
    /// to the top-level `images/`; any other directory gets its own `images/`).
    #[arg(long)]
    results: Option<PathBuf>,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let dir = args.results.unwrap_or_else(|| ws.results_dir());
    if !dir.is_dir() {
        anyhow::bail!(
            "{}: no such results directory; `just compare` writes results/",
            dir.display()
        );
    }
    let dir = std::path::absolute(&dir)?;
    let staged = Staged::begin(ws, &dir)?;
    // The report is rendered from these files: they must be the ones the lab wrote.
    metadata::verify(&dir)?;
    // The verdicts are judged again first (a changed rule needs no run), then rendered.
    let published =
        rejudge(&staged.dir).and_then(|()| publish(ws, &staged.dir, &staged.images, &dir, None));
    let published = staged.explain(published)?;
    staged.commit()?;
    eprintln!("{}", published.wrote);
    Ok(())
}

/// Judges again: re-derives the layout columns of every backend's `totals.csv` in `dir` (median, range, the
/// difference to shipping and the verdict) from its `layouts.csv`, as `lab measure` does: they
/// are a function of the layout rows and the rule (the band, which verdicts can be re-judged
/// by without running anything). A backend without both files is left as it is; the report's
/// completeness check names what is missing.
fn rejudge(dir: &Path) -> Result<()> {
    for backend in galloc_lab::run::backend::BackendKind::ALL {
        let (totals_at, layouts_at) = (
            dir.join(backend.name()).join("totals.csv"),
            dir.join(backend.name()).join("layouts.csv"),
        );
        if !totals_at.exists() || !layouts_at.exists() {
            continue;
        }
        let mut totals: Vec<results::TotalRow> = results::read_csv(&totals_at)?;
        let layouts: Vec<results::LayoutRow> = results::read_csv(&layouts_at)?;
        let before = totals.clone();
        galloc_lab::analyse::layout::fill(&mut totals, &layouts);
        if totals != before {
            results::write_csv(&totals_at, &totals)?;
        }
    }
    Ok(())
}
