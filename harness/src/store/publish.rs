//! A result set published: its working copy staged under the lock, its metadata, charts and
//! report written from its rows (which it never changes), then moved into place all together
//! (`lab measure`, `lab report` and every command that writes results).

use crate::build::workspace::Workspace;
use crate::report::inputs::Inputs;
use crate::report::{charts, document};
use crate::results;
use crate::store::metadata;
use crate::store::staging::Staging;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// A results directory and its charts, staged (see [`Staging`]).
pub struct Staged {
    staging: Staging,
    /// The working copy of the results directory.
    pub dir: PathBuf,
    /// The working copy of its charts' directory.
    pub images: PathBuf,
    real: PathBuf,
    real_images: PathBuf,
}

impl Staged {
    /// Copies the results in `real` (absolute) and their charts for a command to work on.
    pub fn begin(ws: &Workspace, real: &Path) -> Result<Staged> {
        let images = images_of(ws, real);
        let real_images = images.clone();
        let dirs = staged_dirs(ws, real);
        let staging = Staging::begin(
            ws.root(),
            &dirs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        )?;
        let dir = staging.dir(real).to_path_buf();
        let images = match images.strip_prefix(real) {
            Ok(rel) => dir.join(rel),
            Err(_) => staging.dir(&images).to_path_buf(),
        };
        Ok(Staged {
            staging,
            dir,
            images,
            real: real.to_path_buf(),
            real_images,
        })
    }

    /// `result` with the working copies' paths in its error replaced by the real ones, so a
    /// message names the file a person can open.
    pub fn explain<T>(&self, result: Result<T>) -> Result<T> {
        result.map_err(|e| {
            let mut text = format!("{e:#}");
            for (copy, real) in [(&self.dir, &self.real), (&self.images, &self.real_images)] {
                text = text.replace(&*copy.to_string_lossy(), &real.to_string_lossy());
            }
            anyhow::anyhow!(text)
        })
    }

    /// Moves what changed into place.
    pub fn commit(self) -> Result<()> {
        self.staging.commit().map(drop)
    }
}

/// The directories a command writing the results in `dir` writes: `dir`, and its charts'
/// directory unless that is inside it (a directory's own `images/` goes with it).
pub fn staged_dirs(ws: &Workspace, dir: &Path) -> Vec<PathBuf> {
    let images = images_of(ws, dir);
    if images.starts_with(dir) {
        vec![dir.to_path_buf()]
    } else {
        vec![dir.to_path_buf(), images]
    }
}

/// Where the charts of the results in `dir` go: the top-level `images/` for `results/`, the
/// directory's own `images/` otherwise.
pub fn images_of(ws: &Workspace, dir: &Path) -> PathBuf {
    if dir == ws.results_dir() {
        ws.root().join("images")
    } else {
        dir.join("images")
    }
}

/// The ship verdict for the lab's own results (`real`, `dir` its staged copy), when the corpus
/// has been measured into its `corpus/` (`just corpus`): read under its lock, once its files
/// are checked against their hashes. Decided by what the directory holds, not where it is: a
/// copy of `results/` renders the same verdict. `None` for an outside program's results, or
/// before the corpus has been measured (the report then says so).
fn ship_verdict(
    ws: &Workspace,
    dir: &Path,
    real: &Path,
    inputs: &Inputs,
) -> Result<Option<crate::analyse::ship::Ship>> {
    let corpus = real.join(crate::results::CORPUS_DIR);
    let outside = metadata::read(dir).is_some_and(|m| m.program.is_some());
    if outside || !corpus.join(results::MANIFEST).exists() {
        return Ok(None);
    }
    let _lock = crate::store::checked(ws, &corpus)?;
    let _studies = crate::store::checked_studies(ws, real)?;
    let mut ship = crate::report::inputs::ship_given(dir, &corpus, Some(inputs))?;
    // The scale cases sit beside the results, as the corpus does: read where they are.
    ship.scale = crate::report::inputs::scale_standing(real)?;
    // So does the layout study; its rules are judged on the sweep being published.
    ship.layout = crate::report::layout_model::study(real, &[dir, &corpus])?;
    Ok(Some(ship))
}

/// What [`publish`] made: the inputs, and the line that says what was written, for the
/// caller to print once it has committed (before that nothing has been written where the
/// line says).
pub struct Published {
    pub inputs: Inputs,
    pub wrote: String,
}

/// Writes the metadata, the charts and the report for the results in `dir` (a staged copy of
/// `real`), the charts into `images`, and returns what they were made from. Fails, naming what
/// is missing, on an incomplete result set (`results/` must hold every variant and case).
///
/// `given`: the command that wrote them now and the outside program measured, if any (`lab
/// measure`); `None` keeps what the directory's metadata records (`lab report`).
pub fn publish(
    ws: &Workspace,
    dir: &Path,
    images: &Path,
    real: &Path,
    given: Option<(String, Option<metadata::ProgramSource>)>,
) -> Result<Published> {
    let mut inputs = Inputs::read_complete(dir, real == ws.results_dir())?;
    // A result set inside another (the corpus in `results/`) has its allocator sizes there.
    if inputs.allocator_code.is_empty() {
        if let Some(outer) = real.parent().filter(|p| p.join("code-size.csv").exists()) {
            inputs.allocator_code = crate::report::inputs::allocator_code(outer)?;
        }
    }
    let about = document::About::of(ws.root(), real, given);
    metadata::write_for(ws.root(), dir, &about.command, about.program.as_ref())?;
    let link = if real == ws.results_dir() {
        "../images"
    } else {
        "images"
    };
    let ship = ship_verdict(ws, dir, real, &inputs)?;
    let drawn = charts::draw(&inputs, ship.as_ref(), images)?;
    // A chart the results no longer support (or the lab no longer draws) goes: the directory
    // holds what this report shows, nothing stale.
    for entry in std::fs::read_dir(images)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(".png") && !drawn.iter().any(|c| c.file == name) {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove the stale chart {}", path.display()))?;
        }
    }
    let anatomy =
        crate::report::anatomy_rows::report_anatomy(&ws.results_dir(), &inputs, ship.as_ref())?;
    let report = document::render(&inputs, link, ship.as_ref(), &about, &anatomy);
    report.write(dir)?;
    let images_shown = if real == ws.results_dir() {
        ws.root().join("images")
    } else {
        real.join("images")
    };
    let wrote = format!(
        "wrote {}/README.md, {} in {}/{}/, {}/{} and {} charts in {}",
        real.display(),
        crate::report::tables::count(report.cases.len(), "case page"),
        real.display(),
        document::CASES_DIR,
        real.display(),
        metadata::FILE,
        drawn.len(),
        images_shown.display()
    );
    Ok(Published { inputs, wrote })
}
