//! `lab verdict A,B` on the committed results: the pair's anatomy (docs/ship.md, "Where the gas
//! goes") and its pages by what the messages did with them, each row recomputed from the CSV
//! read as text.

use super::explained::{cells, rows, Csv};
use super::ship::{lab_at_root, numbers};
use galloc_lab::build::workspace::Workspace;
use std::collections::BTreeSet;

/// `lab verdict lab,shipping` on the committed results prints the pair's anatomy per case and
/// its pages by fate, each case's row what `wasmtime/layouts.csv` says: the pages written
/// first, read and then written, written at all and only read, mean per layout.
#[test]
fn lab_verdict_prints_the_pairs_anatomy_and_pages_by_fate() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let text = lab_at_root(&ws, &["verdict", "lab,shipping"]);
    assert!(text.contains("Where the gas goes on gtest, lab against shipping, in points:"));
    let fuel = Csv::read(&ws.results_dir().join("wasmtime/layouts.csv"));
    let programs: BTreeSet<String> = rows(&fuel).map(|r| r.s("case").to_owned()).collect();
    for program in &programs {
        let mut sum = [0.0; 4];
        let mut n = 0.0;
        for v in rows(&fuel).filter(|r| r.s("case") == program && r.s("variant") == "lab") {
            let s = rows(&fuel)
                .find(|s| {
                    s.s("case") == program
                        && s.s("variant") == "shipping"
                        && s.s("offset") == v.s("offset")
                })
                .unwrap();
            let d = |c: &str| v.n(c) - s.n(c);
            let (first, after) = (d("pages_written"), d("pages_write_after_read"));
            for (x, y) in sum
                .iter_mut()
                .zip([first, after, first + after, d("pages_read") - after])
            {
                *x += y;
            }
            n += 1.0;
        }
        let row = text
            .lines()
            .filter(|l| l.starts_with(&format!("| `{program}` |")))
            .nth(1)
            .unwrap_or_else(|| panic!("no pages-by-fate row for {program}:\n{text}"));
        let printed = numbers(&cells(row)[1..].join(" "));
        assert_eq!(printed[0], n, "{program}: layouts");
        for (i, x) in sum.iter().enumerate() {
            let want = x / n;
            assert!(
                (printed[1 + i] - want).abs() <= 0.05 + 1e-9,
                "{program}: fate {i}: `lab verdict` prints {}, wasmtime/layouts.csv gives {want:.3}",
                printed[1 + i]
            );
        }
    }
}
