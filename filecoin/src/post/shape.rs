//! The WindowPoSt partition and the WinningPoSt of any sector size, without sealed sectors or
//! parameter files: for timing the real 32 GiB PoSt circuits with timing-only parameters
//! (ADR 0008), as `filecoin::shape` does for PoRep.
//!
//! - **Placeholder vanilla proofs** ([`placeholder_source`]): the partition's sectors as its
//!   circuit has them (`sector_count` of the public parameters: 2349 sectors of 10 challenges
//!   for a 32 GiB WindowPoSt partition; 66 "sectors" of 1 challenge for a WinningPoSt, whose 66
//!   challenges filecoin-proofs unrolls so), each challenge's inclusion path of the sector
//!   size's tree R, with pseudorandom values from `(seed, partition)`.
//!   `FallbackPoStCompound::circuit` builds the circuit from them as from a real partition's:
//!   the structure depends only on those counts and the tree shape. The witness proves nothing;
//!   timing only. A test holds the 2 KiB placeholder to a real PoSt partition, variable by
//!   variable, and the committed counts to the real parameters' query counts.
//! - **Counts per proof** ([`COUNTED_POST_SHAPES`], [`counted`]): one partition's R1CS shape,
//!   counted once with [`count`] and committed, so a plan or a benchmark has the 32 GiB shapes
//!   without synthesizing first. Tests recount 2 KiB; ignored tests recount 32 GiB and 64 GiB.

use std::sync::Arc;

use filecoin_proofs::with_shape;
use filecoin_proofs_api::{MerkleTreeTrait, RegisteredPoStProof};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde::Serialize;
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_post::fallback::{self, FallbackPoStCircuit, PublicSector};

use super::{
    Domain, PostKind, fallback_circuit, kind_name, matrices_key, post_proof_name, public_params,
    record_matrices, resident_matrices, synthesize_native,
};
use crate::counted::{Counted, committed};
use crate::shape::{random_domain, tree_proof};
use crate::witness::post::PostPartitionWitness;
use crate::witness::{Assignment, write_whole};
use bellperson::util_cs::witness_cs::WitnessCS;
use bellperson::{Circuit, ConstraintSystem};
use blstrs::Scalar as Fr;
use proofpipe_kernels::EvalAlloc;
use proofpipe_pipeline::circuits::{CircuitShape, R1csCounts, count_r1cs};
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::matrices_file::MatricesOrigin;
use proofpipe_pipeline::groth16::{self, R1csMatrices, SynthesisMode};
use proofpipe_pipeline::pipeline::{PartitionSource, Synthesis};

/// What fixes a PoSt partition's circuit structure: its public parameters' counts and the
/// sector size (the tree's shape).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PostShape {
    #[serde(serialize_with = "kind_as_name")]
    pub kind: PostKind,
    pub sector_size: u64,
    /// Sectors in one partition's circuit (a WinningPoSt: one per challenge).
    pub sectors_per_partition: usize,
    /// Challenges per circuit sector.
    pub challenges_per_sector: usize,
}

fn kind_as_name<S: serde::Serializer>(kind: &PostKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind_name(kind))
}

impl PostShape {
    /// `proof`'s partition shape, from filecoin-proofs' own public parameters.
    pub fn of(proof: RegisteredPoStProof) -> Result<Self, ProverError> {
        let size = u64::from(proof.sector_size());
        with_shape!(size, shape_of, proof)
    }
}

fn shape_of<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredPoStProof,
) -> Result<PostShape, ProverError> {
    let config = proof.as_v1_config();
    let pp = public_params::<Tree>(&config)?;
    Ok(PostShape {
        kind: config.typ,
        sector_size: u64::from(proof.sector_size()),
        sectors_per_partition: pp.sector_count,
        challenges_per_sector: pp.challenge_count,
    })
}

/// The partitions of a placeholder PoSt of `proof`: any partition index, each the proof's exact
/// circuit with pseudorandom values from `(seed, partition)`, synthesized in one pass or from
/// the resident R1CS matrices (returned too; recorded from partition 0 unless resident or in
/// their file) and the native witness.
pub fn placeholder_source(
    proof: RegisteredPoStProof,
    seed: u64,
    synthesis: SynthesisMode,
) -> Result<PlaceholderPost, ProverError> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, placeholder_shape, proof, seed, synthesis)
}

/// A placeholder PoSt's partitions and, from the matrices, the matrices they synthesize from.
pub struct PlaceholderPost {
    pub source: Arc<dyn PartitionSource>,
    pub matrices: Option<Arc<R1csMatrices>>,
}

fn placeholder_shape<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredPoStProof,
    seed: u64,
    synthesis: SynthesisMode,
) -> Result<PlaceholderPost, ProverError> {
    let mut partitions = PlaceholderPartitions::<Tree>::new(proof, seed)?;
    if synthesis == SynthesisMode::Matrices {
        partitions.matrices = Some(resident_matrices(&partitions.public_params, || {
            partitions
                .circuit(0)
                .map_err(|e| format!("building the placeholder FallbackPoStCircuit: {e:#}"))
        })?);
    }
    let matrices = partitions.matrices.clone();
    Ok(PlaceholderPost {
        source: Arc::new(partitions),
        matrices,
    })
}

struct PlaceholderPartitions<Tree: 'static + MerkleTreeTrait> {
    public_params: fallback::PublicParams,
    /// One sector (the circuit repeats the last public sector for the rest, as it does for a
    /// partition short of sectors: the structure is the same).
    public_inputs: fallback::PublicInputs<Domain<Tree>>,
    nodes: usize,
    seed: u64,
    /// Two-pass synthesis from these, when set.
    matrices: Option<Arc<R1csMatrices>>,
}

impl<Tree: 'static + MerkleTreeTrait> PlaceholderPartitions<Tree> {
    fn new(proof: RegisteredPoStProof, seed: u64) -> Result<Self, ProverError> {
        let public_params = public_params::<Tree>(&proof.as_v1_config())?;
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let public_inputs = fallback::PublicInputs {
            randomness: random_domain(&mut rng),
            prover_id: random_domain(&mut rng),
            sectors: vec![PublicSector {
                id: 1.into(),
                comm_r: random_domain(&mut rng),
            }],
            k: Some(0),
        };
        Ok(Self {
            nodes: public_params.sector_size as usize / NODE_SIZE,
            public_params,
            public_inputs,
            seed,
            matrices: None,
        })
    }

    /// Partition `partition`'s circuit: every circuit sector with its challenges' Merkle paths
    /// of tree R, pseudorandom values.
    fn circuit(&self, partition: u32) -> anyhow::Result<FallbackPoStCircuit<Tree>> {
        self.circuit_of(&self.vanilla(partition))
    }

    /// Partition `partition`'s vanilla proof: every circuit sector's.
    fn vanilla(&self, partition: u32) -> fallback::Proof<Tree::Proof> {
        let mut rng = ChaCha20Rng::seed_from_u64(self.seed);
        rng.set_stream(u64::from(partition) + 1);
        let sectors = (0..self.public_params.sector_count)
            .map(|_| {
                let comm_c = random_domain(&mut rng);
                let comm_r_last = random_domain(&mut rng);
                let inclusion_proofs = (0..self.public_params.challenge_count)
                    .map(|_| {
                        let challenge =
                            rand_core::RngCore::next_u64(&mut rng) as usize % self.nodes;
                        tree_proof::<Tree>(self.nodes, challenge, comm_r_last, &mut rng)
                    })
                    .collect();
                fallback::SectorProof {
                    inclusion_proofs,
                    comm_c,
                    comm_r_last,
                }
            })
            .collect();
        fallback::Proof { sectors }
    }

    fn circuit_of(
        &self,
        vanilla: &fallback::Proof<Tree::Proof>,
    ) -> anyhow::Result<FallbackPoStCircuit<Tree>> {
        fallback_circuit(&self.public_inputs, &self.public_params, vanilla, 0)
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionSource for PlaceholderPartitions<Tree> {
    /// As the real PoSt partitions (`FallbackPartitions`).
    fn synthesis_threads(&self) -> usize {
        self.public_params.sector_count
    }

    fn synthesizes_in_subsystems(&self) -> bool {
        self.matrices.is_none()
    }

    fn synthesize(&self, partition: u32, shape: CircuitShape, evals: &EvalAlloc) -> Synthesis {
        let fail = |message: String| ProverError::Synthesis { partition, message };
        let vanilla = self.vanilla(partition);
        let circuit = self.circuit_of(&vanilla).map_err(|e| {
            fail(format!(
                "building the placeholder FallbackPoStCircuit: {e:#}"
            ))
        })?;
        match &self.matrices {
            Some(matrices) => synthesize_native(&circuit, &vanilla, matrices, evals),
            None => {
                drop(vanilla);
                groth16::synthesize_into(circuit, shape, evals).map_err(|e| e.to_string())
            }
        }
        .map_err(fail)
    }
}

/// The first sectors of a placeholder PoSt partition, ready to be witnessed either way, as
/// often as asked: by `FallbackPoStCircuit`'s own synthesis on bellperson's witness-only
/// constraint system (the gadgets) and natively ([`crate::witness::post`]). For the benchmark
/// that times one against the other.
pub struct PlaceholderPostWitness {
    gadget: Box<dyn Fn() -> Result<Assignment, ProverError> + Send + Sync>,
    native: PostPartitionWitness,
}

impl PlaceholderPostWitness {
    /// Partition 0 of `proof`'s placeholder, cut to its first `sectors` sectors.
    pub fn new(proof: RegisteredPoStProof, sectors: usize) -> Result<Self, ProverError> {
        let size = u64::from(proof.sector_size());
        with_shape!(size, placeholder_post_witness, proof, sectors)
    }

    /// The circuit's own synthesis. bellperson's `WitnessCS` is extensible, so the circuit
    /// synthesizes groups of sectors on rayon's threads (run it in a one-thread pool to time
    /// one core) and keeps each group's temporary ONE among the inputs.
    pub fn by_gadgets(&self) -> Result<Assignment, ProverError> {
        (self.gadget)()
    }

    /// The native witness, on this thread, into `out` (cleared first; its capacity is kept).
    pub fn natively_into(&self, out: &mut Assignment) {
        write_whole(&self.native, out);
    }
}

fn placeholder_post_witness<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredPoStProof,
    sectors: usize,
) -> Result<PlaceholderPostWitness, ProverError> {
    let fail = |message: String| ProverError::Synthesis {
        partition: 0,
        message,
    };
    let partitions = PlaceholderPartitions::<Tree>::new(proof, 0)?;
    let mut vanilla = partitions.vanilla(0);
    let mut circuit = partitions
        .circuit_of(&vanilla)
        .map_err(|e| fail(format!("{e:#}")))?;
    if sectors == 0 || sectors > circuit.sectors.len() {
        return Err(fail(format!(
            "{sectors} sectors of a partition of {}",
            circuit.sectors.len()
        )));
    }
    circuit.sectors.truncate(sectors);
    vanilla.sectors.truncate(sectors);
    let native = PostPartitionWitness::of(&circuit, &vanilla).map_err(fail)?;
    let gadget = move || {
        let mut cs = WitnessCS::<Fr>::new();
        circuit
            .clone()
            .synthesize(&mut cs)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Assignment {
            inputs: cs.scalar_inputs(),
            aux: cs.scalar_aux(),
        })
    };
    Ok(PlaceholderPostWitness {
        gadget: Box::new(gadget),
        native,
    })
}

/// `proof`'s partition matrices in their file in `dir` (ADR 0031): read and checked when it
/// holds them, else recorded from a placeholder partition (the structure does not depend on
/// the witness) and written, so that provers sharing `dir` never record them.
pub fn matrices_in(
    proof: RegisteredPoStProof,
    dir: &std::path::Path,
) -> Result<(R1csMatrices, MatricesOrigin), ProverError> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, placeholder_matrices, proof, dir)
}

fn placeholder_matrices<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredPoStProof,
    dir: &std::path::Path,
) -> Result<(R1csMatrices, MatricesOrigin), ProverError> {
    let partitions = PlaceholderPartitions::<Tree>::new(proof, 0)?;
    let key = matrices_key(&partitions.public_params);
    crate::matrices::read_or_record(&key, Some(dir), || {
        let circuit = partitions.circuit(0).map_err(|e| ProverError::Synthesis {
            partition: 0,
            message: format!("building the placeholder FallbackPoStCircuit: {e:#}"),
        })?;
        record_matrices(&circuit)
    })
}

/// Counts partition 0 of `proof`'s placeholder PoSt (every witness value computed, none kept).
pub fn count(proof: RegisteredPoStProof) -> Result<R1csCounts, ProverError> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, count_shape, proof)
}

fn count_shape<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredPoStProof,
) -> Result<R1csCounts, ProverError> {
    let fail = |message: String| ProverError::Synthesis {
        partition: 0,
        message: format!("counting the placeholder PoSt partition: {message}"),
    };
    let circuit = PlaceholderPartitions::<Tree>::new(proof, 0)?
        .circuit(0)
        .map_err(|e| fail(format!("{e:#}")))?;
    count_r1cs(circuit).map_err(|e| fail(e.to_string()))
}

/// The PoSt partitions counted by [`count`]. Tests recount 2 KiB; `cargo test -p
/// proofpipe-filecoin --lib -- --ignored counted_post_shape_of` recounts 32 GiB and 64 GiB.
pub const COUNTED_POST_SHAPES: &[Counted<PostShape>] = &[
    // StackedDrgWinning2KiBV1
    Counted {
        shape: PostShape {
            kind: PostKind::Winning,
            sector_size: filecoin_proofs::SECTOR_SIZE_2_KIB,
            sectors_per_partition: 66,
            challenges_per_sector: 1,
        },
        counts: R1csCounts {
            constraints: 90_883,
            inputs: 133,
            aux: 91_674,
            a_aux_density: 69_300,
            b_input_density: 1,
            b_aux_density: 66_792,
            nonzeros: [621_985, 92_070, 113_652],
            stored_coefficients: [548_988, 1_188, 20_658],
        },
    },
    // StackedDrgWindow2KiBV1_2
    Counted {
        shape: PostShape {
            kind: PostKind::Window,
            sector_size: filecoin_proofs::SECTOR_SIZE_2_KIB,
            sectors_per_partition: 2,
            challenges_per_sector: 10,
        },
        counts: R1csCounts {
            constraints: 21_889,
            inputs: 23,
            aux: 22_128,
            a_aux_density: 16_770,
            b_input_density: 1,
            b_aux_density: 16_028,
            nonzeros: [150_285, 22_230, 27_456],
            stored_coefficients: [132_430, 324, 4_910],
        },
    },
    // StackedDrgWinning32GiBV1
    Counted {
        shape: PostShape {
            kind: PostKind::Winning,
            sector_size: filecoin_proofs::SECTOR_SIZE_32_GIB,
            sectors_per_partition: 66,
            challenges_per_sector: 1,
        },
        counts: R1csCounts {
            constraints: 370_723,
            inputs: 133,
            aux: 375_210,
            a_aux_density: 284_196,
            b_input_density: 1,
            b_aux_density: 272_184,
            nonzeros: [2_549_185, 376_662, 465_300],
            stored_coefficients: [2_247_564, 5_412, 83_490],
        },
    },
    // StackedDrgWindow32GiBV1_2
    Counted {
        shape: PostShape {
            kind: PostKind::Window,
            sector_size: filecoin_proofs::SECTOR_SIZE_32_GIB,
            sectors_per_partition: 2349,
            challenges_per_sector: 10,
        },
        counts: R1csCounts {
            constraints: 125_305_057,
            inputs: 25_840,
            aux: 126_902_376,
            a_aux_density: 96_179_805,
            b_input_density: 1,
            b_aux_density: 91_925_766,
            nonzeros: [862_416_559, 127_398_015, 157_401_792],
            stored_coefficients: [760_077_675, 1_883_898, 28_129_275],
        },
    },
    // StackedDrgWinning64GiBV1
    Counted {
        shape: PostShape {
            kind: PostKind::Winning,
            sector_size: filecoin_proofs::SECTOR_SIZE_64_GIB,
            sectors_per_partition: 66,
            challenges_per_sector: 1,
        },
        counts: R1csCounts {
            constraints: 391_447,
            inputs: 133,
            aux: 396_000,
            a_aux_density: 299_838,
            b_input_density: 1,
            b_aux_density: 287_694,
            nonzeros: [2_689_501, 397_518, 491_040],
            stored_coefficients: [2_372_040, 5_544, 88_440],
        },
    },
    // StackedDrgWindow64GiBV1_2
    Counted {
        shape: PostShape {
            kind: PostKind::Window,
            sector_size: filecoin_proofs::SECTOR_SIZE_64_GIB,
            sectors_per_partition: 2300,
            challenges_per_sector: 10,
        },
        counts: R1csCounts {
            constraints: 129_913_201,
            inputs: 25_301,
            aux: 131_500_200,
            a_aux_density: 99_624_500,
            b_input_density: 1,
            b_aux_density: 95_413_200,
            nonzeros: [893_324_601, 132_008_500, 163_088_400],
            stored_coefficients: [787_600_500, 1_890_600, 29_267_500],
        },
    },
];

/// The committed counts of `proof`'s partition, refused if the table has none of its shape.
pub fn counted(proof: RegisteredPoStProof) -> Result<R1csCounts, ProverError> {
    let shape = PostShape::of(proof)?;
    committed(COUNTED_POST_SHAPES, &shape).ok_or_else(|| ProverError::InvalidArgument {
        what: "PoSt shape",
        reason: format!(
            "no committed counts for {} ({} sectors of {} challenges per partition): add its \
                 row to COUNTED_POST_SHAPES in filecoin/src/post/shape.rs from \
                 post::shape::count",
            post_proof_name(proof),
            shape.sectors_per_partition,
            shape.challenges_per_sector
        ),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::counted::assert_recount;

    fn recount(proof: RegisteredPoStProof) {
        let started = Instant::now();
        let recounted = count(proof).unwrap();
        assert_recount(
            "COUNTED_POST_SHAPES",
            &post_proof_name(proof),
            &PostShape::of(proof).unwrap(),
            counted(proof).ok(),
            recounted,
            started,
        );
    }

    #[test]
    fn counted_post_shapes_of_2kib_match_a_recount() {
        recount(RegisteredPoStProof::StackedDrgWinning2KiBV1);
        recount(RegisteredPoStProof::StackedDrgWindow2KiBV1_2);
    }

    #[test]
    #[ignore = "~505 s on one core: recounts the 125M-constraint 32 GiB WindowPoSt partition"]
    fn counted_post_shape_of_32gib_matches_a_recount() {
        recount(RegisteredPoStProof::StackedDrgWinning32GiBV1);
        recount(RegisteredPoStProof::StackedDrgWindow32GiBV1_2);
    }

    #[test]
    #[ignore = "~522 s on one core: recounts the 130M-constraint 64 GiB WindowPoSt partition"]
    fn counted_post_shape_of_64gib_matches_a_recount() {
        recount(RegisteredPoStProof::StackedDrgWinning64GiBV1);
        recount(RegisteredPoStProof::StackedDrgWindow64GiBV1_2);
    }

    /// The native witness (`witness::post`) of a placeholder partition, held value for value
    /// to `FallbackPoStCircuit`'s own synthesis on the prover's assignment (its sectors in
    /// sub-systems, extended as bellperson's `ProvingAssignment` extends: bellperson's
    /// `WitnessCS` keeps each sub-system's temporary ONE among the inputs, the prover does not).
    fn native_witness_is_the_circuits<Tree: 'static + MerkleTreeTrait>(proof: RegisteredPoStProof) {
        use crate::witness::{NativeWitness, assert_same_assignment};

        let partitions = PlaceholderPartitions::<Tree>::new(proof, 5).unwrap();
        let vanilla = partitions.vanilla(0);
        let circuit = partitions.circuit_of(&vanilla).unwrap();
        let witness = PostPartitionWitness::of(&circuit, &vanilla).unwrap();
        let shape = count(proof).unwrap().shape();
        let synthesized = proofpipe_pipeline::groth16::synthesize(circuit, shape).unwrap();

        let mut prefix = Assignment::default();
        witness.prefix(&mut prefix);
        assert_eq!(prefix, Assignment::default(), "no prefix");
        let mut native = Assignment::default();
        write_whole(&witness, &mut native);
        assert_eq!(witness.parts(), partitions.public_params.sector_count);
        assert_same_assignment(
            &post_proof_name(proof),
            &native,
            &synthesized.inputs,
            &synthesized.aux,
        );
    }

    /// From the R1CS matrices (recorded sector by sector) and the native witness, a placeholder
    /// partition is what one pass makes of it: a, b, c, assignment and densities; the matrices
    /// are the predicted size and shared by the next job of the structure.
    fn two_pass_is_one_pass(proof: RegisteredPoStProof) {
        let counts = counted(proof).unwrap();
        let one_pass = placeholder_source(proof, 3, SynthesisMode::OnePass).unwrap();
        assert!(one_pass.matrices.is_none());
        let one_pass = one_pass.source;
        assert!(one_pass.synthesizes_in_subsystems());
        let two_pass = placeholder_source(proof, 3, SynthesisMode::Matrices).unwrap();
        let matrices = two_pass.matrices.unwrap();
        let two_pass = two_pass.source;
        assert!(!two_pass.synthesizes_in_subsystems());
        assert_eq!(matrices.shape(), counts.shape());
        matrices.check_predicted(&counts).unwrap();
        for partition in [0, 2] {
            let a = one_pass
                .synthesize(partition, counts.shape(), &EvalAlloc::heap())
                .unwrap();
            let b = two_pass
                .synthesize(partition, counts.shape(), &EvalAlloc::heap())
                .unwrap();
            assert_eq!(a.first_difference(&b), None, "{}", post_proof_name(proof));
        }
        let again = placeholder_source(proof, 4, SynthesisMode::Matrices).unwrap();
        assert!(Arc::ptr_eq(&again.matrices.unwrap(), &matrices));
    }

    #[test]
    fn a_post_partition_from_its_matrices_and_native_witness_is_its_one_pass_synthesis() {
        two_pass_is_one_pass(RegisteredPoStProof::StackedDrgWindow2KiBV1_2);
        two_pass_is_one_pass(RegisteredPoStProof::StackedDrgWinning2KiBV1);
    }

    #[test]
    fn a_post_partition_is_witnessed_value_for_value_as_fallback_post_circuit_synthesizes_it() {
        use filecoin_proofs::{SectorShape2KiB, SectorShape8MiB};
        native_witness_is_the_circuits::<SectorShape2KiB>(
            RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
        );
        native_witness_is_the_circuits::<SectorShape2KiB>(
            RegisteredPoStProof::StackedDrgWinning2KiBV1,
        );
        native_witness_is_the_circuits::<SectorShape8MiB>(
            RegisteredPoStProof::StackedDrgWindow8MiBV1_2,
        );
    }

    #[test]
    fn shapes_are_filecoin_proofs() {
        let winning = PostShape::of(RegisteredPoStProof::StackedDrgWinning32GiBV1).unwrap();
        assert_eq!(
            (winning.sectors_per_partition, winning.challenges_per_sector),
            (66, 1)
        );
        let window = PostShape::of(RegisteredPoStProof::StackedDrgWindow32GiBV1_2).unwrap();
        assert_eq!(
            (window.sectors_per_partition, window.challenges_per_sector),
            (2349, 10)
        );
    }
}
