//! `lab`: the galloc lab's command line. One file per subcommand under `cmd/`.

mod cmd;

use anyhow::Result;
use clap::{Parser, Subcommand};
use galloc_lab::build::workspace::Workspace;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "lab",
    about = "Builds Gear programs per allocator variant and measures them"
)]
struct Cli {
    /// The lab's workspace (found from the current directory by default).
    #[arg(long, global = true)]
    workspace: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the allocator alone for every variant (with and without the probe), check it
    /// keeps Gear's rules, and record its code size in results/code-size.csv.
    Sizes(cmd::sizes::Args),
    /// Build the contracts for every variant and run the cases on the embedded backends,
    /// writing results/<backend>/*.csv, results/traces/, results/README.md and images/
    /// (reusing kept runs whose builds are unchanged).
    Measure(cmd::measure::Args),
    /// The regression gate: a run's totals against the committed baseline; fails on any rise.
    Check(cmd::check::Args),
    /// Re-render results/README.md, results/metadata.json and images/ from the results
    /// files, running nothing.
    Report(cmd::report::Args),
    /// Replay the recorded allocation traces against every variant, natively and in Wasm under
    /// fuel, checking every step; a fault or divergence is shrunk to a minimal trace.
    Replay(cmd::replay::Args),
    /// Time each scenario on gtest and on the wasmtime meter (a benchmark; prints a table).
    Bench(cmd::bench::Args),
    /// The variant a program should use (`lab pick CRATE SCENARIO`): measures it with every
    /// variant over the heap layouts and prints one answer and the Cargo line.
    Pick(cmd::pick::Args),
    /// Where a program's statics and heap should fall (`lab layout CRATE [SCENARIO]...`): the
    /// layout the robust layout rule chooses from one run, the `.cargo/config.toml` line that
    /// sets it, and its predicted and measured effect (docs/layout-rule.md).
    Layout(cmd::layout::Args),
    /// Two variants compared across the heap layouts, case by case (`lab verdict A,B`), from
    /// the results files, running nothing.
    Verdict(cmd::verdict::Args),
    /// What galloc should ship: every variant over the default cases and the corpus at once,
    /// and the variant the rule of docs/ship.md names, from the results files (running nothing).
    Ship(cmd::ship::Args),
    /// What share of each program's layout spread is the allocator's: its plain build with the
    /// heap base alone moved over one Gear page, statics in place, on gtest (an experiment).
    HeapSkip(cmd::heap_skip::Args),
    /// The layout model held against the sweep: each program run once at the linker's layout
    /// with every granule it touches kept, its total predicted at the sweep's layouts; writes
    /// results/layout-model/.
    LayoutModel(cmd::layout_model::Args),
    /// The scale cases: programs whose state grows past 4 MiB of live heap, every variant's
    /// gas at checkpoints against shipping's on gtest at a few layouts; writes results/scale/.
    Scale(cmd::scale::Args),
    /// A reproduction of someone else's allocator on its case (`lab reproduce pr4853`), beside
    /// shipping and the variants given, over the heap layouts on gtest: where it goes wrong and
    /// what its runs cost; writes results/<variant>/.
    Reproduce(cmd::reproduce::Args),
    /// Whether the default layout sweep is enough: its verdicts and medians against a dense
    /// grid's (`just sweep-check` makes the dense run first).
    SweepCheck(cmd::sweep_check::Args),
}

/// Errors are for people: the message and its causes, no backtrace (even where
/// `RUST_BACKTRACE` is set for other tools).
fn main() -> std::process::ExitCode {
    // The lab runs itself as the supervisor of each cargo it starts (build/process.rs): first,
    // since a supervised cargo's environment also tells `lab` to serve as a linker.
    if let Some(code) = galloc_lab::build::process::serve_as_supervisor() {
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // rustc runs `lab` as its Wasm linker to keep links for re-linking (build/relink.rs).
    if let Some(code) = galloc_lab::build::relink::serve_as_linker() {
        return std::process::ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // Ctrl-C, `kill` or a closed terminal ends the builds the lab started, not only the lab.
    galloc_lab::build::process::end_builds_on_signals();
    // A reader that stops reading (`lab verdict … | head`) ends the lab quietly, as it ends
    // any other command-line tool, instead of `println!` panicking on the closed pipe. Rust
    // ignores SIGPIPE by default.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default action has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let cli = Cli::parse();
    let ws = Workspace::find(&cli.workspace.unwrap_or_else(|| PathBuf::from(".")))?;
    match cli.command {
        Command::Sizes(args) => cmd::sizes::run(&ws, args),
        Command::Measure(args) => cmd::measure::run(&ws, args),
        Command::Bench(args) => cmd::bench::run(&ws, args),
        Command::Replay(args) => cmd::replay::run(&ws, args),
        Command::Report(args) => cmd::report::run(&ws, args),
        Command::Check(args) => cmd::check::run(&ws, args),
        Command::Verdict(args) => cmd::verdict::run(&ws, args),
        Command::Pick(args) => cmd::pick::run(&ws, args),
        Command::Layout(args) => cmd::layout::run(&ws, args),
        Command::SweepCheck(args) => cmd::sweep_check::run(&ws, args),
        Command::Ship(args) => cmd::ship::run(&ws, args),
        Command::HeapSkip(args) => cmd::heap_skip::run(&ws, args),
        Command::LayoutModel(args) => cmd::layout_model::run(&ws, args),
        Command::Scale(args) => cmd::scale::run(&ws, args),
        Command::Reproduce(args) => cmd::reproduce::run(&ws, args),
    }
}
