//! The static-buffer front of Gear's dlmalloc fork, with configurable cells.
//!
//! Gear's fork of dlmalloc keeps a few small cells in static memory and serves small requests
//! from them while the heap has no memory yet, so a message that allocates a little never pays
//! for a page. Once the heap has memory, new requests go to dlmalloc, but cells in use stay
//! valid until freed: `free` and `realloc` recognise buffer pointers by address.
//!
//! A layout is a list of cell classes (size, count), searched smallest first; a request takes
//! the first free cell of the first class large enough. Cells are 8-byte aligned (the malloc
//! alignment on wasm32); requests for stricter alignment bypass the buffer.

use core::marker::PhantomData;
use core::ptr::NonNull;

/// Alignment every cell has; requests needing more go to the heap.
pub const CELL_ALIGN: usize = 8;

/// A run of equal cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellClass {
    /// Bytes per cell, a multiple of [`CELL_ALIGN`].
    pub size: usize,
    /// Cells of this size.
    pub count: u32,
}

/// A buffer's cells, as a type so that the layout is a compile-time constant.
pub trait CellLayout {
    /// Cell classes in increasing size; at most 32 cells in all.
    const CLASSES: &'static [CellClass];
    /// Total bytes of all cells.
    const BYTES: usize = total_bytes(Self::CLASSES);
}

/// Total bytes of the cells of `classes`.
pub const fn total_bytes(classes: &[CellClass]) -> usize {
    let mut total = 0;
    let mut i = 0;
    while i < classes.len() {
        total += classes[i].size * classes[i].count as usize;
        i += 1;
    }
    total
}

/// Total number of cells of `classes`.
pub const fn total_cells(classes: &[CellClass]) -> u32 {
    let mut total = 0;
    let mut i = 0;
    while i < classes.len() {
        total += classes[i].count;
        i += 1;
    }
    total
}

/// What sits in front of dlmalloc: a static buffer or nothing.
pub trait Front {
    /// An empty front, for `static` initialisers.
    const NEW: Self;
    /// Whether this front can ever serve a request (lets the heap skip it at compile time).
    const ENABLED: bool;
    /// Whether it keeps serving once dlmalloc has memory (the 2023 study's buffers close:
    /// they only serve while the heap is empty, as Gear's dlmalloc fork does).
    const STAYS_OPEN: bool = false;
    /// Whether it serves from the heap-base tail on Gear, so the heap behind must not.
    const TAKES_TAIL: bool = false;

    /// A free cell for `size` bytes at `align`, marked used, or `None`.
    fn alloc(&mut self, size: usize, align: usize) -> Option<NonNull<u8>>;
    /// Whether `ptr` points into this front.
    fn owns(&self, ptr: *const u8) -> bool;
    /// The size of the cell `ptr` (owned by this front) starts.
    fn cell_size(&self, ptr: *const u8) -> usize;
    /// Marks the cell at `ptr` (owned by this front) free.
    fn free(&mut self, ptr: *const u8);
}

/// No front: every request goes to dlmalloc.
pub struct NoBuffer;

impl Front for NoBuffer {
    const NEW: Self = NoBuffer;
    const ENABLED: bool = false;

    #[inline(always)]
    fn alloc(&mut self, _size: usize, _align: usize) -> Option<NonNull<u8>> {
        None
    }
    #[inline(always)]
    fn owns(&self, _ptr: *const u8) -> bool {
        false
    }
    #[inline(always)]
    fn cell_size(&self, _ptr: *const u8) -> usize {
        0
    }
    #[inline(always)]
    fn free(&mut self, _ptr: *const u8) {}
}

#[repr(C, align(16))]
struct Cells<const BYTES: usize>([u8; BYTES]);

/// A static buffer of cells laid out by `L`; `BYTES` must be `L::BYTES` (checked at compile
/// time), a separate parameter only because stable Rust cannot size an array by `L::BYTES`.
pub struct StaticBuffer<L: CellLayout, const BYTES: usize> {
    cells: Cells<BYTES>,
    /// Bit `i` set: cell `i` (counting through the classes in order) is in use.
    used: u32,
    _layout: PhantomData<L>,
}

impl<L: CellLayout, const BYTES: usize> StaticBuffer<L, BYTES> {
    const CHECK: () = {
        assert!(
            BYTES == L::BYTES,
            "StaticBuffer: BYTES must equal the layout's total bytes"
        );
        assert!(
            total_cells(L::CLASSES) <= 32,
            "StaticBuffer: at most 32 cells"
        );
        let mut i = 0;
        while i < L::CLASSES.len() {
            assert!(
                L::CLASSES[i].size % CELL_ALIGN == 0,
                "cell sizes are multiples of 8"
            );
            assert!(
                i == 0 || L::CLASSES[i - 1].size < L::CLASSES[i].size,
                "sizes increase"
            );
            i += 1;
        }
    };

    /// Bit index and size of the cell at `offset` bytes into the buffer.
    #[inline(always)]
    fn cell_at(offset: usize) -> (u32, usize) {
        let mut start = 0;
        let mut bit = 0;
        for class in L::CLASSES {
            let end = start + class.size * class.count as usize;
            if offset < end {
                return (bit + ((offset - start) / class.size) as u32, class.size);
            }
            start = end;
            bit += class.count;
        }
        unreachable!("offset inside the buffer")
    }

    #[inline(always)]
    fn offset_of(&self, ptr: *const u8) -> usize {
        ptr as usize - self.cells.0.as_ptr() as usize
    }
}

impl<L: CellLayout, const BYTES: usize> Front for StaticBuffer<L, BYTES> {
    const NEW: Self = {
        #[allow(clippy::let_unit_value)]
        let () = Self::CHECK;
        StaticBuffer {
            cells: Cells([0; BYTES]),
            used: 0,
            _layout: PhantomData,
        }
    };
    const ENABLED: bool = true;

    #[inline(always)]
    fn alloc(&mut self, size: usize, align: usize) -> Option<NonNull<u8>> {
        if align > CELL_ALIGN {
            return None;
        }
        let mut start = 0;
        let mut bit = 0;
        for class in L::CLASSES {
            if size <= class.size {
                let class_mask = ((1u64 << class.count) - 1) as u32;
                let free = !(self.used >> bit) & class_mask;
                if free != 0 {
                    let index = free.trailing_zeros();
                    self.used |= 1 << (bit + index);
                    let offset = start + index as usize * class.size;
                    return NonNull::new(self.cells.0.as_mut_ptr().wrapping_add(offset));
                }
            }
            start += class.size * class.count as usize;
            bit += class.count;
        }
        None
    }

    #[inline(always)]
    fn owns(&self, ptr: *const u8) -> bool {
        let base = self.cells.0.as_ptr() as usize;
        (ptr as usize).wrapping_sub(base) < BYTES
    }

    #[inline(always)]
    fn cell_size(&self, ptr: *const u8) -> usize {
        Self::cell_at(self.offset_of(ptr)).1
    }

    #[inline(always)]
    fn free(&mut self, ptr: *const u8) {
        let (bit, _) = Self::cell_at(self.offset_of(ptr));
        self.used &= !(1 << bit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Tiny;
    impl CellLayout for Tiny {
        const CLASSES: &'static [CellClass] = &[
            CellClass { size: 8, count: 2 },
            CellClass { size: 48, count: 1 },
        ];
    }
    type TinyBuffer = StaticBuffer<Tiny, { Tiny::BYTES }>;

    #[test]
    fn first_free_cell_of_the_first_class_that_fits() {
        let mut b = TinyBuffer::NEW;
        let base = b.cells.0.as_ptr() as usize;
        let a = b.alloc(1, 1).unwrap().as_ptr() as usize;
        let c = b.alloc(8, 8).unwrap().as_ptr() as usize;
        let d = b.alloc(4, 4).unwrap().as_ptr() as usize; // 8 B cells full: spills to 48 B
        assert_eq!((a - base, c - base, d - base), (0, 8, 16));
        assert!(b.alloc(1, 1).is_none());
        assert_eq!(b.cell_size(d as *const u8), 48);
        b.free(c as *const u8);
        assert_eq!(b.alloc(2, 2).unwrap().as_ptr() as usize, c);
    }

    #[test]
    fn too_big_or_too_aligned_requests_bypass_the_buffer() {
        let mut b = TinyBuffer::NEW;
        assert!(b.alloc(49, 8).is_none());
        assert!(b.alloc(8, 16).is_none());
        assert_eq!(b.used, 0);
    }

    #[test]
    fn ownership_is_by_address_range() {
        let b = TinyBuffer::NEW;
        let base = b.cells.0.as_ptr();
        assert!(b.owns(base));
        assert!(b.owns(base.wrapping_add(Tiny::BYTES - 1)));
        assert!(!b.owns(base.wrapping_add(Tiny::BYTES)));
        assert!(!b.owns(base.wrapping_sub(1)));
    }
}
