//! Every 16-byte granule a message touched, in the order it first touched them: what the
//! layout model ([`crate::analyse::layout_model`]) predicts Gear's page charges from at a layout
//! the program was not run at.
//!
//! Gear charges per 16 KiB page, so a run's page counts say nothing about a layout where its
//! objects straddle other page boundaries. Sixteen bytes is the finest step a layout moves by
//! (`--global-base` and the sweep's offsets are multiples of 16), so granules keep exactly
//! what any such layout's page counts need: which granules a message touched, whether its
//! first touch of each was a write (a page's first granule decides its first access), whether
//! it wrote them at all (a write after a read) and whether their bytes changed (Gear stores a
//! page, and charges its load in later messages, only when its content changed). The wasmtime
//! meter records them ([`crate::run::backend::wasmtime::WasmtimeBackend::tracing_touches`]).

use std::ops::Range;

/// Bytes of a granule: the step every layout moves by.
pub const GRANULE: u32 = 16;

/// One granule a message touched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touch {
    /// Address over [`GRANULE`].
    pub granule: u32,
    /// [`Touch::FIRST_WRITE`], [`Touch::WRITTEN`], [`Touch::CHANGED`].
    pub flags: u8,
}

impl Touch {
    /// Its first touch in the message was a write.
    pub const FIRST_WRITE: u8 = 1;
    /// The message wrote it.
    pub const WRITTEN: u8 = 2;
    /// Its bytes differ at the end of a message that succeeded.
    pub const CHANGED: u8 = 4;

    pub fn is(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// The granules one message touched above the stack (which Gear neither stores nor charges).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MessageTouches {
    /// In the order the message first touched them.
    pub touches: Vec<Touch>,
    /// Byte ranges of Wasm pages given back at its end: Gear drops their stored data.
    pub freed: Vec<Range<u32>>,
    /// It failed: its writes were undone and nothing of it is stored.
    pub failed: bool,
}

/// A program's run, granule by granule, and where its memory's parts lie.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TouchTrace {
    /// `__gear_stack_end`: the stack lies below it.
    pub stack_end: u32,
    /// `__heap_base`: static data lies below it (from the stack's end).
    pub heap_base: u32,
    /// Wasm pages the program declares: the `alloc` syscall hands out pages above them.
    pub static_pages: u32,
    /// Per message, `init` first.
    pub messages: Vec<MessageTouches>,
}
