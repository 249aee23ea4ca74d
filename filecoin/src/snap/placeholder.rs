//! Placeholder SnapDeals partitions' values, for `bench --snap-shape` and the matrices: partition k is
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

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_proofs_api::MerkleTreeTrait;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain, TreeRHasher, h_default};
use storage_proofs_update::{
    ChallengeProof, Challenges, PartitionProof, PublicInputs, PublicParams, phi, rho,
};

use crate::shape::{random_domain, tree_proof};

/// Placeholder partition `partition` of a proof of `pp`'s shape: its public inputs and vanilla
/// proof, pseudorandom from `(seed, partition)`. A job of more partitions than the proof has (a
/// benchmark's --partitions) repeats the indices (the circuit asserts k is below its partition
/// count) with other values: the same structure.
pub(crate) fn placeholder_partition<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &PublicParams,
    seed: u64,
    partition: u32,
) -> Result<(PublicInputs, PartitionProof<Tree>), String> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(u64::from(partition) + 1);
    let public_inputs = PublicInputs {
        k: partition as usize % pp.partition_count,
        comm_r_old: random_domain(&mut rng),
        comm_d_new: random_domain(&mut rng),
        comm_r_new: random_domain(&mut rng),
        h: h_default(pp.sector_nodes),
    };
    let vanilla = placeholder_partition_proof::<Tree>(pp, &public_inputs, &mut rng)?;
    Ok((public_inputs, vanilla))
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

#[cfg(test)]
mod tests {
    use filecoin_proofs::{SectorShape2KiB, SectorShape8MiB, SectorShape32GiB};

    use super::*;
    use crate::counted::assert_synthesized_as_counted;
    use crate::snap::partitions;
    use crate::snap::shape::{count, counted, placeholder_source};
    use crate::snap::source::circuit_of;
    use filecoin_proofs_api::RegisteredUpdateProof;
    use proofpipe_kernels::EvalAlloc;
    use proofpipe_pipeline::circuits::{R1csCounts, count_r1cs};
    use proofpipe_pipeline::groth16::SynthesisMode;

    /// The full counts (the matrices' nonzeros too) of `proof`'s placeholder `partition`.
    fn count_placeholder<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        proof: RegisteredUpdateProof,
        partition: u32,
    ) -> R1csCounts {
        let pp = PublicParams::from_sector_size(u64::from(proof.sector_size()));
        let (inputs, vanilla) = placeholder_partition::<Tree>(&pp, 0, partition).unwrap();
        count_r1cs(circuit_of(&pp, &inputs, &vanilla).unwrap()).unwrap()
    }

    /// Partition 0 synthesizes to the committed 2 KiB counts; another partition (an index past
    /// the proof's one partition) has other values and the same structure.
    #[test]
    fn a_placeholder_snap_partition_synthesizes_to_its_counted_shape() {
        let proof = RegisteredUpdateProof::StackedDrg2KiBV1;
        let counts = counted(proof).unwrap();
        let source = placeholder_source(proof, 0, SynthesisMode::OnePass)
            .unwrap()
            .source;
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

    /// From the R1CS matrices and the native witness, a placeholder partition is what one pass
    /// makes of it: a, b, c, assignment and densities; the matrices are the predicted size and
    /// shared by the next job of the sector size.
    #[test]
    fn a_snap_partition_from_its_matrices_and_native_witness_is_its_one_pass_synthesis() {
        let proof = RegisteredUpdateProof::StackedDrg2KiBV1;
        let counts = counted(proof).unwrap();
        let one_pass = placeholder_source(proof, 5, SynthesisMode::OnePass).unwrap();
        assert!(one_pass.matrices.is_none());
        assert_eq!(one_pass.source.synthesis_threads(), 1);
        let two_pass = placeholder_source(proof, 5, SynthesisMode::Matrices).unwrap();
        let matrices = two_pass.matrices.unwrap();
        assert_eq!(two_pass.source.synthesis_threads(), 10, "one per challenge");
        assert_eq!(matrices.shape(), counts.shape());
        matrices.check_predicted(&counts).unwrap();
        for partition in [0, 2] {
            let a = one_pass
                .source
                .synthesize(partition, counts.shape(), &EvalAlloc::heap())
                .unwrap();
            let b = two_pass
                .source
                .synthesize(partition, counts.shape(), &EvalAlloc::heap())
                .unwrap();
            assert_eq!(a.first_difference(&b), None, "partition {partition}");
        }
        let again = placeholder_source(proof, 6, SynthesisMode::Matrices).unwrap();
        assert!(std::sync::Arc::ptr_eq(&again.matrices.unwrap(), &matrices));
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
