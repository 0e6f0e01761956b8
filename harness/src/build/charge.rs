//! What Gear charges every message for the program's code, from the deployed module: the gas
//! anatomy's code part ([`crate::analyse::anatomy`]).
//!
//! Before a message runs, Gear reads the instrumented code from storage (a read plus a price per
//! byte of it) and instantiates the module (a price per byte of each section it instantiates:
//! functions, data, globals, table, elements, types). Both depend only on the module, so every
//! message of a program pays the same, and two builds of one program that differ in allocator
//! differ by a constant per message. The module is instrumented here as gtest instruments it at
//! upload (gear-core's [`Code::try_new`] under the default schedule, the one gtest uses) and
//! priced with that schedule's own weights, read from the crate, not copied: on messages that
//! differ only in code, gtest's gas differs by exactly the difference of these figures
//! (`harness/tests/suite/anatomy.rs`).

use anyhow::{anyhow, Result};
use gear_core::code::{Code, SyscallKind};
use gear_core::gas_metering::Schedule;

/// What a message pays for the code of `wasm` (the build as deployed), in gas: the storage read's
/// price per byte of the instrumented module plus the instantiation's per byte of each section.
/// The storage read's fixed part is not here: it does not depend on the code.
pub fn code_gas(wasm: &[u8]) -> Result<u64> {
    let schedule = Schedule::default();
    let code = Code::try_new(
        wasm.to_vec(),
        schedule.instruction_weights.version,
        |module| schedule.rules(module),
        schedule.limits.stack_height,
        schedule.limits.data_segments_amount.into(),
        schedule.limits.type_section_len.into(),
        schedule.limits.parameters.into(),
        SyscallKind::Vara,
    )
    .map_err(|e| anyhow!("Gear refuses the module ({e:?}), so it has no code charge"))?;
    let (_, instrumented, metadata) = code.into_parts();
    let bytes = metadata
        .instrumented_code_len()
        .ok_or_else(|| anyhow!("gear-core instrumented the module but gave no length"))?;
    let costs = schedule.process_costs();
    let per = &costs.instantiation;
    let sections = instrumented.instantiated_section_sizes();
    Ok([
        costs.db.read_per_byte.cost_for(bytes.into()),
        per.code_section_per_byte
            .cost_for(sections.code_section().into()),
        per.data_section_per_byte
            .cost_for(sections.data_section().into()),
        per.global_section_per_byte
            .cost_for(sections.global_section().into()),
        per.table_section_per_byte
            .cost_for(sections.table_section().into()),
        per.element_section_per_byte
            .cost_for(sections.element_section().into()),
        per.type_section_per_byte
            .cost_for(sections.type_section().into()),
    ]
    .iter()
    .sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module of one exported function with one `i32.const`/`drop` body. Its figure is the
    /// schedule's prices times its sizes, so it moves by the price of the bytes a longer body
    /// adds: a longer function costs more, by at least the code section's price per byte.
    #[test]
    fn more_code_costs_more() {
        let module = |body: &str| {
            wat::parse_str(format!(
                r#"(module (import "env" "memory" (memory 1))
                    (export "init" (func $init))
                    (func $init {body}))"#
            ))
            .unwrap()
        };
        let short = code_gas(&module("i32.const 1 drop")).unwrap();
        let long = code_gas(&module(&"i32.const 1 drop ".repeat(40))).unwrap();
        let per_byte = Schedule::default()
            .process_costs()
            .instantiation
            .code_section_per_byte
            .cost_for(1u32.into());
        assert!(short > 0);
        // 39 more pairs: 3 bytes each (`i32.const 1` is 2, `drop` 1) in the code section.
        assert!(long >= short + 39 * 3 * per_byte, "{short} then {long}");
        let e = code_gas(b"not wasm").unwrap_err();
        assert!(e.to_string().starts_with("Gear refuses the module"), "{e}");
    }
}
