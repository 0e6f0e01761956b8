//! The bounds over measured designs (not physics): at each deployment, the cheapest design
//! there (the per-point oracle), and the cheapest of each charge any design reaches there put
//! together (the composite). docs/ship.md, "How far from the best".

use super::{Anatomy, Part, Run};
use crate::analyse::population::{Deployments, Population};

impl Anatomy {
    /// The bounds over measured designs on `programs`, against `reference`: at each deployment
    /// where every one of `designs` has an anatomy, the per-point oracle (the cheapest of
    /// `designs` there, `reference` among them) and the composite (the reference's run with its
    /// page and held charges, its code and its allocator instructions each replaced by the
    /// cheapest of `designs` there, the instructions op by op: the program's calls times the
    /// cheapest measured instruction gas per call of each op), and the composite with no
    /// allocator instructions at all. `None` where a program has no such deployment.
    pub fn limits(&self, designs: &[&str], reference: &str, programs: &[&str]) -> Option<Limits> {
        let mut oracle = Vec::new();
        let mut composite = Vec::new();
        let mut bare = Vec::new();
        for p in programs {
            let calls = self.calls.get(*p)?;
            let per_call: Vec<[f64; 4]> = designs
                .iter()
                .map(|d| {
                    self.per_call
                        .get(&((*p).to_owned(), (*d).to_owned()))
                        .copied()
                })
                .collect::<Option<_>>()?;
            let cheapest_calls: f64 = (0..4)
                .map(|i| {
                    let least = per_call.iter().map(|c| c[i]).fold(f64::INFINITY, f64::min);
                    calls[i] as f64 * least
                })
                .sum();
            let offsets: Vec<u32> = self
                .runs
                .keys()
                .filter(|(q, v, _)| q == p && v == reference)
                .map(|k| k.2)
                .filter(|o| designs.iter().all(|d| self.run(p, d, *o).is_some()))
                .collect();
            if offsets.is_empty() {
                return None;
            }
            let (mut o_pts, mut c_pts, mut b_pts) = (Vec::new(), Vec::new(), Vec::new());
            for o in offsets {
                let reference_run = self.run(p, reference, o)?;
                let runs: Vec<&Run> = designs.iter().filter_map(|d| self.run(p, d, o)).collect();
                let least = |f: &dyn Fn(&Run) -> f64| {
                    runs.iter().map(|r| f(r)).fold(f64::INFINITY, f64::min)
                };
                let pages = |r: &Run| -> f64 {
                    Part::ALL
                        .iter()
                        .filter(|x| x.is_page() || **x == Part::Held)
                        .map(|x| r.part(*x))
                        .sum()
                };
                let cheapest = runs.iter().map(|r| r.total).min()?;
                let kept = reference_run.total as f64
                    - pages(reference_run)
                    - reference_run.part(Part::Code)
                    - reference_run.part(Part::AllocatorInstructions);
                let without = kept + least(&pages) + least(&|r: &Run| r.part(Part::Code));
                let with = without + cheapest_calls;
                o_pts.push((o, cheapest, reference_run.total));
                c_pts.push((o, with.round() as u64, reference_run.total));
                b_pts.push((o, without.round() as u64, reference_run.total));
            }
            let d = |points| Deployments {
                program: (*p).to_owned(),
                points,
            };
            oracle.push(d(o_pts));
            composite.push(d(c_pts));
            bare.push(d(b_pts));
        }
        Some(Limits {
            oracle: Population::of(&oracle)?,
            composite: Population::of(&composite)?,
            no_allocator_instructions: Population::of(&bare)?,
        })
    }
}

/// The bounds over measured designs (not physics): what the designs the lab measured reach
/// at each deployment, taken apart and put together.
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// The cheapest design at each deployment.
    pub oracle: Population,
    /// The fewest page charges, the smallest code and the cheapest measured per-op cost of any
    /// design, at each deployment.
    pub composite: Population,
    /// The composite with no allocator instructions at all.
    pub no_allocator_instructions: Population,
}
