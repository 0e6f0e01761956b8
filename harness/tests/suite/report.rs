//! The committed report (its main page and every case page, of `results/` and of
//! `results/corpus/`) is exactly what the committed results render to: nobody edited it by
//! hand, and no results file changed without it.

use galloc_lab::build::workspace::Workspace;
use galloc_lab::report::document::{render, About};
use galloc_lab::report::inputs::Inputs;

#[test]
fn committed_report_is_rendered_from_committed_results() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let dir = ws.results_dir();
    // The report opens with the ship verdict, which also reads the corpus's results (the
    // ship test, `ship.rs`, requires them).
    let corpus = dir.join(galloc_lab::results::CORPUS_DIR);
    let ship = corpus
        .join(galloc_lab::results::MANIFEST)
        .exists()
        .then(|| galloc_lab::report::inputs::ship(&dir, &corpus).unwrap());
    let about = |d: &std::path::Path| About::of(ws.root(), d, None);
    let rendered = render(
        &Inputs::read(&dir).unwrap(),
        "../images",
        ship.as_ref(),
        &about(&dir),
    );
    if let Some(file) = rendered.differs_from(&dir) {
        panic!("results/{file} differs from what results/*.csv render to; run `just report`");
    }
    // The corpus's report, likewise (its charts in its own images/).
    let corpus_inputs = Inputs::read(&corpus).unwrap();
    if let Some(file) =
        render(&corpus_inputs, "images", None, &about(&corpus)).differs_from(&corpus)
    {
        panic!(
            "results/corpus/{file} differs from what results/corpus/*.csv render to; run `just corpus`"
        );
    }
}

/// The committed charts are exactly what the committed results draw (and drawing is
/// deterministic, so a rerun of `just compare` leaves them byte-identical).
#[test]
fn committed_charts_are_drawn_from_committed_results() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let dir = ws.results_dir();
    let inputs = Inputs::read(&dir).unwrap();
    let corpus = dir.join(galloc_lab::results::CORPUS_DIR);
    let ship = galloc_lab::report::inputs::ship(&dir, &corpus).unwrap();
    let out = tempfile::tempdir().unwrap();
    let charts = galloc_lab::report::charts::draw(&inputs, Some(&ship), out.path()).unwrap();
    assert!(charts.len() >= 4, "only {} charts", charts.len());
    assert!(charts.iter().any(|c| c.file == "layouts.png"));
    for c in &charts {
        let drawn = std::fs::read(out.path().join(&c.file)).unwrap();
        let committed = std::fs::read(ws.root().join("images").join(&c.file))
            .unwrap_or_else(|_| panic!("images/{} is not committed; run `just report`", c.file));
        assert!(
            drawn == committed,
            "images/{} differs from what results/ draw; run `just report`",
            c.file
        );
    }
}
