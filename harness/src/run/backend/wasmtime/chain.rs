//! Gear's message layer as the meter keeps it: the dispatch queue, the task pool, the waitlist,
//! the programs' states and balances, and the log of messages to users, without gas.
//!
//! What a dispatch's execution did is turned into Gear's journal by Gear's own code
//! (`core_processor::process_success`, `process_execution_error` and the `process_*` of a
//! dispatch that cannot run), and the journal is applied here as gtest 2.0 applies it
//! (`gtest/src/manager/{journal,task,send_dispatch,wait_wake}.rs`): auto-replies, error
//! replies, signals, delayed sends, waits and wakes come out in Gear's order with Gear's ids.
//! What gtest decides by gas (a gas tree, holds, rent) is decided here as gtest decides it when
//! gas is plentiful, which the lab's scenarios always give (docs/meter-syscalls.md, §6-7):
//! - a wait without a duration is never removed from the waitlist within a run;
//! - `wait_up_to` waits its whole duration;
//! - a message to a user without a gas limit goes to the mailbox (gtest gives it the mailbox
//!   threshold), and its expiry reply, which gtest runs with no gas, executes nothing;
//! - a system reservation always holds gas, so a failed execution that made one signals.

use core_processor::common::{DispatchOutcome, JournalHandler};
use gear_core::env::MessageWaitedType;
use gear_core::ids::{ActorId, CodeId, MessageId, ReservationId};
use gear_core::memory::PageBuf;
use gear_core::message::{Dispatch, ReplyMessage, SignalMessage, StoredDispatch, StoredMessage};
use gear_core::pages::{numerated::tree::IntervalsTree, GearPage, WasmPage};
use gear_core::reservation::{GasReservationMap, GasReserver};
use gear_core_errors::SignalCode;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// gtest's existential deposit (`gtest::constants::EXISTENTIAL_DEPOSIT`): what creating a
/// program takes from its creator.
pub(super) const EXISTENTIAL_DEPOSIT: u128 = 1_000_000_000_000;
/// gtest's mailbox threshold (`RentWeights::default().mailbox_threshold`).
pub(super) const MAILBOX_THRESHOLD: u64 = 3_000;
/// Blocks a message stays in the mailbox with the threshold's gas (gtest: the threshold over
/// the mailbox's cost of 100 a block, less `RESERVE_FOR`).
const MAILBOX_BLOCKS: u32 = 29;

/// Where a program is in its life (gtest's `ProgramState` and `Program`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Its `init` (this message) has not finished: only it and replies run.
    Uninitialized(MessageId),
    Initialized,
    /// Its `init` failed.
    Terminated,
    /// It called `gr_exit`, its balance going to the inheritor.
    Exited(ActorId),
}

/// A program on the chain.
pub(super) struct Actor {
    /// Its index among the meter's instantiated programs.
    pub index: usize,
    pub state: State,
    pub reservations: GasReservationMap,
}

/// Work the chain has scheduled for a later block (gtest's `ScheduledTask`, less what gas
/// decides).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Task {
    /// A delayed dispatch to a program reaches the queue.
    SendDispatch(StoredDispatch),
    /// A delayed message reaches its user.
    SendUserMessage(StoredMessage),
    /// `wait_for`'s (or a delayed wake's) end: the message goes back to the queue if it still
    /// waits.
    WakeMessage(ActorId, MessageId),
    /// A reservation's end.
    RemoveGasReservation(ActorId, ReservationId),
}

/// What one block did, for the step that ran it.
#[derive(Default)]
pub(super) struct BlockLog {
    /// Messages to users, in the order gtest logs them.
    pub log: Vec<StoredMessage>,
    pub succeed: BTreeSet<MessageId>,
    pub failed: BTreeSet<MessageId>,
    pub not_executed: BTreeSet<MessageId>,
}

/// Gear's message layer for the meter's programs.
#[derive(Default)]
pub(super) struct Chain {
    /// The block being run (gtest's height: the first block a message runs in is 1).
    pub height: u32,
    /// gtest's nonce of user messages: one per message a user sends.
    nonce: u64,
    pub programs: BTreeMap<ActorId, Actor>,
    /// Codes programs can create programs from (gtest's submitted codes).
    pub codes: BTreeSet<CodeId>,
    pub balances: BTreeMap<ActorId, u128>,
    queue: VecDeque<StoredDispatch>,
    tasks: BTreeMap<u32, Vec<Task>>,
    /// Waiting messages by program, each with the block its `wait_for` ends (if any).
    waitlist: BTreeMap<(ActorId, MessageId), StoredDispatch>,
    /// Programs another program asked to create from a code the chain does not have.
    no_code: BTreeSet<ActorId>,
    /// System reservations made by messages, still held (a signal needs one).
    system_reserved: BTreeSet<MessageId>,
    /// Reply deposits: the future reply's id, so that a reply from a user is run.
    deposits: BTreeSet<MessageId>,
    /// What the current block did.
    pub block: BlockLog,
    /// Programs this block created, to instantiate before the next dispatch runs.
    pub created: Vec<(ActorId, CodeId)>,
}

impl Chain {
    /// Wakes `message` of `program` `after` blocks from now, once however often it is asked
    /// (a wait's own timeout and a `wake` with a delay may name the same block).
    fn schedule_wake(&mut self, after: u32, program: ActorId, message: MessageId) {
        let task = Task::WakeMessage(program, message);
        let tasks = self
            .tasks
            .entry(self.height.saturating_add(after))
            .or_default();
        if !tasks.contains(&task) {
            tasks.push(task);
        }
    }

    /// Starts the next block: runs its tasks (gtest runs them before the queue, after the
    /// messages users sent for it, which [`Chain::send_from_user`] queued first).
    pub fn next_block(&mut self) {
        self.height += 1;
        self.block = BlockLog::default();
        for task in self.tasks.remove(&self.height).unwrap_or_default() {
            match task {
                Task::SendDispatch(dispatch) => self.queue.push_back(dispatch),
                Task::SendUserMessage(message) => self.deliver_to_user(message),
                Task::WakeMessage(program, message) => {
                    if let Some(dispatch) = self.waitlist.remove(&(program, message)) {
                        self.queue.push_back(dispatch);
                    }
                }
                Task::RemoveGasReservation(program, reservation) => {
                    if let Some(actor) = self.programs.get_mut(&program) {
                        actor.reservations.remove(&reservation);
                    }
                }
            }
        }
    }

    /// The id gtest gives the next message `user` sends (sent in the block after the last
    /// one run): `MessageId::generate_from_user(height + 1, user, nonce)`.
    pub fn user_message_id(&mut self, user: ActorId) -> MessageId {
        use gear_core::ids::prelude::MessageIdExt;
        let id = MessageId::generate_from_user(self.height + 1, user, u128::from(self.nonce));
        self.nonce += 1;
        id
    }

    /// Queues a dispatch a user sent.
    pub fn send_from_user(&mut self, dispatch: StoredDispatch) {
        self.queue.push_back(dispatch);
    }

    /// The next dispatch of this block, if any.
    pub fn pop(&mut self) -> Option<StoredDispatch> {
        self.queue.pop_front()
    }

    /// Whether this block's queue is empty.
    pub fn queue_is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether `id` is a program (not a user) of this chain.
    pub fn is_program(&self, id: ActorId) -> bool {
        self.programs.contains_key(&id)
    }

    /// The free balance of `id`.
    pub fn balance(&self, id: ActorId) -> u128 {
        self.balances.get(&id).copied().unwrap_or(0)
    }

    fn transfer(&mut self, from: ActorId, to: ActorId, value: u128) {
        if value == 0 {
            return;
        }
        let have = self.balance(from);
        self.balances.insert(from, have.saturating_sub(value));
        *self.balances.entry(to).or_default() += value;
    }

    /// A message reaches a user: it is logged; one without a reply's details and sent with
    /// enough gas (every program message here) goes to the mailbox, where gtest lets it expire
    /// into a reply run with no gas: executed only if the program deposited gas for it.
    fn deliver_to_user(&mut self, message: StoredMessage) {
        if message.details().is_none() {
            let expiry = self.height + MAILBOX_BLOCKS;
            let reply = ReplyMessage::auto(message.id());
            if self.deposits.contains(&reply.id()) {
                let dispatch = reply.into_stored_dispatch(
                    message.destination(),
                    message.source(),
                    message.id(),
                );
                self.tasks
                    .entry(expiry)
                    .or_default()
                    .push(Task::SendDispatch(dispatch));
            }
        }
        *self.balances.entry(message.destination()).or_default() += message.value();
        self.block.log.push(message);
    }

    fn remove_reservations(&mut self, program: ActorId) {
        if let Some(actor) = self.programs.get_mut(&program) {
            actor.reservations.clear();
        }
    }

    /// Every message `program` has waiting goes back to the queue (gtest's `clean_waitlist`).
    fn clean_waitlist(&mut self, program: ActorId) {
        let keys: Vec<_> = self
            .waitlist
            .range((program, MessageId::zero())..)
            .take_while(|((p, _), _)| *p == program)
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            let dispatch = self.waitlist.remove(&key).expect("listed above");
            self.queue.push_back(dispatch);
        }
    }
}

impl JournalHandler for Chain {
    fn message_dispatched(
        &mut self,
        message_id: MessageId,
        _source: ActorId,
        outcome: DispatchOutcome,
    ) {
        match outcome {
            DispatchOutcome::MessageTrap { .. } => {
                self.block.failed.insert(message_id);
            }
            DispatchOutcome::NoExecution => {
                self.block.not_executed.insert(message_id);
            }
            DispatchOutcome::Success | DispatchOutcome::Exit { .. } => {
                self.block.succeed.insert(message_id);
            }
            DispatchOutcome::InitFailure {
                program_id, origin, ..
            } => {
                self.clean_waitlist(program_id);
                self.remove_reservations(program_id);
                if let Some(actor) = self.programs.get_mut(&program_id) {
                    actor.state = State::Terminated;
                }
                let value = self.balance(program_id);
                self.transfer(program_id, origin, value);
                self.block.failed.insert(message_id);
            }
            DispatchOutcome::InitSuccess { program_id } => {
                if let Some(actor) = self.programs.get_mut(&program_id) {
                    actor.state = State::Initialized;
                }
                self.block.succeed.insert(message_id);
            }
        }
    }

    fn gas_burned(&mut self, _message_id: MessageId, _amount: u64) {}

    fn exit_dispatch(&mut self, id_exited: ActorId, value_destination: ActorId) {
        self.clean_waitlist(id_exited);
        self.remove_reservations(id_exited);
        if let Some(actor) = self.programs.get_mut(&id_exited) {
            actor.state = State::Exited(value_destination);
        }
        let value = self.balance(id_exited);
        self.transfer(id_exited, value_destination, value);
    }

    fn message_consumed(&mut self, message_id: MessageId) {
        self.system_reserved.remove(&message_id);
    }

    fn send_dispatch(
        &mut self,
        _message_id: MessageId,
        dispatch: Dispatch,
        delay: u32,
        reservation: Option<ReservationId>,
    ) {
        let destination = dispatch.destination();
        let to_user = !self.is_program(destination) && !self.no_code.contains(&destination);
        if let Some(reservation) = reservation {
            if let Some(actor) = self.programs.get_mut(&dispatch.source()) {
                actor.reservations.remove(&reservation);
            }
        }
        // Value leaves its sender with the message (gtest's bank holds it) and reaches a
        // program when the message is processed (the journal's `SendValue`), a user when the
        // message reaches them. An error reply carries back the value its message brought.
        if dispatch.value() != 0 {
            let have = self.balance(dispatch.source());
            self.balances
                .insert(dispatch.source(), have.saturating_sub(dispatch.value()));
        }
        if delay > 0 {
            let at = self.height.saturating_add(delay);
            let task = if to_user {
                Task::SendUserMessage(dispatch.into_parts().1.into_stored())
            } else {
                Task::SendDispatch(dispatch.into_stored())
            };
            self.tasks.entry(at).or_default().push(task);
            return;
        }
        if to_user {
            self.deliver_to_user(dispatch.into_parts().1.into_stored());
        } else {
            self.queue.push_back(dispatch.into_stored());
        }
    }

    fn wait_dispatch(
        &mut self,
        dispatch: StoredDispatch,
        duration: Option<u32>,
        waited_type: MessageWaitedType,
    ) {
        let key = (dispatch.destination(), dispatch.id());
        // `wait` and a `wait_up_to` gas could not pay in full wait until woken (gtest removes
        // them only at the end of what their gas holds, far past any run here).
        if let (Some(duration), MessageWaitedType::WaitFor | MessageWaitedType::WaitUpToFull) =
            (duration, waited_type)
        {
            self.schedule_wake(duration, key.0, key.1);
        }
        self.waitlist.insert(key, dispatch);
    }

    fn wake_message(
        &mut self,
        _message_id: MessageId,
        program_id: ActorId,
        awakening_id: MessageId,
        delay: u32,
    ) {
        let key = (program_id, awakening_id);
        if delay == 0 {
            if let Some(dispatch) = self.waitlist.remove(&key) {
                self.queue.push_back(dispatch);
            }
        } else if self.waitlist.contains_key(&key) {
            self.schedule_wake(delay, program_id, awakening_id);
        }
    }

    // The meter keeps each program's memory and allocations itself (it commits them when the
    // execution ends well); the journal's copies are not made for it.
    fn update_pages_data(&mut self, _program_id: ActorId, _pages: BTreeMap<GearPage, PageBuf>) {}

    fn update_allocations(&mut self, _program_id: ActorId, _allocations: IntervalsTree<WasmPage>) {}

    fn send_value(&mut self, _from: ActorId, to: ActorId, value: u128, _locked: bool) {
        // Taken from the sender when the message was sent (`send_dispatch`).
        *self.balances.entry(to).or_default() += value;
    }

    fn store_new_programs(
        &mut self,
        program_id: ActorId,
        code_id: CodeId,
        candidates: Vec<(MessageId, ActorId)>,
    ) {
        if self.codes.contains(&code_id) {
            for (init, candidate) in candidates {
                if self.programs.contains_key(&candidate) {
                    continue;
                }
                self.programs.insert(
                    candidate,
                    Actor {
                        // The meter gives it its memory before the next dispatch runs.
                        index: usize::MAX,
                        state: State::Uninitialized(init),
                        reservations: GasReservationMap::default(),
                    },
                );
                self.created.push((candidate, code_id));
                self.transfer(program_id, candidate, EXISTENTIAL_DEPOSIT);
            }
        } else {
            self.no_code
                .extend(candidates.into_iter().map(|(_, candidate)| candidate));
        }
    }

    fn stop_processing(&mut self, dispatch: StoredDispatch, _gas_burned: u64) {
        // Never journalled here: the meter gives every block all the allowance it needs.
        self.queue.push_front(dispatch);
    }

    fn reserve_gas(
        &mut self,
        _message_id: MessageId,
        reservation_id: ReservationId,
        program_id: ActorId,
        _amount: u64,
        duration: u32,
    ) {
        self.tasks
            .entry(self.height.saturating_add(duration))
            .or_default()
            .push(Task::RemoveGasReservation(program_id, reservation_id));
    }

    fn unreserve_gas(
        &mut self,
        reservation_id: ReservationId,
        program_id: ActorId,
        expiration: u32,
    ) {
        if let Some(actor) = self.programs.get_mut(&program_id) {
            actor.reservations.remove(&reservation_id);
        }
        if let Some(tasks) = self.tasks.get_mut(&expiration) {
            tasks.retain(|t| *t != Task::RemoveGasReservation(program_id, reservation_id));
        }
    }

    fn update_gas_reservation(&mut self, program_id: ActorId, reserver: GasReserver) {
        let height = self.height;
        if let Some(actor) = self.programs.get_mut(&program_id) {
            actor.reservations = reserver.into_map(height, |duration| height + duration);
        }
    }

    fn system_reserve_gas(&mut self, message_id: MessageId, _amount: u64) {
        self.system_reserved.insert(message_id);
    }

    fn system_unreserve_gas(&mut self, message_id: MessageId) {
        self.system_reserved.remove(&message_id);
    }

    fn send_signal(&mut self, message_id: MessageId, destination: ActorId, code: SignalCode) {
        // gtest sends it with the gas the system reservation held; without one, none.
        if self.system_reserved.remove(&message_id) {
            let signal = SignalMessage::new(message_id, code)
                .into_dispatch(message_id, destination)
                .into_stored();
            self.queue.push_back(signal);
        }
    }

    fn reply_deposit(&mut self, _message_id: MessageId, future_reply_id: MessageId, _amount: u64) {
        self.deposits.insert(future_reply_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gear_core::ids::prelude::MessageIdExt;
    use gear_core::message::DispatchKind;
    use gear_core::message::Message;

    fn dispatch(kind: DispatchKind, id: u64, from: u64, to: u64) -> Dispatch {
        let message = Message::new(
            MessageId::from(id),
            ActorId::from(from),
            ActorId::from(to),
            Default::default(),
            Some(1_000_000),
            0,
            None,
        );
        Dispatch::new(kind, message)
    }

    fn chain_with(program: u64) -> Chain {
        let mut chain = Chain::default();
        chain.programs.insert(
            ActorId::from(program),
            Actor {
                index: 0,
                state: State::Initialized,
                reservations: Default::default(),
            },
        );
        chain
    }

    /// gtest's first user message: block 1, nonce 0, and the ids go on from there.
    #[test]
    fn user_message_ids_are_gtest_s() {
        let mut chain = Chain::default();
        let user = ActorId::from(42);
        assert_eq!(
            chain.user_message_id(user),
            MessageId::generate_from_user(1, user, 0)
        );
        chain.next_block();
        assert_eq!(
            chain.user_message_id(user),
            MessageId::generate_from_user(2, user, 1)
        );
    }

    /// A wait for `d` blocks comes back at block `h + d`; a wake within the block before that
    /// brings it back at once and the later task finds nothing.
    #[test]
    fn a_wait_for_ends_at_its_block_or_at_its_wake() {
        let mut chain = chain_with(7);
        chain.next_block();
        let waiting = dispatch(DispatchKind::Handle, 1, 100, 7).into_stored();
        chain.wait_dispatch(waiting.clone(), Some(3), MessageWaitedType::WaitFor);
        for _ in 0..2 {
            chain.next_block();
            assert_eq!(chain.pop(), None);
        }
        chain.next_block();
        assert_eq!(chain.pop(), Some(waiting.clone()));

        chain.wait_dispatch(waiting.clone(), Some(5), MessageWaitedType::WaitFor);
        chain.wake_message(MessageId::from(2), ActorId::from(7), waiting.id(), 0);
        assert_eq!(chain.pop(), Some(waiting));
        for _ in 0..5 {
            chain.next_block();
            assert_eq!(chain.pop(), None);
        }
    }

    /// A plain `wait` stays until woken; a wake of a message not waiting does nothing.
    #[test]
    fn a_wait_stays_until_woken() {
        let mut chain = chain_with(7);
        let waiting = dispatch(DispatchKind::Handle, 1, 100, 7).into_stored();
        chain.wait_dispatch(waiting.clone(), None, MessageWaitedType::Wait);
        chain.wake_message(MessageId::from(2), ActorId::from(7), MessageId::from(9), 0);
        for _ in 0..100 {
            chain.next_block();
            assert_eq!(chain.pop(), None);
        }
        chain.wake_message(MessageId::from(2), ActorId::from(7), waiting.id(), 2);
        chain.next_block();
        assert_eq!(chain.pop(), None);
        chain.next_block();
        assert_eq!(chain.pop(), Some(waiting));
    }

    /// A message to a program queues, to a user is logged, and a delayed one arrives at its
    /// block: a user's in the log of that block.
    #[test]
    fn messages_go_to_the_queue_or_the_log() {
        let mut chain = chain_with(7);
        chain.next_block();
        let to_program = dispatch(DispatchKind::Handle, 1, 8, 7);
        let to_user = dispatch(DispatchKind::Handle, 2, 7, 100);
        let later = dispatch(DispatchKind::Handle, 3, 7, 100);
        let (m, r) = (MessageId::from(9), None);
        chain.send_dispatch(m, to_program.clone(), 0, r);
        chain.send_dispatch(m, to_user.clone(), 0, r);
        chain.send_dispatch(m, later.clone(), 2, r);
        assert_eq!(chain.pop(), Some(to_program.into_stored()));
        assert_eq!(chain.block.log, [to_user.into_parts().1.into_stored()]);
        chain.next_block();
        assert!(chain.block.log.is_empty());
        chain.next_block();
        assert_eq!(chain.block.log, [later.into_parts().1.into_stored()]);
    }

    /// A signal goes out only for a message that holds a system reservation, once.
    #[test]
    fn a_signal_needs_a_system_reservation() {
        let mut chain = chain_with(7);
        let code = SignalCode::RemovedFromWaitlist;
        chain.send_signal(MessageId::from(1), ActorId::from(7), code);
        assert_eq!(chain.pop(), None);
        chain.system_reserve_gas(MessageId::from(1), 1);
        chain.send_signal(MessageId::from(1), ActorId::from(7), code);
        let signal = chain.pop().expect("a signal");
        assert_eq!(signal.kind(), DispatchKind::Signal);
        assert_eq!(signal.id(), MessageId::generate_signal(MessageId::from(1)));
        chain.send_signal(MessageId::from(1), ActorId::from(7), code);
        assert_eq!(chain.pop(), None);
    }
}
