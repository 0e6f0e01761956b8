//! `lab verdict A,B`: any two variants compared across the heap layouts, case by case, from
//! the results files (running nothing): the paired figures behind every comparison the README
//! states.

use anyhow::{bail, Context, Result};
use galloc_lab::analyse::layout::{self, Verdict};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::run::backend::BackendKind;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Two variant ids, `A,B`: A is judged against B at each layout both were run at.
    pair: String,
    /// The results directory (default: `results/`).
    #[arg(long)]
    results: Option<PathBuf>,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let Some((a, b)) = args.pair.split_once(',') else {
        bail!(
            "`{}`: give two variants as A,B (e.g. granularity-8k,no-buffer)",
            args.pair
        );
    };
    let (a, b) = (
        galloc_variants::find(a.trim())?,
        galloc_variants::find(b.trim())?,
    );
    let dir = args.results.unwrap_or_else(|| ws.results_dir());
    let full = std::path::absolute(&dir).ok() == Some(ws.results_dir());
    let (_lock, inputs) = super::read_results(ws, &dir, full)
        .with_context(|| format!("reading the results in {}", dir.display()))?;
    let mut rows = 0;
    for backend in [BackendKind::Gtest, BackendKind::Wasmtime] {
        let mut cases: Vec<&str> = Vec::new();
        for t in inputs.totals.iter().filter(|t| t.backend == backend.name()) {
            if !cases.contains(&t.case.as_str()) {
                cases.push(&t.case);
            }
        }
        for case in cases {
            let pairs = layout::pairs(&inputs.layouts, backend.name(), case, a.id, b.id);
            if pairs.is_empty() {
                continue;
            }
            if rows == 0 {
                println!(
                    "{} vs {}, by the ship rule's words: {}.\n",
                    a.id,
                    b.id,
                    Verdict::legend(layout::BAND_PCT).replace("**", "")
                );
                println!(
                    "| backend | case | {} vs {}: mean | 95 % interval | median | lowest … highest | word | layouts |",
                    a.id, b.id
                );
                println!("| --- | --- | ---: | ---: | ---: | ---: | --- | ---: |");
            }
            let mut pct: Vec<f64> = pairs.iter().copied().map(layout::pct).collect();
            let median = layout::median(&mut pct);
            // The report's word for each pair, here too (docs/verdicts.md).
            let (mean, (lo, hi)) = Verdict::interval(&pairs).expect("pairs");
            let verdict = Verdict::of_pairs(&pairs, layout::BAND_PCT).name();
            // One layout is a point: no interval to print (and the word is `uncertain`).
            let interval = if pairs.len() < 2 {
                "none (one layout)".to_owned()
            } else {
                format!("{lo:+.2} … {hi:+.2}%")
            };
            println!(
                "| {} | {case} | {mean:+.2}% | {interval} | {median:+.2}% | {:+.2}% … {:+.2}% | {verdict} | {} |",
                backend.name(),
                pct[0],
                pct[pct.len() - 1],
                pairs.len()
            );
            rows += 1;
        }
    }
    if rows > 0 {
        anatomy(ws, &dir, &inputs, a.id, b.id)?;
    }
    if rows == 0 {
        // The recipe writes `results/`; any other directory is measured into with `--out`.
        use galloc_lab::results::metadata::quote;
        // What the directory measures decides the command: the lab's cases, or the outside
        // program and scenarios its metadata records.
        let program = galloc_lab::results::metadata::read(&dir).and_then(|m| m.program);
        let measure = match (full, program) {
            (true, _) => format!("just compare {},{}", a.id, b.id),
            (false, Some(p)) => format!(
                "lab measure {} --variants {},{} --out {}",
                p.measure_args(|_| true),
                a.id,
                b.id,
                quote(&dir.display().to_string())
            ),
            (false, None) => format!(
                "lab measure --variants {},{} --out {}",
                a.id,
                b.id,
                quote(&dir.display().to_string())
            ),
        };
        bail!(
            "{} holds no layout where both {} and {} ran; measure them (`{measure}`)",
            dir.display(),
            a.id,
            b.id
        );
    }
    Ok(())
}

/// The pair's anatomy on gtest over the directory's cases: where A's change against B comes
/// from, by charge; or one line saying why there is none.
fn anatomy(
    ws: &Workspace,
    results: &std::path::Path,
    inputs: &galloc_lab::report::inputs::Inputs,
    a: &str,
    b: &str,
) -> Result<()> {
    use galloc_lab::report::anatomy::{table, LEGEND};
    // A variant the directory's messages price none of borrows the lab's own price.
    let anatomy =
        galloc_lab::report::anatomy_rows::anatomy_borrowing(&ws.results_dir(), inputs, &[a, b])?;
    let cases: Vec<&str> = galloc_lab::report::inputs::cases_on(&inputs.totals, "gtest")
        .into_iter()
        .filter(|c| !anatomy.shared(c, a, b).is_empty())
        .collect();
    println!();
    match anatomy.against(a, b, &cases) {
        Some(points) if !cases.is_empty() => {
            println!("Where the gas goes on gtest, {a} against {b}, in points:\n");
            print!("{}", table(a, b, &points));
            println!("\n{LEGEND}");
        }
        _ => println!(
            "No anatomy of {a} against {b}: no case has the fuel meter's page counts and the \
             code charge at a layout both ran on gtest (results written before the anatomy's \
             columns lack them; measuring again writes them)."
        ),
    }
    // First writes and writes after read trade (a page written first instead of read and then
    // written): how many pages the messages wrote and read at all says which moved.
    let fates: Vec<(&str, galloc_lab::analyse::anatomy::Fates, usize)> = cases
        .iter()
        .filter_map(|c| {
            let (f, n) = galloc_lab::analyse::anatomy::Fates::against(&inputs.layouts, c, a, b)?;
            Some((*c, f, n))
        })
        .collect();
    if !fates.is_empty() {
        println!(
            "\nPages by what the messages did with them (the fuel meter's counts, summed over a \
             run's messages, mean per layout), {a} against {b}:\n"
        );
        print!("{}", galloc_lab::report::anatomy::fates_table(a, b, &fates));
    }
    // Where the blocks land, by lifetime, from the traces at the linker's layout:
    // a message's temporaries on more pages are pages a message touches that it need not.
    let traces = results.join("traces");
    // A case without both traces is left out; a trace that is there must read.
    let of = |c: &str, v: &str| -> Result<Option<galloc_lab::analyse::anatomy::Lifetimes>> {
        let path = traces.join(format!("{c}-{v}.csv.zst"));
        if !path.is_file() {
            return Ok(None);
        }
        let trace = galloc_lab::results::trace::read(&path)?;
        Ok(Some(galloc_lab::analyse::anatomy::Lifetimes::of(&trace)))
    };
    let mut lifetimes: Vec<(&str, Vec<galloc_lab::analyse::anatomy::Lifetimes>)> = Vec::new();
    for c in &cases {
        if let (Some(x), Some(y)) = (of(c, a)?, of(c, b)?) {
            lifetimes.push((*c, vec![x, y]));
        }
    }
    if !lifetimes.is_empty() {
        println!(
            "\nWhere each message's blocks land, by lifetime (the traces at the linker's layout, \
             `results/traces/`; 16 KiB pages holding a block, summed over the messages): \
             temporaries are got and freed in the message, kept blocks got and still live at its \
             end, old blocks got earlier and freed or resized in it.\n"
        );
        print!(
            "{}",
            galloc_lab::report::anatomy::lifetimes_table(&[a, b], &lifetimes)
        );
    }
    // The prices the instructions part uses, whatever the layouts hold: the probe's messages
    // alone measure them.
    let price = |v: &str| {
        anatomy.prices.allocator.get(v).map_or_else(
            || "not measured".to_owned(),
            |p| {
                format!(
                    "{} gas a unit of fuel",
                    galloc_lab::report::tables::thousands(p.round() as u64)
                )
            },
        )
    };
    println!(
        "\nAllocator instruction prices (the median, over messages whose allocator calls \
         first-touch no page, of gtest's allocator gas over the fuel meter's allocator fuel): \
         {a} {}, {b} {}.",
        price(a),
        price(b)
    );
    Ok(())
}
