//! The SnapDeals (EmptySectorUpdate) partition of any sector size, counted without a sector,
//! vanilla proofs or parameter files: for `plan --snap-shape`, as `filecoin::shape` and
//! `post::shape` do for PoRep and PoSt.
//!
//! The partition's R1CS is counted from storage-proofs-update's own blank circuit
//! (`EmptySectorUpdateCompound::blank_circuit`, the circuit its parameter setup synthesizes):
//! one proving key serves every SnapDeals proof of a sector size, so its shape cannot depend on
//! the inputs. A test holds the 2 KiB count to a real partition's, built from real vanilla
//! proofs, and to the real parameters' query counts. The counts are committed
//! ([`COUNTED_SNAP_SHAPES`]), so a plan has the 32 GiB shape without synthesizing first.
//!
//! `bench --snap-shape` proves placeholder partitions of that exact circuit
//! ([`placeholder_source`], their values from `snap/placeholder.rs`) with timing-only parameters
//! of these counts, synthesized in one pass or from the matrices ([`matrices_in`]); the
//! `snap_partition_witness` bench times a placeholder partition's witness both ways
//! ([`PlaceholderSnapWitness`]).

use std::marker::PhantomData;

use bellperson::util_cs::witness_cs::WitnessCS;
use bellperson::{Circuit, ConstraintSystem};
use blstrs::Scalar as Fr;
use filecoin_proofs::with_shape;
use filecoin_proofs_api::{MerkleTreeTrait, RegisteredUpdateProof};
use serde::Serialize;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicParams,
};

use super::names::update_proof_name;
use super::placeholder::placeholder_partition;
use super::source::{SnapJob, SnapPartitions, Vanilla, circuit_of};
use crate::counted::{Counted, committed};
use crate::witness::snap::SnapPartitionWitness;
use crate::witness::{Assignment, NativeWitness, write_whole};
use proofpipe_pipeline::circuits::{R1csCounts, count_r1cs_structure};
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::matrices_file::MatricesOrigin;
use proofpipe_pipeline::groth16::{R1csMatrices, SynthesisMode};

/// What fixes a SnapDeals partition's circuit structure: the sector size (its trees' shapes)
/// and the public parameters' counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SnapShape {
    pub sector_size: u64,
    /// Partitions of one proof (curio sends them all in one request).
    pub partitions: usize,
    /// Challenges in one partition's circuit.
    pub challenges_per_partition: usize,
}

impl SnapShape {
    /// `proof`'s partition shape, from storage-proofs-update's own public parameters.
    pub fn of(proof: RegisteredUpdateProof) -> Self {
        let sector_size = u64::from(proof.sector_size());
        let pp = PublicParams::from_sector_size(sector_size);
        Self {
            sector_size,
            partitions: pp.partition_count,
            challenges_per_partition: pp.challenge_count,
        }
    }
}

/// Counts one partition of `proof` from the blank circuit (no witness).
pub fn count(proof: RegisteredUpdateProof) -> Result<R1csCounts, ProverError> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, count_shape, proof)
}

fn count_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredUpdateProof,
) -> Result<R1csCounts, ProverError> {
    let pp = PublicParams::from_sector_size(u64::from(proof.sector_size()));
    let circuit = <EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::blank_circuit(&pp);
    count_r1cs_structure(circuit).map_err(|e| ProverError::Synthesis {
        partition: 0,
        message: format!(
            "counting the blank {} partition: {e}",
            update_proof_name(proof)
        ),
    })
}

/// The partitions of a placeholder SnapDeals proof of `proof`: any partition index, each the
/// proof's exact partition circuit with pseudorandom values from `(seed, partition)`,
/// synthesized in one pass or from the sector size's R1CS matrices and the native witness.
pub fn placeholder_source(
    proof: RegisteredUpdateProof,
    seed: u64,
    synthesis: SynthesisMode,
) -> Result<SnapJob, ProverError> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, placeholder_shape, proof, seed, synthesis)
}

/// A placeholder partition's witness, both ways: `EmptySectorUpdateCircuit`'s own synthesis
/// (the gadgets, what one-pass synthesis runs) and the native witness, for benchmarks.
pub struct PlaceholderSnapWitness {
    gadget: Box<dyn Fn() -> Result<Assignment, ProverError> + Send + Sync>,
    native: SnapPartitionWitness,
}

impl PlaceholderSnapWitness {
    /// Partition `partition` of `proof`'s placeholder.
    pub fn new(proof: RegisteredUpdateProof, partition: u32) -> Result<Self, ProverError> {
        let size = u64::from(proof.sector_size());
        with_shape!(size, placeholder_snap_witness, size, partition)
    }

    /// The circuit's own synthesis on bellperson's witness-only constraint system, on this
    /// thread.
    pub fn by_gadgets(&self) -> Result<Assignment, ProverError> {
        (self.gadget)()
    }

    /// The native witness, on this thread, into `out` (cleared first; its capacity is kept).
    pub fn natively_into(&self, out: &mut Assignment) {
        write_whole(&self.native, out);
    }

    /// The native witness's parts (apex hashes, the partition path and digests, challenges).
    pub fn parts(&self) -> usize {
        self.native.parts()
    }
}

fn placeholder_snap_witness<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    partition: u32,
) -> Result<PlaceholderSnapWitness, ProverError> {
    let fail = move |message: String| ProverError::Synthesis { partition, message };
    let pp = PublicParams::from_sector_size(sector_size);
    let (inputs, vanilla) = placeholder_partition::<Tree>(&pp, 0, partition).map_err(fail)?;
    let native = SnapPartitionWitness::of(&pp, &inputs, &vanilla).map_err(fail)?;
    let gadget = move || {
        let mut cs = WitnessCS::<Fr>::new();
        circuit_of(&pp, &inputs, &vanilla)
            .map_err(fail)?
            .synthesize(&mut cs)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Assignment {
            inputs: cs.scalar_inputs(),
            aux: cs.scalar_aux(),
        })
    };
    Ok(PlaceholderSnapWitness {
        gadget: Box::new(gadget),
        native,
    })
}

/// `proof`'s partition matrices in their file in `dir` (ADR 0031): read and checked when it
/// holds them, else recorded from a placeholder partition and written, so that provers sharing
/// `dir` never record them.
pub fn matrices_in(
    proof: RegisteredUpdateProof,
    dir: &std::path::Path,
) -> Result<(R1csMatrices, MatricesOrigin), ProverError> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, placeholder_matrices, size, dir)
}

fn placeholder_matrices<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    dir: &std::path::Path,
) -> Result<(R1csMatrices, MatricesOrigin), ProverError> {
    SnapPartitions::<Tree> {
        public_params: PublicParams::from_sector_size(sector_size),
        vanilla: Vanilla::Placeholder { seed: 0 },
        matrices: None,
        _tree: PhantomData,
    }
    .read_or_record_matrices(Some(dir))
}

fn placeholder_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredUpdateProof,
    seed: u64,
    synthesis: SynthesisMode,
) -> Result<SnapJob, ProverError> {
    SnapPartitions::<Tree> {
        public_params: PublicParams::from_sector_size(u64::from(proof.sector_size())),
        vanilla: Vanilla::Placeholder { seed },
        matrices: None,
        _tree: PhantomData,
    }
    .into_job(proof, synthesis)
}

/// The SnapDeals partitions counted by [`count`]. Tests recount 2 KiB; `cargo test -p
/// proofpipe-filecoin --lib -- --ignored counted_snap_shape_of` recounts 32 GiB and 64 GiB.
pub const COUNTED_SNAP_SHAPES: &[Counted<SnapShape>] = &[
    // StackedDrg2KiBV1
    Counted {
        shape: SnapShape {
            sector_size: filecoin_proofs::SECTOR_SIZE_2_KIB,
            partitions: 1,
            challenges_per_partition: 10,
        },
        counts: R1csCounts {
            constraints: 1_705_044,
            inputs: 5,
            aux: 1_703_569,
            a_aux_density: 1_697_189,
            b_input_density: 1,
            b_aux_density: 444_403,
            nonzeros: [4_030_892, 1_706_537, 3_616_648],
            stored_coefficients: [2_410_248, 348, 429_460],
        },
    },
    // StackedDrg32GiBV1
    Counted {
        shape: SnapShape {
            sector_size: filecoin_proofs::SECTOR_SIZE_32_GIB,
            partitions: 16,
            challenges_per_partition: 86,
        },
        counts: R1csCounts {
            constraints: 81_049_504,
            inputs: 5,
            aux: 80_978_488,
            a_aux_density: 80_743_581,
            b_input_density: 1,
            b_aux_density: 20_983_607,
            nonzeros: [190_374_912, 81_118_127, 172_187_492],
            stored_coefficients: [113_293_106, 13_958, 20_421_355],
        },
    },
    // StackedDrg64GiBV1
    Counted {
        shape: SnapShape {
            sector_size: filecoin_proofs::SECTOR_SIZE_64_GIB,
            partitions: 16,
            challenges_per_partition: 86,
        },
        counts: R1csCounts {
            constraints: 85_006_106,
            inputs: 5,
            aux: 84_931_220,
            a_aux_density: 84_682_725,
            b_input_density: 1,
            b_aux_density: 22_012_683,
            nonzeros: [199_699_032, 85_077_653, 180_585_650],
            stored_coefficients: [118_858_768, 14_302, 21_418_955],
        },
    },
];

/// The committed counts of `proof`'s partition, refused if the table has none of its shape.
pub fn counted(proof: RegisteredUpdateProof) -> Result<R1csCounts, ProverError> {
    let shape = SnapShape::of(proof);
    committed(COUNTED_SNAP_SHAPES, &shape).ok_or_else(|| ProverError::InvalidArgument {
        what: "SnapDeals shape",
        reason: format!(
            "no committed counts for {} ({} partitions of {} challenges): add its row to \
                 COUNTED_SNAP_SHAPES in filecoin/src/snap/shape.rs from \
                 snap::shape::count",
            update_proof_name(proof),
            shape.partitions,
            shape.challenges_per_partition
        ),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::counted::assert_recount;

    fn recount(proof: RegisteredUpdateProof) {
        let started = Instant::now();
        let recounted = count(proof).unwrap();
        assert_recount(
            "COUNTED_SNAP_SHAPES",
            &update_proof_name(proof),
            &SnapShape::of(proof),
            counted(proof).ok(),
            recounted,
            started,
        );
    }

    #[test]
    fn counted_snap_shape_of_2kib_matches_a_recount() {
        recount(RegisteredUpdateProof::StackedDrg2KiBV1);
    }

    #[test]
    #[ignore = "~45 s on one core: recounts the 81M-constraint 32 GiB SnapDeals partition"]
    fn counted_snap_shape_of_32gib_matches_a_recount() {
        recount(RegisteredUpdateProof::StackedDrg32GiBV1);
    }

    #[test]
    #[ignore = "~45 s on one core: recounts the 85M-constraint 64 GiB SnapDeals partition"]
    fn counted_snap_shape_of_64gib_matches_a_recount() {
        recount(RegisteredUpdateProof::StackedDrg64GiBV1);
    }

    #[test]
    fn shapes_are_storage_proofs_update_s() {
        let shape = SnapShape::of(RegisteredUpdateProof::StackedDrg32GiBV1);
        assert_eq!(shape.partitions, 16);
        assert_eq!(
            SnapShape::of(RegisteredUpdateProof::StackedDrg2KiBV1).partitions,
            1
        );
    }
}
