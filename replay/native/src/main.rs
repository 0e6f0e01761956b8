//! `replay-native REQUESTS RESULTS`: carries out the requests in file `REQUESTS` (encoded
//! [`galloc_replay::Request`]s; blocks are named by slot, addresses are ignored) on a fresh
//! instance of the variant this binary was built with, through
//! [`galloc_replay::checked`] (every check, and overlap with every live block at once),
//! and writes one encoded [`galloc_replay::Done`] per request carried out to `RESULTS`,
//! stopping after the first fault. Prints the nanoseconds the requests took.

use galloc::source::HostConfig;
use galloc::variant::HostAlloc;
use galloc_replay::checked::{decode_all, run};
use std::process::ExitCode;
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        eprintln!("usage: replay-native REQUESTS RESULTS (as `lab replay` runs it)");
        return ExitCode::from(2);
    };
    let bytes = match std::fs::read(input) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("replay-native: cannot read {input}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(requests) = decode_all(&bytes) else {
        eprintln!("replay-native: {input} is not a sequence of encoded requests");
        return ExitCode::FAILURE;
    };
    // Gear's memory: 512 pages, a small program's static data below the heap.
    let heap = HostAlloc::new(HostConfig::default());
    let start = Instant::now();
    let done = run(&heap, &requests);
    let nanos = start.elapsed().as_nanos();
    let encoded: Vec<u8> = done.iter().flat_map(|d| d.encode()).collect();
    if let Err(e) = std::fs::write(output, encoded) {
        eprintln!("replay-native: cannot write {output}: {e}");
        return ExitCode::FAILURE;
    }
    println!("{nanos}");
    ExitCode::SUCCESS
}
