//! Do fuel and gas tell the same story? Rank agreement of variants by allocator cost, and how
//! much of gtest's per-message gas fuel explains: alone, with the pages the message touched
//! priced at Gear's own lazy-page weights, and with what Gear charges before every message for
//! loading the pages the program holds through `alloc` (one storage read and a cost per run of
//! pages; nothing for a program that never called `alloc`), which neither fuel nor page
//! accesses show.

use crate::analyse::fit::least_squares;
use crate::results::pages::{allocations_gas, page_gas, PageCounts};
use crate::results::{round, AgreementRow};

/// One variant's figures for one case on both backends.
pub struct Pair<'a> {
    pub variant: &'a str,
    pub allocator_fuel: u64,
    pub allocator_gas: u64,
    /// Bytes of the deployed plain build: Gear charges every message for loading and
    /// instantiating the code, by size.
    pub code_bytes: u64,
    /// Per message, plain builds: `(fuel, pages, gas)`.
    pub messages: Vec<(u64, PageCounts, u64)>,
}

/// The agreement row of one case from its variants' pairs (registry order).
pub fn agreement(case: &str, pairs: &[Pair]) -> AgreementRow {
    let order = |key: fn(&Pair) -> u64| {
        let mut idx: Vec<usize> = (0..pairs.len()).collect();
        idx.sort_by_key(|&i| key(&pairs[i]));
        idx.iter()
            .map(|&i| pairs[i].variant)
            .collect::<Vec<_>>()
            .join(" < ")
    };
    let fuel: Vec<f64> = pairs.iter().map(|p| p.allocator_fuel as f64).collect();
    let gas: Vec<f64> = pairs.iter().map(|p| p.allocator_gas as f64).collect();

    let rows: Vec<&(u64, PageCounts, u64)> = pairs.iter().flat_map(|p| &p.messages).collect();
    let y: Vec<f64> = rows.iter().map(|r| r.2 as f64).collect();
    let fuel_only: Vec<Vec<f64>> = rows.iter().map(|r| vec![1.0, r.0 as f64]).collect();
    let with_pages: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| vec![1.0, r.0 as f64, page_gas(&r.1) as f64])
        .collect();
    // The full model: fuel, page gas, the allocations' gas, and the code's size (constant per
    // variant, so it only separates variants). A column with no spread is left out (its weight
    // is 0): it would make the fit singular.
    let full_rows: Vec<Vec<f64>> = pairs
        .iter()
        .flat_map(|p| {
            p.messages.iter().map(|r| {
                vec![
                    1.0,
                    r.0 as f64,
                    page_gas(&r.1) as f64,
                    allocations_gas(&r.1) as f64,
                    p.code_bytes as f64,
                ]
            })
        })
        .collect();
    let varies = |j: usize| full_rows.iter().any(|r| r[j] != full_rows[0][j]);
    let used: Vec<usize> = (0..5).filter(|&j| j == 0 || varies(j)).collect();
    let with_allocations: Vec<Vec<f64>> = full_rows
        .iter()
        .map(|r| used.iter().map(|&j| r[j]).collect())
        .collect();
    let (_, r2_fuel) = least_squares(&fuel_only, &y);
    let (coef, r2_fuel_pages) = least_squares(&with_pages, &y);
    let (fitted, r2_full) = least_squares(&with_allocations, &y);
    let mut full = vec![0.0; 5];
    for (c, &j) in fitted.iter().zip(&used) {
        full[j] = *c;
    }
    let max_residual = full_rows
        .iter()
        .zip(&y)
        .map(|(x, y)| {
            let fitted: f64 = x.iter().zip(&full).map(|(x, c)| x * c).sum();
            (y - fitted).abs()
        })
        .fold(0f64, f64::max);
    AgreementRow {
        case: case.into(),
        rank_by_fuel: order(|p| p.allocator_fuel),
        rank_by_gas: order(|p| p.allocator_gas),
        spearman: round(spearman(&fuel, &gas), 4),
        messages: rows.len() as u64,
        r2_fuel: round(r2_fuel, 4),
        r2_fuel_pages: round(r2_fuel_pages, 4),
        gas_per_fuel: round(coef.get(1).copied().unwrap_or(0.0), 1),
        page_gas_weight: round(coef.get(2).copied().unwrap_or(0.0), 4),
        r2_fuel_pages_allocations: round(r2_full, 4),
        allocations_gas_weight: round(full[3], 4),
        gas_per_code_byte: round(full[4], 1),
        max_residual: max_residual.round() as u64,
    }
}

/// Ranks from 1, ties sharing their mean rank.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && values[idx[j + 1]] == values[idx[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            ranks[k] = mean;
        }
        i = j + 1;
    }
    ranks
}

/// Spearman's rho: Pearson's correlation of the ranks (handles ties). 1 for fewer than two
/// values or when either side has no spread (nothing to disagree on).
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = ra.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = ra.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = rb.iter().map(|y| (y - mb).powi(2)).sum();
    if va == 0.0 || vb == 0.0 {
        return 1.0;
    }
    cov / (va * vb).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_handles_order_reversal_and_ties() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
        assert_eq!(ranks(&[5.0, 1.0, 5.0]), vec![2.5, 1.0, 2.5]);
    }
}
