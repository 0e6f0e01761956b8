//! The committed verdicts are exactly what the committed layout rows imply: recomputed here
//! from `results/<backend>/layouts.csv` and `second.csv` alone, with nothing of the lab's own
//! arithmetic but the stated minimum effect (1 %), the stated rule and the stated offsets (docs/verdicts.md, "Verdicts
//! across heap layouts", "A second workload").

use galloc_lab::results::{read_csv, LayoutRow, SecondRow, TotalRow};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn results() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../results")
}

/// The minimum effect docs/verdicts.md states, in percent of shipping's total.
const BAND: f64 = 1.0;

/// The offsets docs/verdicts.md states on gas: 16 stratified over the 64 KiB Wasm page, every 1 KiB
/// of the 16 KiB Gear page once and every Gear page of the Wasm page four times.
const OFFSETS: [u32; 16] = [
    0, 4096, 8192, 12288, 17408, 21504, 25600, 29696, 34816, 38912, 43008, 47104, 52224, 56320,
    60416, 64512,
];

/// Every 4th of them, one in each Gear page of the Wasm page: the second workloads' on gas.
/// The fuel meter runs all 16 (the gas anatomy prices each deployment's pages from its counts).
const SECOND_OFFSETS: [u32; 4] = [0, 17408, 34816, 52224];

/// SplitMix64: the tests' own generator, so their bootstraps share nothing with the lab's.
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// A program's word against shipping as docs/verdicts.md states the rule: the 95 % interval of
/// its mean log-ratio over the offsets (here a plain bootstrap, 20,000 resamples of the offsets)
/// against the minimum effect: `cheaper` when the interval is at or below -1 %, `dearer` at or
/// above +1 %, `same` within ±1 %, else `uncertain`. Also whether the word is sure: a bound
/// within 0.05 points of an edge may fall either side of it in the lab's exact computation.
pub(crate) fn word(pairs: &[(u64, u64)]) -> (&'static str, bool) {
    let logs: Vec<f64> = pairs
        .iter()
        .map(|(a, b)| (*a as f64 / *b as f64).ln())
        .collect();
    let n = logs.len();
    let mut rng = SplitMix(n as u64);
    let mut means: Vec<f64> = (0..20_000)
        .map(|_| (0..n).map(|_| logs[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let pct = |l: f64| 100.0 * (l.exp() - 1.0);
    let (lo, hi) = (pct(means[500]), pct(means[19_499]));
    let word = if hi <= -BAND {
        "cheaper"
    } else if lo >= BAND {
        "dearer"
    } else if lo >= -BAND && hi <= BAND {
        "same"
    } else {
        "uncertain"
    };
    let sure = [lo, hi].iter().all(|b| (b.abs() - BAND).abs() > 0.05);
    (word, sure)
}

/// `(word, whether it is sure, median %, lowest %, highest %)` of `mine` against `shipping`,
/// both by offset.
fn expected(
    mine: &BTreeMap<u32, u64>,
    shipping: &BTreeMap<u32, u64>,
) -> (String, bool, f64, f64, f64) {
    let pairs: Vec<(u64, u64)> = mine.iter().map(|(o, t)| (*t, shipping[o])).collect();
    let mut pct: Vec<f64> = pairs
        .iter()
        .map(|(a, b)| 100.0 * (*a as f64 - *b as f64) / *b as f64)
        .collect();
    let (verdict, sure) = word(&pairs);
    pct.sort_by(f64::total_cmp);
    let n = pct.len();
    let median = if n % 2 == 1 {
        pct[n / 2]
    } else {
        (pct[n / 2 - 1] + pct[n / 2]) / 2.0
    };
    (verdict.into(), sure, median, pct[0], pct[n - 1])
}

/// One case and variant's totals by offset.
fn by_offset(layouts: &[LayoutRow], case: &str, variant: &str) -> BTreeMap<u32, u64> {
    layouts
        .iter()
        .filter(|r| r.case == case && r.variant == variant)
        .map(|r| (r.offset, r.total))
        .collect()
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 0.00005 + 1e-9)
}

#[test]
fn every_verdict_is_what_the_layout_rows_imply() {
    assert_eq!(galloc_lab::analyse::layout::BAND_PCT, BAND);
    let (mut judged, mut unsure) = (0, 0);
    for backend in ["gtest", "wasmtime"] {
        let offsets = OFFSETS.to_vec();
        let dir = results().join(backend);
        let layouts: Vec<LayoutRow> = read_csv(&dir.join("layouts.csv")).unwrap();
        let totals: Vec<TotalRow> = read_csv(&dir.join("totals.csv")).unwrap();
        let of = |case: &str, variant: &str| by_offset(&layouts, case, variant);
        assert_eq!(layouts.len(), totals.len() * offsets.len(), "{backend}");
        for t in &totals {
            let what = format!("{backend}/{}/{}", t.case, t.variant);
            let mine = of(&t.case, &t.variant);
            assert_eq!(mine.keys().copied().collect::<Vec<_>>(), offsets, "{what}");
            assert_eq!(mine[&0], t.total, "{what}: offset 0 is the committed total");
            assert_eq!(t.layouts, offsets.len() as u64, "{what}");
            assert_eq!(t.total_min, *mine.values().min().unwrap(), "{what}");
            assert_eq!(t.total_max, *mine.values().max().unwrap(), "{what}");
            if t.variant == "shipping" {
                assert_eq!(t.verdict, "baseline", "{what}");
                assert_eq!(t.vs_shipping_median_pct, None, "{what}");
                continue;
            }
            let (verdict, sure, median, lo, hi) = expected(&mine, &of(&t.case, "shipping"));
            if sure {
                assert_eq!(t.verdict, verdict, "{what}");
            } else {
                unsure += 1;
            }
            judged += 1;
            assert!(
                close(t.vs_shipping_median_pct, median),
                "{what}: median {median}"
            );
            assert!(close(t.vs_shipping_min_pct, lo), "{what}: lowest {lo}");
            assert!(close(t.vs_shipping_max_pct, hi), "{what}: highest {hi}");
        }
    }
    // Nearly every word is checked; a bound at an edge is the exception.
    assert!(
        unsure * 20 <= judged,
        "{unsure} of {judged} words unchecked"
    );
}

/// The second workload's verdict of every gas pair, recomputed from `second.csv` with the same
/// rule, and whether the case's word (from `layouts.csv`) holds there: `None` for uncertain and
/// shipping (nothing to hold), else `Some(holds)`.
fn second_marks() -> BTreeMap<(String, String), (String, f64, Option<bool>)> {
    let layouts: Vec<LayoutRow> = read_csv(&results().join("gtest/layouts.csv")).unwrap();
    let second: Vec<SecondRow> = read_csv(&results().join("gtest/second.csv")).unwrap();
    let totals: Vec<TotalRow> = read_csv(&results().join("gtest/totals.csv")).unwrap();
    let mut out = BTreeMap::new();
    let of = |case: &str, variant: &str| -> BTreeMap<u32, u64> {
        second
            .iter()
            .filter(|r| r.case == case && r.variant == variant)
            .map(|r| (r.offset, r.total))
            .collect()
    };
    let pairs: std::collections::BTreeSet<(String, String)> = second
        .iter()
        .map(|r| (r.case.clone(), r.variant.clone()))
        .collect();
    for (case, variant) in pairs {
        let mine = of(&case, &variant);
        assert_eq!(
            mine.keys().copied().collect::<Vec<_>>(),
            SECOND_OFFSETS,
            "gtest/{case}/{variant}: the second workload's offsets"
        );
        if variant == "shipping" {
            continue;
        }
        let (verdict, _, median, _, _) = expected(&mine, &of(&case, "shipping"));
        let (first, sure, ..) = expected(
            &by_offset(&layouts, &case, &variant),
            &by_offset(&layouts, &case, "shipping"),
        );
        // A sweep whose bound sits at an edge: its word is `totals.csv`'s, which the test of
        // every word checks where it can.
        let first = if sure {
            first
        } else {
            totals
                .iter()
                .find(|t| t.case == case && t.variant == variant)
                .map(|t| t.verdict.clone())
                .unwrap_or(first)
        };
        let holds = (first != "uncertain").then(|| first == verdict);
        out.insert((case, variant), (verdict, median, holds));
    }
    out
}

#[test]
fn every_default_case_has_its_second_workload_on_gas_for_every_variant() {
    let second: Vec<SecondRow> = read_csv(&results().join("gtest/second.csv")).unwrap();
    let totals: Vec<TotalRow> = read_csv(&results().join("gtest/totals.csv")).unwrap();
    assert_eq!(second.len(), totals.len() * SECOND_OFFSETS.len());
    for c in galloc_lab::run::scenario::CASES
        .iter()
        .filter(|c| c.default)
    {
        let w = c.second.expect("every default case has a second workload");
        assert!(
            second.iter().any(|r| r.case == c.id && r.workload == w.id),
            "{}: {}",
            c.id,
            w.id
        );
    }
    assert!(!results().join("wasmtime/second.csv").exists(), "gas only");
}

/// The report's verdict table says what `totals.csv` says, row for row, gives each second
/// workload's verdict and whether the case's holds there, and bolds the variant the stated rule
/// picks: of those better than shipping at every layout whose better holds under the second
/// workload, the lowest median; the floor (`bump`, never frees) and a variant that fails a lab
/// test (`gear-next`) excepted.
#[test]
fn the_report_opens_with_the_ship_verdict_then_the_verdicts_of_the_rows() {
    let report = std::fs::read_to_string(results().join("README.md")).unwrap();
    let verdicts_at = report
        .find("## Verdicts across heap layouts")
        .expect("the verdict table");
    // The ship verdict (`ship.rs` checks it) comes first, then the verdicts.
    let second_section = report
        .match_indices("\n## ")
        .nth(1)
        .map(|(at, _)| at)
        .unwrap();
    assert!(report[report.find("\n## ").unwrap()..].starts_with("\n## What galloc should ship"));
    assert_eq!(
        second_section + 1,
        verdicts_at,
        "the report opens with the ship verdict, then the verdicts"
    );
    let totals = |backend: &str| -> Vec<TotalRow> {
        read_csv(&results().join(backend).join("totals.csv")).unwrap()
    };
    let (gas, fuel) = (totals("gtest"), totals("wasmtime"));
    let layouts: Vec<LayoutRow> = read_csv(&results().join("gtest/layouts.csv")).unwrap();
    let find = |rows: &[TotalRow], case: &str, variant: &str| -> TotalRow {
        rows.iter()
            .find(|t| t.case == case && t.variant == variant)
            .cloned()
            .unwrap_or_else(|| panic!("{case}/{variant}"))
    };
    let mark = |v: &str| match v {
        "cheaper" | "dearer" => format!("**{v}**"),
        other => other.to_owned(),
    };
    let seconds = second_marks();
    let mut case = String::new();
    let mut rows = 0;
    let mut bold: BTreeMap<String, String> = BTreeMap::new();
    // Each case's full table is on its page; the report's matrix gives every case at a glance.
    for page in std::fs::read_dir(results().join("cases")).unwrap() {
        let page = std::fs::read_to_string(page.unwrap().path()).unwrap();
        let at = page
            .find("## Verdicts across heap layouts")
            .expect("a case page's verdict table");
        for line in page[at..]
            .lines()
            .skip_while(|l| !l.starts_with("| case |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
        {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if !cells[1].is_empty() {
                case = cells[1].to_owned();
            }
            let variant = cells[2].trim_matches('*');
            if cells[2].starts_with("**") {
                bold.insert(case.clone(), variant.to_owned());
            }
            assert_eq!(
                cells[6],
                mark(&find(&gas, &case, variant).verdict),
                "{line}"
            );
            // The mean the word is read from: the mean log-ratio over the offsets.
            let (mine, theirs) = (
                by_offset(&layouts, &case, variant),
                by_offset(&layouts, &case, "shipping"),
            );
            if variant != "shipping" {
                let logs: Vec<f64> = mine
                    .iter()
                    .map(|(o, t)| (*t as f64 / theirs[o] as f64).ln())
                    .collect();
                let mean = 100.0 * ((logs.iter().sum::<f64>() / logs.len() as f64).exp() - 1.0);
                assert!(
                    cells[3].starts_with(&format!("{mean:+.2}% (")),
                    "{line}: mean {mean}"
                );
            }
            let want = match seconds.get(&(case.clone(), variant.to_owned())) {
                None => "-".to_owned(),
                Some((verdict, median, holds)) => {
                    let held = match holds {
                        None => String::new(),
                        Some(true) => ": holds".into(),
                        Some(false) => ": does not hold".into(),
                    };
                    format!("{median:+.2}% {}{held}", mark(verdict))
                }
            };
            assert_eq!(cells[7], want, "{line}");
            assert_eq!(
                cells[9],
                mark(&find(&fuel, &case, variant).verdict),
                "{line}"
            );
            rows += 1;
        }
    }
    // The matrix: a column per case (linked to its page), a row per variant but shipping; each
    // cell the mean over the layouts (the statistic the verdict judges) and the verdict of
    // `totals.csv`, ✔ on the bolded pick of the case's page.
    let matrix: Vec<&str> = report[verdicts_at..]
        .lines()
        .skip_while(|l| !l.starts_with("| variant | geomean, "))
        .take_while(|l| l.starts_with('|'))
        .collect();
    let columns: Vec<String> = matrix[0]
        .split('|')
        .map(str::trim)
        .skip(3)
        .filter(|c| !c.is_empty())
        .map(|c| c[1..c.find(']').unwrap()].to_owned())
        .collect();
    assert_eq!(
        matrix.len(),
        2 + gas.len() / columns.len() - 1,
        "a row per variant but shipping"
    );
    for line in &matrix[2..] {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let variant = cells[1];
        for (case, cell) in columns.iter().zip(&cells[3..]) {
            let t = find(&gas, case, variant);
            let pick = bold.get(case).map(String::as_str) == Some(variant);
            // The mean as printed (2 decimals): the mean log-ratio over the offsets, as the
            // case page's table gives it.
            let (mean, rest) = cell.split_once("% ").unwrap();
            let mean: f64 = mean.parse().unwrap();
            let (mine, theirs) = (
                by_offset(&layouts, case, variant),
                by_offset(&layouts, case, "shipping"),
            );
            let logs: Vec<f64> = mine
                .iter()
                .map(|(o, t)| (*t as f64 / theirs[o] as f64).ln())
                .collect();
            let want = 100.0 * ((logs.iter().sum::<f64>() / logs.len() as f64).exp() - 1.0);
            assert!(
                (mean - want).abs() <= 0.005 + 1e-9,
                "{case} in {line}: {want}"
            );
            let rest_want = format!("{}{}", mark(&t.verdict), if pick { " ✔" } else { "" });
            assert_eq!(rest, rest_want, "{case} in {line}");
        }
    }
    assert_eq!(rows, gas.len(), "one row per case and variant");
    // The pick, by the rule of docs/ship.md "One program", recomputed with the ship test's own
    // plain bootstrap (20,000 resamples of the case's layouts). A variant is clearly in when it
    // passes with 0.3 points to spare at each bound, clearly out when it fails by that much (or
    // fails a clause with no randomness); between, the two bootstraps may differ and either
    // answer is the rule's.
    let dirs = [results()];
    let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let (sweep, again) = (
        crate::ship::gtest_totals(&dirs, "layouts.csv"),
        crate::ship::gtest_totals(&dirs, "second.csv"),
    );
    for (case, pick) in bold {
        let mut judged: Vec<(f64, &str, bool, bool)> = galloc_variants::VARIANTS
            .iter()
            .filter(|v| v.id != "shipping" && v.reproduces.is_none())
            .filter_map(|v| {
                let m = crate::ship::measures(&sweep, v.id, &[case.as_str()], 5, 20_000)?;
                let s = crate::ship::measures(&again, v.id, &[case.as_str()], 6, 20_000);
                let safe = galloc_variants::never_recommended(v.id).is_none();
                let second_upper = s.map(|s| s.interval.1);
                let clearly_in = safe
                    && m.interval.1 <= -1.3
                    && m.dearer <= 10.0
                    && second_upper.is_none_or(|u| u < -0.3);
                let clearly_out = !safe
                    || m.interval.1 > -0.7
                    || m.dearer > 10.0
                    || second_upper.is_some_and(|u| u >= 0.3);
                Some((m.expected, v.id, clearly_in, clearly_out))
            })
            .collect();
        judged.sort_by(|a, b| a.0.total_cmp(&b.0));
        let at = judged
            .iter()
            .position(|j| j.1 == pick)
            .unwrap_or(judged.len());
        assert!(
            judged[..at].iter().all(|j| !j.2),
            "{case}: a variant with a lower mean than {pick} is clearly admitted: {judged:?}"
        );
        if pick != "shipping" {
            assert!(
                !judged[at].3,
                "{case}: {pick} is clearly refused: {judged:?}"
            );
        }
    }
}

/// The design table's rows are recomputed here from `layouts.csv` (the mean over the layouts,
/// the rule's statistic, then median, range, verdict), and its geometric mean over every case
/// from those means (ratios, not percents), labelled with the cases it is over; the count below
/// shipping is what the means imply.
#[test]
fn the_design_table_and_its_geomean_are_what_the_rows_imply() {
    let report = std::fs::read_to_string(results().join("README.md")).unwrap();
    let at = report
        .find("## The lab's design against shipping")
        .expect("the design table");
    let layouts: Vec<LayoutRow> = read_csv(&results().join("gtest").join("layouts.csv")).unwrap();
    let of = |case: &str, variant: &str| by_offset(&layouts, case, variant);
    let design = galloc_variants::DESIGN;
    let mut logs = Vec::new();
    let mut below = 0;
    let mut cases = 0;
    for line in report[at..]
        .lines()
        .skip_while(|l| !l.starts_with("| case |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
    {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells[1] == "geometric mean of the means" {
            continue;
        }
        let case = cells[1];
        let mine = of(case, design);
        assert_eq!(mine.len(), OFFSETS.len(), "{line}");
        // Recomputed from the layout rows, not read from totals.csv (which rounds).
        let shipping = of(case, "shipping");
        let (verdict, _, median, lo, hi) = expected(&mine, &shipping);
        // The mean log-ratio over the offsets, as the rule takes it.
        let log = mine
            .iter()
            .map(|(o, t)| (*t as f64 / shipping[o] as f64).ln())
            .sum::<f64>()
            / mine.len() as f64;
        let mean = 100.0 * (log.exp() - 1.0);
        let held_out = galloc_lab::run::scenario::CASES
            .iter()
            .find(|c| c.id == case)
            .unwrap()
            .held_out;
        assert_eq!(
            cells[2],
            if held_out { "held out" } else { "designed on" },
            "{line}"
        );
        assert!(cells[3].starts_with(&format!("{mean:+.2}% (")), "{line}");
        assert_eq!(cells[4], format!("{median:+.2}%"), "{line}");
        assert_eq!(cells[5], format!("{lo:+.2}% … {hi:+.2}%"), "{line}");
        let mark = match verdict.as_str() {
            "cheaper" | "dearer" => format!("**{verdict}**"),
            other => other.to_owned(),
        };
        assert_eq!(cells[6], mark, "{line}");
        logs.push(log);
        below += usize::from(mean < 0.0);
        cases += 1;
    }
    let default_cases = galloc_lab::run::scenario::CASES
        .iter()
        .filter(|c| c.default)
        .count();
    assert_eq!(cases, default_cases, "every default case has a row");
    let geomean = 100.0 * ((logs.iter().sum::<f64>() / cases as f64).exp() - 1.0);
    assert!(
        report[at..].contains(&format!(
            "| geometric mean of the means | all {cases} | **{geomean:+.2}%** |"
        )),
        "geomean {geomean:+.2}%"
    );
    assert!(report[at..].contains(&format!(
        "Below shipping on the mean on {below} of the {cases} cases."
    )));
}
