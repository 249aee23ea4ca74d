//! Committed R1CS counts of Filecoin partitions: one table per proof kind (PoRep in
//! [`super::shape`], PoSt in [`super::post::shape`], SnapDeals in [`super::snap::shape`]),
//! each row a partition shape and its counts, so that a plan has a 32 GiB partition's shape
//! without synthesizing one. Each kind's tests recount its rows from the circuit.

use std::fmt::Debug;

#[cfg(test)]
use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::circuits::R1csCounts;

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
        proofpipe_pipeline::rss::peak_rss_bytes()
    );
    assert_eq!(
        committed,
        Some(recounted),
        "{table}'s row for {proof} is not what the circuit has: put these counts in it"
    );
}

/// Holds a synthesized partition to `counts`: its constraints, variables and densities (the
/// matrices' nonzeros need a count of their own).
#[cfg(test)]
pub(crate) fn assert_synthesized_as_counted(
    synthesized: &proofpipe_pipeline::groth16::Synthesized,
    counts: &R1csCounts,
) {
    let s = synthesized;
    assert_eq!(s.a.len(), counts.constraints);
    assert_eq!((s.inputs.len(), s.aux.len()), (counts.inputs, counts.aux));
    assert_eq!(s.a_aux_density.get_total_density(), counts.a_aux_density);
    assert_eq!(
        s.b_input_density.get_total_density(),
        counts.b_input_density
    );
    assert_eq!(s.b_aux_density.get_total_density(), counts.b_aux_density);
}

/// The counts of every registered proof a ProofJob may name, by the model's kinds' tables:
/// `None` for a proof whose shape no table commits.
#[cfg(test)]
pub(crate) fn registered_counts() -> Vec<(&'static str, Option<R1csCounts>)> {
    use proofpipe_model::kinds::{POST_PROOFS, SEAL_PROOFS, UPDATE_PROOFS};
    let seal = SEAL_PROOFS.iter().map(|&(name, _)| {
        let proof = super::parse_seal_proof(name).unwrap();
        (name, super::shape::counted(proof).ok())
    });
    let update = UPDATE_PROOFS.iter().map(|&(name, _)| {
        let proof = super::snap::parse_update_proof(name).unwrap();
        (name, super::snap::shape::counted(proof).ok())
    });
    let post = POST_PROOFS.iter().map(|&(name, _)| {
        let proof = super::post::parse_post_proof(name).unwrap();
        (name, super::post::shape::counted(proof).ok())
    });
    seal.chain(update).chain(post).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operator sizes jobs by the model's copy of these tables; this holds it to them and
    /// prints the rows to commit when they differ.
    #[test]
    fn model_partition_shapes_are_the_counted_ones() {
        use proofpipe_model::sizing::{PARTITION_SHAPES, PartitionShapeRow};
        let expected: Vec<PartitionShapeRow> = registered_counts()
            .into_iter()
            .filter_map(|(proof, counts)| {
                let counts = counts?;
                Some(PartitionShapeRow {
                    proof,
                    shape: counts.shape(),
                    params_bytes: counts.query_counts().params_heap_bytes(),
                })
            })
            .collect();
        for row in &expected {
            let CircuitShape {
                constraints,
                aux,
                inputs,
            } = row.shape;
            println!(
                "    row({:?}, {constraints}, {aux}, {inputs}, {}),",
                row.proof, row.params_bytes
            );
        }
        assert_eq!(
            PARTITION_SHAPES, expected,
            "model/src/sizing/shapes.rs's PARTITION_SHAPES is not what the prover counts: \
             put the rows printed above in it"
        );
    }

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
