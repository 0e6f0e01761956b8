//! The wasmtime fuel meter: the same `.opt.wasm` files gtest runs, on wasmtime 44 with fuel
//! metering, Gear's own syscall and message logic around them (core-processor), and no gas.
//!
//! What it keeps of Gear (enough that every scenario's replies are byte-identical to gtest's;
//! a test asserts it for every case and variant):
//! - Gear's message layer (`chain.rs`): every message a program sends to a program is queued
//!   and run in the same block, replies and auto-replies reach `handle_reply`, failures send
//!   error replies and signals, waits wait and wakes wake, delayed messages arrive at their
//!   block, programs create programs, with Gear's ids throughout. Each dispatch's journal is
//!   made by Gear's own code (core-processor) and applied as gtest applies it, under gtest's
//!   plentiful gas;
//! - every syscall of gsys 2.0 (`syscalls.rs`), answered by Gear's own externalities
//!   (core-processor's `Ext`): the same results, error codes and messages;
//! - a program's memory lives from execution to execution; each is a fresh instance (fresh
//!   globals, so a fresh stack pointer) over that memory;
//! - a trapped execution leaves memory and page allocations as they were (the allocator calls
//!   it made are still reported: they happened and cost fuel); one that waits, exits or
//!   succeeds keeps them;
//! - `alloc` hands out the first free run of 64 KiB pages above the static pages, growing the
//!   memory as Gear does, up to Gear's 512 pages; `free` and `free_range` forget pages, and a
//!   page freed by the end of an execution loses its data (Gear drops it);
//! - `gr_gas_available` answers remaining **fuel**, so the probe build records fuel per op;
//! - every user message runs in a block of its own, numbered, timed and seeded as gtest's:
//!   what `gr_block_height`, `gr_block_timestamp` and `gr_random` answer.
//!
//! What it adds: per-message page accesses in Gear's charging categories ([`PageCounts`]),
//! and, for probe builds, every allocator call with its fuel: the probe keeps its last call's
//! [`Record`] at an address its `state` export reports, and the host reads it at each
//! `gr_gas_available` (every call's bracket starts with one) and at the end of the message.
//!
//! Fuel is one unit per Wasm operator (wasmtime's default table: `nop`, `drop`, `block`,
//! `loop`, `unreachable`, `return`, `else`, `end` are free; a host call costs 1 and the host's
//! own work nothing). It is not gas; results carry the unit `fuel`.
//!
//! Gear's syscalls are in `syscalls.rs`, the meter's own host functions (memory, fuel, page
//! hooks) in `host.rs`, Gear's message layer in `chain.rs` and one dispatch's processing in
//! `dispatch.rs`, the page accounting in `pages.rs`
//! (and the granules it keeps on request in `granules.rs`), Gear's page allocations in
//! `heap.rs`, the module's instrumentation in `prepare.rs`.

mod chain;
mod dispatch;
mod granules;
mod heap;
mod host;
mod page_map;
mod pages;
mod prepare;
mod syscalls;

pub use syscalls::HOST_FUNCTIONS;

pub use page_map::{MappedPage, PageKind};
pub use pages::{FirstTouch, PageCounts};

use super::{Backend, Outcome, ProgramRef, Sent, Unit, UserId};
use crate::results::touches::TouchTrace;
use anyhow::{anyhow, bail, Context, Result};
use chain::{Actor, Chain, State};
use core_processor::ProcessorContext;
use dispatch::{trap_of, Executed};
use galloc::probe::{parse_state, Op, Record};
use gear_core::ids::prelude::CodeIdExt;
use gear_core::ids::{ActorId, CodeId, MessageId};
use gear_core::message::{DispatchKind, IncomingDispatch, IncomingMessage};
use gear_core_backend::error::ActorTerminationReason;
use heap::Heap;
use prepare::{prepare, Prepared};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use wasmtime::{Config, Engine, Linker, Memory, MemoryType, Module, Store};

/// Gear's Wasm page.
const WASM_PAGE: usize = 64 * 1024;
/// Gear's limit on a program's memory: 512 Wasm pages (32 MiB).
const MAX_PAGES: u32 = 512;
/// Fuel each execution starts with: 10 billion, about 200 times the costliest message of any
/// case (51,388,348 in `results/wasmtime/messages.csv.zst`). An execution that spends it all
/// fails, as one that runs out of gas does on Gear: a program whose heap is corrupt (the
/// reproduction `pr4853` past its first wrong free) can loop for ever, and without a limit the
/// meter looped with it.
const FUEL_LIMIT: u64 = 10_000_000_000;
/// What `alloc` answers when no run of free pages is large enough (as Gear's syscall does).
const ALLOC_FAILED: u32 = u32::MAX;
/// The gas limit of every dispatch, for `Ext`'s own checks (gtest's `MAX_USER_GAS_LIMIT`, what
/// the lab's gtest backend gives each message): the meter charges no gas against it, so a
/// check that asks for gas always has it, as under gtest's limits.
const GAS_LIMIT: u64 = 750_000_000_000;
/// gtest's gas allowance per block.
const GAS_ALLOWANCE: u64 = 1_000_000_000_000;
/// gtest's limits on what one execution sends (`OUTGOING_LIMIT`, `OUTGOING_BYTES_LIMIT`) and
/// on reservations per program (`MAX_RESERVATIONS`).
const OUTGOING_LIMIT: u32 = 1024;
const OUTGOING_BYTES_LIMIT: u32 = 64 * 1024 * 1024;
const MAX_RESERVATIONS: u64 = 256;
/// gtest's block time and random seeds (`BLOCK_DURATION_IN_MSECS`, `INITIAL_RANDOM_SEED`,
/// `EPOCH_DURATION_IN_BLOCKS`).
const BLOCK_MS: u64 = 3_000;
const RANDOM_SEED: u64 = 42;
const EPOCH_BLOCKS: u32 = 600;
/// Program ids as the lab's gtest backend gives them (`gtest.rs`): the same on both backends,
/// so a program that replies with an id replies the same bytes.
const FIRST_PROGRAM_ID: u64 = 1 << 48;

/// Programs on wasmtime, each in its own store, under Gear's message layer.
pub struct WasmtimeBackend {
    engine: Engine,
    linker: Linker<Host>,
    track_pages: bool,
    programs: Vec<Program>,
    /// `__heap_base` of the programs deployed from now on, when told ([`Backend::heap_base`]).
    heap_base: Option<u32>,
    /// Whether programs deployed from now on keep a page map ([`WasmtimeBackend::map_pages`]).
    map_pages: bool,
    /// Whether programs deployed from now on keep every granule their messages touch
    /// ([`WasmtimeBackend::tracing_touches`]).
    trace_touches: bool,
    /// Gear's message layer: queue, waitlist, tasks, programs' states.
    chain: Chain,
    /// Compiled codes by Gear's code id: what programs deploy and create programs from.
    codes: HashMap<CodeId, Arc<Compiled>>,
    /// The block timestamp before the first block, in milliseconds (gtest: the wall clock when
    /// the chain starts).
    timestamp0: u64,
    /// Programs deployed so far (their ids follow the gtest backend's).
    deployed: u64,
}

/// Every host function a program may import: Gear's syscalls and the meter's own.
fn host_functions(engine: &Engine) -> Result<Linker<Host>> {
    let mut linker = Linker::new(engine);
    syscalls::define(&mut linker)?;
    host::define(&mut linker)?;
    Ok(linker)
}

/// One engine for the process, so compiled modules are shared by every backend instance
/// (`lab measure` makes a fresh meter per run, as it makes a fresh gtest chain).
fn engine() -> Result<&'static Engine> {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    if let Some(e) = ENGINE.get() {
        return Ok(e);
    }
    let mut config = Config::new();
    config.consume_fuel(true);
    let engine = Engine::new(&config).map_err(|e| anyhow!("wasmtime: {e}"))?;
    Ok(ENGINE.get_or_init(|| engine))
}

/// Compiled programs by (code hash, page tracking).
type Cache = Mutex<HashMap<([u8; 32], bool), Arc<Compiled>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

struct Compiled {
    /// Without page hooks: state reads, and every message when pages are not tracked.
    bare: Module,
    /// With page hooks, when pages are tracked.
    hooked: Option<Module>,
    prepared: Prepared,
}

struct Program {
    /// Its Gear id.
    id: ActorId,
    compiled: Arc<Compiled>,
    store: Store<Host>,
    linker: Linker<Host>,
    /// Instances created in `store` (a store keeps every instance until it is dropped).
    instances: u32,
}

/// Instances per store before the program moves to a fresh one (wasmtime allows 10,000).
const INSTANCES_PER_STORE: u32 = 1_000;

/// The running execution, and the program's state the host keeps for it.
struct Host {
    memory: Option<Memory>,
    /// Gear's externalities for the running execution: every `gr_*` syscall goes through them.
    ext: Option<syscalls::Ext>,
    /// How the execution ended, when a syscall ended it (wait, exit, leave, panic, a syscall's
    /// trap).
    termination: Option<ActorTerminationReason>,
    pages: pages::PageLog,
    heap: Heap,
    /// Where a probe build keeps its last call's record, once known.
    last_record_at: Option<u32>,
    /// Fuel the page hooks' own instructions have cost in this execution.
    hook_fuel: u64,
    /// The record's sequence number last seen, and at the start of the execution.
    last_seq: u32,
    seq_at_start: u32,
    ops: Vec<Record>,
}

impl Host {
    fn new(static_pages: u32, stack_end: u32) -> Self {
        Host {
            memory: None,
            ext: None,
            termination: None,
            pages: pages::PageLog::new(MAX_PAGES as usize * WASM_PAGE, stack_end),
            heap: Heap::new(static_pages),
            last_record_at: None,
            hook_fuel: 0,
            last_seq: 0,
            seq_at_start: 0,
            ops: Vec::new(),
        }
    }

    /// Takes the probe's last record if it is a call not seen yet.
    fn collect(&mut self, mem: &[u8]) {
        let Some(at) = self.last_record_at else {
            return;
        };
        let at = at as usize;
        if let Some(r) = mem
            .get(at..at + Record::WASM_LEN)
            .and_then(Record::from_bytes)
        {
            if r.seq != self.last_seq {
                self.last_seq = r.seq;
                // The blocks the call handled: the one passed in and the one returned.
                let block = |at: u32, len: u32| match at {
                    0 => 0..0,
                    at => u64::from(at)..u64::from(at) + u64::from(len),
                };
                let new_len = if r.op == Op::Realloc as u32 {
                    r.new_size
                } else {
                    r.size
                };
                self.pages
                    .call_done(block(r.ptr, r.size), block(r.result, new_len));
                self.ops.push(r);
            }
        }
    }
}
impl WasmtimeBackend {
    /// A meter that also counts page accesses (the default).
    pub fn new() -> Result<Self> {
        Self::with_page_tracking(true)
    }

    /// `track_pages: false` runs the modules without page hooks: no page counts, and a full
    /// memory copy per message for rollback. Fuel is the same either way; tests check that.
    pub fn with_page_tracking(track_pages: bool) -> Result<Self> {
        let engine = engine()?.clone();
        let linker = host_functions(&engine)?;
        Ok(WasmtimeBackend {
            engine,
            linker,
            track_pages,
            programs: Vec::new(),
            heap_base: None,
            map_pages: false,
            trace_touches: false,
            chain: Chain::default(),
            codes: HashMap::new(),
            timestamp0: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            deployed: 0,
        })
    }

    /// A page-tracking meter whose probe builds also keep, per message, every page touched
    /// with its kind (stack, static, the allocator's state, blocks by age): a page map, read
    /// with [`WasmtimeBackend::take_page_maps`]. Counts and fuel are the same as without it.
    pub fn mapping_pages() -> Result<Self> {
        let mut meter = Self::with_page_tracking(true)?;
        meter.map_pages = true;
        Ok(meter)
    }

    /// A page-tracking meter that also keeps, per message, every 16-byte granule it touched
    /// above the stack ([`TouchTrace`]): what the layout model predicts other layouts' page
    /// counts from. Counts and fuel are the same as without it.
    pub fn tracing_touches() -> Result<Self> {
        let mut meter = Self::with_page_tracking(true)?;
        meter.trace_touches = true;
        Ok(meter)
    }

    /// Per program deployed, in order, its granules since the last call (with the heap base
    /// this meter was told, 0 if none); no messages without [`WasmtimeBackend::tracing_touches`].
    pub fn take_touches(&mut self) -> Vec<TouchTrace> {
        let heap_base = self.heap_base.unwrap_or(0);
        self.programs
            .iter_mut()
            .map(|p| TouchTrace {
                stack_end: p.compiled.prepared.stack_end,
                heap_base,
                static_pages: p.compiled.prepared.static_pages,
                messages: p.store.data_mut().pages.take_touches(),
            })
            .collect()
    }

    /// Per program deployed, in order, the page map of each of its messages (`init` first)
    /// since the last call; empty maps for programs that are not probe builds.
    pub fn take_page_maps(&mut self) -> Vec<Vec<Vec<MappedPage>>> {
        self.programs
            .iter_mut()
            .map(|p| p.store.data_mut().pages.take_map())
            .collect()
    }

    /// The function imports of `code` the meter does not implement (`module.name`), in order:
    /// read from the built Wasm before any run, so `lab measure` can leave the meter out for
    /// that program in one line instead of failing its run.
    pub fn lacking(code: &[u8]) -> Result<Vec<String>> {
        let mut lacking = Vec::new();
        for payload in wasmparser::Parser::new(0).parse_all(code) {
            if let wasmparser::Payload::ImportSection(reader) = payload? {
                for import in reader.into_imports() {
                    let import = import?;
                    let name = format!("{}.{}", import.module, import.name);
                    if matches!(import.ty, wasmparser::TypeRef::Func(_))
                        && !HOST_FUNCTIONS.contains(&name.as_str())
                    {
                        lacking.push(name);
                    }
                }
            }
        }
        Ok(lacking)
    }

    fn compile(&mut self, code: &[u8]) -> Result<Arc<Compiled>> {
        let key = (Sha256::digest(code).into(), self.track_pages);
        if let Some(c) = cache().lock().expect("cache lock").get(&key) {
            return Ok(c.clone());
        }
        // Prepared first: a Wasm Gear would refuse is named as such before what it imports.
        let prepared = prepare(code, self.track_pages)?;
        if let Some(missing) = Self::lacking(code)?.first() {
            bail!(
                "the Wasm imports `{missing}`, which is not a Gear syscall (the wasmtime meter \
                 implements every one: {}); Gear would refuse this program too",
                HOST_FUNCTIONS.join(", ")
            );
        }
        let compile = |bytes: &[u8]| {
            Module::new(&self.engine, bytes).map_err(|e| anyhow!("wasmtime rejected the Wasm: {e}"))
        };
        let c = Arc::new(Compiled {
            bare: compile(&prepared.bare)?,
            hooked: prepared.hooked.as_deref().map(compile).transpose()?,
            prepared,
        });
        cache().lock().expect("cache lock").insert(key, c.clone());
        Ok(c)
    }
}

/// Moves a program to a fresh store: same host state, a new memory with the same bytes.
fn renew_store(engine: &Engine, base: &Linker<Host>, p: &mut Program) -> Result<()> {
    let old_memory = p.store.data().memory.expect("set at deploy");
    let bytes = old_memory.data(&p.store).to_vec();
    let pages = old_memory.size(&p.store) as u32;
    let old = std::mem::replace(&mut p.store, Store::new(engine, Host::new(0, 0)));
    let mut store = Store::new(engine, old.into_data());
    let memory = Memory::new(&mut store, MemoryType::new(pages, Some(MAX_PAGES)))
        .map_err(|e| anyhow!("creating the program's memory: {e}"))?;
    memory.data_mut(&mut store).copy_from_slice(&bytes);
    store.data_mut().memory = Some(memory);
    let mut linker = base.clone();
    linker
        .define(&store, "env", "memory", memory)
        .map_err(|e| anyhow!("{e}"))?;
    (p.store, p.linker, p.instances) = (store, linker, 0);
    Ok(())
}

impl WasmtimeBackend {
    /// Runs `entry` of program `index` with Gear's externalities over `context`. `read_only`
    /// discards every change (state reads: they run without page hooks, restored from a copy
    /// of memory, which is much cheaper than hooking every access of the encoding).
    fn execute(
        &mut self,
        index: usize,
        entry: &str,
        context: ProcessorContext,
        read_only: bool,
    ) -> Result<Executed> {
        use core_processor::ProcessorExternalities;
        let p = self
            .programs
            .get_mut(index)
            .with_context(|| format!("no program {index} on this wasmtime meter"))?;
        if p.instances == INSTANCES_PER_STORE {
            renew_store(&self.engine, &self.linker, p)?;
        }
        p.instances += 1;
        let store = &mut p.store;
        let host = store.data_mut();
        host.ext = Some(syscalls::Ext::new(context));
        host.termination = None;
        host.heap.begin();
        host.ops.clear();
        host.hook_fuel = 0;
        host.seq_at_start = host.last_seq;
        let memory = host.memory.expect("set at deploy");
        let (module, hooked) = match (&p.compiled.hooked, read_only) {
            (Some(hooked), false) => (hooked, true),
            _ => (&p.compiled.bare, false),
        };
        let snapshot = (!hooked).then(|| memory.data(&*store).to_vec());

        store.set_fuel(FUEL_LIMIT).map_err(|e| anyhow!("{e}"))?;
        let instance = p
            .linker
            .instantiate(&mut *store, module)
            .map_err(|e| anyhow!("instantiating the program: {e}"))?;
        let func = instance
            .get_typed_func::<(), ()>(&mut *store, entry)
            .map_err(|e| anyhow!("the program has no `{entry}` export: {e}"))?;
        let result = func.call(&mut *store, ());
        let cost =
            FUEL_LIMIT - store.get_fuel().map_err(|e| anyhow!("{e}"))? - store.data().hook_fuel;

        let (mem, host) = memory.data_and_store_mut(&mut *store);
        let termination = match (&result, host.termination.take()) {
            (Ok(()), _) => ActorTerminationReason::Success,
            (Err(_), Some(ended)) => ended,
            (Err(e), None) => {
                log_trap(entry, e);
                ActorTerminationReason::Trap(trap_of(e))
            }
        };
        // A wait, an exit and a leave end an execution as a success does: what it did stands.
        let failed = matches!(
            termination,
            ActorTerminationReason::Trap(_) | ActorTerminationReason::GasAllowanceExceeded
        );
        if !read_only {
            host.collect(mem);
        }
        let mut pages = if failed || read_only {
            // The probe's records roll back with memory. The calls of a failed execution still
            // happened and cost fuel: they are kept (its outcome's `ops`), not those of a read.
            host.last_seq = host.seq_at_start;
            if read_only {
                host.ops.clear();
            }
            host.heap.rollback();
            if let Some(snapshot) = snapshot {
                mem[..snapshot.len()].copy_from_slice(&snapshot);
                mem[snapshot.len()..].fill(0);
            }
            let counts = host.pages.rollback(mem);
            if read_only {
                host.pages.forget_last_map();
            }
            counts
        } else {
            let freed = host.heap.freed();
            for range in &freed {
                mem[range.clone()].fill(0);
            }
            host.pages.commit(mem, &freed)
        };
        pages.allocation_intervals = host.heap.intervals_at_start();
        Ok(Executed {
            termination,
            ext: host.ext.take().expect("set above"),
            cost,
            pages: hooked.then_some(pages),
            ops: std::mem::take(&mut host.ops),
        })
    }
}

fn log_trap(entry: &str, e: &wasmtime::Error) {
    if std::env::var_os("LAB_DEBUG").is_some() {
        eprintln!("wasmtime: `{entry}` trapped: {e:?}");
    }
}

/// Gear's `ActorId::from(u64)`: the number's little-endian bytes at 12..20.
fn actor_id(user: UserId) -> [u8; 32] {
    let mut id = [0u8; 32];
    id[12..20].copy_from_slice(&user.to_le_bytes());
    id
}

impl Backend for WasmtimeBackend {
    fn name(&self) -> &'static str {
        "wasmtime"
    }

    fn unit(&self) -> Unit {
        Unit::Fuel
    }

    fn heap_base(&mut self, heap_base: u32) {
        self.heap_base = Some(heap_base);
    }

    fn deploy(
        &mut self,
        code: &[u8],
        from: UserId,
        payload: &[u8],
    ) -> Result<(ProgramRef, Outcome)> {
        let compiled = self.compile(code)?;
        let code_id = CodeId::generate(code);
        self.codes.insert(code_id, compiled.clone());
        self.chain.codes.insert(code_id);
        let id = ActorId::from(FIRST_PROGRAM_ID + self.deployed);
        self.deployed += 1;
        let probe_build = compiled.bare.get_export("state").is_some();
        let index = self.instantiate(id, compiled)?;
        self.chain.programs.insert(
            id,
            Actor {
                index,
                state: State::Uninitialized(MessageId::zero()),
                reservations: Default::default(),
            },
        );
        let program = ProgramRef(index as u64);
        if probe_build {
            // Before `init`, so its calls are collected too.
            let state = self.read_state(program)?;
            if let Some((_, at)) = parse_state(&state) {
                let heap_base = self.heap_base;
                let host = self.programs[index].store.data_mut();
                host.last_record_at = Some(at);
                if let Some(heap_base) = heap_base {
                    host.pages.attribute(heap_base);
                }
            }
        }
        let outcome = self.step(DispatchKind::Init, index, from, payload)?;
        Ok((program, outcome))
    }

    fn send(&mut self, program: ProgramRef, from: UserId, payload: &[u8]) -> Result<Outcome> {
        self.step(DispatchKind::Handle, program.0 as usize, from, payload)
    }

    fn read_state(&mut self, program: ProgramRef) -> Result<Vec<u8>> {
        // As gtest reads state: the `state` export run as a handle of an empty message, its
        // reply the state, and nothing kept.
        let index = program.0 as usize;
        let id = self
            .programs
            .get(index)
            .with_context(|| format!("no program {} on this wasmtime meter", program.0))?
            .id;
        let message = IncomingMessage::new(
            MessageId::default(),
            ActorId::default(),
            Default::default(),
            GAS_LIMIT,
            0,
            None,
        );
        let dispatch = IncomingDispatch::new(DispatchKind::Handle, message, None);
        let context = self.processor_context(id, dispatch)?;
        let executed = self.execute(index, "state", context, true)?;
        if !matches!(executed.termination, ActorTerminationReason::Success) {
            bail!("reading state of program {} failed", program.0);
        }
        let (outcome, _) = executed.ext.context.message_context.drain();
        Ok(outcome
            .drain()
            .outgoing_dispatches
            .into_iter()
            .find(|(d, _, _)| d.kind() == DispatchKind::Reply)
            .map(|(d, _, _)| d.message().payload_bytes().to_vec())
            .unwrap_or_default())
    }
}
