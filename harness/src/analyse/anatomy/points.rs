//! A variant's change against shipping split by part ([`super::Part`]), averaged as the ship
//! rule averages: the anatomy's answer to "which charge did this change move".

use super::{Anatomy, Part, Run, PARTS};
use crate::analyse::population::pct_of_log;

impl Anatomy {
    /// `variant` against `reference` over `programs`, in points ([`Points`]); `None` when some
    /// program has no layout where both have an anatomy.
    pub fn against(&self, variant: &str, reference: &str, programs: &[&str]) -> Option<Points> {
        let per_program: Vec<ProgramPoints> = programs
            .iter()
            .map(|p| {
                let pairs: Vec<(Run, Run)> = self
                    .shared(p, variant, reference)
                    .into_iter()
                    .map(|o| {
                        (
                            *self.run(p, variant, o).unwrap(),
                            *self.run(p, reference, o).unwrap(),
                        )
                    })
                    .collect();
                ProgramPoints::of(p, &pairs)
            })
            .collect::<Option<_>>()?;
        let n = per_program.len() as f64;
        let mut logs = [0.0; PARTS];
        for p in &per_program {
            for (l, x) in logs.iter_mut().zip(p.logs) {
                *l += x / n;
            }
        }
        Some(Points {
            parts: scaled(logs),
            expected_pct: pct_of_log(logs.iter().sum::<f64>() / 100.0),
            deployments: per_program.iter().map(|p| p.deployments).sum(),
            programs: per_program,
        })
    }
}

/// A variant against the reference on one program: its mean log-ratio over the layouts, split
/// by part (in log-points: 100 times a natural log).
#[derive(Clone, Debug, PartialEq)]
pub struct ProgramPoints {
    pub program: String,
    pub deployments: usize,
    pub logs: [f64; PARTS],
}

impl ProgramPoints {
    /// At each layout the log-ratio of the totals is split in proportion to each part's
    /// difference (the parts' differences sum to the totals' difference); then the mean over the
    /// layouts. `None` without a layout.
    fn of(program: &str, pairs: &[(Run, Run)]) -> Option<Self> {
        if pairs.is_empty() {
            return None;
        }
        let mut logs = [0.0; PARTS];
        for (v, s) in pairs {
            let diff = v.total as f64 - s.total as f64;
            // ln(v/s) / (v - s): the weight that turns a difference in gas into log-points;
            // 1/s in the limit where the totals are equal.
            let per_gas = if diff == 0.0 {
                1.0 / s.total as f64
            } else {
                (v.total as f64 / s.total as f64).ln() / diff
            };
            for (i, l) in logs.iter_mut().enumerate() {
                *l += 100.0 * per_gas * (v.parts[i] - s.parts[i]) / pairs.len() as f64;
            }
        }
        Some(ProgramPoints {
            program: program.to_owned(),
            deployments: pairs.len(),
            logs,
        })
    }

    /// The program's expected change (percent) and its parts, in points summing to it.
    pub fn points(&self) -> ([f64; PARTS], f64) {
        (
            scaled(self.logs),
            pct_of_log(self.logs.iter().sum::<f64>() / 100.0),
        )
    }
}

/// Log-points scaled to sum to the percent change they add up to: each part keeps its share.
fn scaled(logs: [f64; PARTS]) -> [f64; PARTS] {
    let sum: f64 = logs.iter().sum();
    if sum == 0.0 {
        return logs;
    }
    let factor = pct_of_log(sum / 100.0) / sum;
    logs.map(|l| l * factor)
}

/// A variant against the reference over programs, as the ship rule averages (each program's
/// mean over its layouts, then the mean over programs): its expected change, and that change
/// split by part, in points (1 % of the reference's gas) that sum to it exactly.
#[derive(Clone, Debug, PartialEq)]
pub struct Points {
    pub parts: [f64; PARTS],
    pub expected_pct: f64,
    pub deployments: usize,
    pub programs: Vec<ProgramPoints>,
}

impl Points {
    pub fn part(&self, p: Part) -> f64 {
        self.parts[p as usize]
    }

    /// The page charges together (first reads, first writes, writes after read, loads).
    pub fn pages(&self) -> f64 {
        Part::ALL
            .iter()
            .filter(|p| p.is_page())
            .map(|p| self.part(*p))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::*;
    use crate::results::pages::page_weights;

    /// A variant with one first write fewer and one first read more than shipping, and smaller
    /// code, at two layouts: its points are those differences in proportion, and sum to its
    /// expected change exactly (the ship rule's: mean log-ratio, then back to percent).
    #[test]
    fn points_split_the_expected_change_by_part() {
        let ship = |pages| Made {
            pages,
            runs: 1,
            code: CODE,
            price: 3_000,
        };
        let variant = |pages: [u64; 4]| Made {
            pages: [pages[0] + 1, pages[1] - 1, pages[2], pages[3]],
            runs: 1,
            code: CODE - 1_000_000,
            price: 3_000,
        };
        let a = anatomy(&[
            ("shipping", 0, ship([3, 2, 1, 4])),
            ("lab", 0, variant([3, 2, 1, 4])),
            ("shipping", 4096, ship([5, 4, 1, 4])),
            ("lab", 4096, variant([5, 4, 1, 4])),
        ]);
        let points = a.against("lab", "shipping", &["p"]).unwrap();
        assert_eq!(points.deployments, 2);
        let sum: f64 = points.parts.iter().sum();
        assert!(
            (sum - points.expected_pct).abs() < 1e-12,
            "{sum} {points:?}"
        );
        let logs: f64 = [0, 4096]
            .iter()
            .map(|&o| {
                let (v, s) = (
                    a.run("p", "lab", o).unwrap(),
                    a.run("p", "shipping", o).unwrap(),
                );
                (v.total as f64 / s.total as f64).ln() / 2.0
            })
            .sum();
        assert!((points.expected_pct - pct_of_log(logs)).abs() < 1e-12);
        let w = page_weights();
        // Per layout, a read more (+w0), a write fewer (-w1) and 2 M less code: shares of the
        // same difference at both layouts, so of the whole.
        let diff = w[0] as f64 - w[1] as f64 - 2_000_000.0;
        for (part, gas) in [
            (Part::FirstReads, w[0] as f64),
            (Part::FirstWrites, -(w[1] as f64)),
            (Part::Code, -2_000_000.0),
        ] {
            let want = points.expected_pct * gas / diff;
            assert!((points.part(part) - want).abs() < 0.01, "{part:?}");
        }
        for part in [
            Part::AllocatorInstructions,
            Part::Loads,
            Part::Held,
            Part::Rest,
        ] {
            assert!(points.part(part).abs() < 1e-9, "{part:?}");
        }
        // The oracle is the cheaper at each deployment (lab here), the composite the same:
        // lab has the fewest page charges and the smallest code, and no ops were recorded.
        assert!(a.limits(&["shipping", "lab"], "shipping", &["p"]).is_none());
        assert!(a.against("lab", "shipping", &["q"]).is_none());
    }
}
