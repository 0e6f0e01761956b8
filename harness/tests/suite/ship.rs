//! The ship verdict, recomputed from the committed CSVs alone: every count, geometric mean and
//! worst median of the table `results/README.md` opens with (and `lab ship` prints), and the
//! variant it names, from `layouts.csv` and `second.csv` of `results/` and `results/corpus/`
//! and `results/code-size.csv`, read here as plain text with the rule written out again.

use galloc_lab::build::workspace::Workspace;
use std::collections::BTreeMap;
use std::path::Path;

/// (case, variant) -> offset -> total, for gtest's rows of one CSV of both result sets.
type Totals = BTreeMap<(String, String), BTreeMap<u32, u64>>;

fn gtest_totals(dirs: &[&Path], file: &str) -> Totals {
    let mut out = Totals::new();
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("gtest").join(file)).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let (case, variant, offset, total) =
            (col("case"), col("variant"), col("offset"), col("total"));
        for line in lines {
            let f: Vec<&str> = line.split(',').collect();
            out.entry((f[case].to_owned(), f[variant].to_owned()))
                .or_default()
                .insert(f[offset].parse().unwrap(), f[total].parse().unwrap());
        }
    }
    out
}

/// Percent differences to shipping at every shared offset.
fn diffs(t: &Totals, case: &str, variant: &str) -> Vec<f64> {
    let (v, s) = (
        &t[&(case.to_owned(), variant.to_owned())],
        &t[&(case.to_owned(), "shipping".to_owned())],
    );
    v.iter()
        .filter_map(|(o, a)| {
            s.get(o)
                .map(|b| 100.0 * (*a as f64 - *b as f64) / *b as f64)
        })
        .collect()
}

/// better / same / worse / noise over the differences, with the 1 % band.
fn verdict(d: &[f64]) -> &'static str {
    if d.iter().all(|p| *p < -1.0) {
        "better"
    } else if d.iter().all(|p| *p > 1.0) {
        "worse"
    } else if d.iter().all(|p| p.abs() <= 1.0) {
        "same"
    } else {
        "noise"
    }
}

fn median(mut d: Vec<f64>) -> f64 {
    d.sort_by(f64::total_cmp);
    let n = d.len();
    if n % 2 == 1 {
        d[n / 2]
    } else {
        (d[n / 2 - 1] + d[n / 2]) / 2.0
    }
}

#[test]
fn the_ship_table_is_what_the_csvs_say() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let results = ws.results_dir();
    let corpus = results.join("corpus");
    let dirs = [results.as_path(), corpus.as_path()];
    let (sweep, again) = (
        gtest_totals(&dirs, "layouts.csv"),
        gtest_totals(&dirs, "second.csv"),
    );
    let programs: Vec<&str> = galloc_lab::run::scenario::CASES
        .iter()
        .filter(|c| c.default || c.corpus)
        .map(|c| c.id)
        .collect();
    assert_eq!(programs.len(), 17, "9 default cases and 8 corpus programs");
    let report = std::fs::read_to_string(results.join("README.md")).unwrap();
    assert!(
        report.starts_with("# galloc lab results")
            && report.find("## What galloc should ship") < report.find("## Verdicts"),
        "the report opens with the ship verdict"
    );
    let sizes = std::fs::read_to_string(results.join("code-size.csv")).unwrap();
    let code_bytes = |variant: &str| -> u64 {
        let line = sizes
            .lines()
            .find(|l| l.starts_with(&format!("galloc-wasm-size,{variant},false,")))
            .unwrap();
        line.split(',').nth(4).unwrap().parse().unwrap()
    };
    let mut named: Option<(f64, String)> = None;
    for v in galloc_variants::VARIANTS
        .iter()
        .filter(|v| v.id != "shipping" && v.reproduces.is_none())
    {
        let mut counts = BTreeMap::from([("better", 0), ("same", 0), ("worse", 0), ("noise", 0)]);
        let (mut log_sum, mut worst) = (0.0, (f64::MIN, ""));
        for p in &programs {
            let first = diffs(&sweep, p, v.id);
            assert_eq!(first.len(), 16, "{p} {}: the sweep's 16 layouts", v.id);
            let second = diffs(&again, p, v.id);
            let (a, b) = (verdict(&first), verdict(&second));
            *counts.get_mut(if a == b { a } else { "noise" }).unwrap() += 1;
            let m = median(first);
            log_sum += (1.0 + m / 100.0).ln();
            if m > worst.0 {
                worst = (m, p);
            }
        }
        let geomean = 100.0 * ((log_sum / programs.len() as f64).exp() - 1.0);
        let row = format!(
            "| `{}` | {} | {} | {} | {} | {:+.2}% | {:+.2}% (`{}`) | {} |",
            v.id,
            counts["better"],
            counts["same"],
            counts["worse"],
            counts["noise"],
            geomean,
            worst.0,
            worst.1,
            galloc_lab::report::tables::thousands(code_bytes(v.id)),
        );
        assert!(
            report.contains(&row),
            "results/README.md has no row\n{row}\nrun `just report`"
        );
        let admitted = galloc_variants::never_recommended(v.id).is_none()
            && counts["better"] as f64 >= 0.8 * programs.len() as f64
            && worst.0 <= 1.0;
        if admitted && named.as_ref().is_none_or(|(g, _)| geomean < *g) {
            named = Some((geomean, v.id.to_owned()));
        }
    }
    let named = named.map_or("shipping".to_owned(), |(_, v)| v);
    assert!(
        report.contains(&format!("**What galloc should ship: `{named}`**")),
        "the rule names {named}"
    );
    // `lab ship` prints the same section the report opens with.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(["ship"])
        .current_dir(ws.root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(report.contains(&printed), "`lab ship` printed\n{printed}");
}

/// The measures of the ship question asked of the deployments (issue 49: every program at
/// every layout of the sweep), from the committed CSVs with the lab's own code: the figures
/// the issue gives for the lab's design, and that the same seed gives the same bounds. (The
/// table that will print them, and its independent recomputation, come with the rule.)
#[test]
fn the_population_measures_of_the_design_on_the_committed_results() {
    use galloc_lab::analyse::population::{deployments, Population, RESAMPLES, SEED};
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let mut rows: Vec<galloc_lab::results::LayoutRow> =
        galloc_lab::results::read_csv(&ws.results_dir().join("gtest/layouts.csv")).unwrap();
    rows.extend(
        galloc_lab::results::read_csv::<galloc_lab::results::LayoutRow>(
            &ws.results_dir().join("corpus/gtest/layouts.csv"),
        )
        .unwrap(),
    );
    let programs = galloc_lab::analyse::ship::programs();
    let d = deployments(&rows, "gtest", "lab", "shipping", &programs);
    let p = Population::of(&d, SEED, RESAMPLES).unwrap();
    let shown = format!(
        "{:+.2} ({:+.2} … {:+.2}), worst {} {:+.2}, dearer {:.1} %, worst deployment {} at {} {:+.2}, own spread {:.1} %",
        p.expected_pct,
        p.interval_pct.0,
        p.interval_pct.1,
        p.worst_program.0,
        p.worst_program.1,
        100.0 * p.dearer_share,
        p.worst_deployment.0,
        p.worst_deployment.1,
        p.worst_deployment.2,
        p.own_spread_pct
    );
    eprintln!(
        "lab over {} deployments of {} programs: {shown}",
        p.deployments, p.programs
    );
    assert_eq!((p.programs, p.deployments), (17, 272));
    assert_eq!(
        shown,
        "-3.49 (-6.06 … -1.45), worst nft-stress +1.44, dearer 12.9 %, worst deployment dex at 43008 +8.43, own spread 19.5 %"
    );
    assert_eq!(Population::of(&d, SEED, RESAMPLES).unwrap(), p);
}
