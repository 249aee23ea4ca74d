//! The PoRep partition of any sector size, without a sealed sector or Filecoin's parameters:
//! for timing the real 32 GiB `StackedCircuit` (~130M constraints) with timing-only
//! parameters (ADR 0008) where neither a 32 GiB sector nor its ~45 GB of parameters exist.
//!
//! - **Placeholder vanilla proofs** ([`placeholder_vanilla_proofs`]): for each challenge of a
//!   partition, Merkle paths of tree D (binary, SHA-256), tree C and tree R (the sector size's
//!   arities and depths), the challenged node's and its 6 DRG and 8 expander parents' column
//!   proofs (one row per layer), the labeling proofs of every layer and the encoding proof,
//!   filled with pseudorandom field elements from a seed. `StackedCompound::circuit` builds
//!   the partition from them exactly as `seal_commit_phase2` builds it from a C1 output's: the
//!   circuit's structure (its constraints and which variables each one uses) depends only on
//!   the public parameters and the proofs' lengths, never on their values. The witness is
//!   arbitrary, so the circuit is not satisfied and no proof of it could verify; it is for
//!   timing only. Tests check at 2 KiB that the placeholder partition's R1CS is the real one
//!   (the same densities, variable by variable, as a sealed sector's partition; matrices
//!   recorded from it give a real sector's a, b, c, and a proof made that way passes
//!   `verify_seal`; the query counts equal the real parameters').
//! - **Counts per sector size** ([`COUNTED_SHAPES`], [`counted`]): the R1CS shape of one
//!   partition (dimensions, query densities, matrix nonzeros), counted once with
//!   [`count_r1cs`] (2 bits per variable: a 32 GiB partition in ~60 MiB) and committed, so a
//!   benchmark or a plan gets the 32 GiB shape and its timing-only parameters without
//!   synthesizing a partition first. Tests recount the small sizes; ignored tests recount
//!   32 GiB and 64 GiB.

use ff::Field;
use filecoin_proofs::{
    DefaultPieceDomain, DefaultPieceHasher, parameters::public_params, with_shape,
};
use filecoin_proofs_api::{ApiFeature, MerkleTreeTrait};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Serialize;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{MerkleProof, base_path_length};
use storage_proofs_porep::stacked::{
    self, Challenges, ColumnProof, EncodingProof, LabelingProof, ReplicaColumnProof, TOTAL_PARENTS,
};
use typenum::{U0, U2, Unsigned};

use super::counted::{Counted, committed};
use super::porep::{PorepJob, StackedPartitions, TreeDomain, Vanilla};
use super::{RegisteredSealProof, seal_proof_name};
use proofpipe_pipeline::circuits::{R1csCounts, count_r1cs};
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::matrices_file::MatricesOrigin;
use proofpipe_pipeline::groth16::{R1csMatrices, SynthesisMode};

mod c1;
mod witness;
pub use c1::placeholder_c1_output;
pub use witness::{PlaceholderWitness, placeholder_circuit_and_proofs};

/// What fixes a PoRep partition's circuit structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PartitionShape {
    pub sector_size: u64,
    /// Nodes of 32 bytes: the leaves of trees D, C and R.
    pub nodes: usize,
    pub layers: usize,
    pub challenges_per_partition: usize,
    pub partitions: u32,
}

impl PartitionShape {
    /// The shape of `proof`'s partitions, from filecoin-proofs' own setup parameters.
    pub fn of(proof: RegisteredSealProof) -> Result<Self, ProverError> {
        refuse_non_interactive(proof)?;
        let config = proof.as_v1_config();
        let setup = filecoin_proofs::parameters::setup_params(&config)
            .map_err(ProverError::filecoin("setting up the PoRep parameters"))?;
        Ok(Self {
            sector_size: u64::from(proof.sector_size()),
            nodes: setup.nodes,
            layers: setup.num_layers,
            challenges_per_partition: setup.challenges.num_challenges_per_partition(),
            partitions: usize::from(config.partitions) as u32,
        })
    }
}

fn refuse_non_interactive(proof: RegisteredSealProof) -> Result<(), ProverError> {
    if proof.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(ProverError::InvalidArgument {
            what: "seal proof",
            reason: format!(
                "{}: non-interactive PoRep aggregates its partition proofs, which proofpipe does \
                 not do yet",
                seal_proof_name(proof)
            ),
        });
    }
    Ok(())
}

/// A placeholder partition's settings.
#[derive(Clone, Copy, Debug)]
pub struct Placeholder {
    pub seal_proof: RegisteredSealProof,
    /// The vanilla proofs' values derive from `(seed, partition)`.
    pub seed: u64,
    /// Fewer challenges per partition than the proof has, to time a slice of a large partition
    /// (benchmarks); `None`: the proof's own count, the real circuit.
    pub challenges_per_partition: Option<usize>,
}

impl Placeholder {
    /// The real partition circuit of `seal_proof`, placeholder values.
    pub fn of(seal_proof: RegisteredSealProof) -> Self {
        Self {
            seal_proof,
            seed: 0,
            challenges_per_partition: None,
        }
    }
}

/// A PoRep job of placeholder partitions: `StackedCircuit`s of the sector size's exact shape
/// whose witness proves nothing. Its source builds partition k's vanilla proofs and circuit on
/// the synthesis worker (any k: a job may have more partitions than the sector size's).
pub fn placeholder_job(
    placeholder: Placeholder,
    synthesis: SynthesisMode,
) -> Result<PorepJob, ProverError> {
    refuse_non_interactive(placeholder.seal_proof)?;
    let size = u64::from(placeholder.seal_proof.sector_size());
    with_shape!(size, placeholder_shape, placeholder, synthesis)
}

/// `seal_proof`'s partition matrices in their file in `dir` (ADR 0031): read and checked when
/// it holds them, else recorded from a placeholder partition (the structure does not depend on
/// the witness) and written, so that provers sharing `dir` never record them.
pub fn matrices_in(
    seal_proof: RegisteredSealProof,
    dir: &std::path::Path,
) -> Result<(R1csMatrices, MatricesOrigin), ProverError> {
    refuse_non_interactive(seal_proof)?;
    let size = u64::from(seal_proof.sector_size());
    with_shape!(size, placeholder_matrices, seal_proof, dir)
}

fn placeholder_matrices<Tree: 'static + MerkleTreeTrait>(
    seal_proof: RegisteredSealProof,
    dir: &std::path::Path,
) -> Result<(R1csMatrices, MatricesOrigin), ProverError> {
    placeholder_partitions::<Tree>(Placeholder::of(seal_proof))?.read_or_record_matrices(Some(dir))
}

fn placeholder_shape<Tree: 'static + MerkleTreeTrait>(
    placeholder: Placeholder,
    synthesis: SynthesisMode,
) -> Result<PorepJob, ProverError> {
    let partitions = usize::from(placeholder.seal_proof.as_v1_config().partitions) as u32;
    placeholder_partitions::<Tree>(placeholder)?.into_job(
        placeholder.seal_proof,
        partitions,
        synthesis,
    )
}

fn placeholder_partitions<Tree: 'static + MerkleTreeTrait>(
    placeholder: Placeholder,
) -> Result<StackedPartitions<Tree>, ProverError> {
    let proof = placeholder.seal_proof;
    let mut public_params = public_params::<Tree>(&proof.as_v1_config()).map_err(
        ProverError::filecoin("setting up the PoRep public parameters"),
    )?;
    let own = public_params.challenges.num_challenges_per_partition();
    if let Some(n) = placeholder.challenges_per_partition {
        if n == 0 || n > own {
            return Err(ProverError::InvalidArgument {
                what: "placeholder challenges",
                reason: format!(
                    "{n} challenges per partition: {} has {own}; a slice of its partition has 1 to {own}",
                    seal_proof_name(proof),
                ),
            });
        }
        public_params.challenges = Challenges::new_interactive(n);
    }
    let mut rng = ChaCha20Rng::seed_from_u64(placeholder.seed);
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    let public_inputs = stacked::PublicInputs {
        replica_id: random_domain::<TreeDomain<Tree>>(&mut rng),
        tau: Some(stacked::Tau {
            comm_d: random_domain::<DefaultPieceDomain>(&mut rng),
            comm_r: random_domain::<TreeDomain<Tree>>(&mut rng),
        }),
        k: None,
        seed: Some(seed),
    };
    Ok(StackedPartitions {
        public_inputs,
        vanilla: Vanilla::Placeholder {
            seed: placeholder.seed,
            make: placeholder_vanilla_proofs::<Tree>,
        },
        public_params,
        matrices: None,
    })
}

pub(super) fn random_domain<D: From<blstrs::Scalar>>(rng: &mut ChaCha20Rng) -> D {
    blstrs::Scalar::random(rng).into()
}

fn random_domains<D: From<blstrs::Scalar>>(rng: &mut ChaCha20Rng, n: usize) -> Vec<D> {
    (0..n).map(|_| random_domain(rng)).collect()
}

/// A Merkle proof of `Tree`'s shape for leaf `index` of `nodes`: the base tree's levels (arity
/// `Tree::Arity`), then a sub-tree and a top-tree level where the shape has them, each with
/// its siblings (pseudorandom) and the index's digit at that level.
pub(super) fn tree_proof<Tree: MerkleTreeTrait>(
    nodes: usize,
    index: usize,
    root: TreeDomain<Tree>,
    rng: &mut ChaCha20Rng,
) -> MerkleProof<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity> {
    let base = Tree::Arity::to_usize();
    let levels = base_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(nodes);
    let mut rest = index;
    let mut path = Vec::with_capacity(levels + 2);
    let arities = std::iter::repeat_n(base, levels)
        .chain([
            Tree::SubTreeArity::to_usize(),
            Tree::TopTreeArity::to_usize(),
        ])
        .filter(|&arity| arity > 0);
    for arity in arities {
        path.push((random_domains(rng, arity - 1), rest % arity));
        rest /= arity;
    }
    MerkleProof::from_parts(random_domain(rng), root, path)
}

/// The vanilla proofs of partition `partition`: one per challenge, of the shape `params`
/// give (their layers, challenges per partition, graph degrees and tree shapes), with
/// pseudorandom values from `(seed, partition)`. Every proof of the partition shares one
/// comm_c and comm_r_last, as `StackedCompound::circuit` requires.
pub(super) fn placeholder_vanilla_proofs<Tree: 'static + MerkleTreeTrait>(
    params: &stacked::PublicParams<Tree>,
    seed: u64,
    partition: usize,
) -> Vec<stacked::Proof<Tree, DefaultPieceHasher>> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(partition as u64 + 1);
    let nodes = params.graph.size();
    let layers = params.num_layers;
    let comm_c: TreeDomain<Tree> = random_domain(&mut rng);
    let comm_r_last: TreeDomain<Tree> = random_domain(&mut rng);
    let comm_d: DefaultPieceDomain = random_domain(&mut rng);
    let tree_d_levels = base_path_length::<U2, U0, U0>(nodes);
    let column = |index: usize, rng: &mut ChaCha20Rng| {
        ColumnProof::new(
            index as u32,
            random_domains(rng, layers),
            tree_proof::<Tree>(nodes, index, comm_c, rng),
        )
    };
    let node = |rng: &mut ChaCha20Rng| 1 + (rng.next_u64() as usize) % (nodes - 1);
    (0..params.challenges.num_challenges_per_partition())
        .map(|_| {
            let challenge = node(&mut rng);
            let comm_d_path = (0..tree_d_levels)
                .map(|level| (random_domains(&mut rng, 1), (challenge >> level) & 1))
                .collect();
            let comm_d_proofs =
                MerkleProof::from_parts(random_domain(&mut rng), comm_d, comm_d_path);
            let comm_r_last_proof = tree_proof::<Tree>(nodes, challenge, comm_r_last, &mut rng);
            let c_x = column(challenge, &mut rng);
            let parents = |n: usize, rng: &mut ChaCha20Rng| {
                (0..n)
                    .map(|_| {
                        let parent = node(rng);
                        column(parent, rng)
                    })
                    .collect::<Vec<_>>()
            };
            let drg_parents = parents(params.graph.base_graph().degree(), &mut rng);
            let exp_parents = parents(params.graph.expansion_degree(), &mut rng);
            let labeling_proofs = (1..=layers)
                .map(|layer| {
                    LabelingProof::new(
                        layer as u32,
                        challenge as u64,
                        random_domains(&mut rng, TOTAL_PARENTS),
                    )
                })
                .collect();
            let encoding_proof = EncodingProof::new(
                layers as u32,
                challenge as u64,
                random_domains(&mut rng, TOTAL_PARENTS),
            );
            stacked::Proof {
                comm_d_proofs,
                comm_r_last_proof,
                replica_column_proofs: ReplicaColumnProof {
                    c_x,
                    drg_parents,
                    exp_parents,
                },
                labeling_proofs,
                encoding_proof,
            }
        })
        .collect()
}

/// Counts partition 0 of the placeholder job's R1CS (every witness value computed, none kept:
/// a 32 GiB partition in a few MiB).
pub fn count(placeholder: Placeholder) -> Result<R1csCounts, ProverError> {
    refuse_non_interactive(placeholder.seal_proof)?;
    let size = u64::from(placeholder.seal_proof.sector_size());
    with_shape!(size, count_shape, placeholder)
}

fn count_shape<Tree: 'static + MerkleTreeTrait>(
    placeholder: Placeholder,
) -> Result<R1csCounts, ProverError> {
    let fail = |message: String| ProverError::Synthesis {
        partition: 0,
        message: format!("counting the placeholder partition: {message}"),
    };
    let circuit = placeholder_partitions::<Tree>(placeholder)?
        .circuit(0)
        .map_err(fail)?;
    count_r1cs(circuit).map_err(|e| fail(e.to_string()))
}

/// What the committed counts of a PoRep partition are keyed by: the parts of its
/// [`PartitionShape`] that fix the circuit's structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountKey {
    pub sector_size: u64,
    pub layers: usize,
    pub challenges_per_partition: usize,
}

impl PartitionShape {
    /// The key of this shape's row in [`COUNTED_SHAPES`].
    pub fn count_key(&self) -> CountKey {
        CountKey {
            sector_size: self.sector_size,
            layers: self.layers,
            challenges_per_partition: self.challenges_per_partition,
        }
    }
}

/// The PoRep partition of each sector size (V1_1, and its SyntheticPoRep variant: the same
/// circuit), counted by [`count`]. Tests recount 2 KiB, 8 MiB and 512 MiB (~15 s); `cargo test
/// -p proofpipe-filecoin --lib -- --ignored counted_shape_of` recounts 32 GiB and 64 GiB (~170 s
/// each on one core here, 43 / 54 MiB peak RSS). 32 GiB: 130,278,869 constraints, a 2^27
/// domain, 44.1 GiB of parameters (a 47.4 GB proving key), 6.5 GiB of R1CS matrices.
pub const COUNTED_SHAPES: &[Counted<CountKey>] = &[
    // 2KiB
    Counted {
        shape: CountKey {
            sector_size: filecoin_proofs::SECTOR_SIZE_2_KIB,
            layers: 2,
            challenges_per_partition: 2,
        },
        counts: R1csCounts {
            constraints: 2_687_961,
            inputs: 40,
            aux: 2_685_673,
            a_aux_density: 2_674_908,
            b_input_density: 1,
            b_aux_density: 685_521,
            nonzeros: [6_421_005, 2_689_006, 5_824_682],
            stored_coefficients: [4_011_431, 574, 660_475],
        },
    },
    // 8MiB
    Counted {
        shape: CountKey {
            sector_size: filecoin_proofs::SECTOR_SIZE_8_MIB,
            layers: 2,
            challenges_per_partition: 2,
        },
        counts: R1csCounts {
            constraints: 3_844_969,
            inputs: 40,
            aux: 3_842_449,
            a_aux_density: 3_814_996,
            b_input_density: 1,
            b_aux_density: 1_011_289,
            nonzeros: [9_388_453, 3_847_886, 8_234_882],
            stored_coefficients: [5_885_959, 1_598, 950_507],
        },
    },
    // 512MiB
    Counted {
        shape: CountKey {
            sector_size: filecoin_proofs::SECTOR_SIZE_512_MIB,
            layers: 2,
            challenges_per_partition: 2,
        },
        counts: R1csCounts {
            constraints: 4_423_473,
            inputs: 40,
            aux: 4_420_837,
            a_aux_density: 4_385_040,
            b_input_density: 1,
            b_aux_density: 1_174_173,
            nonzeros: [10_872_177, 4_427_326, 9_439_982],
            stored_coefficients: [6_823_223, 2_110, 1_095_523],
        },
    },
    // 32GiB
    Counted {
        shape: CountKey {
            sector_size: filecoin_proofs::SECTOR_SIZE_32_GIB,
            layers: 11,
            challenges_per_partition: 18,
        },
        counts: R1csCounts {
            constraints: 130_278_869,
            inputs: 328,
            aux: 130_169_893,
            a_aux_density: 129_753_292,
            b_input_density: 1,
            b_aux_density: 33_112_281,
            nonzeros: [309_405_051, 130_327_340, 282_656_500],
            stored_coefficients: [192_535_393, 26_012, 32_116_001],
        },
    },
    // 64GiB
    Counted {
        shape: CountKey {
            sector_size: filecoin_proofs::SECTOR_SIZE_64_GIB,
            layers: 11,
            challenges_per_partition: 18,
        },
        counts: R1csCounts {
            constraints: 131_186_177,
            inputs: 328,
            aux: 131_076_643,
            a_aux_density: 130_637_542,
            b_input_density: 1,
            b_aux_density: 33_386_943,
            nonzeros: [311_892_525, 131_235_764, 284_512_534],
            stored_coefficients: [194_175_625, 26_588, 32_343_701],
        },
    },
];

/// The committed counts of `proof`'s partition, refused if the table has none of its shape.
pub fn counted(proof: RegisteredSealProof) -> Result<R1csCounts, ProverError> {
    let shape = PartitionShape::of(proof)?;
    committed(COUNTED_SHAPES, &shape.count_key()).ok_or_else(|| ProverError::InvalidArgument {
        what: "PoRep shape",
        reason: format!(
            "no committed counts for {} ({} layers, {} challenges per partition): add its row \
                 to COUNTED_SHAPES in filecoin/src/shape.rs from shape::count",
            seal_proof_name(proof),
            shape.layers,
            shape.challenges_per_partition
        ),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use proofpipe_kernels::EvalAlloc;

    use super::*;
    use crate::counted::{assert_recount, assert_synthesized_as_counted};

    /// Recounts `proof`'s placeholder partition and holds the table to it.
    fn recount(proof: RegisteredSealProof) {
        let started = Instant::now();
        let recounted = count(Placeholder::of(proof)).unwrap();
        assert_recount(
            "COUNTED_SHAPES",
            &seal_proof_name(proof),
            &PartitionShape::of(proof).unwrap(),
            counted(proof).ok(),
            recounted,
            started,
        );
    }

    #[test]
    fn counted_shapes_of_small_sectors_match_a_recount() {
        for proof in [
            RegisteredSealProof::StackedDrg2KiBV1_1,
            RegisteredSealProof::StackedDrg8MiBV1_1,
            RegisteredSealProof::StackedDrg512MiBV1_1,
        ] {
            recount(proof);
        }
    }

    #[test]
    #[ignore = "~170 s: recounts the 130M-constraint partition"]
    fn counted_shape_of_32gib_matches_a_recount() {
        recount(RegisteredSealProof::StackedDrg32GiBV1_1);
    }

    #[test]
    #[ignore = "~170 s: recounts the 131M-constraint partition"]
    fn counted_shape_of_64gib_matches_a_recount() {
        recount(RegisteredSealProof::StackedDrg64GiBV1_1);
    }

    /// An independent check of the 32 GiB row: what the seed engine extracted from real
    /// 32 GiB partitions (curio's extern/cuzk/cuzk-project.md, "PCE Extraction").
    #[test]
    fn the_32gib_row_is_what_the_seed_engine_extracted_from_real_partitions() {
        let c = counted(RegisteredSealProof::StackedDrg32GiBV1_1).unwrap();
        assert_eq!(
            (c.inputs, c.aux, c.constraints),
            (328, 130_169_893, 130_278_869)
        );
        assert_eq!(c.nonzeros, [309_405_051, 130_327_340, 282_656_500]);
        assert_eq!(
            (c.a_aux_density, c.b_input_density, c.b_aux_density),
            (129_753_292, 1, 33_112_281)
        );
    }

    #[test]
    fn every_interactive_seal_proof_has_counts_and_the_right_partition_shape() {
        use RegisteredSealProof::*;
        for proof in [
            StackedDrg2KiBV1_1,
            StackedDrg8MiBV1_1,
            StackedDrg512MiBV1_1,
            StackedDrg32GiBV1_1,
            StackedDrg64GiBV1_1,
            StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
            StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        ] {
            let counts = counted(proof).unwrap();
            let shape = PartitionShape::of(proof).unwrap();
            assert_eq!(shape.partitions, u32::from(proof.partitions()), "{proof:?}");
            assert!(
                counts.inputs > 1 && counts.aux > counts.constraints / 2,
                "{proof:?}"
            );
        }
        let big = PartitionShape::of(StackedDrg32GiBV1_1).unwrap();
        assert_eq!(
            (
                big.nodes,
                big.layers,
                big.challenges_per_partition,
                big.partitions
            ),
            (1 << 30, 11, 18, 10)
        );
        let c = counted(StackedDrg32GiBV1_1).unwrap();
        assert_eq!(proofpipe_kernels::domain_size(c.constraints), 1 << 27);
        let err = counted(StackedDrg32GiBV1_2_Feat_NonInteractivePoRep)
            .unwrap_err()
            .to_string();
        assert!(err.contains("non-interactive"), "{err}");
    }

    /// The placeholder partition synthesizes in both modes to the committed shape, and the
    /// two modes agree on everything the GPU stage reads.
    #[test]
    fn a_placeholder_partition_synthesizes_to_its_counted_shape_in_both_modes() {
        let proof = RegisteredSealProof::StackedDrg2KiBV1_1;
        let counts = counted(proof).unwrap();
        let one_pass = placeholder_job(Placeholder::of(proof), SynthesisMode::OnePass).unwrap();
        assert!(one_pass.matrices.is_none());
        let a = one_pass
            .source
            .synthesize(0, counts.shape(), &EvalAlloc::heap())
            .unwrap();
        assert_synthesized_as_counted(&a, &counts);

        let two_pass = placeholder_job(Placeholder::of(proof), SynthesisMode::Matrices).unwrap();
        let matrices = two_pass.matrices.clone().unwrap();
        assert_eq!(matrices.shape(), counts.shape());
        matrices.check_predicted(&counts).unwrap();
        println!("table entries (A, B, C): {:?}", matrices.table_entries());
        let b = two_pass
            .source
            .synthesize(0, counts.shape(), &EvalAlloc::heap())
            .unwrap();
        assert_eq!(a.first_difference(&b), None, "the two modes differ");

        // Another partition: other values, the same structure.
        let other = one_pass
            .source
            .synthesize(3, counts.shape(), &EvalAlloc::heap())
            .unwrap();
        assert_ne!(other.aux, a.aux);
        assert_eq!(other.a_aux_density.bv, a.a_aux_density.bv);
        assert_eq!(other.b_aux_density.bv, a.b_aux_density.bv);
        // A second job of the size reuses the process's matrices.
        let again = placeholder_job(Placeholder::of(proof), SynthesisMode::Matrices).unwrap();
        assert!(Arc::ptr_eq(&again.matrices.unwrap(), &matrices));
    }

    #[test]
    fn a_slice_of_a_partition_has_fewer_challenges_and_a_bad_slice_is_refused() {
        let proof = RegisteredSealProof::StackedDrg2KiBV1_1;
        let one = Placeholder {
            challenges_per_partition: Some(1),
            ..Placeholder::of(proof)
        };
        let slice = count(one).unwrap();
        let whole = counted(proof).unwrap();
        assert!(slice.constraints < whole.constraints && slice.constraints > whole.constraints / 3);
        for n in [0, 3] {
            let bad = Placeholder {
                challenges_per_partition: Some(n),
                ..Placeholder::of(proof)
            };
            let Err(err) = placeholder_job(bad, SynthesisMode::OnePass) else {
                panic!("{n} challenges per partition accepted");
            };
            assert!(err.to_string().contains("1 to 2"), "{err}");
        }
    }
}
