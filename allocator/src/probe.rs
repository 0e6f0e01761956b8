//! A gas probe around any `GlobalAlloc` (feature `probe`). Over 600 lines because its tests are:
//! the code is its first 588 lines (the probe, its calibration, its record).
//! Each top-level `alloc`, `alloc_zeroed`, `realloc` and `dealloc` is bracketed by two reads
//! of the gas counter; the difference, less the calibrated cost of the read itself, is
//! recorded per operation as count, total, min, max and a fixed histogram. Nothing here
//! allocates: the records live in the probe.
//!
//! Calibration: gas is deterministic, so the counter's own cost is measured, not assumed. Two
//! back-to-back reads differ by exactly what one read adds inside a bracket (its syscall
//! weight plus the instructions between); that difference is taken once, on the first
//! operation, before any bracket, and subtracted from every record. The raw figures can be
//! recovered as `total + count * calibration`.
//!
//! The last call is also kept as a [`Record`] (with a sequence number) at a fixed address that
//! the `state` export reports, so a host that can read the program's memory between
//! instructions (the lab's wasmtime meter) collects every call of the very same build: op,
//! block, layout, result and cost.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

/// Reads the remaining gas (or fuel) of the running message.
pub trait GasMeter {
    /// Gas left now.
    fn gas_available(&self) -> u64;
}

/// Gear's `gr_gas_available` syscall.
#[derive(Clone, Copy, Default)]
pub struct GearGas;

#[cfg(target_arch = "wasm32")]
impl GasMeter for GearGas {
    #[inline(always)]
    fn gas_available(&self) -> u64 {
        let mut gas = 0u64;
        // SAFETY: the syscall writes one u64 through the pointer, which is valid.
        unsafe { gsys::gr_gas_available(&mut gas) };
        gas
    }
}

/// The allocator operations the probe tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// `GlobalAlloc::alloc`.
    Malloc = 0,
    /// `GlobalAlloc::alloc_zeroed`.
    Calloc = 1,
    /// `GlobalAlloc::realloc`.
    Realloc = 2,
    /// `GlobalAlloc::dealloc`.
    Free = 3,
}

impl Op {
    /// Every op, in record order.
    pub const ALL: [Op; 4] = [Op::Malloc, Op::Calloc, Op::Realloc, Op::Free];

    /// The C name the reports use.
    pub const fn name(self) -> &'static str {
        match self {
            Op::Malloc => "malloc",
            Op::Calloc => "calloc",
            Op::Realloc => "realloc",
            Op::Free => "free",
        }
    }
}

/// Histogram buckets: two per power of two, so bucket `b` holds costs in
/// `[bucket_floor(b), bucket_floor(b + 1))`; 64 buckets cover every cost below 2^32.
pub const BUCKETS: usize = 64;

/// The bucket a cost falls in: `2 * log2(cost)` plus one if the bit below the top is set.
pub const fn bucket(cost: u64) -> usize {
    if cost < 2 {
        return cost as usize;
    }
    let top = 63 - cost.leading_zeros() as usize;
    let half = ((cost >> (top - 1)) & 1) as usize;
    let b = 2 * top + half;
    if b < BUCKETS {
        b
    } else {
        BUCKETS - 1
    }
}

/// The smallest cost in bucket `b`.
pub const fn bucket_floor(b: usize) -> u64 {
    if b < 2 {
        return b as u64;
    }
    let top = b / 2;
    (1u64 << top) | ((b as u64 & 1) << (top - 1))
}

/// Gas records of one operation, calibrated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpStats {
    /// Calls recorded.
    pub count: u64,
    /// Sum of their costs.
    pub total: u64,
    /// Cheapest call (`u64::MAX` while `count` is 0).
    pub min: u64,
    /// Dearest call.
    pub max: u64,
    /// Calls per cost bucket (see [`bucket`]).
    pub histogram: [u32; BUCKETS],
}

impl OpStats {
    /// No calls recorded.
    pub const EMPTY: OpStats = OpStats {
        count: 0,
        total: 0,
        min: u64::MAX,
        max: 0,
        histogram: [0; BUCKETS],
    };

    #[inline(always)]
    fn record(&mut self, cost: u64) {
        self.count += 1;
        self.total += cost;
        self.min = self.min.min(cost);
        self.max = self.max.max(cost);
        let slot = &mut self.histogram[bucket(cost)];
        *slot = slot.saturating_add(1);
    }
}

/// Everything the probe has recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeStats {
    /// Per op, indexed by `Op as usize`.
    pub ops: [OpStats; 4],
    /// Gas of one counter read as calibrated (0 before the first operation).
    pub calibration: u64,
}

impl ProbeStats {
    /// Nothing recorded, not calibrated.
    pub const EMPTY: ProbeStats = ProbeStats {
        ops: [OpStats::EMPTY; 4],
        calibration: 0,
    };

    /// The records of `op`.
    pub fn op(&self, op: Op) -> &OpStats {
        &self.ops[op as usize]
    }

    /// Bytes of [`ProbeStats::to_bytes`].
    pub const ENCODED_LEN: usize = 8 + 4 * (4 * 8 + BUCKETS * 4);

    /// A fixed little-endian encoding for reading the records out of a program without
    /// allocating: calibration, then per op count, total, min, max and the histogram.
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_LEN] {
        let mut out = [0u8; Self::ENCODED_LEN];
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        put(&self.calibration.to_le_bytes());
        for op in &self.ops {
            for word in [op.count, op.total, op.min, op.max] {
                put(&word.to_le_bytes());
            }
            for slot in &op.histogram {
                put(&slot.to_le_bytes());
            }
        }
        out
    }

    /// Decodes [`ProbeStats::to_bytes`]; `None` if `bytes` has the wrong length.
    pub fn from_bytes(bytes: &[u8]) -> Option<ProbeStats> {
        if bytes.len() != Self::ENCODED_LEN {
            return None;
        }
        let mut rest = bytes;
        let mut take = |n: usize| {
            let (head, tail) = rest.split_at(n);
            rest = tail;
            head
        };
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let mut stats = ProbeStats::EMPTY;
        stats.calibration = word(take(8));
        for op in &mut stats.ops {
            op.count = word(take(8));
            op.total = word(take(8));
            op.min = word(take(8));
            op.max = word(take(8));
            for slot in &mut op.histogram {
                *slot = u32::from_le_bytes(take(4).try_into().expect("4 bytes"));
            }
        }
        Some(stats)
    }
}

/// One measured call, as the probe keeps the last one: `repr(C)`, 32-bit fields as on Wasm,
/// so a host reads it from the program's memory ([`Record::from_bytes`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Calls measured so far (wrapping): a host sees a new call when it changes.
    pub seq: u32,
    /// [`Op`] as a number.
    pub op: u32,
    /// The block passed in (`realloc`, `free`); 0 for `malloc` and `calloc`.
    pub ptr: u32,
    /// The layout's size: the request for `malloc`/`calloc`, the old size otherwise.
    pub size: u32,
    /// The layout's alignment.
    pub align: u32,
    /// `realloc`'s new size; 0 otherwise.
    pub new_size: u32,
    /// The block returned (0 for `free` and for a failed request).
    pub result: u32,
    /// Calibrated cost, as recorded in the statistics.
    pub cost: u64,
}

impl Record {
    /// Before the first call.
    pub const NONE: Record = Record {
        seq: 0,
        op: 0,
        ptr: 0,
        size: 0,
        align: 0,
        new_size: 0,
        result: 0,
        cost: 0,
    };

    /// Bytes of a record in Wasm memory (7 × u32, 4 bytes of padding, u64).
    pub const WASM_LEN: usize = 40;

    /// Decodes a record read from a Wasm program's memory (little-endian, `repr(C)` layout).
    pub fn from_bytes(b: &[u8]) -> Option<Record> {
        if b.len() < Self::WASM_LEN {
            return None;
        }
        let word =
            |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
        let mut cost = [0u8; 8];
        cost.copy_from_slice(&b[32..40]);
        Some(Record {
            seq: word(0),
            op: word(1),
            ptr: word(2),
            size: word(3),
            align: word(4),
            new_size: word(5),
            result: word(6),
            cost: u64::from_le_bytes(cost),
        })
    }

    /// The op, if `op` names one.
    pub fn op(&self) -> Option<Op> {
        Op::ALL.get(self.op as usize).copied()
    }
}

/// Wraps allocator `A`, recording the gas of each call read through meter `M`.
pub struct Probe<A, M> {
    inner: A,
    meter: M,
    stats: UnsafeCell<ProbeStats>,
    last: UnsafeCell<Record>,
}

// SAFETY: Gear programs are single-threaded; the records are only touched by one call at a
// time there. Off Wasm the probe is not `Sync`, so it cannot be shared between threads.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
unsafe impl<A: Sync, M: Sync> Sync for Probe<A, M> {}

impl<A, M> Probe<A, M> {
    /// A probe with nothing recorded.
    pub const fn new(inner: A, meter: M) -> Self {
        Probe {
            inner,
            meter,
            stats: UnsafeCell::new(ProbeStats::EMPTY),
            last: UnsafeCell::new(Record::NONE),
        }
    }

    /// The wrapped allocator.
    pub fn inner(&self) -> &A {
        &self.inner
    }

    /// A copy of the records so far.
    pub fn stats(&self) -> ProbeStats {
        // SAFETY: single-threaded use (see the `Sync` impl); no `&mut` is live here.
        unsafe { *self.stats.get() }
    }

    /// The records so far, then starts afresh, keeping the calibration (for per-message
    /// readings).
    pub fn take(&self) -> ProbeStats {
        // SAFETY: as in `stats`.
        unsafe {
            let stats = &mut *self.stats.get();
            let taken = *stats;
            *stats = ProbeStats {
                calibration: taken.calibration,
                ..ProbeStats::EMPTY
            };
            taken
        }
    }
}

impl<A: GlobalAlloc, M> Probe<A, M> {
    /// Runs `f` between two reads of `meter` and records its calibrated cost as `op`.
    #[inline(always)]
    fn measure(
        &self,
        meter: &impl GasMeter,
        op: Op,
        ptr: *mut u8,
        layout: Layout,
        new_size: usize,
        f: impl FnOnce() -> *mut u8,
    ) -> *mut u8 {
        // SAFETY: as in `stats`; the inner allocator never calls back into the probe.
        let stats = unsafe { &mut *self.stats.get() };
        if stats.calibration == 0 {
            let first = meter.gas_available();
            let second = meter.gas_available();
            // A read costs at least one unit on every meter, so 0 means "not yet".
            stats.calibration = first.saturating_sub(second).max(1);
        }
        let before = meter.gas_available();
        let result = f();
        let after = meter.gas_available();
        let cost = before
            .saturating_sub(after)
            .saturating_sub(stats.calibration);
        stats.ops[op as usize].record(cost);
        // SAFETY: as for `stats`.
        let last = unsafe { &mut *self.last.get() };
        *last = Record {
            seq: last.seq.wrapping_add(1),
            op: op as u32,
            ptr: ptr as usize as u32,
            size: layout.size() as u32,
            align: layout.align() as u32,
            new_size: new_size as u32,
            result: result as usize as u32,
            cost,
        };
        result
    }

    /// Where the last call's [`Record`] lives (a Wasm address in a program).
    pub fn last_record_at(&self) -> usize {
        self.last.get() as usize
    }
}

// SAFETY: every call is forwarded unchanged to `A`; the probe only reads the meter around it.
unsafe impl<A: GlobalAlloc, M: GasMeter> GlobalAlloc for Probe<A, M> {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        self.measure(
            &self.meter,
            Op::Malloc,
            core::ptr::null_mut(),
            layout,
            0,
            || unsafe { self.inner.alloc(layout) },
        )
    }
    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        self.measure(
            &self.meter,
            Op::Calloc,
            core::ptr::null_mut(),
            layout,
            0,
            || unsafe { self.inner.alloc_zeroed(layout) },
        )
    }
    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        self.measure(&self.meter, Op::Free, ptr, layout, 0, || {
            unsafe { self.inner.dealloc(ptr, layout) };
            core::ptr::null_mut()
        });
    }
    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        self.measure(&self.meter, Op::Realloc, ptr, layout, new_size, || unsafe {
            self.inner.realloc(ptr, layout, new_size)
        })
    }
}

/// The probe's twin: a [`Probe`] whose meter reads nothing (feature `probe-twin`).
///
/// It is the reference the lab validates the probe against: probe-build gas minus twin gas must
/// be the counter reads' own cost, one figure per op, and nothing else. The twin is the probe
/// in everything but the reads: the same records (written with zero costs) and `state` export,
/// so the same statics at the same addresses and the same heap base, by construction; and the
/// same bookkeeping around each call, so the same code size around the allocator and the same
/// inlining. A twin that only forwarded each call was smaller around the allocator, so
/// `wasm-opt` inlined it (or the allocator's helpers) where it did not inline the probe, and
/// probe minus twin then depended on the call site or the allocator's path: by up to 12 fuel
/// a message on `vnft-stress` (`bump`, `slabs`), 645 of 979 messages exact on `slabs`.
#[repr(transparent)]
pub struct Twin<A, M>(Probe<A, M>);

// SAFETY: as for `Probe`.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
unsafe impl<A: Sync, M: Sync> Sync for Twin<A, M> {}

impl<A, M> Twin<A, M> {
    /// A twin with the probe's (empty) records.
    pub const fn new(inner: A, meter: M) -> Self {
        Twin(Probe::new(inner, meter))
    }

    /// The wrapped allocator.
    pub fn inner(&self) -> &A {
        self.0.inner()
    }

    /// The records, costs all zero: what the `state` export reports.
    pub fn probe(&self) -> &Probe<A, M> {
        &self.0
    }
}

// SAFETY: every call is forwarded unchanged to `A`; only the records are written around it.
unsafe impl<A: GlobalAlloc, M> GlobalAlloc for Twin<A, M> {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = &self.0;
        // SAFETY: forwarded with the caller's guarantees.
        p.measure(
            &Unmetered,
            Op::Malloc,
            core::ptr::null_mut(),
            layout,
            0,
            || unsafe { p.inner.alloc(layout) },
        )
    }
    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = &self.0;
        // SAFETY: forwarded with the caller's guarantees.
        p.measure(
            &Unmetered,
            Op::Calloc,
            core::ptr::null_mut(),
            layout,
            0,
            || unsafe { p.inner.alloc_zeroed(layout) },
        )
    }
    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let p = &self.0;
        // SAFETY: forwarded with the caller's guarantees.
        p.measure(&Unmetered, Op::Free, ptr, layout, 0, || {
            unsafe { p.inner.dealloc(ptr, layout) };
            core::ptr::null_mut()
        });
    }
    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = &self.0;
        // SAFETY: forwarded with the caller's guarantees.
        p.measure(&Unmetered, Op::Realloc, ptr, layout, new_size, || unsafe {
            p.inner.realloc(ptr, layout, new_size)
        })
    }
}

/// The twin's meter: reads nothing, and the optimiser cannot tell (so the twin's bookkeeping is
/// compiled as the probe's is, not folded away for a known zero).
struct Unmetered;

impl GasMeter for Unmetered {
    #[inline(always)]
    fn gas_available(&self) -> u64 {
        core::hint::black_box(0)
    }
}

/// The probe's (or twin's) entry points, taken by address.
///
/// With their address taken (and `#[inline(never)]` for LLVM), the program calls them the same
/// way in both builds, whatever `wasm-opt` (Gear's post-processing) would decide: it inlines a
/// function called from one place, or a small one without calls, into every caller. A twin
/// that only forwarded each call was small enough: inlined in one build and called in the
/// other, the program's own code around each call differed by a few instructions that depended
/// on the call site (measured on `bump`, whose `free` does nothing: up to 12 fuel a message).
#[cfg(all(target_arch = "wasm32", any(feature = "probe", feature = "probe-twin")))]
#[used]
static ENTRY_POINTS: EntryPoints = EntryPoints {
    _alloc: <crate::Global as GlobalAlloc>::alloc,
    _alloc_zeroed: <crate::Global as GlobalAlloc>::alloc_zeroed,
    _dealloc: <crate::Global as GlobalAlloc>::dealloc,
    _realloc: <crate::Global as GlobalAlloc>::realloc,
};

/// [`ENTRY_POINTS`]' shape (never read: hence the `_` names).
#[cfg(all(target_arch = "wasm32", any(feature = "probe", feature = "probe-twin")))]
struct EntryPoints {
    _alloc: unsafe fn(&crate::Global, Layout) -> *mut u8,
    _alloc_zeroed: unsafe fn(&crate::Global, Layout) -> *mut u8,
    _dealloc: unsafe fn(&crate::Global, *mut u8, Layout),
    _realloc: unsafe fn(&crate::Global, *mut u8, Layout, usize) -> *mut u8,
}

/// The records of this program's global allocator.
#[cfg(all(target_arch = "wasm32", feature = "probe"))]
pub fn global() -> &'static Probe<crate::variant::Selected, GearGas> {
    &crate::ALLOC
}

/// The records of this program's global allocator (every cost zero in the twin).
#[cfg(all(target_arch = "wasm32", feature = "probe-twin"))]
pub fn global() -> &'static Probe<crate::variant::Selected, GearGas> {
    crate::ALLOC.probe()
}

/// Bytes of the `state` reply: [`ProbeStats::to_bytes`], then the little-endian Wasm address
/// of the last call's [`Record`] ([`parse_state`] reads both).
pub const STATE_LEN: usize = ProbeStats::ENCODED_LEN + 4;

/// Splits a `state` reply into the statistics and the address of the last call's record.
pub fn parse_state(bytes: &[u8]) -> Option<(ProbeStats, u32)> {
    if bytes.len() != STATE_LEN {
        return None;
    }
    let (stats, at) = bytes.split_at(ProbeStats::ENCODED_LEN);
    Some((
        ProbeStats::from_bytes(stats)?,
        u32::from_le_bytes(at.try_into().ok()?),
    ))
}

/// Gear's `state` entry point in probe builds: replies with the records so far and where the
/// last call's record lives ([`STATE_LEN`]). A state read runs outside any message and its memory changes
/// are discarded, so reading costs the measured messages nothing and resets nothing; the
/// harness reads after each message and takes differences. (A program that defines `state`
/// itself cannot be built with the probe: the symbol would be defined twice.) The twin keeps
/// the export so that its code reads the records as the probe build's does.
#[cfg(all(target_arch = "wasm32", any(feature = "probe", feature = "probe-twin")))]
#[unsafe(no_mangle)]
extern "C" fn state() {
    let mut bytes = [0u8; STATE_LEN];
    bytes[..ProbeStats::ENCODED_LEN].copy_from_slice(&global().stats().to_bytes());
    bytes[ProbeStats::ENCODED_LEN..]
        .copy_from_slice(&(global().last_record_at() as u32).to_le_bytes());
    let mut error = gsys::ErrorWithHash::default();
    // SAFETY: the syscall reads `bytes.len()` bytes from the buffer and writes the error
    // through a valid pointer; a `u32::MAX` value pointer means "no value".
    unsafe {
        gsys::gr_reply(
            bytes.as_ptr().cast(),
            bytes.len() as u32,
            u32::MAX as usize as *const u128,
            &mut error,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A gas counter shared by the fake meter and the fake allocator.
    #[derive(Clone)]
    struct Counter(Rc<Cell<u64>>);
    impl Counter {
        fn burn(&self, gas: u64) {
            self.0.set(self.0.get() - gas);
        }
    }

    /// Each read costs `READ` gas, charged before the value is taken (as a syscall is).
    const READ: u64 = 1_008;
    struct FakeMeter(Counter);
    impl GasMeter for FakeMeter {
        fn gas_available(&self) -> u64 {
            self.0.burn(READ);
            self.0 .0.get()
        }
    }

    /// Burns a scripted amount per call and returns a dangling pointer.
    struct FakeAlloc {
        gas: Counter,
        costs: Cell<&'static [u64]>,
    }
    unsafe impl GlobalAlloc for FakeAlloc {
        unsafe fn alloc(&self, _: Layout) -> *mut u8 {
            self.step()
        }
        unsafe fn dealloc(&self, _: *mut u8, _: Layout) {
            self.step();
        }
        unsafe fn alloc_zeroed(&self, _: Layout) -> *mut u8 {
            self.step()
        }
        unsafe fn realloc(&self, _: *mut u8, _: Layout, _: usize) -> *mut u8 {
            self.step()
        }
    }
    impl FakeAlloc {
        fn step(&self) -> *mut u8 {
            let (first, rest) = self.costs.get().split_first().expect("scripted cost");
            self.gas.burn(*first);
            self.costs.set(rest);
            core::ptr::NonNull::dangling().as_ptr()
        }
    }

    fn probe(costs: &'static [u64]) -> Probe<FakeAlloc, FakeMeter> {
        let gas = Counter(Rc::new(Cell::new(1 << 40)));
        let inner = FakeAlloc {
            gas: gas.clone(),
            costs: Cell::new(costs),
        };
        Probe::new(inner, FakeMeter(gas))
    }

    #[test]
    fn the_twin_forwards_every_call_unmetered_and_has_the_probes_size() {
        let p = probe(&[500, 700, 300, 9_000]);
        let gas = p.inner().gas.clone();
        let twin = Twin(p);
        let l = Layout::new::<u64>();
        let before = gas.0.get();
        // SAFETY: the fake allocator never dereferences anything.
        unsafe {
            let x = twin.alloc(l);
            twin.alloc_zeroed(l);
            twin.dealloc(x, l);
            twin.realloc(x, l, 64);
        }
        // Exactly the allocator's own gas: no counter read; every call counted at zero cost.
        assert_eq!(before - gas.0.get(), 500 + 700 + 300 + 9_000);
        let stats = twin.probe().stats();
        for op in Op::ALL {
            let s = stats.ops[op as usize];
            assert_eq!((s.count, s.total, s.min, s.max), (1, 0, 0, 0), "{op:?}");
        }
        assert_eq!(stats.calibration, 1);
        assert_eq!(
            core::mem::size_of::<Twin<FakeAlloc, FakeMeter>>(),
            core::mem::size_of::<Probe<FakeAlloc, FakeMeter>>()
        );
    }

    #[test]
    fn records_exact_calibrated_costs_per_op() {
        let p = probe(&[500, 700, 300, 9_000, 40, 1]);
        let l = Layout::new::<u64>();
        // SAFETY: the fake allocator never dereferences anything.
        unsafe {
            let x = p.alloc(l);
            p.alloc(l);
            p.dealloc(x, l);
            p.realloc(x, l, 64);
            p.alloc_zeroed(l);
            p.dealloc(x, l);
        }
        let s = p.stats();
        assert_eq!(s.calibration, READ);
        let m = s.op(Op::Malloc);
        assert_eq!((m.count, m.total, m.min, m.max), (2, 1_200, 500, 700));
        let f = s.op(Op::Free);
        assert_eq!((f.count, f.total, f.min, f.max), (2, 301, 1, 300));
        assert_eq!(s.op(Op::Realloc).total, 9_000);
        assert_eq!(s.op(Op::Calloc).total, 40);
        assert_eq!(m.histogram[bucket(500)] + m.histogram[bucket(700)], 2);
        assert_eq!(m.histogram.iter().sum::<u32>(), 2);
    }

    #[test]
    fn take_resets_records_but_keeps_the_calibration() {
        let p = probe(&[10, 20]);
        let l = Layout::new::<u8>();
        // SAFETY: the fake allocator never dereferences anything.
        unsafe { p.alloc(l) };
        let first = p.take();
        assert_eq!(first.op(Op::Malloc).count, 1);
        assert_eq!(p.stats().op(Op::Malloc), &OpStats::EMPTY);
        assert_eq!(p.stats().calibration, READ);
        // SAFETY: as above.
        unsafe { p.alloc(l) };
        assert_eq!(p.stats().op(Op::Malloc).total, 20);
    }

    #[test]
    fn buckets_split_each_power_of_two_in_halves() {
        assert_eq!(
            [bucket(0), bucket(1), bucket(2), bucket(3), bucket(4)],
            [0, 1, 2, 3, 4]
        );
        assert_eq!([bucket(6), bucket(7), bucket(8)], [5, 5, 6]);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        for b in 0..BUCKETS {
            assert_eq!(bucket(bucket_floor(b)), b, "floor of bucket {b}");
            if b + 1 < BUCKETS {
                assert_eq!(bucket(bucket_floor(b + 1) - 1), b, "top of bucket {b}");
            }
        }
    }

    #[test]
    fn encoding_round_trips_and_rejects_wrong_lengths() {
        let p = probe(&[123, 456_789]);
        let l = Layout::new::<u8>();
        // SAFETY: the fake allocator never dereferences anything.
        unsafe {
            p.alloc(l);
            p.alloc_zeroed(l);
        }
        let bytes = p.stats().to_bytes();
        assert_eq!(ProbeStats::from_bytes(&bytes), Some(p.stats()));
        assert_eq!(ProbeStats::from_bytes(&bytes[1..]), None);
    }

    #[test]
    fn the_last_call_is_kept_as_a_record_hosts_can_decode() {
        let p = probe(&[10, 900]);
        let l = Layout::from_size_align(24, 8).unwrap();
        // SAFETY: the fake allocator never dereferences anything.
        let (x, y) = unsafe {
            let x = p.alloc(l);
            (x, p.realloc(x, l, 96))
        };
        // SAFETY: the record is plain old data inside the probe.
        let record = unsafe { *(p.last_record_at() as *const Record) };
        let expected = Record {
            seq: 2,
            op: Op::Realloc as u32,
            ptr: x as usize as u32,
            size: 24,
            align: 8,
            new_size: 96,
            result: y as usize as u32,
            cost: 900,
        };
        assert_eq!(record, expected);
        assert_eq!(record.op(), Some(Op::Realloc));
        // The layout a Wasm host reads: seven u32, padding, the u64 cost; little-endian.
        assert_eq!(core::mem::size_of::<Record>(), Record::WASM_LEN);
        // SAFETY: `Record` is `repr(C)` plain old data of `WASM_LEN` bytes.
        let bytes: [u8; Record::WASM_LEN] = unsafe { core::mem::transmute(record) };
        assert_eq!(Record::from_bytes(&bytes), Some(expected));
        assert_eq!(Record::from_bytes(&bytes[1..]), None);
    }
}
