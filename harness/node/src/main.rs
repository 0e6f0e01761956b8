//! `lab-node`: the lab's node backend. Connects to a Gear node (or starts one), then carries
//! out the lab's requests from stdin, one JSON line each, answering on stdout
//! (`harness/wire`). The lab starts it; a person only needs it to check a node is reachable:
//! `lab-node --node ws://127.0.0.1:9944` prints one `ready` line and waits.

mod accounts;
mod events;
mod session;

use anyhow::{Context, Result};
use clap::Parser;
use galloc_lab_wire::{Answer, Request, read_line, write_line};
use gclient::GearApi;
use session::Session;
use std::path::PathBuf;
use std::process::ExitCode;

/// What to do when neither a node address nor a node binary is given.
const NO_NODE: &str = "lab-node: no node to measure on. Pass --node ws://HOST:PORT for a running \
Gear node (a 1.10 runtime: `gear --dev` listens on ws://127.0.0.1:9944), or --node-bin PATH to a \
gear node binary, which is started with --dev --tmp on a free port. No crate ships a node: \
download one from https://get.gear.rs or build it from github.com/gear-tech/gear (docs/node.md, \
\"Measuring on a real node\").";

#[derive(Parser)]
#[command(about = "The galloc lab's node backend (gclient)")]
struct Cli {
    /// A running node's WebSocket address, e.g. ws://127.0.0.1:9944.
    #[arg(long, conflicts_with = "node_bin")]
    node: Option<String>,
    /// A Gear node binary to start in dev mode for this run (gclient's `dev_from_path`).
    #[arg(long)]
    node_bin: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.node.is_none() && cli.node_bin.is_none() {
        eprintln!("{NO_NODE}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("lab-node: cannot start an async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lab-node: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn connect(cli: &Cli) -> Result<(GearApi, String)> {
    if let Some(url) = &cli.node {
        let api = GearApi::builder()
            .uri(url.as_str())
            .suri("//Alice")
            .build()
            .await
            .with_context(|| {
                format!("cannot connect to a Gear node at {url}: is it running (`gear --dev`)?")
            })?;
        return Ok((api, url.clone()));
    }
    let bin = cli.node_bin.as_ref().expect("checked in main");
    if !bin.is_file() {
        anyhow::bail!("--node-bin {}: no such file", bin.display());
    }
    let api = GearApi::dev_from_path(bin)
        .await
        .with_context(|| format!("starting the node {} with --dev --tmp", bin.display()))?;
    Ok((api, format!("{} (started for this run)", bin.display())))
}

async fn serve(cli: Cli) -> Result<()> {
    let (alice, node) = connect(&cli).await?;
    let mut session = Session::new(alice).await?;
    let mut stdout = std::io::stdout().lock();
    write_line(&mut stdout, &Answer::Ready { node })?;
    let mut stdin = std::io::stdin().lock();
    while let Some(request) = read_line::<Request>(&mut stdin)? {
        let answer = match answer(&mut session, request).await {
            Ok(answer) => answer,
            Err(e) => Answer::Error {
                message: format!("{e:#}"),
            },
        };
        write_line(&mut stdout, &answer)?;
    }
    Ok(())
}

async fn answer(session: &mut Session, request: Request) -> Result<Answer> {
    Ok(match request {
        Request::Users { users } => Answer::Users {
            accounts: session.users(&users).await?,
        },
        Request::Deploy {
            code,
            from,
            payload,
        } => {
            let (program, outcome) = session.deploy(&code, from, &payload).await?;
            Answer::Deployed { program, outcome }
        }
        Request::Send {
            program,
            from,
            payload,
        } => Answer::Sent {
            outcome: session.send(program, from, &payload).await?,
        },
        Request::ReadState { program } => Answer::State {
            bytes: session.read_state(program).await?,
        },
    })
}
