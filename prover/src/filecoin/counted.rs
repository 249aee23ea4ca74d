//! Committed R1CS counts of Filecoin partitions: one table per proof kind (PoRep in
//! [`super::shape`], PoSt in [`super::post::shape`], SnapDeals in [`super::snap::shape`]),
//! each row a partition shape and its counts, so that a plan has a 32 GiB partition's shape
//! without synthesizing one. Each kind's tests recount its rows from the circuit.

use std::fmt::Debug;

use crate::circuits::R1csCounts;

/// A partition shape of one proof kind, `S`, and the R1CS counts of its circuit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted<S> {
    pub shape: S,
    pub counts: R1csCounts,
}

/// The counts `table` commits for `shape`, if it has its row.
pub fn committed<S: PartialEq>(table: &[Counted<S>], shape: &S) -> Option<R1csCounts> {
    table
        .iter()
        .find(|row| row.shape == *shape)
        .map(|row| row.counts)
}

/// Holds `table`'s row for `proof` (of shape `shape`) to `recounted`, the counts of the
/// circuit as it is now; prints the recount, which is the row to commit when they differ.
#[cfg(test)]
pub(crate) fn assert_recount<S: Debug>(
    table: &str,
    proof: &str,
    shape: &S,
    committed: Option<R1csCounts>,
    recounted: R1csCounts,
    started: std::time::Instant,
) {
    println!(
        "{proof}: {shape:?} recounted in {:.1} s, peak RSS {:?} bytes: {recounted:?}",
        started.elapsed().as_secs_f64(),
        crate::rss::peak_rss_bytes()
    );
    assert_eq!(
        committed,
        Some(recounted),
        "{table}'s row for {proof} is not what the circuit has: put these counts in it"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(constraints: usize) -> R1csCounts {
        R1csCounts {
            constraints,
            inputs: 1,
            aux: 0,
            a_aux_density: 0,
            b_input_density: 0,
            b_aux_density: 0,
            nonzeros: [0; 3],
            stored_coefficients: [0; 3],
        }
    }

    #[test]
    fn a_shape_finds_its_own_row_only() {
        let table = [
            Counted {
                shape: (2048u64, 2usize),
                counts: counts(10),
            },
            Counted {
                shape: (2048, 4),
                counts: counts(20),
            },
        ];
        assert_eq!(committed(&table, &(2048, 4)), Some(counts(20)));
        assert_eq!(committed(&table, &(2048, 8)), None);
    }
}
