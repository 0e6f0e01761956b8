//! The ship verdict, recomputed from the committed CSVs alone: every figure of the table
//! `results/README.md` opens with (and `lab ship` prints), the variant it names and the
//! sentence above it, from `layouts.csv` and `second.csv` of `results/` and `results/corpus/`
//! and `results/code-size.csv`, read here as plain text, with the rule and a plain resampling
//! bootstrap (its own generator) written out again.

use crate::layouts::SplitMix;
use galloc_lab::build::workspace::Workspace;
use std::collections::BTreeMap;
use std::path::Path;

/// (case, variant) -> offset -> total, for gtest's rows of one CSV of both result sets.
pub(crate) type Totals = BTreeMap<(String, String), BTreeMap<u32, u64>>;

pub(crate) fn gtest_totals(dirs: &[&Path], file: &str) -> Totals {
    let mut out = Totals::new();
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("gtest").join(file)).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let (backend, case, variant, offset, total) = (
            col("backend"),
            col("case"),
            col("variant"),
            col("offset"),
            col("total"),
        );
        for line in lines {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f[backend], "gtest");
            out.entry((f[case].to_owned(), f[variant].to_owned()))
                .or_default()
                .insert(f[offset].parse().unwrap(), f[total].parse().unwrap());
        }
    }
    out
}

/// (offset, variant total, shipping total) at every shared offset.
fn pairs(t: &Totals, case: &str, variant: &str) -> Pairs {
    let (Some(v), Some(s)) = (
        t.get(&(case.to_owned(), variant.to_owned())),
        t.get(&(case.to_owned(), "shipping".to_owned())),
    ) else {
        return Vec::new();
    };
    v.iter()
        .filter_map(|(o, a)| s.get(o).map(|b| (*o, *a, *b)))
        .collect()
}

type Pairs = Vec<(u32, u64, u64)>;

/// cheaper / same / dearer / uncertain: the program's word ([`crate::layouts::word`], the
/// test's own bootstrap).
fn verdict(t: &Totals, case: &str, variant: &str) -> &'static str {
    let p: Vec<(u64, u64)> = pairs(t, case, variant)
        .iter()
        .map(|(_, a, b)| (*a, *b))
        .collect();
    crate::layouts::word(&p).0
}

pub(crate) fn median(mut d: Vec<f64>) -> f64 {
    d.sort_by(f64::total_cmp);
    let n = d.len();
    if n % 2 == 1 {
        d[n / 2]
    } else {
        (d[n / 2 - 1] + d[n / 2]) / 2.0
    }
}

/// The population measures of one variant over `programs` in `t`, the plain way: expected
/// change, its 95 % interval from `resamples` two-level resamples drawn from `seed`, worst
/// program, dearer share, worst deployment and own spread.
pub(crate) struct Measures {
    pub(crate) expected: f64,
    pub(crate) interval: (f64, f64),
    worst_program: (f64, String),
    pub(crate) dearer: f64,
    worst_deployment: (f64, String, u32),
    own_spread: f64,
}

pub(crate) fn measures(
    t: &Totals,
    variant: &str,
    programs: &[&str],
    seed: u64,
    resamples: usize,
) -> Option<Measures> {
    let per: Vec<(&str, Pairs)> = programs
        .iter()
        .map(|p| (*p, pairs(t, p, variant)))
        .filter(|(_, d)| !d.is_empty())
        .collect();
    if per.is_empty() {
        return None;
    }
    let logs: Vec<Vec<f64>> = per
        .iter()
        .map(|(_, d)| {
            d.iter()
                .map(|(_, a, b)| (*a as f64 / *b as f64).ln())
                .collect()
        })
        .collect();
    let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let pct = |l: f64| 100.0 * (l.exp() - 1.0);
    let means: Vec<f64> = logs.iter().map(|l| avg(l)).collect();
    let mut worst_program = (f64::MIN, String::new());
    for ((p, _), m) in per.iter().zip(&means) {
        if pct(*m) > worst_program.0 {
            worst_program = (pct(*m), (*p).to_owned());
        }
    }
    let (mut dearer, mut n) = (0, 0);
    let mut worst_deployment = (f64::MIN, String::new(), 0);
    let mut spreads = Vec::new();
    for (p, d) in &per {
        for (o, a, b) in d {
            let x = 100.0 * (*a as f64 / *b as f64 - 1.0);
            n += 1;
            dearer += usize::from(x > 1.0);
            if x > worst_deployment.0 {
                worst_deployment = (x, (*p).to_owned(), *o);
            }
        }
        let lo = d.iter().map(|(_, a, _)| *a).min().unwrap();
        let hi = d.iter().map(|(_, a, _)| *a).max().unwrap();
        spreads.push(100.0 * (hi as f64 / lo as f64 - 1.0));
    }
    let mut rng = SplitMix(seed);
    let mut draws: Vec<f64> = (0..resamples)
        .map(|_| {
            let mut sum = 0.0;
            for _ in 0..logs.len() {
                let l = &logs[rng.below(logs.len())];
                sum += (0..l.len()).map(|_| l[rng.below(l.len())]).sum::<f64>() / l.len() as f64;
            }
            sum / logs.len() as f64
        })
        .collect();
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| pct(draws[(q * (resamples - 1) as f64).round() as usize]);
    Some(Measures {
        expected: pct(avg(&means)),
        interval: (at(0.025), at(0.975)),
        worst_program,
        dearer: 100.0 * dearer as f64 / n as f64,
        worst_deployment,
        own_spread: median(spreads),
    })
}

/// Every number in a table cell, thousands separators read through.
pub(crate) fn numbers(cell: &str) -> Vec<f64> {
    let text = cell.replace(',', "");
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars().chain([' ']) {
        if c.is_ascii_digit() || c == '.' || ((c == '-' || c == '+') && current.is_empty()) {
            current.push(c);
        } else {
            if current.chars().any(|c| c.is_ascii_digit()) {
                out.push(current.trim_end_matches('.').parse().unwrap());
            }
            current.clear();
            if c == '-' || c == '+' {
                current.push(c);
            }
        }
    }
    out
}

fn close(printed: f64, recomputed: f64, within: f64, what: &str) {
    assert!(
        (printed - recomputed).abs() <= within,
        "{what}: the table says {printed}, recomputed {recomputed:.4} (within {within}); run `just report`"
    );
}

/// The table's every figure against the CSVs: the deterministic ones (expected change, worst
/// program, dearer share, worst deployment, own spread, words, code bytes) to 0.01 percentage
/// points, and the interval bounds (the lab's computed bootstrap against 50,000 plain
/// resamples here) to 0.3; the rule applied again names the same variant, and the sentence
/// above the table is about it. `lab ship` prints the section the report opens with.
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
    let cases = galloc_lab::run::scenario::CASES.iter();
    let programs: Vec<&str> = cases
        .clone()
        .filter(|c| c.default || c.corpus)
        .map(|c| c.id)
        .collect();
    let held_out: Vec<&str> = cases
        .filter(|c| (c.default || c.corpus) && c.held_out)
        .map(|c| c.id)
        .collect();
    assert_eq!(programs.len(), 17, "9 default cases and 8 corpus programs");
    assert_eq!(held_out.len(), 9);
    let report = std::fs::read_to_string(results.join("README.md")).unwrap();
    assert!(
        report.starts_with("# galloc lab results")
            && report.find("## What galloc should ship") < report.find("## Verdicts"),
        "the report opens with the ship verdict"
    );
    let sizes = std::fs::read_to_string(results.join("code-size.csv")).unwrap();
    let code_bytes = |variant: &str| -> f64 {
        let line = sizes
            .lines()
            .find(|l| l.starts_with(&format!("galloc-wasm-size,{variant},false,")))
            .unwrap();
        line.split(',').nth(4).unwrap().parse().unwrap()
    };
    let cells = |variant: &str| -> Vec<String> {
        let start = format!("| `{variant}` |");
        let line = report
            .lines()
            .find(|l| l.starts_with(&start))
            .unwrap_or_else(|| {
                panic!("results/README.md has no row for {variant}; run `just report`")
            });
        // No cell holds a `|`: the rule's reasons are words and figures.
        line.trim()
            .trim_matches('|')
            .split('|')
            .map(|c| c.trim().to_owned())
            .collect()
    };
    // Shipping's row: its own spread and code bytes.
    let mut spreads: Vec<f64> = programs
        .iter()
        .map(|p| {
            let s = &sweep[&((*p).to_owned(), "shipping".to_owned())];
            let (lo, hi) = (s.values().min().unwrap(), s.values().max().unwrap());
            100.0 * (*hi as f64 / *lo as f64 - 1.0)
        })
        .collect();
    spreads.sort_by(f64::total_cmp);
    let ship_row = cells("shipping");
    close(
        numbers(&ship_row[5])[0],
        median(spreads.clone()),
        0.01,
        "shipping's own spread",
    );
    close(
        numbers(&ship_row[9])[0],
        code_bytes("shipping"),
        0.0,
        "shipping's code bytes",
    );

    // (expected change, variant): the admitted one the rule names, and the sentence's subject.
    let mut named: Option<(f64, String)> = None;
    let mut closest: Option<(f64, String)> = None;
    let mut order = Vec::new();
    let mut farthest_bound: f64 = 0.0;
    for v in galloc_variants::VARIANTS
        .iter()
        .filter(|v| v.id != "shipping" && v.reproduces.is_none())
    {
        let all = measures(&sweep, v.id, &programs, 1, 50_000).unwrap();
        let held = measures(&sweep, v.id, &held_out, 2, 50_000).unwrap();
        let second = measures(&again, v.id, &programs, 3, 50_000).unwrap();
        let row = cells(v.id);
        let what = |field: &str| format!("{} {field}", v.id);
        let n = numbers(&row[1]);
        close(n[0], all.expected, 0.01, &what("expected change"));
        farthest_bound = farthest_bound
            .max((n[1] - all.interval.0).abs())
            .max((n[2] - all.interval.1).abs());
        close(n[1], all.interval.0, 0.3, &what("lower bound"));
        close(n[2], all.interval.1, 0.3, &what("upper bound"));
        close(
            numbers(&row[2])[0],
            all.worst_program.0,
            0.01,
            &what("worst program"),
        );
        assert!(
            row[2].contains(&format!("`{}`", all.worst_program.1)),
            "{}",
            what("worst program's name")
        );
        close(numbers(&row[3])[0], all.dearer, 0.01, &what("dearer share"));
        let w = numbers(&row[4]);
        close(
            w[0],
            all.worst_deployment.0,
            0.01,
            &what("worst deployment"),
        );
        close(
            w[w.len() - 1],
            f64::from(all.worst_deployment.2),
            0.0,
            &what("worst deployment's offset"),
        );
        assert!(
            row[4].contains(&format!("`{}`", all.worst_deployment.1)),
            "{}",
            what("worst deployment's program")
        );
        close(
            numbers(&row[5])[0],
            all.own_spread,
            0.01,
            &what("own spread"),
        );
        for (cell, m, field) in [(&row[6], &held, "held out"), (&row[7], &second, "second")] {
            let n = numbers(cell);
            close(n[0], m.expected, 0.01, &what(field));
            close(n[2], m.interval.1, 0.3, &what(field));
        }
        // The words: cheaper / same / dearer / uncertain, the second workload repeating the
        // sweep's.
        let mut counts =
            BTreeMap::from([("cheaper", 0), ("same", 0), ("dearer", 0), ("uncertain", 0)]);
        for p in &programs {
            let (a, b) = (verdict(&sweep, p, v.id), verdict(&again, p, v.id));
            *counts
                .get_mut(if a == b { a } else { "uncertain" })
                .unwrap() += 1;
        }
        let words = format!(
            "{} / {} / {} / {}",
            counts["cheaper"], counts["same"], counts["dearer"], counts["uncertain"]
        );
        assert_eq!(row[8], words, "{}", what("words"));
        close(
            numbers(&row[9])[0],
            code_bytes(v.id),
            0.0,
            &what("code bytes"),
        );
        // The rule, again: a certain gain, no program dearer, few deployments dearer, both
        // subsets below 0, the lab's own tests passed.
        let safe = galloc_variants::never_recommended(v.id).is_none();
        let admitted = safe
            && all.interval.1 <= -1.0
            && all.worst_program.0 <= 1.0
            && all.dearer <= 10.0
            && held.interval.1 < 0.0
            && second.interval.1 < 0.0;
        // The rule's words close the row (the distance to the bounds stands before them when
        // they were measured).
        let rule = &row[row.len() - 1];
        assert_eq!(rule.starts_with("no: "), !admitted, "{}: {rule}", v.id);
        // One code per clause failed, in the rule's order.
        let failed: Vec<&str> = [
            ("interval", all.interval.1 > -1.0),
            ("worst", all.worst_program.0 > 1.0),
            ("dearer", all.dearer > 10.0),
            ("held out", held.interval.1 >= 0.0),
            ("second", second.interval.1 >= 0.0),
            ("tests", !safe),
        ]
        .iter()
        .filter(|(_, f)| *f)
        .map(|(c, _)| *c)
        .collect();
        if !admitted {
            assert_eq!(*rule, format!("no: {}", failed.join(", ")), "{}", v.id);
        }
        if admitted && named.as_ref().is_none_or(|(e, _)| all.expected < *e) {
            named = Some((all.expected, v.id.to_owned()));
        }
        if safe && closest.as_ref().is_none_or(|(e, _)| all.expected < *e) {
            closest = Some((all.expected, v.id.to_owned()));
        }
        order.push((all.expected, v.id));
    }
    eprintln!("interval bounds: the table's and 50,000 plain resamples' at most {farthest_bound:.3} pp apart");
    // Rows in order of expected change.
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let at = |v: &str| report.find(&format!("| `{v}` |")).unwrap();
    assert!(
        order.windows(2).all(|w| at(w[0].1) < at(w[1].1)),
        "rows by expected change"
    );
    let subject = named
        .as_ref()
        .or(closest.as_ref())
        .map(|(_, v)| v.clone())
        .unwrap();
    let named = named.map_or("shipping".to_owned(), |(_, v)| v);
    assert!(
        report.contains(&format!("**What galloc should ship: `{named}`**")),
        "the rule names {named}"
    );
    assert!(
        report.contains(&format!("> `{subject}`: ")),
        "the sentence is about {subject}"
    );
    // `lab ship` prints the same section the report opens with.
    // The ship table, where the gas goes, then the design target: each as the report has it
    // (the report puts the layouts chart after the table, the anatomy chart after the anatomy).
    let printed = lab_at_root(&ws, &["ship"]);
    let (table, rest) = printed
        .split_once("### Where the gas goes")
        .expect("`lab ship` prints where the gas goes after the table");
    let (anatomy, target) = rest
        .split_once("### The design target")
        .expect("`lab ship` prints the design target after the anatomy");
    assert!(report.contains(table), "`lab ship` printed\n{table}");
    let anatomy = format!("### Where the gas goes{anatomy}");
    assert!(report.contains(&anatomy), "`lab ship` printed\n{anatomy}");
    let target = format!("### The design target{target}");
    assert!(report.contains(&target), "`lab ship` printed\n{target}");
}

/// The lab's design over the deployments of the committed results, as the lab computes it
/// (the figures docs/ship.md and the README quote), and the same at every call: the computed bootstrap has no
/// seed to move it.
#[test]
fn the_population_measures_of_the_design_on_the_committed_results() {
    use galloc_lab::analyse::population::{Population, Totals};
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let dir = ws.results_dir();
    let (rows, _) = galloc_lab::report::inputs::read_sweeps(&[&dir, &dir.join("corpus")]).unwrap();
    let programs = galloc_lab::report::inputs::ship_programs();
    let d = Totals::of_sweep(&rows, "gtest").deployments("lab", "shipping", &programs);
    let p = Population::of(&d).unwrap();
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
    assert_eq!((p.programs, p.deployments), (17, 272));
    assert_eq!(
        shown,
        "-3.97 (-6.38 … -2.12), worst vnft-stress +0.86, dearer 7.7 %, worst deployment vnft-stress at 21504 +7.42, own spread 18.3 %"
    );
    assert_eq!(Population::of(&d).unwrap(), p);
}

/// What `lab ARGS` prints run from the workspace's root on the committed results (it must
/// succeed).
pub(crate) fn lab_at_root(ws: &Workspace, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lab"))
        .args(args)
        .current_dir(ws.root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "lab {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What docs/design.md quotes of the design target ("Where `lab` stands against it") is the
/// report's: its table has the report's header, and each of its rows is the report's row for
/// that variant, as printed. (The report's rows come from `analyse/target.rs`, whose unit test
/// holds each clause.)
#[test]
fn the_design_doc_quotes_the_reports_target_rows() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let report = std::fs::read_to_string(ws.results_dir().join("README.md")).unwrap();
    let section = report
        .split_once("### The design target")
        .expect("the report has the design target")
        .1;
    let header = section
        .lines()
        .find(|l| l.starts_with("| variant |"))
        .expect("the target's table");
    let doc = std::fs::read_to_string(ws.root().join("docs/design.md")).unwrap();
    let quoted = rows_under(&doc, header);
    assert!(
        !quoted.is_empty(),
        "docs/design.md quotes the target's table under the report's header"
    );
    for row in quoted {
        let variant = row.split('|').nth(1).unwrap().trim();
        let want = section
            .lines()
            .find(|l| l.split('|').nth(1).map(str::trim) == Some(variant))
            .unwrap_or_else(|| panic!("the report has no target row for {variant}"));
        assert_eq!(
            row, want,
            "docs/design.md quotes {variant}; the report says"
        );
    }
}

/// What docs/design.md quotes of `lab verdict lab,shipping` (where each message's blocks land,
/// by lifetime) is what the command prints from the committed results: every
/// row under the command's own header, over the default cases and the corpus.
#[test]
fn the_design_doc_quotes_lab_verdicts_lifetimes() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap();
    let mut printed = lab_at_root(&ws, &["verdict", "lab,shipping"]);
    printed += &lab_at_root(
        &ws,
        &["verdict", "lab,shipping", "--results", "results/corpus"],
    );
    let header = printed
        .lines()
        .find(|l| l.starts_with("| program | variant | messages | pages with temporaries"))
        .expect("`lab verdict` prints where the blocks land");
    let doc = std::fs::read_to_string(ws.root().join("docs/design.md")).unwrap();
    let quoted = rows_under(&doc, header);
    assert!(quoted.len() >= 2, "docs/design.md quotes the table");
    for row in quoted {
        assert!(
            printed.lines().any(|l| l == row),
            "docs/design.md quotes {row}; `lab verdict lab,shipping` does not print it"
        );
    }
}

/// The rows of the Markdown table in `doc` whose header line is `header`.
fn rows_under<'a>(doc: &'a str, header: &str) -> Vec<&'a str> {
    doc.lines()
        .skip_while(|l| *l != header)
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect()
}
