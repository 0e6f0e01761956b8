//! One dispatch as Gear's processor runs it, around the meter's execution of it (`mod.rs`):
//! the processor context `Ext` answers syscalls from (gtest's settings, plenty of gas), the
//! journal Gear's own code makes of how the execution ended, and the error replies of a
//! dispatch its program cannot run; the journal is applied by `chain.rs`.

use super::chain::{self, State};
use super::syscalls;
use super::{
    actor_id, Compiled, Host, Outcome, PageCounts, Program, Sent, UserId, WasmtimeBackend,
    BLOCK_MS, EPOCH_BLOCKS, GAS_ALLOWANCE, GAS_LIMIT, MAX_PAGES, MAX_RESERVATIONS,
    OUTGOING_BYTES_LIMIT, OUTGOING_LIMIT, RANDOM_SEED,
};
use anyhow::{anyhow, bail, Context, Result};
use core_processor::common::{
    ActorExecutionErrorReplyReason, DispatchResult, DispatchResultKind, JournalNote,
    SuccessfulDispatchResultKind,
};
use core_processor::configs::BlockInfo;
use core_processor::{ContextCharged, ProcessorContext, SystemReservationContext};
use galloc::probe::Record;
use gear_core::code::MAX_WASM_PAGES_AMOUNT;
use gear_core::gas::{GasAllowanceCounter, GasCounter, ValueCounter};
use gear_core::ids::ActorId;
use gear_core::memory::AllocationsContext;
use gear_core::message::{
    ContextSettings, DispatchKind, IncomingDispatch, Message, MessageContext, StoredDispatch,
};
use gear_core::pages::WasmPagesAmount;
use gear_core::reservation::GasReserver;
use gear_core_backend::error::{ActorTerminationReason, TrapExplanation};
use gear_core_errors::ErrorReplyReason;
use rand::{RngCore, SeedableRng};
use std::sync::Arc;
use wasmtime::{Memory, MemoryType, Store};

/// The error reply a dispatch gets when the program it was sent to cannot run it, and which
/// Gear's reason it is: for [`core_processor`]'s `process_*` of an unavailable program.
fn unavailable(state: State, dispatch: &StoredDispatch) -> Option<ErrorReplyReason> {
    use gear_core_errors::SimpleUnavailableActorError as Unavailable;
    match state {
        State::Uninitialized(init) if init != dispatch.id() && !dispatch.is_reply() => {
            Some(Unavailable::Uninitialized.into())
        }
        State::Terminated => Some(Unavailable::InitializationFailure.into()),
        State::Exited(_) => Some(Unavailable::ProgramExited.into()),
        _ => None,
    }
}

/// What one execution did.
pub(super) struct Executed {
    pub(super) termination: ActorTerminationReason,
    pub(super) ext: syscalls::Ext,
    pub(super) cost: u64,
    pub(super) pages: Option<PageCounts>,
    pub(super) ops: Vec<Record>,
}

/// What the executions of one block cost, summed: gtest's cost of a step is the gas of every
/// execution its block ran, the program's own and every one it set off.
#[derive(Default)]
struct Totals {
    cost: u64,
    pages: Option<PageCounts>,
    ops: Vec<Record>,
}

impl Totals {
    fn add(&mut self, executed: &mut Executed) {
        self.cost += executed.cost;
        if let Some(pages) = executed.pages {
            self.pages = Some(match self.pages {
                Some(sum) => sum.plus(&pages),
                None => pages,
            });
        }
        self.ops.append(&mut executed.ops);
    }
}

/// Gear's reason for a trap wasmtime raised itself (not through a syscall).
pub(super) fn trap_of(e: &wasmtime::Error) -> TrapExplanation {
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::OutOfFuel) => TrapExplanation::GasLimitExceeded,
        Some(wasmtime::Trap::StackOverflow) => TrapExplanation::StackLimitExceeded,
        _ => TrapExplanation::Unknown,
    }
}

/// gtest's epoch random at `height` (`state/blocks.rs`): 32 bytes of rand's `StdRng` seeded
/// with 42, and with 42 + n from the n-th 600-block epoch on.
fn epoch_random(height: u32) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(RANDOM_SEED + u64::from(height / EPOCH_BLOCKS));
    let mut random = [0u8; 32];
    rng.fill_bytes(&mut random);
    random.to_vec()
}

/// What Gear's processor makes of an execution that ended as `kind` (core-processor's
/// executor, less the memory pages: the meter keeps memory itself).
fn dispatch_result(
    program_id: ActorId,
    kind: DispatchResultKind,
    ext: syscalls::Ext,
) -> DispatchResult {
    let ProcessorContext {
        message_context,
        gas_counter,
        gas_reserver,
        system_reservation,
        program_candidates_data,
        ..
    } = ext.context;
    let (outcome, mut context_store) = message_context.drain();
    let drained = outcome.drain();
    let system_reservation_context = SystemReservationContext {
        current_reservation: system_reservation,
        previous_reservation: context_store.system_reservation(),
    };
    context_store.set_reservation_nonce(&gas_reserver);
    if let Some(reservation) = system_reservation {
        context_store.add_system_reservation(reservation);
    }
    DispatchResult {
        kind,
        program_id,
        context_store,
        generated_dispatches: drained.outgoing_dispatches,
        awakening: drained.awakening,
        reply_deposits: drained.reply_deposits,
        program_candidates: program_candidates_data,
        gas_amount: gas_counter.to_amount(),
        gas_reserver: Some(gas_reserver),
        system_reservation_context,
        page_update: Default::default(),
        allocations: None,
        reply_sent: drained.reply_sent,
    }
}

/// The entry export a dispatch of `kind` runs.
pub(super) fn entry(kind: DispatchKind) -> &'static str {
    match kind {
        DispatchKind::Init => "init",
        DispatchKind::Handle => "handle",
        DispatchKind::Reply => "handle_reply",
        DispatchKind::Signal => "handle_signal",
    }
}

/// gtest's block configuration, with no costs: what Gear's processor checks a dispatch
/// against before it runs (the meter counts fuel, not gas).
fn block_config(block_info: BlockInfo) -> core_processor::configs::BlockConfig {
    core_processor::configs::BlockConfig {
        block_info,
        performance_multiplier: gsys::Percent::new(100),
        forbidden_funcs: Default::default(),
        reserve_for: 1,
        gas_multiplier: gsys::GasMultiplier::from_value_per_gas(100),
        costs: Default::default(),
        existential_deposit: chain::EXISTENTIAL_DEPOSIT,
        mailbox_threshold: chain::MAILBOX_THRESHOLD,
        max_reservations: MAX_RESERVATIONS,
        max_pages: MAX_WASM_PAGES_AMOUNT.into(),
        outgoing_limit: OUTGOING_LIMIT,
        outgoing_bytes_limit: OUTGOING_BYTES_LIMIT,
    }
}

impl WasmtimeBackend {
    fn block_info(&self) -> BlockInfo {
        BlockInfo {
            height: self.chain.height,
            timestamp: self.timestamp0 + BLOCK_MS * u64::from(self.chain.height),
        }
    }

    /// Gear's processor context for `dispatch` to `program` (what core-processor's executor
    /// builds), with gtest's settings and plenty of gas.
    pub(super) fn processor_context(
        &self,
        program: ActorId,
        dispatch: IncomingDispatch,
    ) -> Result<ProcessorContext> {
        let actor = self
            .chain
            .programs
            .get(&program)
            .with_context(|| format!("no program {program} on this meter"))?;
        let static_pages =
            WasmPagesAmount::from(self.programs[actor.index].compiled.prepared.static_pages as u16);
        let value_available =
            self.chain
                .balance(program)
                .saturating_add(match dispatch.context() {
                    None => dispatch.value(),
                    Some(_) => 0,
                });
        let block_info = self.block_info();
        Ok(ProcessorContext {
            gas_counter: GasCounter::new(GAS_LIMIT),
            gas_allowance_counter: GasAllowanceCounter::new(GAS_ALLOWANCE),
            gas_reserver: GasReserver::new(&dispatch, actor.reservations.clone(), MAX_RESERVATIONS),
            system_reservation: None,
            value_counter: ValueCounter::new(value_available),
            allocations_context: AllocationsContext::try_new(
                static_pages,
                Default::default(),
                static_pages,
                None,
                MAX_WASM_PAGES_AMOUNT.into(),
            )
            .map_err(|e| anyhow!("Gear's allocations context: {e:?}"))?,
            message_context: MessageContext::new(
                dispatch,
                program,
                ContextSettings::with_outgoing_limits(OUTGOING_LIMIT, OUTGOING_BYTES_LIMIT),
            ),
            block_info,
            performance_multiplier: gsys::Percent::new(100),
            program_id: program,
            program_candidates_data: Default::default(),
            forbidden_funcs: Default::default(),
            reserve_for: 1,
            random_data: (epoch_random(block_info.height), block_info.height),
            gas_multiplier: gsys::GasMultiplier::from_value_per_gas(100),
            existential_deposit: chain::EXISTENTIAL_DEPOSIT,
            mailbox_threshold: chain::MAILBOX_THRESHOLD,
            costs: Default::default(),
        })
    }

    /// Runs `dispatch` as Gear would: through the program if it can run it, and otherwise the
    /// error reply Gear's processor gives it; then applies the journal.
    fn process(&mut self, dispatch: StoredDispatch, totals: &mut Totals) -> Result<()> {
        let destination = dispatch.destination();
        let incoming = dispatch.clone().into_incoming(GAS_LIMIT);
        let actor = self
            .chain
            .programs
            .get(&destination)
            .map(|a| (a.state, a.index));
        let journal: Vec<JournalNote> = match actor {
            Some((state, index)) if unavailable(state, &dispatch).is_none() => {
                self.run_dispatch(index, destination, incoming, totals)?
            }
            _ => {
                let charged = ContextCharged::new(destination, incoming, GAS_ALLOWANCE)
                    .charge_for_program(&block_config(self.block_info()));
                match (charged, actor) {
                    (Err(journal), _) => journal,
                    (Ok(context), None) => core_processor::process_code_not_exists(context),
                    (Ok(context), Some((State::Terminated, _))) => {
                        core_processor::process_failed_init(context)
                    }
                    (Ok(context), Some((State::Exited(inheritor), _))) => {
                        core_processor::process_program_exited(context, inheritor)
                    }
                    (Ok(context), Some(_)) => core_processor::process_uninitialized(context),
                }
            }
        };
        core_processor::handle_journal(journal, &mut self.chain);
        // Programs this dispatch created get their memory before anything runs on them.
        for (id, code) in std::mem::take(&mut self.chain.created) {
            let compiled = self
                .codes
                .get(&code)
                .context("a created program's code")?
                .clone();
            let index = self.instantiate(id, compiled)?;
            if let Some(actor) = self.chain.programs.get_mut(&id) {
                actor.index = index;
            }
        }
        Ok(())
    }

    /// Executes a dispatch the program can run and returns Gear's journal of it.
    fn run_dispatch(
        &mut self,
        index: usize,
        program: ActorId,
        incoming: IncomingDispatch,
        totals: &mut Totals,
    ) -> Result<Vec<JournalNote>> {
        let kind = incoming.kind();
        let entry = entry(kind);
        if self.programs[index]
            .compiled
            .bare
            .get_export(entry)
            .is_none()
        {
            // Gear runs nothing and counts it a success (core-processor's `process`).
            let result =
                DispatchResult::success(&incoming, program, GasCounter::new(0).to_amount());
            return Ok(core_processor::process_success(
                SuccessfulDispatchResultKind::Success,
                result,
                incoming,
            ));
        }
        let context = self.processor_context(program, incoming.clone())?;
        let mut executed = self.execute(index, entry, context, false)?;
        totals.add(&mut executed);
        let ended = match executed.termination.clone() {
            ActorTerminationReason::Success | ActorTerminationReason::Leave => {
                Ok(SuccessfulDispatchResultKind::Success)
            }
            ActorTerminationReason::Exit(inheritor) => {
                Ok(SuccessfulDispatchResultKind::Exit(inheritor))
            }
            ActorTerminationReason::Wait(duration, waited) => {
                Ok(SuccessfulDispatchResultKind::Wait(duration, waited))
            }
            ActorTerminationReason::Trap(trap) => Err(trap),
            ActorTerminationReason::GasAllowanceExceeded => Err(TrapExplanation::GasLimitExceeded),
        };
        Ok(match ended {
            Ok(kind) => {
                let result = dispatch_result(program, DispatchResultKind::Success, executed.ext);
                core_processor::process_success(kind, result, incoming)
            }
            Err(trap) => {
                let result = dispatch_result(
                    program,
                    DispatchResultKind::Trap(trap.clone()),
                    executed.ext,
                );
                core_processor::process_execution_error(
                    incoming,
                    program,
                    0,
                    result.system_reservation_context,
                    ActorExecutionErrorReplyReason::Trap(trap),
                )
            }
        })
    }

    /// A store, a memory and a linker for a program of `compiled`: its data segments in place.
    pub(super) fn instantiate(&mut self, id: ActorId, compiled: Arc<Compiled>) -> Result<usize> {
        let prepared = &compiled.prepared;
        let mut store = Store::new(
            &self.engine,
            Host::new(prepared.static_pages, prepared.stack_end),
        );
        if self.map_pages {
            store.data_mut().pages.map_pages();
        }
        if self.trace_touches {
            store.data_mut().pages.trace_granules();
        }
        let memory = Memory::new(
            &mut store,
            MemoryType::new(prepared.static_pages, Some(MAX_PAGES)),
        )
        .map_err(|e| anyhow!("creating the program's memory: {e}"))?;
        for (at, bytes) in &prepared.data {
            memory
                .write(&mut store, *at as usize, bytes)
                .map_err(|_| anyhow!("a data segment at {at:#x} lies outside the static pages"))?;
        }
        store.data_mut().memory = Some(memory);
        let mut linker = self.linker.clone();
        linker
            .define(&store, "env", "memory", memory)
            .map_err(|e| anyhow!("{e}"))?;
        self.programs.push(Program {
            id,
            compiled,
            store,
            linker,
            instances: 0,
        });
        Ok(self.programs.len() - 1)
    }

    /// Sends `payload` from `from` to program `index` as a message of `kind` in the next
    /// block and runs blocks until the message is done (it may wait for replies, timeouts or
    /// wakes over several) and nothing is left in the queue, as the gtest backend does; reads
    /// its outcome from them: its reply, the messages the program sent to users meanwhile
    /// (Sails events; those it sent earlier with a delay that ends now among them: gtest
    /// attributes a block's log to the program stepped), and the fuel, pages and allocator
    /// calls of every execution the blocks ran.
    pub(super) fn step(
        &mut self,
        kind: DispatchKind,
        index: usize,
        from: UserId,
        payload: &[u8],
    ) -> Result<Outcome> {
        let destination = self.programs[index].id;
        let source = ActorId::from(actor_id(from));
        let id = self.chain.user_message_id(source);
        if kind == DispatchKind::Init {
            if let Some(actor) = self.chain.programs.get_mut(&destination) {
                actor.state = State::Uninitialized(id);
            }
        }
        let payload = payload
            .to_vec()
            .try_into()
            .map_err(|_| anyhow!("a payload of {} bytes is over Gear's limit", payload.len()))?;
        let message = Message::new(id, source, destination, payload, Some(GAS_LIMIT), 0, None);
        self.chain
            .send_from_user(StoredDispatch::new(kind, message.into_stored(), None));
        let mut totals = Totals::default();
        let (mut reply, mut sent, mut failed) = (None, Vec::new(), None);
        for _ in 0..crate::run::backend::MAX_BLOCKS_PER_MESSAGE {
            self.chain.next_block();
            while let Some(dispatch) = self.chain.pop() {
                self.process(dispatch, &mut totals)?;
            }
            let block = &self.chain.block;
            for m in &block.log {
                match m.reply_details() {
                    Some(details) if details.to_message_id() == id => {
                        reply = Some(m.payload_bytes().to_vec())
                    }
                    None if m.details().is_none() && m.source() == destination => sent.push(Sent {
                        destination: m.destination().into_bytes(),
                        payload: m.payload_bytes().to_vec(),
                    }),
                    _ => {}
                }
            }
            if block.failed.contains(&id) || block.not_executed.contains(&id) {
                failed = Some(true);
            } else if block.succeed.contains(&id) {
                failed = Some(false);
            }
            if failed.is_some() && self.chain.queue_is_empty() {
                return Ok(Outcome {
                    reply: reply.unwrap_or_default(),
                    sent: Some(sent),
                    failed: failed == Some(true),
                    cost: totals.cost,
                    pages: totals.pages,
                    ops: totals.ops,
                });
            }
        }
        bail!(
            "message {id} was not done after {} blocks (it waits for a reply or a wake that \
             never comes)",
            crate::run::backend::MAX_BLOCKS_PER_MESSAGE
        )
    }
}
