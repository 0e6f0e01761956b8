//! `lab report`: re-renders `results/README.md` from the results files alone, without
//! running anything (what `lab measure` does at its end).

use anyhow::Result;
use galloc_lab::report::Inputs;
use galloc_lab::workspace::Workspace;

#[derive(clap::Args)]
pub struct Args {}

pub fn run(ws: &Workspace, _args: Args) -> Result<()> {
    let dir = ws.results_dir();
    let inputs = Inputs::read(&dir)?;
    std::fs::write(dir.join("README.md"), inputs.markdown())?;
    eprintln!("wrote results/README.md from results/*.csv");
    Ok(())
}
