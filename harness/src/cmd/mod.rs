//! One module per subcommand.

pub mod bench;
pub mod check;
pub mod heap_skip;
pub mod layout;
pub mod layout_model;
pub mod measure;
pub mod pick;
pub mod replay;
pub mod report;
pub mod reproduce;
pub mod scale;
pub mod ship;
pub mod sizes;
pub mod sweep_check;
pub mod verdict;

/// `--layouts N`: 1 (the linker's layout only) or more. Its argument takes negative numbers
/// (`allow_negative_numbers`), so `--layouts -1` gets this message instead of the parser's
/// "unexpected argument '-1'"; the upper bound is the sweep's own (`analyse::layout`).
pub fn layouts(text: &str) -> Result<u32, String> {
    match text.trim().parse::<i64>() {
        Ok(n) if n >= 1 => u32::try_from(n).map_err(|_| format!("{n} layouts are far too many")),
        Ok(n) => Err(format!(
            "{n} is not a number of layouts: give 1 (the linker's layout only) or more"
        )),
        Err(e) => Err(format!(
            "`{text}`: {e}; give a number of layouts such as 4 or 16"
        )),
    }
}

/// A count on the command line (`--repeat`, `--fuel-stride`, `--layout-step`): a whole number,
/// 1 or more; negative numbers reach this message, as for [`layouts`].
pub fn count(text: &str) -> Result<u32, String> {
    match text.trim().parse::<i64>() {
        Ok(n) if n >= 1 => u32::try_from(n).map_err(|_| format!("{n} is far too large")),
        Ok(n) => Err(format!("{n}: give a whole number, 1 or more")),
        Err(e) => Err(format!("`{text}`: {e}; give a whole number, 1 or more")),
    }
}

/// [`count`] as an index step (`--fuel-stride`).
pub fn stride(text: &str) -> Result<usize, String> {
    count(text).map(|n| n as usize)
}

/// Which cases and variants a command runs; shared by `measure` and `bench`.
#[derive(clap::Args)]
pub struct Selection {
    /// Comma-separated case ids, `default`, `corpus`, `programs` (both: the ship verdict's 17),
    /// or `all` (adds the on-demand cases).
    #[arg(long, default_value = "default")]
    pub cases: String,
    /// Comma-separated variant ids, or `all`.
    #[arg(long, default_value = "all")]
    pub variants: String,
}

impl Selection {
    /// The cases and variants, or an error naming an unknown one and the known ones.
    pub fn resolve(
        &self,
    ) -> anyhow::Result<(
        Vec<&'static galloc_lab::run::scenario::Case>,
        Vec<&'static galloc_variants::Variant>,
    )> {
        let variants = galloc_variants::select(&self.variants)?;
        // A reproduction goes wrong by design: its run would stop at its first wrong outcome.
        if let Some(v) = variants.iter().find(|v| v.reproduces.is_some()) {
            anyhow::bail!(
                "`{}` is a reproduction, not a candidate: its runs go wrong by design, so `lab \
                 reproduce {}` measures it on its case (`{}`), counting what goes wrong",
                v.id,
                v.id,
                v.reproduces.unwrap_or_default()
            );
        }
        Ok((galloc_lab::run::scenario::select(&self.cases)?, variants))
    }
}

/// The result set in `dir`, read whole: under a shared lock on the directory (a command
/// writing it finishes first, and none starts until the lock is dropped), after checking that
/// every results file is exactly as the lab wrote it ([`galloc_lab::store::metadata::verify`]), and
/// complete ([`galloc_lab::report::inputs::Inputs::read_complete`]; `full`: every variant and default
/// case, as `results/` holds).
pub fn read_results(
    ws: &galloc_lab::build::workspace::Workspace,
    dir: &std::path::Path,
    full: bool,
) -> anyhow::Result<(
    galloc_lab::store::lock::Lock,
    galloc_lab::report::inputs::Inputs,
)> {
    let lock = galloc_lab::store::checked(ws, dir)?;
    let inputs = galloc_lab::report::inputs::Inputs::read_complete(dir, full)?;
    Ok((lock, inputs))
}
