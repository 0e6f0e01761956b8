//! The fits the lab makes: the probe validation's exact fit of its counter reads' overhead
//! (whole units, from a few message kinds), and the ordinary least squares the fuel-against-gas
//! agreement uses; both solve with [`gauss`].

use std::collections::BTreeMap;

/// Solves `diff = per_message + per_op . calls` exactly from a few message kinds and keeps the
/// solution under which the most messages hold exactly. Gas is deterministic, so messages with
/// the same calls nearly always agree to the unit; the rare ones that do not must show up as
/// residuals, not bend the fit (a least-squares fit would spread them over every message).
/// Ops never called get 0.
pub fn exact_fit(all: &[([i64; 4], i64)]) -> (i64, [i64; 4]) {
    // Message kinds: each distinct call vector at its most common difference, commonest first.
    let mut kinds: BTreeMap<[i64; 4], BTreeMap<i64, u64>> = BTreeMap::new();
    for (calls, diff) in all {
        *kinds.entry(*calls).or_default().entry(*diff).or_default() += 1;
    }
    let mut kinds: Vec<(u64, [i64; 4], i64)> = kinds
        .into_iter()
        .map(|(calls, diffs)| {
            let (diff, n) = diffs
                .into_iter()
                .max_by_key(|&(d, n)| (n, -d))
                .expect("non-empty");
            (n, calls, diff)
        })
        .collect();
    kinds.sort_by_key(|&(n, calls, _)| (std::cmp::Reverse(n), calls));

    // Unknowns: the constant, then each op whose counts the constant and the ops before it do
    // not already determine. An op called the same number of times in every message (Sails
    // programs `calloc` their input buffer once a message) cannot be told apart from the
    // per-message constant: any split fits alike, and an unconstrained solve once split it into
    // a negative `calloc` overhead. Such an op gets 0 and its cost stays in the constant.
    let mut used: Vec<usize> = Vec::new();
    let column = |i: Option<usize>, calls: &[i64; 4]| i.map_or(1.0, |i| calls[i] as f64);
    for i in 0..4 {
        let mut with: Vec<Option<usize>> = std::iter::once(None)
            .chain(used.iter().map(|&u| Some(u)))
            .collect();
        let before = rank(&with, &kinds, column);
        with.push(Some(i));
        if rank(&with, &kinds, column) > before {
            used.push(i);
        }
    }
    kinds.truncate(10);
    let unknowns = used.len() + 1;
    let exact = |(c, per_op): &(i64, [i64; 4])| {
        all.iter()
            .filter(|(calls, diff)| *diff == c + (0..4).map(|i| per_op[i] * calls[i]).sum::<i64>())
            .count()
    };
    let mut best = (0, [0; 4]);
    let mut best_exact = exact(&best);
    for subset in combinations(kinds.len(), unknowns.min(kinds.len())) {
        let rows: Vec<Vec<f64>> = subset
            .iter()
            .map(|&k| {
                let (_, calls, diff) = kinds[k];
                std::iter::once(1.0)
                    .chain(used.iter().map(|&i| calls[i] as f64))
                    .chain(std::iter::once(diff as f64))
                    .collect()
            })
            .collect();
        let Some(x) = solve(rows, unknowns) else {
            continue;
        };
        let mut per_op = [0; 4];
        for (k, &i) in used.iter().enumerate() {
            per_op[i] = x[k + 1];
        }
        let candidate = (x[0], per_op);
        let n = exact(&candidate);
        if n > best_exact {
            (best, best_exact) = (candidate, n);
        }
    }
    best
}

/// Index sets of size `k` from `0..n`.
fn combinations(n: usize, k: usize) -> Vec<Vec<usize>> {
    if k == 0 {
        return vec![Vec::new()];
    }
    (k - 1..n)
        .flat_map(|last| {
            combinations(last, k - 1).into_iter().map(move |mut c| {
                c.push(last);
                c
            })
        })
        .collect()
}

/// The rank of the matrix whose rows are `kinds`' call vectors seen through `columns`.
fn rank(
    columns: &[Option<usize>],
    kinds: &[(u64, [i64; 4], i64)],
    value: impl Fn(Option<usize>, &[i64; 4]) -> f64,
) -> usize {
    let mut m: Vec<Vec<f64>> = kinds
        .iter()
        .map(|(_, calls, _)| columns.iter().map(|&c| value(c, calls)).collect())
        .collect();
    let mut rank = 0;
    for col in 0..columns.len() {
        let Some(pivot) = (rank..m.len()).find(|&r| m[r][col].abs() > 1e-9) else {
            continue;
        };
        m.swap(rank, pivot);
        let pivot_row = m[rank].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != rank {
                let f = row[col] / pivot_row[col];
                for (x, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
        rank += 1;
    }
    rank
}

/// Solves `rows` (each `unknowns` coefficients then the right-hand side) exactly, rounded to
/// whole units; `None` when fewer independent rows than unknowns.
fn solve(rows: Vec<Vec<f64>>, unknowns: usize) -> Option<Vec<i64>> {
    let x = gauss(rows, unknowns)?;
    Some(x.iter().map(|v| v.round() as i64).collect())
}

/// Ordinary least squares of `y` on the columns of `x` (normal equations); returns the
/// coefficients and R². Degenerate systems give zero coefficients and R² 0.
pub fn least_squares(x: &[Vec<f64>], y: &[f64]) -> (Vec<f64>, f64) {
    let k = x.first().map_or(0, Vec::len);
    // Scale columns so the normal equations stay well conditioned (gas ~1e9, fuel ~1e4).
    let scale: Vec<f64> = (0..k)
        .map(|j| x.iter().map(|r| r[j].abs()).fold(0.0, f64::max).max(1.0))
        .collect();
    let mut a = vec![vec![0.0; k + 1]; k];
    for (row, &yi) in x.iter().zip(y) {
        for i in 0..k {
            for j in 0..k {
                a[i][j] += row[i] / scale[i] * row[j] / scale[j];
            }
            a[i][k] += row[i] / scale[i] * yi;
        }
    }
    let Some(solution) = gauss(a, k) else {
        return (vec![0.0; k], 0.0);
    };
    let coef: Vec<f64> = solution.iter().zip(&scale).map(|(c, s)| c / s).collect();
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    let (mut ss_res, mut ss_tot) = (0.0, 0.0);
    for (row, &yi) in x.iter().zip(y) {
        let fit: f64 = row.iter().zip(&coef).map(|(v, c)| v * c).sum();
        ss_res += (yi - fit).powi(2);
        ss_tot += (yi - mean).powi(2);
    }
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    (coef, r2)
}

/// Solves `m` (rows of `unknowns` coefficients, then the right-hand side; at least as many
/// rows as unknowns) by Gaussian elimination with partial pivoting; `None` when fewer rows are
/// independent than there are unknowns.
pub fn gauss(mut m: Vec<Vec<f64>>, unknowns: usize) -> Option<Vec<f64>> {
    if m.len() < unknowns {
        return None;
    }
    for col in 0..unknowns {
        let pivot = (col..m.len()).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-9 {
            return None;
        }
        m.swap(col, pivot);
        let pivot_row = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row[col..=unknowns]
                    .iter_mut()
                    .zip(&pivot_row[col..=unknowns])
                {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..unknowns).map(|i| m[i][unknowns] / m[i][i]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Differences made from known overheads, one op called once in every message: the fit
    /// finds the ops it can tell apart exactly, gives the constant op 0 and keeps its cost in
    /// the per-message constant, so every message still matches and nothing is negative.
    #[test]
    fn an_op_called_once_a_message_stays_in_the_constant() {
        let (per_message, malloc, calloc, free) = (9, 136, 140, 137);
        let points: Vec<([i64; 4], i64)> = [(14, 10), (13, 10), (17, 13), (17, 10), (15, 12)]
            .iter()
            .cycle()
            .take(50)
            .map(|&(m, f)| {
                let calls = [m, 1, 0, f];
                (calls, per_message + malloc * m + calloc + free * f)
            })
            .collect();
        let (c, per_op) = exact_fit(&points);
        assert_eq!((c, per_op), (per_message + calloc, [malloc, 0, 0, free]));
    }

    /// With every op varying independently, each gets its own overhead.
    #[test]
    fn independent_ops_get_their_own_overheads() {
        let kinds = [
            [1, 0, 0, 1],
            [2, 1, 0, 1],
            [0, 2, 1, 3],
            [3, 0, 2, 0],
            [1, 1, 1, 2],
        ];
        let points: Vec<([i64; 4], i64)> = kinds
            .iter()
            .map(|&calls| {
                let diff = 5 + 100 * calls[0] + 120 * calls[1] + 130 * calls[2] + 110 * calls[3];
                (calls, diff)
            })
            .collect();
        assert_eq!(exact_fit(&points), (5, [100, 120, 130, 110]));
    }

    #[test]
    fn least_squares_recovers_an_exact_relation() {
        let x: Vec<Vec<f64>> = (0..20)
            .map(|i| vec![1.0, i as f64 * 1e4, ((i * 7) % 5) as f64 * 3e7])
            .collect();
        let y: Vec<f64> = x.iter().map(|r| 5e8 + 2000.0 * r[1] + r[2]).collect();
        let (coef, r2) = least_squares(&x, &y);
        assert!(
            (coef[1] - 2000.0).abs() < 1e-3 && (coef[2] - 1.0).abs() < 1e-9,
            "{coef:?}"
        );
        assert!((r2 - 1.0).abs() < 1e-12);
    }
}
