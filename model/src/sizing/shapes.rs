//! One partition's R1CS dimensions and proving-key size for each registered Filecoin proof a
//! ProofJob may name, so that the operator can size a job before any prover loads its
//! parameters. Copied from the prover's committed counts (`filecoin/src/counted.rs`
//! and the kinds' tables), which a prover test holds this table to; a proof without counted
//! shapes has no row, and a job of it is never judged too large.

use crate::sizing::circuit::CircuitShape;

/// A registered proof's partition: its circuit's dimensions and its proving key's heap
/// bytes (every query point, with the densities the circuit has).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionShapeRow {
    pub proof: &'static str,
    pub shape: CircuitShape,
    pub params_bytes: u64,
}

/// The partition shape of `proof` (a registered seal, update or PoSt proof), if counted.
pub fn partition_shape(proof: &str) -> Option<PartitionShapeRow> {
    PARTITION_SHAPES
        .iter()
        .find(|row| row.proof == proof)
        .copied()
}

const fn row(
    proof: &'static str,
    constraints: usize,
    aux: usize,
    inputs: usize,
    params_bytes: u64,
) -> PartitionShapeRow {
    PartitionShapeRow {
        proof,
        shape: CircuitShape {
            constraints,
            aux,
            inputs,
        },
        params_bytes,
    }
}

/// Every registered proof with counted shapes (prover test
/// `filecoin::tests::model_partition_shapes_are_the_counted_ones` prints the rows to commit).
pub const PARTITION_SHAPES: &[PartitionShapeRow] = &[
    row("StackedDrg2KiBV1_1", 2687961, 2685673, 40, 1114703040),
    row("StackedDrg8MiBV1_1", 3844969, 3842449, 40, 1429023168),
    row("StackedDrg512MiBV1_1", 4423473, 4420837, 40, 1988836416),
    row(
        "StackedDrg32GiBV1_1",
        130278869,
        130169893,
        328,
        47373896256,
    ),
    row(
        "StackedDrg64GiBV1_1",
        131186177,
        131076643,
        328,
        47624934912,
    ),
    row(
        "StackedDrg2KiBV1_1_Feat_SyntheticPoRep",
        2687961,
        2685673,
        40,
        1114703040,
    ),
    row(
        "StackedDrg8MiBV1_1_Feat_SyntheticPoRep",
        3844969,
        3842449,
        40,
        1429023168,
    ),
    row(
        "StackedDrg512MiBV1_1_Feat_SyntheticPoRep",
        4423473,
        4420837,
        40,
        1988836416,
    ),
    row(
        "StackedDrg32GiBV1_1_Feat_SyntheticPoRep",
        130278869,
        130169893,
        328,
        47373896256,
    ),
    row(
        "StackedDrg64GiBV1_1_Feat_SyntheticPoRep",
        131186177,
        131076643,
        328,
        47624934912,
    ),
    row("StackedDrg2KiBV1", 1705044, 1703569, 5, 655788096),
    row("StackedDrg32GiBV1", 81049504, 80978488, 5, 34453500000),
    row("StackedDrg64GiBV1", 85006106, 84931220, 5, 35507493984),
    row("StackedDrgWinning2KiBV1", 90883, 91674, 133, 47285472),
    row("StackedDrgWinning32GiBV1", 370723, 375210, 133, 192036576),
    row("StackedDrgWinning64GiBV1", 391447, 396000, 133, 200000928),
    row("StackedDrgWindow2KiBV1_2", 21889, 22128, 23, 11498400),
    row(
        "StackedDrgWindow32GiBV1_2",
        125305057,
        126902376,
        25840,
        60777892704,
    ),
    row(
        "StackedDrgWindow64GiBV1_2",
        129913201,
        131500200,
        25301,
        62554303776,
    ),
];
