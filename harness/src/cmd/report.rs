//! `lab report`: re-renders `results/README.md`, `results/metadata.json` and the charts in
//! `images/` from the results files alone, without running anything (what `lab measure`
//! does at its end).

use anyhow::Result;
use galloc_lab::report::Inputs;
use galloc_lab::workspace::Workspace;
use galloc_lab::{charts, metadata};
use std::path::Path;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(ws: &Workspace, _args: Args) -> Result<()> {
    publish(ws, &ws.results_dir())?;
    Ok(())
}

/// Writes the metadata, the charts and the report for the results in `dir`, and returns what
/// they were made from. The charts of `results/` go to the top-level `images/`; those of
/// any other results directory (`just check`'s) to its own `images/`.
pub fn publish(ws: &Workspace, dir: &Path) -> Result<Inputs> {
    metadata::write(ws.root(), dir)?;
    let inputs = Inputs::read(dir)?;
    let (images, link) = if dir == ws.results_dir() {
        (ws.root().join("images"), "../images")
    } else {
        (dir.join("images"), "images")
    };
    let drawn = charts::draw(&inputs, &images)?;
    std::fs::write(dir.join("README.md"), inputs.markdown(link))?;
    eprintln!(
        "wrote {}/README.md, {}/{} and {} charts in {}",
        dir.display(),
        dir.display(),
        metadata::FILE,
        drawn.len(),
        images.display()
    );
    Ok(inputs)
}
