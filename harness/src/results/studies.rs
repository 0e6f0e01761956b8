//! The studies' rows, each in its own directory under `results/` named for the recipe that
//! writes it: where the heap starts (`just heap-skip`), the layout model (`just
//! layout-model`) and the scale cases (`just scale`).

use serde::{Deserialize, Serialize};

/// The plain build of one case at the linker's layout with its heap base alone moved up by
/// `skip` bytes (`lab heap-skip`: what share of the layout spread is the allocator's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkipRow {
    pub backend: String,
    pub case: String,
    pub variant: String,
    pub unit: String,
    /// Bytes the heap base was moved up, every static left where the linker puts it.
    pub skip: u32,
    /// The linker's `__heap_base` with the skip.
    pub heap_base: u32,
    /// Sum of every message's cost, `init` included.
    pub total: u64,
}

/// One page one message touched, on the wasmtime meter's page map of a probe build placed
/// like a plain build at a layout of the sweep (`lab heap-skip`: `results/heap-skip/pages.csv.zst`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMapRow {
    pub case: String,
    pub variant: String,
    /// `cheap` or `dear`: the lab's design's cheapest or dearest layout of the sweep on gtest.
    pub layout: String,
    /// That layout's offset in the sweep (bytes the statics were moved up).
    pub offset: u32,
    /// The plain build's heap base there; the probe build's is in the same place in its Gear
    /// page.
    pub heap_base: u32,
    /// The probe build's heap base.
    pub probe_heap_base: u32,
    /// The message (0 is `init`).
    pub message: u32,
    /// The 16 KiB Gear page.
    pub page: u32,
    /// [`crate::run::backend::wasmtime::PageKind`]'s name.
    pub kind: String,
    pub written: bool,
}

/// One program at one layout of the sweep, measured and as the layout model predicts it from
/// its run at the linker's layout (`lab layout-model`: `results/layout-model/model.csv`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRow {
    pub case: String,
    pub variant: String,
    /// Bytes every static (and so the heap base) was moved up from where the linker puts it.
    pub offset: u32,
    /// gtest's total at this offset, from the sweep.
    pub measured: u64,
    /// gtest's total at offset 0 with the model's page charges at 0 replaced by those here.
    pub predicted: u64,
    /// The model's page charges (gas at Gear's weights) here, and at offset 0.
    pub model_pages_gas: u64,
    pub model_pages_gas_at_zero: u64,
    /// The meter's page charges here, where the sweep ran it.
    pub meter_pages_gas: Option<u64>,
    /// The meter's fuel here, where the sweep ran it: a program whose fuel moves with the layout
    /// does different work at different layouts (a hash seeded by an address), which no model
    /// of addresses alone can follow.
    pub meter_fuel: Option<u64>,
}

/// One program at one layout of the sweep as the layout model predicts it with the heap's blocks
/// shifted besides (`results/layout-model/shifted.csv`): what a robust choice of layout holds
/// its prediction to ([`crate::analyse::layout_model::HEAP_SHIFTS`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShiftRow {
    pub case: String,
    pub variant: String,
    pub offset: u32,
    /// Bytes the heap's blocks were shifted besides the offset.
    pub shift: i32,
    /// gtest's total at offset 0 with the model's page charges at 0 (unshifted) replaced by
    /// those here: comparable with [`ModelRow::predicted`].
    pub predicted: u64,
}

/// `results/layout-model/shifted.csv`: the model's predictions with the heap's blocks shifted.
pub const SHIFTED: &str = "shifted.csv";

/// `results/layout-model/`: where the layout model's study writes (`just layout-model`).
pub const LAYOUT_MODEL_DIR: &str = "layout-model";

/// `results/heap-skip/`: where the heap-start study writes (`just heap-skip`).
pub const HEAP_DIR: &str = "heap-skip";

/// One message of a scale case (`lab scale`: `results/scale/messages.csv`) on one plain build
/// at one layout, on gtest: a batch that grows the state, or one of a checkpoint's probes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScaleRow {
    pub case: String,
    pub variant: String,
    /// Bytes every static (and so the heap base) was moved up from where the linker puts it.
    pub offset: u32,
    /// 1 is the first message after `init`.
    pub message: u32,
    /// The checkpoint a probe belongs to (0 first); `None` for a batch.
    pub checkpoint: Option<u32>,
    /// Bytes the program held live when the message began: what it asked of the allocator and
    /// had not freed (the same for every variant: the requests are the program's).
    pub live_bytes: u64,
    /// Whether the message failed where the scenario expected it to succeed (a refusal).
    pub failed: bool,
    /// Gas on gtest.
    pub gas: u64,
}

/// `results/scale/`: where the scale cases write (`just scale`).
pub const SCALE_DIR: &str = "scale";
