//! `lab ship`: what galloc should ship, judged on the default cases (`results/`) and the
//! corpus (`results/corpus/`) together, from the results files (running nothing): the table
//! the report opens with, the variant the rule names, and every variant against the design
//! target.

use anyhow::{Context, Result};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::report::ship_table;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The default cases' results (default: `results/`).
    #[arg(long)]
    results: Option<PathBuf>,
    /// The corpus's results (default: `corpus/` inside the results directory).
    #[arg(long)]
    corpus: Option<PathBuf>,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let results = args.results.unwrap_or_else(|| ws.results_dir());
    let corpus = args
        .corpus
        .unwrap_or_else(|| results.join(galloc_lab::results::CORPUS_DIR));
    for dir in [&results, &corpus] {
        if !dir.is_dir() {
            anyhow::bail!(
                "{}: no such results directory; `just compare` writes results/, `just corpus` \
                 results/corpus/",
                dir.display()
            );
        }
    }
    let _locks = [
        galloc_lab::store::checked(ws, &results)?,
        galloc_lab::store::checked(ws, &corpus)?,
    ];
    let _studies = galloc_lab::store::checked_studies(ws, &results)?;
    let ship = galloc_lab::report::inputs::ship(&results, &corpus).with_context(|| {
        format!(
            "judging the variants on {} and {}",
            results.display(),
            corpus.display()
        )
    })?;
    let mut out = ship_table::markdown(&ship);
    ship_table::anatomy(&mut out, &ship);
    // The lab's own design against the target it must meet (the report prints it under the
    // table too).
    ship_table::target(&mut out, &ship);
    print!("{out}");
    Ok(())
}
