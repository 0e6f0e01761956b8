//! One module per subcommand.

pub mod bench;
pub mod check;
pub mod measure;
pub mod pick;
pub mod replay;
pub mod report;
pub mod sizes;
pub mod sweep_check;
pub mod verdict;

/// Which cases and variants a command runs; shared by `measure` and `bench`.
#[derive(clap::Args)]
pub struct Selection {
    /// Comma-separated case ids, `default`, or `all` (adds the on-demand cases).
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
        Vec<&'static galloc_lab::scenario::Case>,
        Vec<&'static galloc_variants::Variant>,
    )> {
        Ok((
            galloc_lab::scenario::select(&self.cases)?,
            galloc_variants::select(&self.variants)?,
        ))
    }
}
