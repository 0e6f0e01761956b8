//! `lab report`: re-renders `results/README.md`, `results/metadata.json` and the charts in
//! `images/` from the results files alone, without running anything (what `lab measure`
//! does at its end), once it has checked they are the files the lab wrote.

use anyhow::Result;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::store::metadata;
use galloc_lab::store::publish::{publish, Staged};
use std::path::PathBuf;

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
    let published = publish(ws, &staged.dir, &staged.images, &dir, None);
    let published = staged.explain(published)?;
    staged.commit()?;
    eprintln!("{}", published.wrote);
    Ok(())
}
