//! The Gear syscalls the meter gives a program (`gr_*`, `alloc`, `free_range`, the page hooks):
//! each bounds-checks what it reads and writes and records the access as Gear's page charges
//! would see it.

use super::{prepare, Host, Sent, ALLOC_FAILED, ERROR};
use anyhow::{anyhow, Result};
use wasmtime::{Caller, Engine, Linker};

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
        wasmtime::bail!(
            "syscall access {range:?} is outside memory ({} bytes)",
            mem.len()
        );
    }
    host.pages.touch(mem, ptr.into(), len.into(), write);
    Ok(&mut mem[range])
}

fn write(caller: &mut Caller<'_, Host>, ptr: u32, bytes: &[u8]) -> wasmtime::Result<()> {
    host_access(caller, ptr, bytes.len() as u32, true)?.copy_from_slice(bytes);
    Ok(())
}

fn read(caller: &mut Caller<'_, Host>, ptr: u32, len: u32) -> wasmtime::Result<Vec<u8>> {
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

pub(super) fn host_functions(engine: &Engine) -> Result<Linker<Host>> {
    let mut l = Linker::new(engine);
    let e = |e: wasmtime::Error| anyhow!("defining host functions: {e}");
    l.func_wrap(
        "env",
        "gr_size",
        |mut c: Caller<'_, Host>, out: u32| -> wasmtime::Result<()> {
            let len = c.data().payload.len() as u32;
            write(&mut c, out, &len.to_le_bytes())
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_read",
        |mut c: Caller<'_, Host>, at: u32, len: u32, buf: u32, err: u32| -> wasmtime::Result<()> {
            let range = at as usize..at as usize + len as usize;
            let code = match c.data().payload.get(range) {
                Some(bytes) => {
                    let bytes = bytes.to_vec();
                    write(&mut c, buf, &bytes)?;
                    0
                }
                None => ERROR,
            };
            write(&mut c, err, &code.to_le_bytes())
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_reply",
        |mut c: Caller<'_, Host>,
         ptr: u32,
         len: u32,
         value: u32,
         err_mid: u32|
         -> wasmtime::Result<()> {
            let payload = read(&mut c, ptr, len)?;
            if value != u32::MAX {
                let value = u128::from_le_bytes(read(&mut c, value, 16)?.try_into().unwrap());
                if value != 0 {
                    wasmtime::bail!("the meter has no balances: a reply with value {value}");
                }
            }
            let code = if c.data().reply.is_some() {
                ERROR // Gear: a second reply is an error
            } else {
                c.data_mut().reply = Some(payload);
                0
            };
            // Error code, then the reply's message id (any id unique to the message will do).
            let mut out = [0u8; 36];
            out[..4].copy_from_slice(&code.to_le_bytes());
            out[4..12].copy_from_slice(&c.data().messages.to_le_bytes());
            write(&mut c, err_mid, &out)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_send",
        |mut c: Caller<'_, Host>,
         pid_value: u32,
         ptr: u32,
         len: u32,
         delay: u32,
         err_mid: u32|
         -> wasmtime::Result<()> {
            // Destination (32 bytes), then the value (u128): Gear's `HashWithValue`.
            let to = read(&mut c, pid_value, 48)?;
            let value = u128::from_le_bytes(to[32..].try_into().unwrap());
            if value != 0 {
                wasmtime::bail!("the meter has no balances: a message sent with value {value}");
            }
            let payload = read(&mut c, ptr, len)?;
            let host = c.data_mut();
            let message = Sent {
                destination: to[..32].try_into().unwrap(),
                payload,
            };
            // A delayed message waits for its block (the backend delivers it then); others
            // go now. Either way it is sent only if this execution succeeds.
            if delay == 0 {
                host.sent.push(message);
            } else {
                host.delayed.push((delay, message));
            }
            // Error code 0, then the message's id (unique within the run: message, index).
            let index = host.sent.len() + host.delayed.len();
            let mut out = [0u8; 36];
            out[4..12].copy_from_slice(&host.messages.to_le_bytes());
            out[12..16].copy_from_slice(&(index as u32).to_le_bytes());
            write(&mut c, err_mid, &out)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_debug",
        |mut c: Caller<'_, Host>, ptr: u32, len: u32| -> wasmtime::Result<()> {
            // Gear reads the line (so its pages count) and logs it; nothing a program sees.
            read(&mut c, ptr, len).map(drop)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_block_height",
        |mut c: Caller<'_, Host>, out: u32| -> wasmtime::Result<()> {
            let height = c.data().block_height;
            write(&mut c, out, &height.to_le_bytes())
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_source",
        |mut c: Caller<'_, Host>, out: u32| -> wasmtime::Result<()> {
            let source = c.data().source;
            write(&mut c, out, &source)
        },
    )
    .map_err(e)?;
    l.func_wrap(
        "env",
        "gr_panic",
        |mut c: Caller<'_, Host>, ptr: u32, len: u32| -> wasmtime::Result<()> {
            let payload = read(&mut c, ptr, len)?;
            c.data_mut().panic = Some(payload);
            wasmtime::bail!("the program panicked")
        },
    )
    .map_err(e)?;
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
    l.func_wrap(
        "env",
        "free_range",
        |mut c: Caller<'_, Host>, start: u32, end: u32| -> u32 {
            if c.data_mut().heap.free_range(start, end) {
                0
            } else {
                ERROR
            }
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
    Ok(l)
}
