//! Placeholder SnapDeals partitions, for `bench --snap-shape`: partition k is
//! `EmptySectorUpdateCompound::circuit` over a placeholder vanilla `PartitionProof` of the sector
//! size's exact shape (its apex leaves, and for each challenge the Merkle paths of trees R old,
//! D new and R new), as `snap::prepare` builds a real partition from curio's vanilla proofs.
//! The structure depends only on the public parameters and the paths' lengths, so synthesis
//! gives the committed counts ([`super::shape::counted`]); the witness proves nothing: timing
//! only.
//!
//! Unlike PoRep's and PoSt's, this circuit checks its witness outside its constraints, panicking
//! where it disagrees, so the values are pseudorandom but consistent where it looks: each
//! challenge is the one the circuit derives from `comm_r_new` and `k`, its new-data leaf solves
//! `leaf_r_new = leaf_r_old + leaf_d_new * rho`, and every challenge's tree D path ends in the
//! partition's one path to `comm_d_new`.

use std::marker::PhantomData;
use std::sync::Arc;

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_proofs::with_shape;
use filecoin_proofs_api::{MerkleTreeTrait, RegisteredUpdateProof};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain, TreeRHasher, h_default};
use storage_proofs_update::{
    ChallengeProof, Challenges, EmptySectorUpdate, EmptySectorUpdateCircuit,
    EmptySectorUpdateCompound, PartitionProof, PublicInputs, PublicParams, phi, rho,
};

use proofpipe_kernels::EvalAlloc;

use crate::shape::{random_domain, tree_proof};
use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16;
use proofpipe_pipeline::pipeline::{PartitionSource, Synthesis};

/// The partitions of a placeholder SnapDeals proof of `proof`: any partition index, each the
/// proof's exact partition circuit with pseudorandom values from `(seed, partition)`.
pub fn placeholder_source(
    proof: RegisteredUpdateProof,
    seed: u64,
) -> Result<Arc<dyn PartitionSource>, ProverError> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, placeholder_shape, size, seed)
}

fn placeholder_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    sector_size: u64,
    seed: u64,
) -> Result<Arc<dyn PartitionSource>, ProverError> {
    Ok(Arc::new(PlaceholderPartitions::<Tree> {
        public_params: PublicParams::from_sector_size(sector_size),
        seed,
        _tree: PhantomData,
    }))
}

struct PlaceholderPartitions<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    public_params: PublicParams,
    seed: u64,
    _tree: PhantomData<fn() -> Tree>,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> PlaceholderPartitions<Tree> {
    /// Partition `partition`'s circuit: its own commitments and vanilla proof.
    fn circuit(&self, partition: u32) -> Result<EmptySectorUpdateCircuit<Tree>, String> {
        let pp = &self.public_params;
        let mut rng = ChaCha20Rng::seed_from_u64(self.seed);
        rng.set_stream(u64::from(partition) + 1);
        // The circuit asserts k < its partition count; a job of more partitions (a benchmark's
        // --partitions) repeats the indices with other values, the same structure.
        let k = partition as usize % pp.partition_count;
        let public_inputs = PublicInputs {
            k,
            comm_r_old: random_domain(&mut rng),
            comm_d_new: random_domain(&mut rng),
            comm_r_new: random_domain(&mut rng),
            h: h_default(pp.sector_nodes),
        };
        let vanilla = placeholder_partition_proof::<Tree>(pp, &public_inputs, &mut rng)?;
        <EmptySectorUpdateCompound<Tree> as CompoundProof<
            EmptySectorUpdate<Tree>,
            EmptySectorUpdateCircuit<Tree>,
        >>::circuit(&public_inputs, (), &vanilla, pp, Some(k))
        .map_err(|e| format!("{e:#}"))
    }
}

/// Partition `inputs.k`'s vanilla proof, of `pp`'s shape, with pseudorandom values that pass
/// the circuit's own checks (see the module's documentation).
fn placeholder_partition_proof<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &PublicParams,
    inputs: &PublicInputs,
    rng: &mut ChaCha20Rng,
) -> Result<PartitionProof<Tree>, String> {
    let nodes = pp.sector_nodes;
    let root_r_old: TreeRDomain = random_domain(rng);
    let root_r_new: TreeRDomain = random_domain(rng);
    let comm_c = random_domain(rng);
    let apex_leafs = (0..pp.apex_leaf_count)
        .map(|_| random_domain(rng))
        .collect();
    let below_partition = pp.challenge_bit_len - pp.partition_bit_len;
    let partition_siblings: Vec<TreeDDomain> = (0..pp.partition_bit_len)
        .map(|_| random_domain(rng))
        .collect();
    let phi = phi(&inputs.comm_d_new, &inputs.comm_r_old);
    let high_bits_shift = pp.challenge_bit_len - inputs.h;
    let challenge_proofs = Challenges::new(nodes, inputs.comm_r_new, inputs.k)
        .map(|challenge| {
            let c = challenge as usize;
            let proof_r_old = tree_proof::<Tree>(nodes, c, root_r_old, rng);
            let proof_r_new = tree_proof::<Tree>(nodes, c, root_r_new, rng);
            let rho_inverse = Option::<Fr>::from(rho(&phi, challenge >> high_bits_shift).invert())
                .ok_or_else(|| format!("rho of challenge {c} is zero"))?;
            let leaf_d_new =
                (Fr::from(proof_r_new.leaf()) - Fr::from(proof_r_old.leaf())) * rho_inverse;
            let path_d_new = (0..pp.challenge_bit_len)
                .map(|level| {
                    let sibling = match level.checked_sub(below_partition) {
                        Some(i) => partition_siblings[i],
                        None => random_domain(rng),
                    };
                    (vec![sibling], (c >> level) & 1)
                })
                .collect();
            Ok(ChallengeProof {
                proof_r_old,
                proof_d_new: MerkleProof::from_parts(
                    leaf_d_new.into(),
                    inputs.comm_d_new,
                    path_d_new,
                ),
                proof_r_new,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(PartitionProof {
        comm_c,
        apex_leafs,
        challenge_proofs,
    })
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> PartitionSource
    for PlaceholderPartitions<Tree>
{
    fn synthesize(&self, partition: u32, shape: CircuitShape, evals: &EvalAlloc) -> Synthesis {
        let fail = |message: String| ProverError::Synthesis { partition, message };
        let circuit = self.circuit(partition).map_err(|e| {
            fail(format!(
                "building the placeholder EmptySectorUpdateCircuit: {e}"
            ))
        })?;
        groth16::synthesize_into(circuit, shape, evals).map_err(|e| fail(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use filecoin_proofs::{SectorShape2KiB, SectorShape8MiB, SectorShape32GiB};

    use super::*;
    use crate::counted::assert_synthesized_as_counted;
    use crate::snap::partitions;
    use crate::snap::shape::{count, counted};
    use proofpipe_pipeline::circuits::{R1csCounts, count_r1cs};

    /// The full counts (the matrices' nonzeros too) of `proof`'s placeholder `partition`.
    fn count_placeholder<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        proof: RegisteredUpdateProof,
        partition: u32,
    ) -> R1csCounts {
        let circuit = PlaceholderPartitions::<Tree> {
            public_params: PublicParams::from_sector_size(u64::from(proof.sector_size())),
            seed: 0,
            _tree: PhantomData,
        }
        .circuit(partition)
        .unwrap();
        count_r1cs(circuit).unwrap()
    }

    /// Partition 0 synthesizes to the committed 2 KiB counts; another partition (an index past
    /// the proof's one partition) has other values and the same structure.
    #[test]
    fn a_placeholder_snap_partition_synthesizes_to_its_counted_shape() {
        let proof = RegisteredUpdateProof::StackedDrg2KiBV1;
        let counts = counted(proof).unwrap();
        let source = placeholder_source(proof, 0).unwrap();
        let a = source
            .synthesize(0, counts.shape(), &EvalAlloc::heap())
            .unwrap();
        assert_synthesized_as_counted(&a, &counts);
        // The matrices' nonzeros too, which the densities above do not see.
        assert_eq!(count_placeholder::<SectorShape2KiB>(proof, 0), counts);

        let other = source
            .synthesize(3, counts.shape(), &EvalAlloc::heap())
            .unwrap();
        assert_ne!(other.aux, a.aux);
        assert_eq!(other.a_aux_density.bv, a.a_aux_density.bv);
        assert_eq!(other.b_aux_density.bv, a.b_aux_density.bv);
    }

    /// 2 KiB has one partition and h = 1; 8 MiB has the production sizes' checks the 2 KiB
    /// partition skips (a partition index in the public input, the tree D path above the
    /// partition shared by every challenge, h = 10): its last partition counts as the blank
    /// circuit (no committed row for 8 MiB).
    #[test]
    fn the_last_placeholder_8mib_partition_counts_as_the_blank_circuit() {
        let proof = RegisteredUpdateProof::StackedDrg8MiBV1;
        let last = partitions(proof) - 1;
        assert_eq!(
            count_placeholder::<SectorShape8MiB>(proof, last),
            count(proof).unwrap()
        );
    }

    #[test]
    #[ignore = "~64 s on one core: counts the 81M-constraint 32 GiB partition with its witness"]
    fn the_last_placeholder_32gib_partition_counts_as_committed() {
        let proof = RegisteredUpdateProof::StackedDrg32GiBV1;
        assert_eq!(
            count_placeholder::<SectorShape32GiB>(proof, partitions(proof) - 1),
            counted(proof).unwrap()
        );
    }
}
