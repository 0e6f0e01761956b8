//! One module per subcommand.

pub mod bench;
pub mod measure;
pub mod report;
pub mod sizes;
