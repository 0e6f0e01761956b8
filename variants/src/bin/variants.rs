//! Prints the registry for scripts: `variants ids` (one per line; reproductions only with
//! `--all`: they are not tested or fuzzed as candidates), `variants table` (markdown),
//! `variants check ID...` (fails naming an unknown id).

use galloc_variants::{find, VARIANTS};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ids") => VARIANTS
            .iter()
            .filter(|v| v.reproduces.is_none() || args.get(1).is_some_and(|a| a == "--all"))
            .for_each(|v| println!("{}", v.id)),
        Some("table") => {
            println!("| id | label | origin | what it changes |");
            println!("| --- | --- | --- | --- |");
            for v in VARIANTS {
                println!(
                    "| `{}` | {} | {} | {} |",
                    v.id, v.label, v.origin, v.summary
                );
            }
        }
        Some("check") => {
            for id in &args[1..] {
                if let Err(e) = find(id) {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        _ => {
            eprintln!("usage: variants ids [--all] | table | check ID...");
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
