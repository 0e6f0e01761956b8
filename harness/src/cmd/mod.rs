//! One module per subcommand.

pub mod sizes;
