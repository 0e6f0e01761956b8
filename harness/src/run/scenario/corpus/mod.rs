//! The corpus: eight programs written for the lab as Gear authors write them in 2026 (six on
//! Sails, two in plain gstd), each of a different kind, each with two workloads of 300 or more
//! messages from many users, refusals included, every reply (and every Sails event) answered
//! by the program's own rules run on the host. The verdict on what galloc should ship is judged
//! on these and the default cases (README, "What galloc should ship"); which half a design may
//! be shaped on is fixed in the registry (`held_out`).

pub mod dao;
pub mod dex;
pub mod game;
pub mod lottery;
pub mod market;
pub mod profiles;
pub mod staking;
pub mod vesting;
