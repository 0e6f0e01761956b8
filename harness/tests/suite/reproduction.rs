//! The committed reproduction of Gear PR #4853 (`results/pr4853/`, from `just pr4853`): its
//! files are the ones the lab wrote, its report is the render of its rows, and the rows say
//! what the README says of them.

use galloc_lab::build::workspace::Workspace;
use galloc_lab::report::reproduction::Reproduction;

fn committed() -> (std::path::PathBuf, Reproduction) {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let dir = ws.results_dir().join("pr4853");
    galloc_lab::store::metadata::verify(&dir).unwrap();
    let rows = Reproduction::read(&dir, "pr4853").unwrap();
    (dir, rows)
}

#[test]
fn the_report_is_the_render_of_its_rows() {
    let (dir, rows) = committed();
    let v = galloc_variants::find("pr4853").unwrap();
    let case = galloc_lab::run::scenario::select(&rows.case).unwrap()[0];
    let summary = format!("{} {}", v.summary, case.summary);
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert_eq!(
        readme,
        rows.markdown(&summary),
        "regenerate with `just pr4853`"
    );
}

/// Every run of the reproduction goes wrong, at message 747 at the linker's layout, and every
/// message from there on fails; shipping and gear-next answer every message right at every
/// layout.
#[test]
fn the_reproduction_fails_from_message_747_and_the_correct_arithmetic_never() {
    let (_, rows) = committed();
    assert_eq!(rows.first_wrong(), Some(747));
    let layouts = galloc_lab::run::plan::default_sweep().len();
    for v in ["shipping", "gear-next", "pr4853"] {
        let runs: Vec<_> = rows.outcomes.iter().filter(|o| o.variant == v).collect();
        assert_eq!(runs.len(), layouts, "{v}");
        for o in runs {
            assert_eq!(o.messages, 2_903);
            if v == "pr4853" {
                let first = o.first_wrong.unwrap();
                assert!(first <= 747, "offset {}", o.offset);
                assert_eq!((o.wrong, o.failed), (2_903 - first, 2_903 - first));
            } else {
                assert_eq!((o.wrong, o.failed, o.first_wrong), (0, 0, None), "{v}");
            }
        }
    }
}
