//! The ship rule for one program (docs/ship.md, "One program"): `lab pick`'s answer and the
//! report's pick per case. The program's layouts are its deployments: after its next change its
//! heap may start at any of them.

use crate::analyse::population::{Population, Totals};
use crate::analyse::ship::{Refusal, Rule};
use galloc_variants::REFERENCE;

/// One variant on one program, as `lab pick` and the report's pick per case judge it: the
/// program's layouts are its deployments.
#[derive(Clone, Debug, PartialEq)]
pub struct OnOneProgram {
    pub variant: String,
    /// Over the program's layouts (its mean is the expected change).
    pub all: Population,
    /// Over its second workload's layouts, where measured.
    pub second: Option<Population>,
    /// At the program's own layout (offset 0: where the linker puts its heap today), the
    /// variant's total and shipping's, where measured.
    pub own_layout: Option<(u64, u64)>,
    /// Why the rule does not admit it (empty: admitted).
    pub refusals: Vec<Refusal>,
}

/// The rule for one program (docs/ship.md, "One program"): a release's rule with the
/// program's layouts as its deployments, so the program may land at any of them after its next
/// change. Every variant among `variants` that ran on `case` in `sweep`, lowest expected change
/// first, and the admitted one with the lowest (shipping when none is). The held-out clause has
/// no meaning for one program; the second workload's counts where `second` has it.
pub fn for_program(
    rule: Rule,
    sweep: &Totals,
    second: &Totals,
    case: &str,
    variants: &[&str],
) -> (Vec<OnOneProgram>, String) {
    let mut out: Vec<OnOneProgram> = variants
        .iter()
        .filter(|v| **v != REFERENCE)
        .filter_map(|v| {
            let deployed = sweep.deployments(v, REFERENCE, &[case]);
            let all = Population::of(&deployed)?;
            let again = Population::of(&second.deployments(v, REFERENCE, &[case]));
            let own_layout = deployed[0]
                .points
                .iter()
                .find(|(o, _, _)| *o == 0)
                .map(|(_, v, s)| (*v, *s));
            let refusals = rule.refusals(
                &all,
                None,
                again.as_ref(),
                galloc_variants::never_recommended(v).as_deref(),
            );
            Some(OnOneProgram {
                variant: (*v).to_owned(),
                all,
                second: again,
                own_layout,
                refusals,
            })
        })
        .collect();
    let named =
        crate::analyse::ship::rank(&mut out, |o| (&o.all, &o.variant, o.refusals.is_empty()));
    (out, named)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyse::ship::tests::{layout_row, second_row};
    use crate::analyse::ship::RULE;
    use crate::results::{LayoutRow, SecondRow};

    /// Program `a` at two layouts: each variant's sweep totals and its second workload's.
    fn rows(variants: &[(&str, u64, u64)]) -> (Vec<LayoutRow>, Vec<SecondRow>) {
        let (mut l, mut s) = (Vec::new(), Vec::new());
        for (v, sweep, again) in variants {
            for offset in [0, 4096] {
                l.push(layout_row("a", v, offset, *sweep));
                s.push(second_row("a", v, offset, *again));
            }
        }
        (l, s)
    }

    /// One program: its layouts are its deployments. `rlsf` 3 % cheaper at both layouts is
    /// named; `talc`, cheaper on average but 2 % dearer at one layout of two (its interval
    /// reaches +2 %), is not; `bump` never is; the gas at offset 0 is given.
    #[test]
    fn one_program_is_judged_over_its_own_layouts() {
        let (l, s) = rows(&[
            ("shipping", 1000, 1000),
            ("rlsf", 970, 970),
            ("bump", 500, 500),
        ]);
        let mut l = l;
        l.push(layout_row("a", "talc", 0, 900));
        l.push(layout_row("a", "talc", 4096, 1020));
        let (sweep, second) = (
            Totals::of_sweep(&l, "gtest"),
            Totals::of_second(&s, "gtest"),
        );
        let (all, named) = for_program(
            RULE,
            &sweep,
            &second,
            "a",
            &["shipping", "talc", "rlsf", "bump", "slabs"],
        );
        let order: Vec<&str> = all.iter().map(|o| o.variant.as_str()).collect();
        assert_eq!(order, ["bump", "talc", "rlsf"], "slabs did not run");
        assert_eq!(named, "rlsf");
        assert_eq!(all[2].own_layout, Some((970, 1000)));
        assert_eq!(
            all[1].refusals[0].to_string(),
            "its interval reaches +2.00 %"
        );
        assert!(all[1].second.is_none(), "talc has no second workload");
        assert!(matches!(all[0].refusals.last(), Some(Refusal::Unsafe(_))));
        let (_, none) = for_program(RULE, &sweep, &second, "a", &["shipping", "talc"]);
        assert_eq!(none, "shipping");
    }
}
