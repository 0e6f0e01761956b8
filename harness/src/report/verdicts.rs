//! The verdicts: every variant against shipping over the heap layouts, as the report's matrix
//! (every case at a glance), as a case page's table (range, second workload, the other
//! backend), and the lab's design case by case.

use super::inputs::{cases_on, unit_on, Inputs};
use super::tables::{count, mark, signed};
use crate::analyse::layout::{self, Verdict};
use crate::analyse::population::Totals;
use crate::run::backend::BackendKind;
use galloc_variants::{FLOOR, REFERENCE};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// What `lab measure` prints when it is done: the rule and the matrix of every case.
pub fn verdicts(inputs: &Inputs) -> String {
    verdict_rule(inputs) + &verdict_matrix(inputs, None)
}

type Summaries = BTreeMap<(String, String, String), layout::Summary>;

/// What every verdict section is judged from: the layout sweep and the second workloads
/// summarised, the backend that decides, and the embedded one beside it.
struct Judged<'a> {
    summaries: Summaries,
    second: Summaries,
    /// The same rows as totals, for the pick's rule (over each case's layouts).
    sweep_totals: Totals,
    second_totals: Totals,
    lead: &'a str,
    other: Option<&'static str>,
}

impl<'a> Judged<'a> {
    fn of(inputs: &'a Inputs) -> Option<Judged<'a>> {
        let lead = crate::results::headline_backend(&inputs.totals)?;
        let other = BackendKind::EMBEDDED
            .iter()
            .map(|b| b.name())
            .find(|b| *b != lead && inputs.totals.iter().any(|t| t.backend == *b));
        Some(Judged {
            summaries: layout::summarise(&inputs.layouts),
            second: layout::summarise_second(&inputs.second),
            sweep_totals: Totals::of_sweep(&inputs.layouts, lead),
            second_totals: Totals::of_second(&inputs.second, lead),
            lead,
            other,
        })
    }

    fn get(&self, case: &str, variant: &str) -> Option<&layout::Summary> {
        self.summaries
            .get(&(self.lead.to_owned(), case.to_owned(), variant.to_owned()))
    }

    /// The variant the rule recommends for `case` (shipping where none is): the ship rule with
    /// the case's layouts as its deployments ([`crate::analyse::ship::for_program`]), as `lab
    /// pick` answers, as the registry spells it.
    fn pick(&self, case: &str) -> &'static str {
        let ids: Vec<&str> = galloc_variants::VARIANTS.iter().map(|v| v.id).collect();
        let (_, named) = crate::analyse::pick::for_program(
            crate::analyse::ship::RULE,
            &self.sweep_totals,
            &self.second_totals,
            case,
            &ids,
        );
        galloc_variants::VARIANTS
            .iter()
            .find(|v| v.id == named)
            .map_or(REFERENCE, |v| v.id)
    }
}

/// The section's heading and the rule every verdict follows: the sweep's offsets, the minimum
/// effect and why, the second workloads, and what the lab never recommends.
pub fn verdict_rule(inputs: &Inputs) -> String {
    let mut out = String::new();
    let Some(j) = Judged::of(inputs) else {
        return "No results yet: run `just compare`.\n".into();
    };
    let (lead, other) = (j.lead, j.other);
    let points = j
        .summaries
        .iter()
        .filter(|((b, _, _), _)| b == lead)
        .map(|(_, s)| s.points)
        .max()
        .unwrap_or(0);
    let _ = writeln!(out, "## Verdicts across heap layouts\n");
    let band = layout::BAND_PCT;
    let offsets_on = |backend: &str| -> Vec<String> {
        inputs
            .layouts
            .iter()
            .filter(|r| r.backend == backend)
            .map(|r| r.offset)
            .collect::<BTreeSet<u32>>()
            .iter()
            .map(u32::to_string)
            .collect()
    };
    let offsets = offsets_on(lead);
    // A backend that ran a thinner sweep (`--fuel-stride`): say which points.
    let other_offsets = other
        .map(|o| (o, offsets_on(o)))
        .filter(|(_, o)| *o != offsets)
        .map(|(o, offs)| format!(" (`{o}`: {} of them, {})", offs.len(), offs.join(", ")))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "Each case's plain build was run with its static data, and so its heap base, at {points} \
         offsets over the 64 KiB Wasm page ({} bytes{other_offsets}; 0 is the linker's own \
         layout, the one the tables at the linker's layout use). Per \
         offset, each variant's total is compared with `shipping`'s at the same offset. The \
         words are the ship rule's, with the case's offsets as its deployments: {}. The lab \
         recommends, per case, as `lab \
         pick` does: the ship rule with the case's offsets as its deployments (docs/ship.md, \
         \"One program\"): its mean over them, with its 95 % interval's upper bound at or below \
         -{band} %, at most a tenth of them dearer by more than {band} %{}; of those, the \
         lowest mean, and shipping where none is; never the floor ({FLOOR}, which never frees: Gear's memory persists, so it only grows) nor a \
         variant that fails one of the lab's own tests ({}). `{lead}` decides; {}.\n",
        offsets.join(", "),
        Verdict::legend(band),
        // Only where second workloads were run: an outside program has none.
        if inputs.second.iter().any(|r| r.backend == lead) {
            ", and the second workload's upper bound below 0"
        } else {
            ""
        },
        galloc_variants::VARIANTS
            .iter()
            .filter(|v| v.reproduces.is_none())
            .filter_map(|v| v.fails.map(|f| format!("`{}`: {}", v.id, f.failure)))
            .collect::<Vec<_>>()
            .join("; "),
        match other {
            Some(o) => format!("each case's page gives `{o}`'s verdicts beside it"),
            None => "no other backend ran".into(),
        }
    );
    let second_offsets: BTreeSet<u32> = inputs
        .second
        .iter()
        .filter(|r| r.backend == lead)
        .map(|r| r.offset)
        .collect();
    if !second_offsets.is_empty() {
        let workloads: Vec<String> = crate::run::scenario::CASES
            .iter()
            .filter_map(|c| c.second.map(|w| (c.id, w)))
            .filter(|(case, _)| inputs.second.iter().any(|r| r.case == *case))
            .map(|(case, w)| format!("`{case}`: `{}` ({})", w.id, w.summary))
            .collect();
        let _ = writeln!(
            out,
            "A verdict must also survive another traffic of the same program: every case has a \
             second workload, run on `{lead}` at {} of the offsets ({} bytes) with the same rule \
             (**holds** when it repeats the verdict); the pick asks its upper bound below 0 \
             there too. The workloads: {}.\n",
            second_offsets.len(),
            second_offsets
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            workloads.join("; ")
        );
    }
    // The band is justified by the lab's own programs, not by one outside program's pairs.
    let lab_cases = inputs
        .totals
        .iter()
        .any(|t| crate::run::scenario::CASES.iter().any(|c| c.id == t.case));
    if let Some((pairs, luck)) = layout::layout_luck(&j.summaries, lead).filter(|_| lab_cases) {
        let _ = writeln!(
            out,
            "Why {band} %: on {lead}, {pairs} variant–case pairs change sign with the layout, and \
             the smaller of their two excursions has a median of {luck:.2} %: that much \
             difference, either way, the heap's place alone produces.\n"
        );
    }
    out
}

/// Every variant but shipping against shipping on every case, on the deciding backend: what
/// the report's matrix prints and the headline chart draws, from the same summaries.
pub struct Matrix<'a> {
    judged: Judged<'a>,
    /// The cases, in result order.
    pub cases: Vec<&'a str>,
    /// Per case, the variant the rule recommends (shipping where none qualifies).
    pub picks: Vec<&'static str>,
    /// The variants and the geometric mean of their means over the layouts (the rule's
    /// statistic), lowest first.
    pub rows: Vec<(&'static str, f64)>,
}

impl<'a> Matrix<'a> {
    pub fn of(inputs: &'a Inputs) -> Option<Matrix<'a>> {
        let judged = Judged::of(inputs)?;
        let cases = cases_on(&inputs.totals, judged.lead);
        // As the registry spells it, so the name outlives the summaries it was found in.
        let picks = cases.iter().map(|c| judged.pick(c)).collect();
        let mean = |case: &str, variant: &str| judged.get(case, variant)?.interval.map(|i| i.0);
        let mut rows: Vec<(&'static str, f64)> = galloc_variants::VARIANTS
            .iter()
            .filter(|v| v.id != REFERENCE)
            .filter(|v| cases.iter().any(|c| judged.get(c, v.id).is_some()))
            .map(|v| {
                let means = cases.iter().filter_map(|c| mean(c, v.id));
                (v.id, layout::geomean_pct(means))
            })
            .collect();
        rows.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(b.0)));
        Some(Matrix {
            judged,
            cases,
            picks,
            rows,
        })
    }

    /// The backend that decides.
    pub fn backend(&self) -> &'a str {
        self.judged.lead
    }

    /// `variant`'s mean difference to shipping over `case`'s layouts (percent: the statistic
    /// its verdict judges, [`layout::Summary::interval`]) and its verdict.
    pub fn cell(&self, case: &str, variant: &str) -> Option<(f64, Verdict)> {
        let s = self.judged.get(case, variant)?;
        Some((s.interval?.0, s.verdict))
    }
}

/// Every variant (rows, best geometric mean of means first) on every case (columns): its
/// mean difference to shipping over the layouts on the deciding backend (what its verdict
/// judges) and its verdict, ✔ on the variant the
/// rule recommends; then the tallies. `page` links a case's column to its page (`None`: plain
/// names, as the terminal prints it).
pub fn verdict_matrix(inputs: &Inputs, page: Option<&dyn Fn(&str) -> String>) -> String {
    let mut out = String::new();
    let Some(m) = Matrix::of(inputs) else {
        return out;
    };
    let (j, lead, cases, picks, variants) = (&m.judged, m.judged.lead, &m.cases, &m.picks, &m.rows);
    let unit = unit_on(&inputs.totals, lead);
    // What the case pages hold beyond the mean: only what was measured.
    let mut more = vec!["the interval, the median and the range"];
    if !inputs.second.is_empty() {
        more.push("the second workload");
    }
    if j.other.is_some() {
        more.push("the other backend");
    }
    let more = match &more[..] {
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
        [] => unreachable!("the range is always there"),
    };
    let _ = writeln!(
        out,
        "{unit} on `{lead}` against `shipping`, mean over the layouts (the statistic the verdict \
         judges, with its 95 % interval), and the verdict; ✔: the variant the rule recommends for \
         the case. Rows by the geometric mean of their means (as ratios) over the {} of this \
         table; each case's page has {more}.\n",
        count(cases.len(), "case")
    );
    let header: Vec<String> = cases
        .iter()
        .map(|c| page.map_or_else(|| (*c).to_owned(), |p| format!("[{c}]({})", p(c))))
        .collect();
    let _ = writeln!(
        out,
        "| variant | geomean, {} | {} |\n| --- | ---: |{}",
        count(cases.len(), "case"),
        header.join(" | "),
        " ---: |".repeat(cases.len())
    );
    for (variant, geomean) in variants {
        let cells: Vec<String> = cases
            .iter()
            .zip(picks)
            .map(|(case, pick)| match j.get(case, variant) {
                None => "-".into(),
                Some(s) => format!(
                    "{} {}{}",
                    s.interval.map_or("-".into(), |i| signed(i.0)),
                    mark(s.verdict),
                    if pick == variant { " ✔" } else { "" }
                ),
            })
            .collect();
        let _ = writeln!(
            out,
            "| {variant} | {} | {} |",
            signed(*geomean),
            cells.join(" | ")
        );
    }
    let shipping_picked: Vec<&str> = cases
        .iter()
        .zip(picks)
        .filter(|(_, p)| **p == REFERENCE)
        .map(|(c, _)| *c)
        .collect();
    if !shipping_picked.is_empty() {
        let _ = writeln!(
            out,
            "\n`shipping` is recommended (no variant qualifies) on: {}.",
            shipping_picked.join(", ")
        );
    }
    // Per layout, not the words: where one layout alone would have misled.
    let band = layout::BAND_PCT;
    let flips = j
        .summaries
        .iter()
        .filter(|((b, _, _), _)| b == lead)
        .filter_map(|(_, s)| s.vs_shipping)
        .filter(|(_, lo, hi)| *lo < -band && *hi > band)
        .count();
    let _ = writeln!(
        out,
        "{flips} variant–case pairs on {lead} are cheaper by more than {band} % at one layout \
         and dearer by more than {band} % at another: one layout alone would have named a \
         winner that another reverses.\n"
    );
    let tally = |h: layout::Holds| {
        j.summaries
            .iter()
            .filter(|(k, s)| k.0 == lead && layout::holds(s.verdict, j.second.get(*k)) == h)
            .count()
    };
    let (held, not_held) = (tally(layout::Holds::Yes), tally(layout::Holds::No));
    if held + not_held > 0 {
        let _ = writeln!(
            out,
            "Under the second workloads, {held} of the {} words other than uncertain on {lead} \
             hold and {not_held} do not.\n",
            held + not_held
        );
    }
    out
}

/// Per case, every variant against shipping across the heap layouts, ordered by the median
/// difference on the deciding backend: range, the second workload's verdict and whether the
/// case's holds there, and the other backend's verdict; the recommended variant in **bold**.
pub fn verdict_table(inputs: &Inputs) -> String {
    let mut out = String::new();
    let Some(j) = Judged::of(inputs) else {
        return out;
    };
    let (lead, other) = (j.lead, j.other);
    let unit_of = |backend: &str| unit_on(&inputs.totals, backend);
    let (lead_unit, other_unit) = (unit_of(lead), other.map_or("", unit_of));
    let other_columns = if other.is_some() {
        format!(" {other_unit} median | {other_unit} word |")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "| case | variant | {lead_unit} vs shipping, mean (95 % interval) | median | lowest … highest | word | second workload |{other_columns}"
    );
    let _ = writeln!(
        out,
        "| --- | --- | ---: | ---: | ---: | --- | --- |{}",
        if other.is_some() { " ---: | --- |" } else { "" }
    );
    let mut picks = Vec::new();
    for case in cases_on(&inputs.totals, lead) {
        let best = j.pick(case);
        picks.push(format!("{case}: **{best}**"));
        let mut rows: Vec<(&str, &layout::Summary)> = j
            .summaries
            .iter()
            .filter(|((b, c, _), _)| b == lead && c == case)
            .map(|((_, _, v), s)| (v.as_str(), s))
            .collect();
        let median_of = |s: &layout::Summary| s.vs_shipping.map_or(0.0, |d| d.0);
        rows.sort_by(|a, b| median_of(a.1).total_cmp(&median_of(b.1)).then(a.0.cmp(b.0)));
        for (i, (variant, s)) in rows.iter().enumerate() {
            let name = if *variant == best {
                format!("**{variant}**")
            } else {
                (*variant).to_owned()
            };
            let (median, range) = match s.vs_shipping {
                Some((m, lo, hi)) => (signed(m), format!("{} … {}", signed(lo), signed(hi))),
                None => ("-".into(), "-".into()),
            };
            // The figures the word is read from.
            let mean = match s.interval {
                // One layout is a point, not an interval (its word is `uncertain`).
                Some((m, _)) if s.points < 2 => format!("{} (one layout: no interval)", signed(m)),
                Some((m, (lo, hi))) => format!("{} ({} … {})", signed(m), signed(lo), signed(hi)),
                None => "-".into(),
            };
            let beside = other.map(|o| {
                match j
                    .summaries
                    .get(&(o.to_owned(), case.to_owned(), (*variant).to_owned()))
                {
                    Some(b) => format!(
                        " {} | {} |",
                        b.vs_shipping.map_or("-".into(), |d| signed(d.0)),
                        mark(b.verdict)
                    ),
                    None => " - | - |".into(),
                }
            });
            let key = (lead.to_owned(), case.to_owned(), (*variant).to_owned());
            let second_cell = match (
                j.second.get(&key),
                layout::holds(s.verdict, j.second.get(&key)),
            ) {
                _ if s.verdict == Verdict::Baseline => "-".to_owned(),
                (_, layout::Holds::Untested) | (None, _) => "-".to_owned(),
                (Some(w), h) => {
                    let median = w.vs_shipping.map_or("-".into(), |d| signed(d.0));
                    match h {
                        layout::Holds::Nothing => format!("{median} {}", mark(w.verdict)),
                        _ => format!("{median} {}: {}", mark(w.verdict), h.name()),
                    }
                }
            };
            let _ = writeln!(
                out,
                "| {} | {name} | {mean} | {median} | {range} | {} | {second_cell} |{}",
                if i == 0 { case } else { "" },
                mark(s.verdict),
                beside.unwrap_or_default()
            );
        }
    }
    let _ = writeln!(out, "\nRecommended: {}.", picks.join("; "));
    out
}

/// The lab's design against shipping on the deciding backend, case by case
/// ([`layout::Standing`]); empty without a sweep of it and shipping on every case.
pub fn standing(inputs: &Inputs) -> Option<(String, layout::Standing)> {
    let lead = crate::results::headline_backend(&inputs.totals)?;
    // The design is judged on the lab's cases only: a program from outside the registry was
    // never split into designed-on and held out (an outside program's report has no design
    // section).
    let cases: Vec<(&str, bool)> = cases_on(&inputs.totals, lead)
        .into_iter()
        .filter(|c| crate::run::scenario::CASES.iter().any(|k| k.id == *c))
        .map(|c| (c, crate::run::scenario::held_out(c)))
        .collect();
    if cases.is_empty() {
        return None;
    }
    let summaries = layout::summarise(&inputs.layouts);
    Some((lead.to_owned(), layout::standing(&summaries, lead, &cases)?))
}

/// What the cases of `st` are, for a label: the default cases, the corpus programs, or cases.
pub fn set_name(st: &layout::Standing) -> &'static str {
    let of = |id: &str| crate::run::scenario::CASES.iter().find(|c| c.id == id);
    if st
        .cases
        .iter()
        .all(|c| of(&c.case).is_some_and(|c| c.default))
    {
        "default cases"
    } else if st
        .cases
        .iter()
        .all(|c| of(&c.case).is_some_and(|c| c.corpus))
    {
        "corpus programs"
    } else {
        "cases"
    }
}

/// The lab's design against shipping, case by case (`images/design.png` draws it).
pub fn design(inputs: &Inputs) -> String {
    let mut out = String::new();
    let Some((lead, st)) = standing(inputs) else {
        return out;
    };
    let lead = lead.as_str();
    let unit = unit_on(&inputs.totals, lead);
    let names = |held: bool| -> String {
        let c: Vec<String> = st
            .cases
            .iter()
            .filter(|c| c.held_out == held)
            .map(|c| format!("`{}`", c.case))
            .collect();
        if c.is_empty() {
            "none".into()
        } else {
            c.join(", ")
        }
    };
    let n = st.cases.len();
    let count = |held: bool| st.cases.iter().filter(|c| c.held_out == held).count();
    let _ = writeln!(out, "## The lab's design against shipping\n");
    let _ = writeln!(
        out,
        "`{}` (the registry's `DESIGN`) on each of the {n} {}, {lead} {unit} against \
         `shipping` at the same heap layout over the sweep: its mean over the layouts with the \
         95 % interval (the statistic the verdict and the ship rule read), then the median and \
         the range. Designed on {}; held out, only \
         confirmed on: {} (the split is in the case registry, `held_out`, decided before the \
         design was measured). Whether it is done is the design target's to say, over every \
         program and layout (\"The design target\", under the ship table). `images/design.png` \
         draws this table.\n",
        st.variant,
        set_name(&st),
        names(false),
        names(true)
    );
    let _ = writeln!(
        out,
        "| case | split | mean (95 % interval) | median | lowest … highest | verdict |\n\
         | --- | --- | ---: | ---: | ---: | --- |"
    );
    for c in &st.cases {
        let _ = writeln!(
            out,
            "| {} | {} | {} ({} … {}) | {} | {} … {} | {} |",
            c.case,
            if c.held_out {
                "held out"
            } else {
                "designed on"
            },
            signed(c.mean),
            signed(c.interval.0),
            signed(c.interval.1),
            signed(c.median),
            signed(c.lowest),
            signed(c.highest),
            mark(c.verdict)
        );
    }
    let sub = |held: bool| {
        let cases = st.cases.iter().filter(|c| c.held_out == held);
        layout::geomean_pct(cases.map(|c| c.mean))
    };
    let _ = writeln!(
        out,
        "| geometric mean of the means | all {n} | **{}** | | | |\n\
         | geometric mean of the means | the {} designed on | {} | | | |\n\
         | geometric mean of the means | the {} held out | {} | | | |",
        signed(st.geomean_pct),
        count(false),
        signed(sub(false)),
        count(true),
        signed(sub(true))
    );
    let _ = writeln!(
        out,
        "\nBelow shipping on the mean on {} of the {n} cases.\n",
        st.below(),
    );
    out
}
