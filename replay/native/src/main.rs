//! `replay-native REQUESTS RESULTS`: carries out the requests in file `REQUESTS` (a sequence of
//! encoded [`galloc_replay::Request`]s whose `ptr` is ignored: blocks are named by slot) on a
//! fresh instance of the variant this binary was built with, and writes one encoded
//! [`galloc_replay::Done`] per request carried out to `RESULTS`, stopping after the first
//! fault. Prints the nanoseconds the requests took. Beyond the checks every replay makes, it
//! keeps each live block's extent and reports a block that overlaps another at once.

use galloc::source::HostConfig;
use galloc::variant::HostAlloc;
use galloc_replay::{execute, Done, Fault, Kind, Request, REQUEST_BYTES};
use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::time::Instant;

/// Live blocks: by slot (address and layout) and by address (end), for overlap checks.
#[derive(Default)]
struct Live {
    by_slot: HashMap<u32, (usize, usize, usize)>,
    by_addr: BTreeMap<usize, usize>,
}

impl Live {
    fn overlaps(&self, start: usize, len: usize) -> bool {
        let end = start + len;
        self.by_addr
            .range(..end)
            .next_back()
            .is_some_and(|(_, &e)| e > start)
    }

    fn insert(&mut self, slot: u32, ptr: usize, size: usize, align: usize) {
        self.by_slot.insert(slot, (ptr, size, align));
        self.by_addr.insert(ptr, ptr + size);
    }

    fn remove(&mut self, slot: u32) -> Option<(usize, usize, usize)> {
        let block = self.by_slot.remove(&slot)?;
        self.by_addr.remove(&block.0);
        Some(block)
    }
}

fn run(requests: &[Request]) -> (Vec<Done>, u128) {
    // Large enough that a null is an allocator's choice, not the simulation running out.
    let heap = HostAlloc::new(HostConfig::default());
    let mut live = Live::default();
    let mut out = Vec::with_capacity(requests.len());
    let start = Instant::now();
    for r in requests {
        let mut r = *r;
        if matches!(r.kind, Kind::Realloc | Kind::Free) {
            // The driver names blocks by slot; the address is this run's own.
            let Some((ptr, size, align)) = live.remove(r.slot) else {
                out.push(Done {
                    result: 0,
                    fault: Fault::BadRequest,
                });
                break;
            };
            (r.ptr, r.size, r.align) = (ptr, size, align);
        }
        // SAFETY: realloc/free get a live block of this heap with its layout (above).
        let mut done = unsafe { execute(&heap, &r) };
        let size = if r.kind == Kind::Realloc {
            r.new_size
        } else {
            r.size
        };
        if done.result != 0 && done.fault == Fault::None {
            if live.overlaps(done.result, size) {
                done.fault = Fault::Overlaps;
            } else {
                live.insert(r.slot, done.result, size, r.align);
            }
        } else if r.kind == Kind::Realloc && done.result == 0 && done.fault == Fault::None {
            // A refused realloc leaves the old block live.
            live.insert(r.slot, r.ptr, r.size, r.align);
        }
        out.push(done);
        if done.fault != Fault::None {
            break;
        }
    }
    (out, start.elapsed().as_nanos())
}

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
    if bytes.len() % REQUEST_BYTES != 0 {
        eprintln!("replay-native: {input} is not a whole number of {REQUEST_BYTES}-byte requests");
        return ExitCode::FAILURE;
    }
    let Some(requests) = bytes
        .chunks_exact(REQUEST_BYTES)
        .map(Request::decode)
        .collect::<Option<Vec<_>>>()
    else {
        eprintln!("replay-native: {input} holds an unknown request kind");
        return ExitCode::FAILURE;
    };
    let (done, nanos) = run(&requests);
    let encoded: Vec<u8> = done.iter().flat_map(|d| d.encode()).collect();
    if let Err(e) = std::fs::write(output, encoded) {
        eprintln!("replay-native: cannot write {output}: {e}");
        return ExitCode::FAILURE;
    }
    println!("{nanos}");
    ExitCode::SUCCESS
}
