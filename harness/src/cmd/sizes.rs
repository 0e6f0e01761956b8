//! `lab sizes`: each variant's allocator code size, and a check that it keeps Gear's rules.

use anyhow::{bail, Result};
use galloc_lab::build::artifact::{build, BuildRequest, PostProcess};
use galloc_lab::build::wasm::check_gear_rules;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::results::{merge, read_csv, write_csv, CodeSizeRow};
use galloc_variants::{select, REFERENCE};

/// The program that links the allocator alone.
const PACKAGE: &str = "galloc-wasm-size";
/// What the allocator may import from Gear: its page syscalls, and with the probe the gas
/// counter and `gr_reply` (its `state` export answers with the records).
const IMPORTS: &[&str] = &["env.alloc", "env.free", "env.free_range"];
const PROBE_IMPORTS: &[&str] = &["env.gr_gas_available", "env.gr_reply"];
const FILE: &str = "code-size.csv";

#[derive(clap::Args)]
pub struct Args {
    /// Comma-separated variant ids, or `all`.
    #[arg(long, default_value = "all")]
    variants: String,
    /// Compare with the committed results/code-size.csv instead of rewriting it; fails if
    /// any size or hash differs.
    #[arg(long)]
    check: bool,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let variants = select(&args.variants)?;
    let mut rows = Vec::new();
    for variant in &variants {
        for probe in [false, true] {
            let req = BuildRequest {
                package: PACKAGE,
                variant,
                probe,
                post: PostProcess::None,
                layout_pad: 0,
                layout_offset: 0,
                heap_skip: 0,
                extra_features: "",
                external: None,
            };
            eprint!("building {PACKAGE} for {:<24}", req.config());
            let artifact = build(ws, req)?;
            let info = artifact.inspect()?;
            let allowed: Vec<&str> = IMPORTS
                .iter()
                .chain(if probe { PROBE_IMPORTS } else { &[] })
                .copied()
                .collect();
            check_gear_rules(&info, &allowed).map_err(|e| {
                e.context(format!("{} breaks Gear's rules", artifact.path.display()))
            })?;
            eprintln!("{:>8} B ({} B code)", artifact.bytes.len(), info.code_bytes);
            rows.push(CodeSizeRow {
                package: PACKAGE.to_owned(),
                variant: variant.id.to_owned(),
                probe,
                wasm_bytes: artifact.bytes.len() as u64,
                code_bytes: info.code_bytes,
                data_bytes: info.data_bytes,
                imports: info.function_imports.join(";"),
                sha256: artifact.sha256,
            });
        }
    }
    print_table(&rows);

    let path = ws.results_dir().join(FILE);
    if args.check {
        let committed: Vec<CodeSizeRow> = read_csv(&path)?;
        let moved: Vec<String> = rows
            .iter()
            .filter_map(|row| {
                let old = committed
                    .iter()
                    .find(|c| c.variant == row.variant && c.probe == row.probe);
                match old {
                    Some(old) if old == row => None,
                    Some(old) => Some(format!(
                        "{}{}: {} B -> {} B",
                        row.variant,
                        if row.probe { "+probe" } else { "" },
                        old.wasm_bytes,
                        row.wasm_bytes
                    )),
                    None => Some(format!("{}: not in {FILE}", row.variant)),
                }
            })
            .collect();
        if !moved.is_empty() {
            bail!(
                "code size differs from results/{FILE}:\n  {}\nif the change is intended, \
                 run `just sizes` and commit results/{FILE}",
                moved.join("\n  ")
            );
        }
        eprintln!("code sizes match results/{FILE}");
    } else {
        // Like every results file, through a staged copy under the results' lock, with the
        // metadata's hashes (which `report`, `check` and `verdict` hold the files to) updated.
        let results = ws.results_dir();
        let staged = galloc_lab::store::publish::Staged::begin(ws, &results)?;
        let order = |id: &str| galloc_variants::VARIANTS.iter().position(|v| v.id == id);
        let copy = staged.dir.join(FILE);
        let all = merge(&copy, rows, |r: &CodeSizeRow| (order(&r.variant), r.probe))?;
        write_csv(&copy, &all)?;
        let has_metadata = staged.dir.join(galloc_lab::store::metadata::FILE).exists();
        if has_metadata {
            galloc_lab::store::metadata::write_for(ws.root(), &staged.dir, "just compare", None)?;
        }
        staged.commit()?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn print_table(rows: &[CodeSizeRow]) {
    let find = |id: &str, probe: bool| rows.iter().find(|r| r.variant == id && r.probe == probe);
    let reference = find(REFERENCE, false);
    println!(
        "| variant | code bytes | vs {REFERENCE} | data bytes | .wasm bytes | .wasm with probe |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for row in rows.iter().filter(|r| !r.probe) {
        let delta = reference.map_or("n/a".into(), |base| {
            format!(
                "{:+.1}%",
                100.0 * (row.code_bytes as f64 / base.code_bytes as f64 - 1.0)
            )
        });
        let probed = find(&row.variant, true).map_or("n/a".into(), |r| r.wasm_bytes.to_string());
        println!(
            "| {} | {} | {delta} | {} | {} | {probed} |",
            row.variant, row.code_bytes, row.data_bytes, row.wasm_bytes
        );
    }
}
