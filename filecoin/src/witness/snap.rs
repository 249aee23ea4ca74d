//! A SnapDeals partition's witness (storage-proofs-update's `EmptySectorUpdateCircuit`),
//! computed natively, in the circuit's allocation order (`synthesize` of its circuit.rs):
//!
//! 1. the prefix: `k_and_h_select` (an input) and its bits, the packed partition index, the
//!    three commitments (inputs), `phi = H(comm_d_new, comm_r_old)`, comm_c and both tree R
//!    roots, the apex leaves, the partition path's siblings and the two comm_r checks;
//! 2. the apex tree, one SHA-256 a part (127 at 32 GiB: most of the prefix's work, so it is
//!    spread over every core);
//! 3. the partition's path from the apex root to comm_d_new, and the challenge digests
//!    (`gen_challenge_bits`: Poseidon of comm_r_new and the digest index, and its bits);
//! 4. per challenge: the high bits for each `h` and the selected one, `rho`, the old and
//!    new-data leaves, `leaf_r_new = leaf_r_old + leaf_d_new * rho`, the old and new tree R paths
//!    (siblings, then picks and hashes), the apex leaf selected by the challenge's bits and the
//!    tree D path up to it.
//!
//! The challenges, the apex tree's rows and the partition path's nodes are computed once, up
//! front ([`SnapPartitionWitness::of`]); every part then depends on nothing but them.

use blstrs::Scalar as Fr;
use ff::{Field, PrimeField};
use filecoin_hashers::{HashFunction, Hasher};
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_update::constants::{
    POSEIDON_CONSTANTS_GEN_RANDOMNESS, TreeDDomain, TreeDHasher, TreeRHasher, h_select, hs,
};
use storage_proofs_update::{Challenges, PartitionProof, PublicInputs, PublicParams, phi};

use super::merkle::{TreeHasher, pick, por_without_inputs, poseidon_hash_of};
use super::poseidon::poseidon_hash;
use super::sha256::hash2;
use super::{NativeWitness, WitnessSink, to_bits_le};

/// One challenge's values: its node index (the partition's bits on top) and the vanilla proof's
/// leaves and siblings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChallengeOpening {
    pub challenge: u64,
    pub leaf_r_old: Fr,
    pub leaf_d_new: Fr,
    /// Siblings per level of tree R old and tree R new (7 per level of arity 8).
    pub path_r_old: Vec<Vec<Fr>>,
    pub path_r_new: Vec<Vec<Fr>>,
    /// The tree D siblings from the leaf up to the partition's apex leaf.
    pub path_to_apex_leaf: Vec<Fr>,
}

/// The circuit's sizes, from its public parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sizes {
    challenge_bit_len: usize,
    partition_bit_len: usize,
    apex_leaf_bit_len: usize,
    hs: [usize; 6],
    digests: usize,
}

/// A piece written by a part of its own, in the circuit's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// The SHA-256 of pair `pair` of apex tree row `row` (row 0: the apex leaves).
    ApexHash {
        row: usize,
        pair: usize,
    },
    /// The partition path to comm_d_new and the challenge digests.
    PartitionPathAndDigests,
    Challenge(usize),
}

/// A SnapDeals partition's witness, natively.
#[derive(Clone, Debug)]
pub struct SnapPartitionWitness {
    sizes: Sizes,
    k: u64,
    h_select: u64,
    comm_r_old: Fr,
    comm_d_new: Fr,
    comm_r_new: Fr,
    phi: Fr,
    comm_c: Fr,
    root_r_old: Fr,
    root_r_new: Fr,
    /// The apex tree's rows, the leaves first, up to (not including) the apex root's row.
    apex_rows: Vec<Vec<Fr>>,
    apex_root: Fr,
    partition_path: Vec<Fr>,
    challenges: Vec<ChallengeOpening>,
    parts: Vec<Part>,
}

impl SnapPartitionWitness {
    /// The witness of the circuit `EmptySectorUpdateCompound::circuit` builds from `inputs` and
    /// `vanilla` (partition `inputs.k`'s vanilla proof) with `pp`. The values are taken as the
    /// circuit takes them, checked or not: a vanilla proof that does not verify makes a witness
    /// that does not satisfy the circuit, as the circuit's own synthesis would.
    pub fn of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        pp: &PublicParams,
        inputs: &PublicInputs,
        vanilla: &PartitionProof<Tree>,
    ) -> Result<Self, String> {
        let apex_leaf_count = vanilla.apex_leafs.len();
        if apex_leaf_count != pp.apex_leaf_count
            || vanilla.challenge_proofs.len() != pp.challenge_count
        {
            return Err(format!(
                "a partition proof of {apex_leaf_count} apex leaves and {} challenges, where the \
                 circuit has {} and {}",
                vanilla.challenge_proofs.len(),
                pp.apex_leaf_count,
                pp.challenge_count
            ));
        }
        let below_partition = pp.challenge_bit_len - pp.partition_bit_len;
        let path_to_apex_leaf = below_partition - pp.apex_leaf_bit_len;
        let bits_per_challenge = below_partition;
        let challenges_per_digest = Fr::CAPACITY as usize / bits_per_challenge;
        let sizes = Sizes {
            challenge_bit_len: pp.challenge_bit_len,
            partition_bit_len: pp.partition_bit_len,
            apex_leaf_bit_len: pp.apex_leaf_bit_len,
            hs: hs(pp.sector_nodes),
            digests: pp.challenge_count.div_ceil(challenges_per_digest),
        };

        let first = &vanilla.challenge_proofs[0];
        let partition_path: Vec<Fr> = first.proof_d_new.path()[below_partition..]
            .iter()
            .map(|(siblings, _)| siblings[0].into())
            .collect();
        if partition_path.len() != pp.partition_bit_len {
            return Err(format!(
                "a tree D path of {} levels, where the circuit has {}",
                first.proof_d_new.path().len(),
                pp.challenge_bit_len
            ));
        }

        let mut apex_rows: Vec<Vec<TreeDDomain>> = vec![vanilla.apex_leafs.clone()];
        while apex_rows.last().is_some_and(|row| row.len() > 1) {
            let row = apex_rows
                .last()
                .expect("a row")
                .chunks(2)
                .map(|pair| <TreeDHasher as Hasher>::Function::hash2(&pair[0], &pair[1]));
            apex_rows.push(row.collect());
        }
        let apex_root: Fr = apex_rows.pop().expect("the root's row")[0].into();
        let apex_rows: Vec<Vec<Fr>> = apex_rows
            .into_iter()
            .map(|row| row.into_iter().map(Into::into).collect())
            .collect();

        let siblings = |path: Vec<(Vec<_>, usize)>| -> Vec<Vec<Fr>> {
            path.into_iter()
                .map(|(siblings, _)| siblings.into_iter().map(Into::into).collect())
                .collect()
        };
        let challenges = Challenges::new(pp.sector_nodes, inputs.comm_r_new, inputs.k)
            .zip(&vanilla.challenge_proofs)
            .map(|(challenge, proof)| ChallengeOpening {
                challenge: u64::from(challenge),
                leaf_r_old: proof.proof_r_old.leaf().into(),
                leaf_d_new: proof.proof_d_new.leaf().into(),
                path_r_old: siblings(proof.proof_r_old.path()),
                path_r_new: siblings(proof.proof_r_new.path()),
                path_to_apex_leaf: proof.proof_d_new.path()[..path_to_apex_leaf]
                    .iter()
                    .map(|(siblings, _)| siblings[0].into())
                    .collect(),
            })
            .collect::<Vec<_>>();

        let mut parts: Vec<Part> = apex_rows
            .iter()
            .enumerate()
            .flat_map(|(row, nodes)| {
                (0..nodes.len() / 2).map(move |pair| Part::ApexHash { row, pair })
            })
            .collect();
        parts.push(Part::PartitionPathAndDigests);
        parts.extend((0..challenges.len()).map(Part::Challenge));

        Ok(Self {
            sizes,
            k: inputs.k as u64,
            h_select: h_select(pp.sector_nodes, inputs.h),
            comm_r_old: inputs.comm_r_old.into(),
            comm_d_new: inputs.comm_d_new.into(),
            comm_r_new: inputs.comm_r_new.into(),
            phi: phi(&inputs.comm_d_new, &inputs.comm_r_old).into(),
            comm_c: vanilla.comm_c.into(),
            root_r_old: first.proof_r_old.root().into(),
            root_r_new: first.proof_r_new.root().into(),
            apex_rows,
            apex_root,
            partition_path,
            challenges,
            parts,
        })
    }

    fn k_and_h_select(&self) -> u64 {
        self.k | (self.h_select << self.sizes.partition_bit_len)
    }

    /// The partition path from the apex root to comm_d_new (index bits: the partition's), then
    /// each digest: its index, its Poseidon and the digest's 255 bits.
    fn partition_path_and_digests<S: WitnessSink>(&self, out: &mut S) {
        let levels: Vec<Vec<Fr>> = self.partition_path.iter().map(|&s| vec![s]).collect();
        por_without_inputs(out, TreeHasher::Sha256, self.apex_root, &levels, self.k);
        let digests = self.sizes.digests as u64;
        for j in 0..digests {
            let index = Fr::from(self.k * digests + j);
            out.scalar(index);
            let digest = poseidon_hash(
                out,
                &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
                &[self.comm_r_new, index],
            );
            to_bits_le(out, digest);
        }
    }

    fn challenge<S: WitnessSink>(&self, opening: &ChallengeOpening, out: &mut S) {
        let sizes = &self.sizes;
        let c = opening.challenge;
        // get_challenge_high_bits: each h's high bits packed, kept where h is selected.
        let mut selected = Fr::ZERO;
        for (i, &h) in sizes.hs.iter().enumerate() {
            let high = Fr::from(c >> (sizes.challenge_bit_len - h));
            out.scalar(high);
            let kept = if (self.h_select >> i) & 1 == 1 {
                high
            } else {
                Fr::ZERO
            };
            out.scalar(kept);
            selected += kept;
        }
        out.scalar(selected);
        let rho = poseidon_hash(
            out,
            &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
            &[self.phi, selected],
        );

        out.scalar(opening.leaf_r_old);
        out.scalar(opening.leaf_d_new);
        let d_rho = opening.leaf_d_new * rho;
        out.scalar(d_rho);
        let leaf_r_new = opening.leaf_r_old + d_rho;
        out.scalar(leaf_r_new);

        for (leaf, path) in [
            (opening.leaf_r_old, &opening.path_r_old),
            (leaf_r_new, &opening.path_r_new),
        ] {
            for siblings in path {
                for &sibling in siblings {
                    out.scalar(sibling);
                }
            }
            por_without_inputs(out, TreeHasher::Poseidon, leaf, path, c);
        }

        // select: the apex leaf the challenge's bits above its tree D path name, picked by
        // halving the leaves from the most significant of those bits down.
        let below_apex = opening.path_to_apex_leaf.len();
        let apex_index = (c >> below_apex) & ((1 << sizes.apex_leaf_bit_len) - 1);
        let mut state = self.apex_rows[0].clone();
        for bit in (0..sizes.apex_leaf_bit_len).rev() {
            let condition = (apex_index >> bit) & 1 == 1;
            let half = state.len() / 2;
            state = (0..half)
                .map(|j| pick(out, condition, state[half + j], state[j]))
                .collect();
        }
        let apex_leaf = state[0];

        for &sibling in &opening.path_to_apex_leaf {
            out.scalar(sibling);
        }
        let levels: Vec<Vec<Fr>> = opening.path_to_apex_leaf.iter().map(|&s| vec![s]).collect();
        let low_bits = c & ((1 << below_apex) - 1);
        // The circuit enforces this root equals the selected apex leaf; a satisfied witness
        // makes them equal.
        let _ = apex_leaf;
        por_without_inputs(
            out,
            TreeHasher::Sha256,
            opening.leaf_d_new,
            &levels,
            low_bits,
        );
    }
}

impl NativeWitness for SnapPartitionWitness {
    fn parts(&self) -> usize {
        self.parts.len()
    }

    fn alike_parts(&self) -> bool {
        false
    }

    fn prefix<S: WitnessSink>(&self, out: &mut S) {
        let sizes = &self.sizes;
        let k_and_h_select = self.k_and_h_select();
        out.scalar(Fr::from(k_and_h_select));
        out.input(Fr::from(k_and_h_select));
        out.bits(
            k_and_h_select,
            (sizes.partition_bit_len + sizes.hs.len()) as u32,
        );
        out.scalar(Fr::from(self.k));
        for commitment in [self.comm_r_old, self.comm_d_new, self.comm_r_new] {
            out.scalar(commitment);
            out.input(commitment);
        }
        poseidon_hash(
            out,
            &*POSEIDON_CONSTANTS_GEN_RANDOMNESS,
            &[self.comm_d_new, self.comm_r_old],
        );
        out.scalar(self.comm_c);
        out.scalar(self.root_r_old);
        out.scalar(self.root_r_new);
        for &leaf in &self.apex_rows[0] {
            out.scalar(leaf);
        }
        for &sibling in &self.partition_path {
            out.scalar(sibling);
        }
        poseidon_hash_of(out, &[self.comm_c, self.root_r_old]);
        poseidon_hash_of(out, &[self.comm_c, self.root_r_new]);
    }

    fn part<S: WitnessSink>(&self, i: usize, out: &mut S) {
        match self.parts[i] {
            Part::ApexHash { row, pair } => {
                let nodes = &self.apex_rows[row];
                hash2(out, nodes[2 * pair], nodes[2 * pair + 1]);
            }
            Part::PartitionPathAndDigests => self.partition_path_and_digests(out),
            Part::Challenge(c) => self.challenge(&self.challenges[c], out),
        }
    }
}

#[cfg(test)]
mod tests;
