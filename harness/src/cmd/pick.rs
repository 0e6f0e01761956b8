//! `lab pick CRATE SCENARIO`: the variant a program should use, in one answer.
//!
//! It measures the program as `lab measure --program` does (every variant, the layout sweep),
//! on gtest by default (gas: what Gear charges), then applies the rule the report applies to
//! the lab's own cases ([`layout::recommended`]): of the variants cheaper than `shipping` by
//! more than the minimum effect ([`layout::BAND_PCT`]) at every heap layout, the one with the
//! lowest median difference; `shipping` (change nothing) when none is. A difference whose sign
//! depends on the layout is not a reason to switch: the author's program will have its own
//! layout. Never the floor, nor a variant that fails one of the lab's own tests (the registry's
//! `fails`): the answer names what it left out and why.

use anyhow::{bail, Result};
use galloc_lab::analyse::layout::{self, Summary, Verdict, SHIPPING};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::results::{read_csv, LayoutRow};
use galloc_lab::run::backend::BackendKind;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The program's crate directory (or its `Cargo.toml`).
    program: PathBuf,
    /// Its scenario file (docs/your-program.md, "Measuring another program").
    scenario: PathBuf,
    /// The variants to choose among, comma-separated, or `all`; `shipping` is always measured
    /// (every figure is relative to it).
    #[arg(long, default_value = "all")]
    variants: String,
    /// The backend whose unit decides: `gtest` (gas, Gear's own charge) or `wasmtime` (fuel).
    #[arg(long, default_value = "gtest")]
    backend: String,
    /// Heap layouts to run each build at (docs/verdicts.md, "Verdicts across heap layouts").
    #[arg(long, default_value_t = layout::POINTS)]
    layouts: u32,
    /// Where the measurement is written (default: `target/lab/programs/<scenario name>/`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// No progress bar and no build log.
    #[arg(long)]
    quiet: bool,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let backend = match BackendKind::select(&args.backend)?.as_slice() {
        [one] if *one != BackendKind::Node => *one,
        _ => bail!(
            "--backend {}: give one embedded backend, `gtest` (gas) or `wasmtime` (fuel)",
            args.backend
        ),
    };
    let mut variants: Vec<&str> = galloc_variants::select(&args.variants)?
        .iter()
        .map(|v| v.id)
        .collect();
    if !variants.contains(&SHIPPING) {
        variants.insert(0, SHIPPING);
    }
    if variants.len() < 2 {
        bail!(
            "--variants {}: name at least one variant besides shipping",
            args.variants
        );
    }
    let case = galloc_lab::build::external::case_of(&args.scenario)?.to_owned();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| galloc_lab::build::external::default_out(ws, &case));
    super::measure::run(
        ws,
        super::measure::Args::program(
            &args.program,
            &args.scenario,
            &variants.join(","),
            backend.name(),
            args.layouts,
            &out,
            args.quiet,
        ),
    )?;

    // Read as `measure` wrote it: no other command half way through writing there, every file
    // as the lab recorded it.
    let _lock = super::checked(ws, &out)?;
    let path = out.join(backend.name()).join("layouts.csv");
    let rows: Vec<LayoutRow> = read_csv(&path)?;
    let summaries = layout::summarise(&rows);
    let pick = Pick::of(&summaries, backend.name(), &case, &variants)?;
    println!(
        "{}",
        pick.answer(&case, backend, args.layouts, &ws.root().join("allocator"))
    );
    Ok(())
}

/// The answer, and the figures behind it.
#[derive(Debug, PartialEq)]
pub struct Pick<'a> {
    /// What to use: a variant id, or `shipping` (change nothing).
    pub variant: &'a str,
    /// Its (or, for `shipping`, the best other median's, excluded variants included)
    /// difference to shipping: median, lowest, highest, in percent; and that variant and its
    /// verdict.
    pub figures: Option<(&'a str, (f64, f64, f64), Verdict)>,
    /// The measured variants the lab never recommends, each with why.
    pub excluded: Vec<(&'a str, String)>,
    /// Variants compared.
    pub compared: usize,
}

impl<'a> Pick<'a> {
    /// The pick among `variants` on one backend and case.
    pub fn of(
        summaries: &'a std::collections::BTreeMap<(String, String, String), Summary>,
        backend: &str,
        case: &str,
        variants: &[&'a str],
    ) -> Result<Self> {
        let of = |v: &str| summaries.get(&(backend.to_owned(), case.to_owned(), v.to_owned()));
        for v in variants {
            if of(v).is_none() {
                bail!("no {backend} result for {case} on {v}: the measurement is incomplete");
            }
        }
        let variant = layout::recommended(summaries, backend, case);
        let figures_of = |(key, s): (&'a (String, String, String), &'a Summary)| {
            s.vs_shipping.map(|d| (key.2.as_str(), d, s.verdict))
        };
        let figures = if variant == SHIPPING {
            // The closest any variant came: the lowest median, an excluded one included (the
            // answer then says why it is not the pick).
            summaries
                .iter()
                .filter(|((b, c, v), _)| b == backend && c == case && v != SHIPPING)
                .filter_map(figures_of)
                .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0).then(a.0.cmp(b.0)))
        } else {
            summaries
                .get_key_value(&(backend.to_owned(), case.to_owned(), variant.to_owned()))
                .and_then(figures_of)
        };
        let excluded = variants
            .iter()
            .filter_map(|v| galloc_variants::never_recommended(v).map(|why| (*v, why)))
            .collect();
        Ok(Pick {
            variant,
            figures,
            excluded,
            compared: variants.len(),
        })
    }

    /// What `lab pick` prints; `allocator` is the lab's galloc, for the patch line.
    pub fn answer(
        &self,
        case: &str,
        backend: BackendKind,
        layouts: u32,
        allocator: &std::path::Path,
    ) -> String {
        let unit = match backend {
            BackendKind::Gtest => "gas",
            _ => "fuel",
        };
        let band = layout::BAND_PCT;
        let pct = |x: f64| format!("{x:+.2} %");
        let mut out = format!(
            "pick for {case}: {} variants, {unit} on {}, {layouts} heap layouts, minimum effect \
             {band} %\n",
            self.compared,
            backend.name()
        );
        match (self.variant, self.figures) {
            (SHIPPING, best) => {
                out.push_str(&format!(
                    "  use shipping (gstd's own galloc): no variant the lab recommends is cheaper \
                     by more than {band} % at every layout\n"
                ));
                if let Some((v, (m, lo, hi), verdict)) = best {
                    let excluded = self.excluded.iter().find(|(e, _)| *e == v);
                    out.push_str(&format!(
                        "  closest: {v}, {} vs shipping at the median ({} … {}), {}\n",
                        pct(m),
                        pct(lo),
                        pct(hi),
                        match verdict {
                            Verdict::Better =>
                                format!("cheaper by more than {band} % at every layout"),
                            Verdict::Worse =>
                                format!("dearer by more than {band} % at every layout"),
                            Verdict::Same => format!("within {band} % at every layout"),
                            _ => "within layout noise".to_owned(),
                        }
                    ));
                    if let Some((_, why)) = excluded {
                        out.push_str(&format!("    but never recommended: {why}\n"));
                    }
                }
                self.push_excluded(&mut out);
                out.push_str("  Cargo.toml: nothing to change\n");
            }
            (v, figures) => {
                if let Some((_, (m, lo, hi), _)) = figures {
                    out.push_str(&format!(
                        "  use {v}: {} vs shipping at the median ({} … {}), cheaper by more than \
                         {band} % at every layout\n",
                        pct(m),
                        pct(lo),
                        pct(hi)
                    ));
                }
                self.push_excluded(&mut out);
                out.push_str(&format!(
                    "  Cargo.toml, both lines (docs/your-program.md, \"Using a variant in your program\"):\n    \
                     [dependencies] galloc = {{ version = \"=2.0.0\", features = [\"{v}\"] }}\n    \
                     [patch.crates-io] galloc = {{ path = {:?} }}\n",
                    allocator.display().to_string()
                ));
            }
        }
        out
    }

    /// The line naming what was measured but never recommended, and why.
    fn push_excluded(&self, out: &mut String) {
        for (v, why) in &self.excluded {
            out.push_str(&format!("  not recommended: {v} ({why})\n"));
        }
    }
}
