//! One module per subcommand.

pub mod measure;
pub mod sizes;
