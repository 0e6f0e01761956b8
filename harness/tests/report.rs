//! The committed report is exactly what the committed results render to: nobody edited it by
//! hand, and no results file changed without it.

use galloc_lab::report::Inputs;
use galloc_lab::workspace::Workspace;

#[test]
fn committed_report_is_rendered_from_committed_results() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let dir = ws.results_dir();
    let rendered = Inputs::read(&dir).unwrap().markdown();
    let committed = std::fs::read_to_string(dir.join("README.md")).unwrap();
    assert!(
        rendered == committed,
        "results/README.md differs from what results/*.csv render to; run `just report`"
    );
}
