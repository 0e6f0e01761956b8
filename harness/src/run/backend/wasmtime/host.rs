//! What the meter itself gives a program beside Gear's syscalls (`syscalls.rs`): the memory
//! syscalls (`alloc`, `free`, `free_range`), `gr_gas_available` (fuel) and the page hooks, and
//! the bounds-checked reads and writes every host function makes, each recorded as Gear's
//! page charges would see it.

use super::{prepare, Host, ALLOC_FAILED};
use anyhow::{anyhow, Result};
use gear_core_backend::error::{ActorTerminationReason, TrapExplanation, UnrecoverableMemoryError};
use wasmtime::{Caller, Linker};

/// Bounds-checked view of `len` bytes at `ptr`, recorded as a host access.
fn host_access<'a>(
    caller: &'a mut Caller<'_, Host>,
    ptr: u32,
    len: u32,
    write: bool,
) -> wasmtime::Result<&'a mut [u8]> {
    let memory = caller.data().memory.expect("set at deploy");
    let (mem, host) = memory.data_and_store_mut(caller);
    let range = ptr as usize..ptr as usize + len as usize;
    if range.end > mem.len() {
        // Gear ends such an execution with a backend error (its memory access check).
        host.termination = Some(ActorTerminationReason::Trap(
            TrapExplanation::UnrecoverableExt(UnrecoverableMemoryError::AccessOutOfBounds.into()),
        ));
        wasmtime::bail!(
            "syscall access {range:?} is outside memory ({} bytes)",
            mem.len()
        );
    }
    host.pages.touch(mem, ptr.into(), len.into(), write);
    Ok(&mut mem[range])
}

pub(super) fn write(caller: &mut Caller<'_, Host>, ptr: u32, bytes: &[u8]) -> wasmtime::Result<()> {
    host_access(caller, ptr, bytes.len() as u32, true)?.copy_from_slice(bytes);
    Ok(())
}

pub(super) fn read(caller: &mut Caller<'_, Host>, ptr: u32, len: u32) -> wasmtime::Result<Vec<u8>> {
    Ok(host_access(caller, ptr, len, false)?.to_vec())
}

/// A page hook: records the access, and the fuel its inserted instructions cost (subtracted
/// from the message's fuel and added back to what `gr_gas_available` answers).
fn hook(caller: &mut Caller<'_, Host>, addr: u32, offset: u32, bytes: u32, write: bool) {
    let host = caller.data_mut();
    host.hook_fuel += if write {
        prepare::WRITE_HOOK_FUEL
    } else {
        prepare::READ_HOOK_FUEL
    };
    let (addr, len) = (addr as u64 + offset as u64, bytes as u64);
    if !host.pages.needs(addr, len, write) {
        return;
    }
    let memory = host.memory.expect("set at deploy");
    let (mem, host) = memory.data_and_store_mut(&mut *caller);
    host.pages.touch(mem, addr, len, write);
}

/// Defines the meter's own host functions in `l`: the memory syscalls, `gr_gas_available`
/// and the page hooks.
pub(super) fn define(l: &mut Linker<Host>) -> Result<()> {
    let e = |e: wasmtime::Error| anyhow!("defining host functions: {e}");
    l.func_wrap(
        "env",
        "gr_gas_available",
        |mut c: Caller<'_, Host>, out: u32| -> wasmtime::Result<()> {
            // A probe's bracket starts here: the call before it is complete.
            let memory = c.data().memory.expect("set at deploy");
            let (mem, host) = memory.data_and_store_mut(&mut c);
            host.collect(mem);
            host.pages.counter_read();
            let fuel = c.get_fuel()? + c.data().hook_fuel;
            write(&mut c, out, &fuel.to_le_bytes())
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "alloc",
        |mut c: Caller<'_, Host>, pages: u32| -> wasmtime::Result<u32> {
            let Some(start) = c.data_mut().heap.alloc(pages) else {
                return Ok(ALLOC_FAILED);
            };
            let memory = c.data().memory.expect("set at deploy");
            let end = (start + pages) as u64;
            let size = memory.size(&c);
            if end > size {
                memory.grow(&mut c, end - size)?;
            }
            Ok(start)
        },
    )
    .map_err(e)?;
    // Gear's `free` fails (1) for a page the program does not hold; `free_range` only for a
    // range outside the heap.
    l.func_wrap("env", "free", |mut c: Caller<'_, Host>, page: u32| -> i32 {
        i32::from(!c.data_mut().heap.free(page))
    })
    .map_err(e)?;
    l.func_wrap(
        "env",
        "free_range",
        |mut c: Caller<'_, Host>, start: u32, end: u32| -> i32 {
            i32::from(!c.data_mut().heap.free_range(start, end))
        },
    )
    .map_err(e)?;
    for (name, write) in [(prepare::READ_HOOK, false), (prepare::WRITE_HOOK, true)] {
        l.func_wrap(
            prepare::HOOK_MODULE,
            name,
            move |mut c: Caller<'_, Host>, addr: u32, offset: u32, bytes: u32| {
                hook(&mut c, addr, offset, bytes, write)
            },
        )
        .map_err(e)?;
    }
    Ok(())
}
