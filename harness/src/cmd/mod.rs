//! One module per subcommand.

pub mod bench;
pub mod check;
pub mod measure;
pub mod report;
pub mod sizes;
