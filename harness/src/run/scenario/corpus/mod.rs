//! The corpus: eight programs written for the lab as Gear authors write them in 2026 (six on
//! Sails, two in plain gstd), each of a different kind, each with two workloads of 300 or more
//! messages from many users, refusals included, every reply (and every Sails event) answered
//! by the program's own rules run on the host. The verdict on what galloc should ship is judged
//! on these and the default cases (docs/ship.md, "What galloc should ship"); which half a design may
//! be shaped on is fixed in the registry (`held_out`).

pub mod dao;
pub mod dex;
pub mod game;
pub mod lottery;
pub mod market;
pub mod profiles;
pub mod staking;
pub mod vesting;

#[cfg(test)]
mod tests {
    use crate::run::scenario::{Expect, CASES};

    /// What the corpus promises of every program, on both workloads: 300 messages or more,
    /// from many users, some of them refused (a Sails program's refusal fails the message
    /// with its error; a gstd program's is an `Err` reply, SCALE's variant 1 of `Result`).
    #[test]
    fn every_workload_is_long_many_handed_and_includes_refusals() {
        let corpus: Vec<_> = CASES.iter().filter(|c| c.corpus).collect();
        assert_eq!(corpus.len(), 8);
        let (mut designed_on, mut sails) = (0, 0);
        for case in &corpus {
            let second = case.second.expect("a second workload");
            for (workload, s) in [(case.id, (case.make)()), (second.id, (second.make)())] {
                let users = s.senders().len();
                let refused = s
                    .steps
                    .iter()
                    .filter(|st| match &st.expect {
                        Expect::FailureWith(_) => true,
                        Expect::Reply(r) => s.init.is_empty() && r.first() == Some(&1),
                        _ => false,
                    })
                    .count();
                eprintln!(
                    "{workload}: {} messages, {users} senders, {refused} refused",
                    s.steps.len() + 1
                );
                assert!(s.steps.len() >= 300, "{workload}: {}", s.steps.len());
                assert!(users >= 10, "{workload}: {users} senders");
                assert!(refused > 0, "{workload}: nothing refused");
            }
            designed_on += usize::from(!case.held_out);
            sails += usize::from(!(case.make)().init.is_empty());
        }
        // The split: half designed on, half held out; six on Sails (a Sails `init` is a
        // constructor call, with its header), two in gstd (no `init` payload).
        assert_eq!(designed_on, 4);
        assert_eq!(sails, 6);
    }
}
