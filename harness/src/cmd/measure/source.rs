//! What writes a results directory, as its report and metadata say it: the `lab measure`
//! command that regenerates it and the outside program it measures.

use super::Args;
use anyhow::{Context, Result};
use galloc_lab::results::metadata::quote;
use galloc_lab::results::{LeftOutRow, MeasuredRow};
use galloc_lab::run::backend::BackendKind;
use galloc_lab::run::scenario;
use std::path::Path;

/// What writes a results directory, as its report and metadata say: the outside program it
/// measures, if any, and this run's options but the selection, which [`Source::command`] takes
/// from the directory's manifest.
#[derive(Clone, Debug)]
pub struct Source {
    pub program: Option<galloc_lab::store::metadata::ProgramSource>,
    /// The layout options, as given (empty for the defaults).
    options: String,
    /// The results directory, absolute.
    out: String,
}

impl Source {
    pub fn of(
        args: &Args,
        out: &Path,
        program: Option<&galloc_lab::store::metadata::ProgramSource>,
    ) -> Result<Source> {
        let abs = |p: &Path| -> Result<String> {
            Ok(std::path::absolute(p)
                .with_context(|| format!("{}: cannot resolve", p.display()))?
                .display()
                .to_string())
        };
        let program = program.cloned();
        let mut options = String::new();
        match args.layout_step {
            Some(step) => options.push_str(&format!(" --layout-step {step}")),
            None if args.layouts != galloc_lab::run::plan::POINTS => {
                options.push_str(&format!(" --layouts {}", args.layouts))
            }
            None => {}
        }
        if args.one_gear_page {
            options.push_str(" --one-gear-page");
        }
        if args.fuel_stride != galloc_lab::run::plan::FUEL_STRIDE {
            options.push_str(&format!(" --fuel-stride {}", args.fuel_stride));
        }
        if args.second_stride != galloc_lab::run::plan::SECOND_STRIDE {
            options.push_str(&format!(" --second-stride {}", args.second_stride));
        }
        if args.no_second_workload {
            options.push_str(" --no-second-workload");
        }
        if !args.allocator_features.is_empty() {
            options.push_str(&format!(
                " --allocator-features {}",
                args.allocator_features
            ));
        }
        Ok(Source {
            program,
            options,
            out: abs(out)?,
        })
    }

    /// The `lab measure` command that writes the directory as it is once this run is merged
    /// in: every case, variant and backend its manifest lists, and every backend and case it
    /// was asked for and left out (`left_out`: a backend the meter could not run is still
    /// asked for, so the command says what was asked and the report what was done), in the
    /// registry's order (two runs into one directory say the same whichever came last),
    /// absolute paths so that it runs from anywhere.
    pub fn command(&self, manifest: &[MeasuredRow], left_out: &[LeftOutRow]) -> String {
        let asked: Vec<MeasuredRow> = left_out
            .iter()
            .map(|r| MeasuredRow {
                backend: r.backend.clone(),
                case: r.case.clone(),
                variant: String::new(),
            })
            .collect();
        let listed = |ids: Vec<&str>, of: &dyn Fn(&MeasuredRow) -> &str| -> String {
            ids.into_iter()
                .filter(|id| manifest.iter().chain(&asked).any(|r| of(r) == *id))
                .collect::<Vec<_>>()
                .join(",")
        };
        let variants = listed(
            galloc_variants::VARIANTS.iter().map(|v| v.id).collect(),
            &|r| r.variant.as_str(),
        );
        let backends = listed(BackendKind::ALL.iter().map(|b| b.name()).collect(), &|r| {
            r.backend.as_str()
        });
        let what = match &self.program {
            // Every scenario the directory holds a case of, as the manifest lists them.
            Some(p) => p.measure_args(|case| manifest.iter().chain(&asked).any(|r| r.case == case)),
            None => format!(
                "--cases {}",
                listed(scenario::CASES.iter().map(|c| c.id).collect(), &|r| r
                    .case
                    .as_str())
            ),
        };
        format!(
            "lab measure {what} --variants {variants} --backends {backends}{} --out {}",
            self.options,
            quote(&self.out)
        )
    }

    /// This run's source with the scenarios the directory's metadata records (`recorded`) for
    /// cases this run did not send: the directory holds them all, so its command names them all.
    pub fn with_recorded(
        mut self,
        recorded: Option<&galloc_lab::store::metadata::ProgramSource>,
    ) -> Source {
        if let (Some(p), Some(r)) = (&mut self.program, recorded) {
            for (case, file) in &r.scenarios {
                p.scenarios
                    .entry(case.clone())
                    .or_insert_with(|| file.clone());
            }
        }
        self
    }
}
