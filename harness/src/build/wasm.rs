//! What a Wasm artifact imports and exports, and whether it keeps Gear's rules.
//!
//! Gear accepts WASM 1.0 plus sign-extension: no floats, no bulk memory, SIMD, multi-value or
//! reference types, no start section, memory imported as `env.memory`, only known syscalls
//! imported, and never `memory.grow` (pages come from the `alloc` syscall).

use anyhow::{bail, Context, Result};
use wasmparser::{Operator, Parser, Payload, TypeRef, Validator, WasmFeatures};

/// The parts of a module the lab checks and reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WasmInfo {
    /// `module.name` of every function import.
    pub function_imports: Vec<String>,
    /// `module.name` of the memory import, if memory is imported.
    pub memory_import: Option<String>,
    /// Whether the module defines its own memory.
    pub defines_memory: bool,
    /// Export names.
    pub exports: Vec<String>,
    /// The names of the exports that are functions (Gear's entry points, and anything else a
    /// program exports that Gear would refuse).
    pub function_exports: Vec<String>,
    /// Whether any function executes `memory.grow`.
    pub grows_memory: bool,
    /// Whether there is a start section.
    pub has_start: bool,
    /// Bytes of the code section (function bodies).
    pub code_bytes: u64,
    /// Bytes of the data section (initialised statics).
    pub data_bytes: u64,
}

/// The Wasm features Gear's validator enables.
pub fn gear_features() -> WasmFeatures {
    WasmFeatures::MUTABLE_GLOBAL | WasmFeatures::SIGN_EXTENSION
}

/// Parses `bytes`, validating them against [`gear_features`].
pub fn inspect(bytes: &[u8]) -> Result<WasmInfo> {
    Validator::new_with_features(gear_features())
        .validate_all(bytes)
        .context("Gear would reject this module (it needs features beyond WASM 1.0 + sign-ext)")?;
    let mut info = WasmInfo::default();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import?;
                    let name = format!("{}.{}", import.module, import.name);
                    match import.ty {
                        TypeRef::Func(_) => info.function_imports.push(name),
                        TypeRef::Memory(_) => info.memory_import = Some(name),
                        _ => {}
                    }
                }
            }
            Payload::MemorySection(reader) => info.defines_memory |= reader.count() > 0,
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export?;
                    if export.kind == wasmparser::ExternalKind::Func {
                        info.function_exports.push(export.name.to_owned());
                    }
                    info.exports.push(export.name.to_owned());
                }
            }
            Payload::StartSection { .. } => info.has_start = true,
            Payload::CodeSectionStart { size, .. } => info.code_bytes = size.into(),
            Payload::DataSection(reader) => info.data_bytes = reader.range().len() as u64,
            Payload::CodeSectionEntry(body) => {
                let mut ops = body.get_operators_reader()?;
                while !ops.eof() {
                    if let Operator::MemoryGrow { .. } = ops.read()? {
                        info.grows_memory = true;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(info)
}

/// The value of an exported immutable `i32` global, such as the linker's `__heap_base`.
pub fn exported_global(bytes: &[u8], name: &str) -> Result<Option<u32>> {
    let mut globals = Vec::new();
    let mut imported_globals = 0u32;
    let mut index = None;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    if let TypeRef::Global(_) = import?.ty {
                        imported_globals += 1;
                    }
                }
            }
            Payload::GlobalSection(reader) => {
                for global in reader {
                    let mut ops = global?.init_expr.get_operators_reader();
                    globals.push(match ops.read()? {
                        Operator::I32Const { value } => Some(value as u32),
                        _ => None,
                    });
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export?;
                    if export.name == name && export.kind == wasmparser::ExternalKind::Global {
                        index = Some(export.index);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(index
        .and_then(|i| i.checked_sub(imported_globals))
        .and_then(|i| globals.get(i as usize).copied().flatten()))
}

/// The `rustc` version (`1.95.0 (hash date)`) the module's `producers` custom section names as
/// having processed it (`None` without that section or entry): what rustc writes into every
/// module it links, before post-processing strips custom sections.
pub fn producers_rustc(bytes: &[u8]) -> Result<Option<String>> {
    for payload in Parser::new(0).parse_all(bytes) {
        let Payload::CustomSection(section) = payload? else {
            continue;
        };
        let wasmparser::KnownCustom::Producers(reader) = section.as_known() else {
            continue;
        };
        for field in reader {
            let field = field?;
            if field.name != "processed-by" {
                continue;
            }
            for value in field.values {
                let value = value?;
                if value.name == "rustc" {
                    return Ok(Some(value.version.to_owned()));
                }
            }
        }
    }
    Ok(None)
}

/// Where the linker placed the first byte of static data: the smallest offset of an active
/// data segment (`None` without one).
pub fn data_start(bytes: &[u8]) -> Result<Option<u32>> {
    let mut start: Option<u32> = None;
    for payload in Parser::new(0).parse_all(bytes) {
        if let Payload::DataSection(reader) = payload? {
            for data in reader {
                if let wasmparser::DataKind::Active { offset_expr, .. } = data?.kind {
                    if let Operator::I32Const { value } =
                        offset_expr.get_operators_reader().read()?
                    {
                        let at = value as u32;
                        start = Some(start.map_or(at, |s| s.min(at)));
                    }
                }
            }
        }
    }
    Ok(start)
}

/// Fails, naming each breach, unless the module keeps Gear's rules and imports only functions
/// listed in `allowed_imports` (as `env.name`).
pub fn check_gear_rules(info: &WasmInfo, allowed_imports: &[&str]) -> Result<()> {
    let mut breaches = Vec::new();
    if info.grows_memory {
        breaches
            .push("executes `memory.grow` (Gear forbids it; get pages through `alloc`)".to_owned());
    }
    if info.has_start {
        breaches.push("has a start section".to_owned());
    }
    if info.defines_memory || info.memory_import.as_deref() != Some("env.memory") {
        breaches.push(format!(
            "memory must be imported as env.memory (found {:?}; link with --import-memory)",
            info.memory_import
        ));
    }
    for import in &info.function_imports {
        if !allowed_imports.contains(&import.as_str()) {
            breaches.push(format!("imports `{import}`, which is not allowed here"));
        }
    }
    if breaches.is_empty() {
        Ok(())
    } else {
        bail!("{}", breaches.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(wat: &str) -> Vec<u8> {
        wat::parse_str(wat).expect("valid wat")
    }

    #[test]
    fn finds_memory_grow_and_foreign_imports() {
        let bytes = module(
            r#"(module
                 (import "env" "memory" (memory 1))
                 (import "env" "alloc" (func (param i32) (result i32)))
                 (import "env" "mystery" (func))
                 (func (export "handle") (drop (memory.grow (i32.const 1)))))"#,
        );
        let info = inspect(&bytes).unwrap();
        assert_eq!(info.function_imports, ["env.alloc", "env.mystery"]);
        assert!(info.grows_memory);
        let err = check_gear_rules(&info, &["env.alloc"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("memory.grow") && err.contains("`env.mystery`"),
            "{err}"
        );
    }

    #[test]
    fn rejects_floats_and_accepts_a_plain_module() {
        let floats = module(r#"(module (func (result f32) (f32.const 1)))"#);
        assert!(inspect(&floats).is_err());
        let plain = module(
            r#"(module (import "env" "memory" (memory 1))
                 (func (export "handle") (drop (i32.extend8_s (i32.const 1)))))"#,
        );
        let info = inspect(&plain).unwrap();
        check_gear_rules(&info, &[]).unwrap();
        assert_eq!(info.exports, ["handle"]);
    }
}
