//! Every syscall of gsys 2.0 (`gr_*`), answered by Gear's own externalities
//! (`core_processor::Ext`, what gtest's programs call through gear-core-backend): ids, nonces,
//! limits, error codes and the messages an execution leaves are Gear's by construction. This
//! file only moves bytes between the program's memory and `Ext`, as gear-core-backend's
//! `funcs.rs` does, with the layouts of gsys's result structs, and records each access for the
//! page counts (`host.rs`). `Ext` is given plenty of gas and charges nothing per syscall: fuel,
//! not gas, is what the meter counts; `gr_gas_available` stays fuel (`host.rs`).
//!
//! Over 600 lines: the 50 syscalls beside `gr_gas_available`, each a few lines over the same
//! helpers, kept in one file so that the list can be read against gsys's.

use super::host::{read, write};
use super::Host;
use anyhow::{anyhow, Result};
use core_processor::{FallibleExtError, UnrecoverableExtError};
use gear_core::buffer::Payload;
use gear_core::env::{Externalities, MessageWaitedType};
use gear_core::ids::{ActorId, CodeId, MessageId, ReservationId};
use gear_core::message::{HandlePacket, InitPacket, ReplyPacket};
use gear_core_backend::error::{
    ActorTerminationReason, BackendSyscallError, RunFallibleError, TrapExplanation,
    UndefinedTerminationReason, UnrecoverableExecutionError,
};
use wasmtime::{Caller, Linker};

/// The externalities of the running execution.
pub(super) type Ext = core_processor::Ext<NoLazyPages>;

/// Every host function the meter implements, as `module.name`: every syscall of gsys 2.0 and
/// Gear's three memory syscalls (a test holds it to gear-wasm-instrument's list).
pub const HOST_FUNCTIONS: &[&str] = &[
    "env.alloc",
    "env.free",
    "env.free_range",
    "env.gr_block_height",
    "env.gr_block_timestamp",
    "env.gr_create_program",
    "env.gr_create_program_wgas",
    "env.gr_debug",
    "env.gr_env_vars",
    "env.gr_exit",
    "env.gr_gas_available",
    "env.gr_leave",
    "env.gr_message_id",
    "env.gr_oom_panic",
    "env.gr_panic",
    "env.gr_program_id",
    "env.gr_random",
    "env.gr_read",
    "env.gr_reply",
    "env.gr_reply_code",
    "env.gr_reply_commit",
    "env.gr_reply_commit_wgas",
    "env.gr_reply_deposit",
    "env.gr_reply_input",
    "env.gr_reply_input_wgas",
    "env.gr_reply_push",
    "env.gr_reply_push_input",
    "env.gr_reply_to",
    "env.gr_reply_wgas",
    "env.gr_reservation_reply",
    "env.gr_reservation_reply_commit",
    "env.gr_reservation_send",
    "env.gr_reservation_send_commit",
    "env.gr_reserve_gas",
    "env.gr_send",
    "env.gr_send_commit",
    "env.gr_send_commit_wgas",
    "env.gr_send_init",
    "env.gr_send_input",
    "env.gr_send_input_wgas",
    "env.gr_send_push",
    "env.gr_send_push_input",
    "env.gr_send_wgas",
    "env.gr_signal_code",
    "env.gr_signal_from",
    "env.gr_size",
    "env.gr_source",
    "env.gr_system_reserve_gas",
    "env.gr_unreserve_gas",
    "env.gr_value",
    "env.gr_value_available",
    "env.gr_wait",
    "env.gr_wait_for",
    "env.gr_wait_up_to",
    "env.gr_wake",
];

/// Lazy pages, which the meter does without: it keeps whole memories and counts page accesses
/// itself (`pages.rs`). `Ext` asks for them only where the meter does not call it (its
/// `alloc`, its final accounting).
pub(super) struct NoLazyPages;

impl gear_lazy_pages_common::LazyPagesInterface for NoLazyPages {
    fn try_to_enable_lazy_pages(_prefix: [u8; 32]) -> bool {
        false
    }
    fn init_for_program<Context>(
        _ctx: &mut Context,
        _mem: &mut impl gear_core::memory::Memory<Context>,
        _program_id: ActorId,
        _memory_infix: gear_core::program::MemoryInfix,
        _stack_end: Option<gear_core::pages::WasmPage>,
        _globals_config: gear_lazy_pages_common::GlobalsAccessConfig,
        _costs: gear_core::costs::LazyPagesCosts,
    ) {
    }
    fn remove_lazy_pages_prot<Context>(
        _ctx: &mut Context,
        _mem: &mut impl gear_core::memory::Memory<Context>,
    ) {
    }
    fn update_lazy_pages_and_protect_again<Context>(
        _ctx: &mut Context,
        _mem: &mut impl gear_core::memory::Memory<Context>,
        _old_mem_addr: Option<gear_core::memory::HostPointer>,
        _old_mem_size: gear_core::pages::WasmPagesAmount,
        _new_mem_addr: gear_core::memory::HostPointer,
    ) {
    }
    fn get_write_accessed_pages() -> Vec<gear_core::pages::GearPage> {
        Vec::new()
    }
    fn get_status() -> gear_lazy_pages_common::Status {
        gear_lazy_pages_common::Status::Normal
    }
    fn pre_process_memory_accesses(
        _reads: &[gear_core::memory::MemoryInterval],
        _writes: &[gear_core::memory::MemoryInterval],
        _gas_counter: &mut u64,
    ) -> Result<(), gear_lazy_pages_common::ProcessAccessError> {
        Ok(())
    }
}

/// `u32::MAX` as a value pointer: no value (gsys).
const NO_VALUE: u32 = u32::MAX;

fn ext<'a>(c: &'a mut Caller<'_, Host>) -> &'a mut Ext {
    c.data_mut()
        .ext
        .as_mut()
        .expect("the meter sets Ext for every execution")
}

/// Ends the execution for `reason`, as Gear's backend does: the host call fails and the
/// execution's end is read from the host after the call returns.
fn stop<T>(c: &mut Caller<'_, Host>, reason: UndefinedTerminationReason) -> wasmtime::Result<T> {
    let reason = match reason {
        UndefinedTerminationReason::Actor(reason) => reason,
        // Gear reads these from its gas counters; the meter's never run out.
        UndefinedTerminationReason::System(_)
        | UndefinedTerminationReason::ProcessAccessErrorResourcesExceed => {
            ActorTerminationReason::Trap(TrapExplanation::GasLimitExceeded)
        }
    };
    c.data_mut().termination = Some(reason);
    wasmtime::bail!("the execution ended (syscall)")
}

/// An infallible syscall's error ends the execution.
fn unrecoverable<T>(
    c: &mut Caller<'_, Host>,
    result: Result<T, UnrecoverableExtError>,
) -> wasmtime::Result<T> {
    match result {
        Ok(value) => Ok(value),
        Err(e) => stop(c, e.into_termination_reason()),
    }
}

/// Writes a fallible syscall's result struct at `out`: error code 0 and `value`, or the
/// error's code and zeros over `value_len` bytes (gsys's `ErrorWith*` layouts, 4-byte code
/// first); an error that is not the program's to handle ends the execution instead.
fn fallible(
    c: &mut Caller<'_, Host>,
    out: u32,
    value_len: usize,
    result: Result<Vec<u8>, RunFallibleError>,
) -> wasmtime::Result<()> {
    let mut bytes = vec![0u8; 4 + value_len];
    match result {
        Ok(value) => bytes[4..4 + value.len()].copy_from_slice(&value),
        Err(RunFallibleError::FallibleExt(e)) => {
            bytes[..4].copy_from_slice(&e.to_u32().to_le_bytes())
        }
        Err(RunFallibleError::UndefinedTerminationReason(reason)) => return stop(c, reason),
    }
    write(c, out, &bytes)
}

fn run<T>(result: Result<T, FallibleExtError>) -> Result<T, RunFallibleError> {
    result.map_err(RunFallibleError::from)
}

fn read_array<const N: usize>(c: &mut Caller<'_, Host>, ptr: u32) -> wasmtime::Result<[u8; N]> {
    Ok(read(c, ptr, N as u32)?.try_into().expect("N bytes read"))
}

/// A 32-byte id and a value (gsys's `HashWithValue`).
fn hash_with_value(c: &mut Caller<'_, Host>, ptr: u32) -> wasmtime::Result<([u8; 32], u128)> {
    let bytes: [u8; 48] = read_array(c, ptr)?;
    let value = u128::from_le_bytes(bytes[32..].try_into().expect("16 bytes"));
    Ok((bytes[..32].try_into().expect("32 bytes"), value))
}

/// Two 32-byte ids and a value (gsys's `TwoHashesWithValue`).
fn two_hashes_with_value(
    c: &mut Caller<'_, Host>,
    ptr: u32,
) -> wasmtime::Result<([u8; 32], [u8; 32], u128)> {
    let bytes: [u8; 80] = read_array(c, ptr)?;
    let value = u128::from_le_bytes(bytes[64..].try_into().expect("16 bytes"));
    Ok((
        bytes[..32].try_into().expect("32 bytes"),
        bytes[32..64].try_into().expect("32 bytes"),
        value,
    ))
}

/// The value at `ptr`, or 0 for [`NO_VALUE`].
fn value_at(c: &mut Caller<'_, Host>, ptr: u32) -> wasmtime::Result<u128> {
    if ptr == NO_VALUE {
        return Ok(0);
    }
    Ok(u128::from_le_bytes(read_array(c, ptr)?))
}

/// `len` bytes at `ptr` as a message payload; a payload over Gear's limit is the program's
/// error (`MaxMessageSizeExceed`), as on Gear.
fn payload(c: &mut Caller<'_, Host>, ptr: u32, len: u32) -> wasmtime::Result<Option<Payload>> {
    if len as usize > gear_core::buffer::MAX_PAYLOAD_SIZE {
        return Ok(None);
    }
    let bytes = read(c, ptr, len)?;
    Ok(Some(bytes.try_into().expect("within the limit")))
}

fn too_big() -> RunFallibleError {
    RunFallibleError::FallibleExt(gear_core_errors::ExtError::Message(
        gear_core_errors::MessageError::MaxMessageSizeExceed,
    ))
}

fn id(message: MessageId) -> Vec<u8> {
    message.into_bytes().to_vec()
}

/// Defines `name`, a syscall that writes one of the execution's values (`get`'s bytes) at its
/// only argument, or ends the execution with `get`'s error.
fn getter(
    l: &mut Linker<Host>,
    name: &str,
    get: fn(&Ext) -> Result<Vec<u8>, UnrecoverableExtError>,
) -> Result<()> {
    l.func_wrap("env", name, move |mut c: Caller<'_, Host>, out: u32| {
        let value = get(ext(&mut c));
        let value = unrecoverable(&mut c, value)?;
        write(&mut c, out, &value)
    })
    .map_err(|e| anyhow!("defining host function {name}: {e}"))?;
    Ok(())
}

/// Defines every `gr_*` syscall but `gr_gas_available` (the meter's own, `host.rs`) in `l`.
pub(super) fn define(l: &mut Linker<Host>) -> Result<()> {
    let e = |e: wasmtime::Error| anyhow!("defining host functions: {e}");

    // What the execution is: its message, its program, its block.
    getter(l, "gr_size", |e| {
        e.size().map(|size| (size as u32).to_le_bytes().to_vec())
    })?;
    getter(l, "gr_source", |e| {
        e.source().map(|id| id.into_bytes().to_vec())
    })?;
    getter(l, "gr_value", |e| {
        e.value().map(|value| value.to_le_bytes().to_vec())
    })?;
    getter(l, "gr_message_id", |e| {
        e.message_id().map(|id| id.into_bytes().to_vec())
    })?;
    getter(l, "gr_block_height", |e| {
        e.block_height().map(|height| height.to_le_bytes().to_vec())
    })?;
    getter(l, "gr_block_timestamp", |e| {
        e.block_timestamp().map(|time| time.to_le_bytes().to_vec())
    })?;
    getter(l, "gr_value_available", |e| {
        e.value_available()
            .map(|value| value.to_le_bytes().to_vec())
    })?;
    getter(l, "gr_program_id", |e| {
        e.program_id().map(|id| id.into_bytes().to_vec())
    })?;

    // The incoming message.
    l.func_wrap(
        "env",
        "gr_read",
        |mut c: Caller<'_, Host>, at: u32, len: u32, buffer: u32, err: u32| {
            let slice = ext(&mut c)
                .payload_slice(at, len)
                .map(|s| s.slice().to_vec());
            let result = match run(slice) {
                Ok(bytes) => {
                    // Gear writes the buffer only when the read succeeds.
                    write(&mut c, buffer, &bytes)?;
                    Ok(Vec::new())
                }
                Err(e) => Err(e),
            };
            fallible(&mut c, err, 0, result)
        },
    )
    .map_err(e)?;
    l.func_wrap("env", "gr_reply_to", |mut c: Caller<'_, Host>, out: u32| {
        let result = run(ext(&mut c).reply_to()).map(id);
        fallible(&mut c, out, 32, result)
    })
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reply_code",
        |mut c: Caller<'_, Host>, out: u32| {
            let result = run(ext(&mut c).reply_code()).map(|code| code.to_bytes().to_vec());
            fallible(&mut c, out, 4, result)
        },
    )
    .map_err(e)?;

    // Signals.
    l.func_wrap(
        "env",
        "gr_signal_from",
        |mut c: Caller<'_, Host>, out: u32| {
            let result = run(ext(&mut c).signal_from()).map(id);
            fallible(&mut c, out, 32, result)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_signal_code",
        |mut c: Caller<'_, Host>, out: u32| {
            let result =
                run(ext(&mut c).signal_code()).map(|code| code.to_u32().to_le_bytes().to_vec());
            fallible(&mut c, out, 4, result)
        },
    )
    .map_err(e)?;

    // Replies.
    fn reply(
        c: &mut Caller<'_, Host>,
        payload_at: Option<(u32, u32)>,
        gas_limit: Option<u64>,
        value: u32,
        out: u32,
    ) -> wasmtime::Result<()> {
        let value = value_at(c, value)?;
        let result = match payload_at {
            Some((ptr, len)) => match payload(c, ptr, len)? {
                Some(payload) => {
                    run(ext(c).reply(ReplyPacket::maybe_with_gas(payload, gas_limit, value)))
                }
                None => Err(too_big()),
            },
            None => run(ext(c).reply_commit(ReplyPacket::maybe_with_gas(
                Default::default(),
                gas_limit,
                value,
            ))),
        };
        fallible(c, out, 32, result.map(id))
    }
    l.func_wrap(
        "env",
        "gr_reply",
        |mut c: Caller<'_, Host>, ptr: u32, len: u32, value: u32, out: u32| {
            reply(&mut c, Some((ptr, len)), None, value, out)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reply_wgas",
        |mut c: Caller<'_, Host>, ptr: u32, len: u32, gas: u64, value: u32, out: u32| {
            reply(&mut c, Some((ptr, len)), Some(gas), value, out)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reply_commit",
        |mut c: Caller<'_, Host>, value: u32, out: u32| reply(&mut c, None, None, value, out),
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reply_commit_wgas",
        |mut c: Caller<'_, Host>, gas: u64, value: u32, out: u32| {
            reply(&mut c, None, Some(gas), value, out)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reply_push",
        |mut c: Caller<'_, Host>, ptr: u32, len: u32, err: u32| {
            let bytes = read(&mut c, ptr, len)?;
            let result = run(ext(&mut c).reply_push(&bytes)).map(|()| Vec::new());
            fallible(&mut c, err, 0, result)
        },
    )
    .map_err(e)?;
    fn reply_input(
        c: &mut Caller<'_, Host>,
        offset: u32,
        len: u32,
        gas_limit: Option<u64>,
        value: u32,
        out: u32,
    ) -> wasmtime::Result<()> {
        let value = value_at(c, value)?;
        let result = run(ext(c).reply_push_input(offset, len)).and_then(|()| {
            run(ext(c).reply_commit(ReplyPacket::maybe_with_gas(
                Default::default(),
                gas_limit,
                value,
            )))
        });
        fallible(c, out, 32, result.map(id))
    }
    l.func_wrap(
        "env",
        "gr_reply_input",
        |mut c: Caller<'_, Host>, offset: u32, len: u32, value: u32, out: u32| {
            reply_input(&mut c, offset, len, None, value, out)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reply_input_wgas",
        |mut c: Caller<'_, Host>, offset: u32, len: u32, gas: u64, value: u32, out: u32| {
            reply_input(&mut c, offset, len, Some(gas), value, out)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reply_push_input",
        |mut c: Caller<'_, Host>, offset: u32, len: u32, err: u32| {
            let result = run(ext(&mut c).reply_push_input(offset, len)).map(|()| Vec::new());
            fallible(&mut c, err, 0, result)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reply_deposit",
        |mut c: Caller<'_, Host>, message: u32, gas: u64, err: u32| {
            let message = MessageId::from(read_array::<32>(&mut c, message)?);
            let result = run(ext(&mut c).reply_deposit(message, gas)).map(|()| Vec::new());
            fallible(&mut c, err, 0, result)
        },
    )
    .map_err(e)?;

    // Sending.
    fn send(
        c: &mut Caller<'_, Host>,
        pid_value: u32,
        payload_at: (u32, u32),
        gas_limit: Option<u64>,
        delay: u32,
        out: u32,
    ) -> wasmtime::Result<()> {
        let (destination, value) = hash_with_value(c, pid_value)?;
        let result = match payload(c, payload_at.0, payload_at.1)? {
            Some(payload) => run(ext(c).send(
                HandlePacket::maybe_with_gas(destination.into(), payload, gas_limit, value),
                delay,
            )),
            None => Err(too_big()),
        };
        fallible(c, out, 32, result.map(id))
    }
    l.func_wrap(
        "env",
        "gr_send",
        |mut c: Caller<'_, Host>, pid_value: u32, ptr: u32, len: u32, delay: u32, out: u32| {
            send(&mut c, pid_value, (ptr, len), None, delay, out)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_send_wgas",
        |mut c: Caller<'_, Host>,
         pid_value: u32,
         ptr: u32,
         len: u32,
         gas: u64,
         delay: u32,
         out: u32| { send(&mut c, pid_value, (ptr, len), Some(gas), delay, out) },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_send_init",
        |mut c: Caller<'_, Host>, out: u32| {
            let result = run(ext(&mut c).send_init()).map(|h| h.to_le_bytes().to_vec());
            fallible(&mut c, out, 4, result)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_send_push",
        |mut c: Caller<'_, Host>, handle: u32, ptr: u32, len: u32, err: u32| {
            let bytes = read(&mut c, ptr, len)?;
            let result = run(ext(&mut c).send_push(handle, &bytes)).map(|()| Vec::new());
            fallible(&mut c, err, 0, result)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_send_push_input",
        |mut c: Caller<'_, Host>, handle: u32, offset: u32, len: u32, err: u32| {
            let result = run(ext(&mut c).send_push_input(handle, offset, len)).map(|()| Vec::new());
            fallible(&mut c, err, 0, result)
        },
    )
    .map_err(e)?;
    fn send_commit(
        c: &mut Caller<'_, Host>,
        handle: u32,
        pid_value: u32,
        gas_limit: Option<u64>,
        delay: u32,
        out: u32,
    ) -> wasmtime::Result<()> {
        let (destination, value) = hash_with_value(c, pid_value)?;
        let packet =
            HandlePacket::maybe_with_gas(destination.into(), Default::default(), gas_limit, value);
        let result = run(ext(c).send_commit(handle, packet, delay));
        fallible(c, out, 32, result.map(id))
    }
    l.func_wrap(
        "env",
        "gr_send_commit",
        |mut c: Caller<'_, Host>, handle: u32, pid_value: u32, delay: u32, out: u32| {
            send_commit(&mut c, handle, pid_value, None, delay, out)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_send_commit_wgas",
        |mut c: Caller<'_, Host>, handle: u32, pid_value: u32, gas: u64, delay: u32, out: u32| {
            send_commit(&mut c, handle, pid_value, Some(gas), delay, out)
        },
    )
    .map_err(e)?;
    fn send_input(
        c: &mut Caller<'_, Host>,
        pid_value: u32,
        offset: u32,
        len: u32,
        gas_limit: Option<u64>,
        delay: u32,
        out: u32,
    ) -> wasmtime::Result<()> {
        let (destination, value) = hash_with_value(c, pid_value)?;
        let packet =
            HandlePacket::maybe_with_gas(destination.into(), Default::default(), gas_limit, value);
        let result = run(ext(c).send_init()).and_then(|handle| {
            run(ext(c).send_push_input(handle, offset, len))?;
            run(ext(c).send_commit(handle, packet, delay))
        });
        fallible(c, out, 32, result.map(id))
    }
    l.func_wrap(
        "env",
        "gr_send_input",
        |mut c: Caller<'_, Host>, pid_value: u32, offset: u32, len: u32, delay: u32, out: u32| {
            send_input(&mut c, pid_value, offset, len, None, delay, out)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_send_input_wgas",
        |mut c: Caller<'_, Host>,
         pid_value: u32,
         offset: u32,
         len: u32,
         gas: u64,
         delay: u32,
         out: u32| { send_input(&mut c, pid_value, offset, len, Some(gas), delay, out) },
    )
    .map_err(e)?;

    // Reservations.
    l.func_wrap(
        "env",
        "gr_reserve_gas",
        |mut c: Caller<'_, Host>, gas: u64, duration: u32, out: u32| {
            let result =
                run(ext(&mut c).reserve_gas(gas, duration)).map(|r| r.into_bytes().to_vec());
            fallible(&mut c, out, 32, result)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_unreserve_gas",
        |mut c: Caller<'_, Host>, reservation: u32, out: u32| {
            let reservation = ReservationId::from(read_array::<32>(&mut c, reservation)?);
            let result =
                run(ext(&mut c).unreserve_gas(reservation)).map(|gas| gas.to_le_bytes().to_vec());
            fallible(&mut c, out, 8, result)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_system_reserve_gas",
        |mut c: Caller<'_, Host>, gas: u64, err: u32| {
            let result = run(ext(&mut c).system_reserve_gas(gas)).map(|()| Vec::new());
            fallible(&mut c, err, 0, result)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reservation_send",
        |mut c: Caller<'_, Host>, rid_pid_value: u32, ptr: u32, len: u32, delay: u32, out: u32| {
            let (reservation, destination, value) = two_hashes_with_value(&mut c, rid_pid_value)?;
            let result = match payload(&mut c, ptr, len)? {
                Some(payload) => run(ext(&mut c).reservation_send(
                    reservation.into(),
                    HandlePacket::new(destination.into(), payload, value),
                    delay,
                )),
                None => Err(too_big()),
            };
            fallible(&mut c, out, 32, result.map(id))
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reservation_send_commit",
        |mut c: Caller<'_, Host>, handle: u32, rid_pid_value: u32, delay: u32, out: u32| {
            let (reservation, destination, value) = two_hashes_with_value(&mut c, rid_pid_value)?;
            let result = run(ext(&mut c).reservation_send_commit(
                reservation.into(),
                handle,
                HandlePacket::new(destination.into(), Default::default(), value),
                delay,
            ));
            fallible(&mut c, out, 32, result.map(id))
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reservation_reply",
        |mut c: Caller<'_, Host>, rid_value: u32, ptr: u32, len: u32, out: u32| {
            let (reservation, value) = hash_with_value(&mut c, rid_value)?;
            let result = match payload(&mut c, ptr, len)? {
                Some(payload) => run(ext(&mut c)
                    .reservation_reply(reservation.into(), ReplyPacket::new(payload, value))),
                None => Err(too_big()),
            };
            fallible(&mut c, out, 32, result.map(id))
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reservation_reply_commit",
        |mut c: Caller<'_, Host>, rid_value: u32, out: u32| {
            let (reservation, value) = hash_with_value(&mut c, rid_value)?;
            let result = run(ext(&mut c).reservation_reply_commit(
                reservation.into(),
                ReplyPacket::new(Default::default(), value),
            ));
            fallible(&mut c, out, 32, result.map(id))
        },
    )
    .map_err(e)?;

    // Program creation.
    #[allow(clippy::too_many_arguments)]
    fn create_program(
        c: &mut Caller<'_, Host>,
        cid_value: u32,
        salt: (u32, u32),
        payload_at: (u32, u32),
        gas_limit: Option<u64>,
        delay: u32,
        out: u32,
    ) -> wasmtime::Result<()> {
        let (code, value) = hash_with_value(c, cid_value)?;
        let salt = payload(c, salt.0, salt.1)?;
        let init = payload(c, payload_at.0, payload_at.1)?;
        let result = match (salt, init) {
            (Some(salt), Some(init)) => {
                let message = ext(c).message_id();
                let message = unrecoverable(c, message)?;
                run(ext(c).create_program(
                    InitPacket::new_from_program(
                        CodeId::from(code),
                        salt,
                        init,
                        message,
                        gas_limit,
                        value,
                    ),
                    delay,
                ))
            }
            _ => Err(too_big()),
        };
        let result = result.map(|(message, program): (MessageId, ActorId)| {
            [message.into_bytes(), program.into_bytes()].concat()
        });
        fallible(c, out, 64, result)
    }
    l.func_wrap(
        "env",
        "gr_create_program",
        |mut c: Caller<'_, Host>,
         cid_value: u32,
         salt: u32,
         salt_len: u32,
         ptr: u32,
         len: u32,
         delay: u32,
         out: u32| {
            create_program(
                &mut c,
                cid_value,
                (salt, salt_len),
                (ptr, len),
                None,
                delay,
                out,
            )
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_create_program_wgas",
        |mut c: Caller<'_, Host>,
         cid_value: u32,
         salt: u32,
         salt_len: u32,
         ptr: u32,
         len: u32,
         gas: u64,
         delay: u32,
         out: u32| {
            create_program(
                &mut c,
                cid_value,
                (salt, salt_len),
                (ptr, len),
                Some(gas),
                delay,
                out,
            )
        },
    )
    .map_err(e)?;

    // Waiting and waking.
    l.func_wrap("env", "gr_wait", |mut c: Caller<'_, Host>| {
        let waited = ext(&mut c).wait();
        unrecoverable(&mut c, waited)?;
        let reason = ActorTerminationReason::Wait(None, MessageWaitedType::Wait);
        stop::<()>(&mut c, reason.into())
    })
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_wait_for",
        |mut c: Caller<'_, Host>, duration: u32| {
            let waited = ext(&mut c).wait_for(duration);
            unrecoverable(&mut c, waited)?;
            let reason = ActorTerminationReason::Wait(Some(duration), MessageWaitedType::WaitFor);
            stop::<()>(&mut c, reason.into())
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_wait_up_to",
        |mut c: Caller<'_, Host>, duration: u32| {
            let full = ext(&mut c).wait_up_to(duration);
            let kind = if unrecoverable(&mut c, full)? {
                MessageWaitedType::WaitUpToFull
            } else {
                MessageWaitedType::WaitUpTo
            };
            stop::<()>(
                &mut c,
                ActorTerminationReason::Wait(Some(duration), kind).into(),
            )
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_wake",
        |mut c: Caller<'_, Host>, message: u32, delay: u32, err: u32| {
            let message = MessageId::from(read_array::<32>(&mut c, message)?);
            let result = run(ext(&mut c).wake(message, delay)).map(|()| Vec::new());
            fallible(&mut c, err, 0, result)
        },
    )
    .map_err(e)?;

    // The execution's environment.
    l.func_wrap(
        "env",
        "gr_env_vars",
        |mut c: Caller<'_, Host>, version: u32, out: u32| {
            let vars = ext(&mut c).env_vars(version);
            let vars = unrecoverable(&mut c, vars)?;
            write(&mut c, out, vars.to_bytes())
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_random",
        |mut c: Caller<'_, Host>, subject: u32, out: u32| {
            let subject = read_array::<32>(&mut c, subject)?;
            let random = ext(&mut c).random().map(|(r, bn)| (r.to_vec(), bn));
            let (random, bn) = unrecoverable(&mut c, random)?;
            // Gear's: BLAKE2b-256 of the subject and the block's random data.
            let hash = gear_core::ids::hash(&[&subject[..], &random[..]].concat());
            write(&mut c, out, &[&bn.to_le_bytes()[..], &hash[..]].concat())
        },
    )
    .map_err(e)?;

    // Ends of an execution.
    l.func_wrap(
        "env",
        "gr_exit",
        |mut c: Caller<'_, Host>, inheritor: u32| {
            let inheritor = ActorId::from(read_array::<32>(&mut c, inheritor)?);
            stop::<()>(&mut c, ActorTerminationReason::Exit(inheritor).into())
        },
    )
    .map_err(e)?;
    l.func_wrap("env", "gr_leave", |mut c: Caller<'_, Host>| {
        stop::<()>(&mut c, ActorTerminationReason::Leave.into())
    })
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_panic",
        |mut c: Caller<'_, Host>, ptr: u32, len: u32| {
            let reason = match payload(&mut c, ptr, len)? {
                Some(payload) => TrapExplanation::Panic(payload.into()),
                None => TrapExplanation::UnrecoverableExt(
                    UnrecoverableExecutionError::PanicBufferIsTooBig.into(),
                ),
            };
            stop::<()>(&mut c, ActorTerminationReason::Trap(reason).into())
        },
    )
    .map_err(e)?;
    l.func_wrap("env", "gr_oom_panic", |mut c: Caller<'_, Host>| {
        let reason = TrapExplanation::ProgramAllocOutOfBounds;
        stop::<()>(&mut c, ActorTerminationReason::Trap(reason).into())
    })
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_debug",
        |mut c: Caller<'_, Host>, ptr: u32, len: u32| {
            // Gear reads the line (its pages count) and refuses one that is not UTF-8.
            let bytes = read(&mut c, ptr, len)?;
            match String::from_utf8(bytes) {
                Ok(line) => {
                    let logged = ext(&mut c).debug(&line);
                    unrecoverable(&mut c, logged)
                }
                Err(_) => {
                    let reason = TrapExplanation::UnrecoverableExt(
                        UnrecoverableExecutionError::InvalidDebugString.into(),
                    );
                    stop(&mut c, ActorTerminationReason::Trap(reason).into())
                }
            }
        },
    )
    .map_err(e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{host_functions, Host, HOST_FUNCTIONS};
    use gear_wasm_instrument::syscalls::{SyscallKind, SyscallName};
    use std::collections::BTreeSet;

    /// The meter defines every function a Gear program may import on Vara (gsys 2.0's 52
    /// syscalls and the three memory syscalls, as gear-wasm-instrument lists them), each with
    /// Gear's parameter and result types, and nothing else.
    #[test]
    fn every_syscall_gear_has_is_defined_with_its_signature() {
        let gear: BTreeSet<String> = SyscallName::instrumentable(SyscallKind::Vara)
            .map(|s| format!("env.{}", s.to_str()))
            .collect();
        let ours: BTreeSet<String> = HOST_FUNCTIONS.iter().map(|s| s.to_string()).collect();
        assert_eq!(ours, gear);
        assert_eq!(gear.iter().filter(|s| s.starts_with("env.gr_")).count(), 52);

        let engine = super::super::engine().unwrap();
        let linker = host_functions(engine).unwrap();
        let mut store = wasmtime::Store::new(engine, Host::new(1, 0));
        let wasm = |t: &gear_wasm_instrument::ValType| match t {
            gear_wasm_instrument::ValType::I32 => "i32",
            gear_wasm_instrument::ValType::I64 => "i64",
            other => panic!("a syscall type Gear does not use: {other:?}"),
        };
        let ours = |t: wasmtime::ValType| match t {
            wasmtime::ValType::I32 => "i32",
            wasmtime::ValType::I64 => "i64",
            other => panic!("a host type Gear does not use: {other:?}"),
        };
        for syscall in SyscallName::instrumentable(SyscallKind::Vara) {
            let name = syscall.to_str();
            let func = linker
                .get(&mut store, "env", name)
                .ok()
                .and_then(|e| e.into_func())
                .unwrap_or_else(|| panic!("`{name}` is not defined"));
            let ty = func.ty(&store);
            let gear = syscall.signature().func_type();
            let got: Vec<_> = ty.params().map(ours).collect();
            let want: Vec<_> = gear.params().iter().map(wasm).collect();
            assert_eq!(got, want, "`{name}`'s parameters");
            let got: Vec<_> = ty.results().map(ours).collect();
            let want: Vec<_> = gear.results().iter().map(wasm).collect();
            assert_eq!(got, want, "`{name}`'s results");
        }
    }
}
