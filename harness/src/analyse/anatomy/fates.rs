//! A run's pages by what its messages did with each (docs/ship.md, "What the anatomy found"):
//! the schedule charges a first read, a first write and a write after a read, so a page read
//! and then written pays twice and a page written first once, and a variant that writes first
//! the pages another reads first moves gas from first reads and writes after read to first
//! writes while writing no more pages. Counting pages by fate (written first, read and then
//! written, only read) says how many pages a message wrote and read at all.

use crate::results::LayoutRow;

/// What a run's messages did with the pages they touched, summed over its messages: each
/// page written without a read before it, read and then written, only read; and the loads of
/// stored data (a page with data from an earlier message, whatever was done with it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Fates {
    pub written_first: f64,
    pub read_then_written: f64,
    pub only_read: f64,
    pub loaded: f64,
}

impl Fates {
    /// The fuel meter's counts of one run (`None` without them): a write after read is a page
    /// first read, so the pages only read are the first reads less the writes after read.
    pub fn of(row: &LayoutRow) -> Option<Fates> {
        let read = row.pages_read? as f64;
        let after_read = row.pages_write_after_read? as f64;
        Some(Fates {
            written_first: row.pages_written? as f64,
            read_then_written: after_read,
            only_read: read - after_read,
            loaded: row.pages_loaded? as f64,
        })
    }

    /// The pages written at all.
    pub fn written(&self) -> f64 {
        self.written_first + self.read_then_written
    }

    /// `variant` against `reference` on `program` in the fuel meter's `layouts` rows: the
    /// mean, over the layouts both ran with counts, of the difference of each, and how many
    /// layouts that is; `None` without one.
    pub fn against(
        layouts: &[LayoutRow],
        program: &str,
        variant: &str,
        reference: &str,
    ) -> Option<(Fates, usize)> {
        let runs = layouts
            .iter()
            .filter(|r| r.backend == "wasmtime" && r.case == program);
        let reference: std::collections::BTreeMap<u32, &LayoutRow> = runs
            .clone()
            .filter(|r| r.variant == reference)
            .map(|r| (r.offset, r))
            .collect();
        let pairs: Vec<(Fates, Fates)> = runs
            .filter(|r| r.variant == variant)
            .filter_map(|r| Some((Fates::of(r)?, Fates::of(reference.get(&r.offset)?)?)))
            .collect();
        if pairs.is_empty() {
            return None;
        }
        let n = pairs.len() as f64;
        let mut mean = Fates::default();
        for (v, s) in &pairs {
            mean.written_first += (v.written_first - s.written_first) / n;
            mean.read_then_written += (v.read_then_written - s.read_then_written) / n;
            mean.only_read += (v.only_read - s.only_read) / n;
            mean.loaded += (v.loaded - s.loaded) / n;
        }
        Some((mean, pairs.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::pages::page_weights;

    fn row(variant: &str, offset: u32, [read, written, after_read, loaded]: [u64; 4]) -> LayoutRow {
        LayoutRow {
            backend: "wasmtime".into(),
            case: "p".into(),
            variant: variant.into(),
            offset,
            pages_read: Some(read),
            pages_written: Some(written),
            pages_write_after_read: Some(after_read),
            pages_loaded: Some(loaded),
            ..Default::default()
        }
    }

    /// Priced by fate, a run's pages cost exactly what the schedule's four charges do: a page
    /// only read a first read, a page written first a first write, a page read and then
    /// written a first read and a write after read.
    #[test]
    fn fates_are_the_page_charges_regrouped() {
        let r = row("lab", 0, [7, 3, 4, 2]);
        let f = Fates::of(&r).unwrap();
        assert_eq!((f.written(), f.only_read, f.loaded), (7.0, 3.0, 2.0));
        let [read, write, after_read, load] = page_weights().map(|w| w as f64);
        let by_fate = f.only_read * read
            + f.written_first * write
            + f.read_then_written * (read + after_read)
            + f.loaded * load;
        let charged = 7.0 * read + 3.0 * write + 4.0 * after_read + 2.0 * load;
        assert_eq!(by_fate, charged);
    }

    /// A variant that writes first the pages shipping reads and then writes: more first
    /// writes, fewer writes after read and first reads, the same pages written at all.
    #[test]
    fn a_relabelled_write_writes_no_more_pages() {
        let rows = [
            row("shipping", 0, [10, 2, 6, 1]),
            row("lab", 0, [4, 8, 0, 1]),
            row("shipping", 4096, [10, 2, 6, 1]),
            row("lab", 4096, [6, 9, 1, 3]),
            // No reference at this layout: not a pair.
            row("lab", 8192, [0, 0, 0, 0]),
        ];
        let (d, n) = Fates::against(&rows, "p", "lab", "shipping").unwrap();
        assert_eq!(n, 2);
        assert_eq!(d.written_first, 6.5);
        assert_eq!(d.read_then_written, -5.5);
        assert_eq!(d.written(), 1.0);
        assert_eq!(d.only_read, 0.5);
        assert_eq!(d.loaded, 1.0);
        assert!(Fates::against(&rows, "q", "lab", "shipping").is_none());
    }
}
