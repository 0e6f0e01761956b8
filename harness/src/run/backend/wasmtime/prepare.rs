//! Turning a Gear program's `.opt.wasm` into the module the wasmtime meter instantiates.
//!
//! Two changes, both invisible to the program:
//! - Data segments are taken out and written once, when the program is created: Gear keeps a
//!   program's memory between messages, so re-applying them on every instantiation would
//!   overwrite the program's statics.
//! - With page tracking on, every load and store first calls a host hook with its address,
//!   so the meter sees exactly which 16 KiB pages a message reads and writes (what Gear's
//!   lazy pages charge for, and fuel cannot see). The inserted instructions cost fuel; the
//!   host counts exactly that much and takes it off, so fuel is the same as the untouched
//!   module's (a test asserts it, message by message).

use anyhow::{bail, Context, Result};
use wasm_encoder::reencode::{utils, Error as ReencodeError, Reencode};
use wasm_encoder::{CodeSection, EntityType, Function, ImportSection, Instruction, ValType};
use wasmparser::{FunctionBody, MemArg, Operator, Parser, Payload, TypeRef};

/// Import module of the page hooks; never in a real program.
pub const HOOK_MODULE: &str = "galloc_lab_pages";
/// `(addr, offset, bytes)` before a load.
pub const READ_HOOK: &str = "read";
/// `(addr, offset, bytes)` before a store.
pub const WRITE_HOOK: &str = "write";
/// Fuel of what is inserted before a load: `local.tee`, two `i32.const`, `call`, `local.get`.
pub const READ_HOOK_FUEL: u64 = 5;
/// Fuel of what is inserted before a store: `local.set`, `local.tee`, two `i32.const`,
/// `call`, two `local.get`.
pub const WRITE_HOOK_FUEL: u64 = 7;

/// A program, ready for the meter.
pub struct Prepared {
    /// The module without data segments.
    pub bare: Vec<u8>,
    /// The same with every load and store hooked, when asked for.
    pub hooked: Option<Vec<u8>>,
    /// Active data segments: `(address, bytes)`, written when the program is created.
    pub data: Vec<(u32, Vec<u8>)>,
    /// Wasm pages the program declares for its imported memory: Gear's static pages.
    pub static_pages: u32,
    /// `__gear_stack_end`: below it is the stack, which Gear neither stores nor charges.
    pub stack_end: u32,
}

/// Prepares `code`; `track_pages` also gives the module with page hooks.
pub fn prepare(code: &[u8], track_pages: bool) -> Result<Prepared> {
    let mut scan = Scan::default();
    for payload in Parser::new(0).parse_all(code) {
        match payload.context("the Wasm does not parse")? {
            Payload::TypeSection(reader) => {
                for ty in reader.into_iter_err_on_gc_types() {
                    scan.param_counts.push(ty?.params().len() as u32);
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import?;
                    match import.ty {
                        TypeRef::Func(_) => {
                            scan.imported_funcs += 1;
                        }
                        TypeRef::Memory(m) => scan.static_pages = Some(m.initial as u32),
                        _ => {}
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    scan.body_types.push(ty?);
                }
            }
            Payload::DataSection(reader) => {
                for data in reader {
                    let data = data?;
                    let wasmparser::DataKind::Active { offset_expr, .. } = data.kind else {
                        bail!("passive data segments are not WASM 1.0; Gear rejects them");
                    };
                    let Operator::I32Const { value } = offset_expr.get_operators_reader().read()?
                    else {
                        bail!("a data segment's offset is not a constant");
                    };
                    scan.data.push((value as u32, data.data.to_vec()));
                }
            }
            _ => {}
        }
    }
    let static_pages = scan
        .static_pages
        .context("the Wasm imports no memory: Gear programs import `env.memory`")?;
    let stack_end = crate::build::wasm::exported_global(code, "__gear_stack_end")?.unwrap_or(0);

    let encode = |track: bool| -> Result<Vec<u8>> {
        let mut reencoder = Instrument {
            track,
            hook_type: scan.param_counts.len() as u32,
            imported_funcs: scan.imported_funcs,
            params: scan
                .body_types
                .iter()
                .map(|&t| scan.param_counts[t as usize])
                .collect(),
            next_body: 0,
        };
        let mut module = wasm_encoder::Module::new();
        reencoder
            .parse_core_module(&mut module, Parser::new(0), code)
            .map_err(|e| match e {
                ReencodeError::UserError(why) => anyhow::anyhow!("{why}"),
                other => anyhow::anyhow!("cannot re-encode the Wasm: {other}"),
            })?;
        Ok(module.finish())
    };
    Ok(Prepared {
        bare: encode(false)?,
        hooked: track_pages.then(|| encode(true)).transpose()?,
        data: scan.data,
        static_pages,
        stack_end,
    })
}

#[derive(Default)]
struct Scan {
    param_counts: Vec<u32>,
    imported_funcs: u32,
    body_types: Vec<u32>,
    static_pages: Option<u32>,
    data: Vec<(u32, Vec<u8>)>,
}

struct Instrument {
    track: bool,
    /// Index of the hooks' `(i32, i32, i32) -> ()` type, appended to the type section.
    hook_type: u32,
    imported_funcs: u32,
    /// Parameter count of each defined function, in order.
    params: Vec<u32>,
    next_body: usize,
}

/// What a memory instruction touches: `(memarg, bytes, stored value type)`.
fn access(op: &Operator) -> Option<(MemArg, u32, Option<ValType>)> {
    use Operator::*;
    Some(match *op {
        I32Load { memarg } | F32Load { memarg } => (memarg, 4, None),
        I64Load { memarg } | F64Load { memarg } => (memarg, 8, None),
        I32Load8S { memarg } | I32Load8U { memarg } => (memarg, 1, None),
        I64Load8S { memarg } | I64Load8U { memarg } => (memarg, 1, None),
        I32Load16S { memarg } | I32Load16U { memarg } => (memarg, 2, None),
        I64Load16S { memarg } | I64Load16U { memarg } => (memarg, 2, None),
        I64Load32S { memarg } | I64Load32U { memarg } => (memarg, 4, None),
        I32Store { memarg } => (memarg, 4, Some(ValType::I32)),
        I32Store8 { memarg } => (memarg, 1, Some(ValType::I32)),
        I32Store16 { memarg } => (memarg, 2, Some(ValType::I32)),
        I64Store { memarg } => (memarg, 8, Some(ValType::I64)),
        I64Store8 { memarg } => (memarg, 1, Some(ValType::I64)),
        I64Store16 { memarg } => (memarg, 2, Some(ValType::I64)),
        I64Store32 { memarg } => (memarg, 4, Some(ValType::I64)),
        F32Store { memarg } => (memarg, 4, Some(ValType::F32)),
        F64Store { memarg } => (memarg, 8, Some(ValType::F64)),
        _ => return None,
    })
}

/// Memory instructions outside WASM 1.0 that the hooks would have to understand.
fn unsupported(op: &Operator) -> bool {
    matches!(
        op,
        Operator::MemoryCopy { .. } | Operator::MemoryFill { .. } | Operator::MemoryInit { .. }
    )
}

impl Reencode for Instrument {
    type Error = String;

    fn function_index(&mut self, func: u32) -> Result<u32, ReencodeError<String>> {
        // The two hooks are appended to the imported functions; defined ones move up by two.
        Ok(if self.track && func >= self.imported_funcs {
            func + 2
        } else {
            func
        })
    }

    fn parse_type_section(
        &mut self,
        types: &mut wasm_encoder::TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> Result<(), ReencodeError<String>> {
        utils::parse_type_section(self, types, section)?;
        if self.track {
            types.ty().function([ValType::I32; 3], []);
        }
        Ok(())
    }

    fn parse_import_section(
        &mut self,
        imports: &mut ImportSection,
        section: wasmparser::ImportSectionReader<'_>,
    ) -> Result<(), ReencodeError<String>> {
        utils::parse_import_section(self, imports, section)?;
        if self.track {
            for hook in [READ_HOOK, WRITE_HOOK] {
                imports.import(HOOK_MODULE, hook, EntityType::Function(self.hook_type));
            }
        }
        Ok(())
    }

    fn parse_data_section(
        &mut self,
        _data: &mut wasm_encoder::DataSection,
        _section: wasmparser::DataSectionReader<'_>,
    ) -> Result<(), ReencodeError<String>> {
        Ok(()) // written by the host once, at program creation
    }

    fn parse_custom_section(
        &mut self,
        _module: &mut wasm_encoder::Module,
        _section: wasmparser::CustomSectionReader<'_>,
    ) -> Result<(), ReencodeError<String>> {
        Ok(()) // names and producers would refer to the old function indices
    }

    fn parse_function_body(
        &mut self,
        code: &mut CodeSection,
        func: FunctionBody<'_>,
    ) -> Result<(), ReencodeError<String>> {
        let params = self.params[self.next_body];
        self.next_body += 1;
        if !self.track {
            return utils::parse_function_body(self, code, func);
        }
        let mut locals = Vec::new();
        let mut count = params;
        for pair in func.get_locals_reader()? {
            let (n, ty) = pair?;
            locals.push((n, self.val_type(ty)?));
            count += n;
        }
        // Scratch locals: the address, and one per type a store can write.
        let addr = count;
        let scratch = [ValType::I32, ValType::I64, ValType::F32, ValType::F64];
        let value = |ty: ValType| addr + 1 + scratch.iter().position(|s| *s == ty).unwrap() as u32;
        locals.push((1, ValType::I32));
        locals.extend(scratch.iter().map(|ty| (1, *ty)));
        let (read_hook, write_hook) = (self.imported_funcs, self.imported_funcs + 1);

        let mut f = Function::new(locals);
        let mut reader = func.get_operators_reader()?;
        while !reader.eof() {
            let op = reader.read()?;
            if unsupported(&op) {
                return Err(ReencodeError::UserError(format!(
                    "the page counter does not handle {op:?} (not WASM 1.0, which Gear requires)"
                )));
            }
            if let Some((memarg, bytes, stored)) = access(&op) {
                if let Some(ty) = stored {
                    f.instruction(&Instruction::LocalSet(value(ty)));
                }
                f.instruction(&Instruction::LocalTee(addr));
                f.instruction(&Instruction::I32Const(memarg.offset as u32 as i32));
                f.instruction(&Instruction::I32Const(bytes as i32));
                f.instruction(&Instruction::Call(if stored.is_some() {
                    write_hook
                } else {
                    read_hook
                }));
                f.instruction(&Instruction::LocalGet(addr));
                if let Some(ty) = stored {
                    f.instruction(&Instruction::LocalGet(value(ty)));
                }
            }
            f.instruction(&self.instruction(op)?);
        }
        code.function(&f);
        Ok(())
    }
}
