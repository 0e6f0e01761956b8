//! `lab pick`'s answer: the variant a program should use among those measured, by the report's
//! rule ([`layout::recommended`]), with the figures behind it and what was left out and why,
//! in the words the report uses for verdicts.

use crate::analyse::layout::{self, Summary, Verdict, SHIPPING};
use crate::run::backend::BackendKind;
use anyhow::{bail, Result};

/// The answer, and the figures behind it.
#[derive(Debug, PartialEq)]
pub struct Pick<'a> {
    /// What to use: a variant id, or `shipping` (change nothing).
    pub variant: &'a str,
    /// Its (or, for `shipping`, the best other median's, excluded variants included)
    /// difference to shipping: median, lowest, highest, in percent; and that variant and its
    /// verdict.
    pub figures: Option<(&'a str, (f64, f64, f64), Verdict)>,
    /// The measured variants the lab never recommends, each with why.
    pub excluded: Vec<(&'a str, String)>,
    /// Variants compared.
    pub compared: usize,
}

impl<'a> Pick<'a> {
    /// The pick among `variants` on one backend and case.
    pub fn of(
        summaries: &'a std::collections::BTreeMap<(String, String, String), Summary>,
        backend: &str,
        case: &str,
        variants: &[&'a str],
    ) -> Result<Self> {
        let of = |v: &str| summaries.get(&(backend.to_owned(), case.to_owned(), v.to_owned()));
        for v in variants {
            if of(v).is_none() {
                bail!("no {backend} result for {case} on {v}: the measurement is incomplete");
            }
        }
        let variant = layout::recommended(summaries, backend, case);
        let figures_of = |(key, s): (&'a (String, String, String), &'a Summary)| {
            s.vs_shipping.map(|d| (key.2.as_str(), d, s.verdict))
        };
        let figures = if variant == SHIPPING {
            // The closest any variant came: the lowest median, an excluded one included (the
            // answer then says why it is not the pick).
            summaries
                .iter()
                .filter(|((b, c, v), _)| b == backend && c == case && v != SHIPPING)
                .filter_map(figures_of)
                .min_by(|a, b| a.1 .0.total_cmp(&b.1 .0).then(a.0.cmp(b.0)))
        } else {
            summaries
                .get_key_value(&(backend.to_owned(), case.to_owned(), variant.to_owned()))
                .and_then(figures_of)
        };
        let excluded = variants
            .iter()
            .filter_map(|v| galloc_variants::never_recommended(v).map(|why| (*v, why)))
            .collect();
        Ok(Pick {
            variant,
            figures,
            excluded,
            compared: variants.len(),
        })
    }

    /// What `lab pick` prints; `allocator` is the lab's galloc, for the patch line.
    pub fn answer(
        &self,
        case: &str,
        backend: BackendKind,
        layouts: u32,
        allocator: &std::path::Path,
    ) -> String {
        let unit = match backend {
            BackendKind::Gtest => "gas",
            _ => "fuel",
        };
        let band = layout::BAND_PCT;
        let pct = |x: f64| format!("{x:+.2} %");
        let mut out = format!(
            "pick for {case}: {} variants, {unit} on {}, {layouts} heap layouts, minimum effect \
             {band} %\n",
            self.compared,
            backend.name()
        );
        match (self.variant, self.figures) {
            (SHIPPING, best) => {
                out.push_str(&format!(
                    "  use shipping (gstd's own galloc): no variant the lab recommends is cheaper \
                     by more than {band} % at every layout\n"
                ));
                if let Some((v, (m, lo, hi), verdict)) = best {
                    let excluded = self.excluded.iter().find(|(e, _)| *e == v);
                    out.push_str(&format!(
                        "  closest: {v}, {} vs shipping at the median ({} … {}), {}: {}\n",
                        pct(m),
                        pct(lo),
                        pct(hi),
                        // The report's word for the verdict, then what it means.
                        verdict.name(),
                        match verdict {
                            Verdict::Better =>
                                format!("cheaper by more than {band} % at every layout"),
                            Verdict::Worse =>
                                format!("dearer by more than {band} % at every layout"),
                            Verdict::Same => format!("within {band} % at every layout"),
                            _ => format!(
                                "neither within {band} % at every layout nor beyond it at every \
                                 layout"
                            ),
                        }
                    ));
                    if let Some((_, why)) = excluded {
                        out.push_str(&format!("    but never recommended: {why}\n"));
                    }
                }
                // Each reason once: the closest's was just given.
                self.push_excluded(&mut out, best.map(|b| b.0));
                out.push_str("  Cargo.toml: nothing to change\n");
            }
            (v, figures) => {
                if let Some((_, (m, lo, hi), _)) = figures {
                    out.push_str(&format!(
                        "  use {v}: {} vs shipping at the median ({} … {}), cheaper by more than \
                         {band} % at every layout\n",
                        pct(m),
                        pct(lo),
                        pct(hi)
                    ));
                }
                self.push_excluded(&mut out, None);
                out.push_str(&format!(
                    "  Cargo.toml, both lines (docs/your-program.md, \"Using a variant in your program\"):\n    \
                     [dependencies] galloc = {{ version = \"=2.0.0\", features = [\"{v}\"] }}\n    \
                     [patch.crates-io] galloc = {{ path = {:?} }}\n",
                    allocator.display().to_string()
                ));
            }
        }
        out
    }

    /// The line naming what was measured but never recommended, and why (but `said`, whose
    /// reason the answer already gave).
    fn push_excluded(&self, out: &mut String, said: Option<&str>) {
        for (v, why) in self.excluded.iter().filter(|(v, _)| Some(*v) != said) {
            out.push_str(&format!("  not recommended: {v} ({why})\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// When the closest variant is one the lab never recommends, its reason is given once
    /// (beside it), not again in the list of what was left out; the verdict is the report's
    /// word with what it means.
    #[test]
    fn each_reason_is_given_once_and_verdicts_are_the_report_s_words() {
        let pick = Pick {
            variant: SHIPPING,
            figures: Some(("bump", (-4.0, -6.0, 2.0), Verdict::Noise)),
            excluded: vec![
                ("bump", "never frees".to_owned()),
                ("gear-next", "refuses large requests".to_owned()),
            ],
            compared: 3,
        };
        let text = pick.answer("c", BackendKind::Gtest, 4, std::path::Path::new("/a"));
        assert_eq!(text.matches("never frees").count(), 1, "{text}");
        assert_eq!(text.matches("refuses large requests").count(), 1, "{text}");
        assert!(
            text.contains(
                "closest: bump, -4.00 % vs shipping at the median (-6.00 % … +2.00 %), noise: "
            ) && text.contains("    but never recommended: never frees\n")
                && text.contains("  not recommended: gear-next (refuses large requests)\n"),
            "{text}"
        );
        assert!(!text.contains("within layout noise"), "{text}");
    }
}
