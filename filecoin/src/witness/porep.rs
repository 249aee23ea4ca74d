//! A PoRep partition's witness (storage-proofs-porep's `StackedCircuit`), computed natively:
//! the common prefix (replica id, commitments, comm_r's check) and each challenge's part, in
//! the circuit's allocation order (`Proof::synthesize` of stacked/circuit/params.rs):
//!
//! 1. the data leaf, and its tree_d path;
//! 2. each DRG parent's column (one row per layer), its Poseidon hash and tree_c path; then
//!    each expander parent's the same;
//! 3. the challenge's 64 bits, packed into an input;
//! 4. per layer, the parents' bits (`to_bits_le`) and the label (SHA-256 of the replica id,
//!    layer, node and the 37 parents the layer repeats: [`expanded_parents`]);
//! 5. the encoded node (last label + data leaf) and its tree_r_last path;
//! 6. the Poseidon hash of the challenge's labels and its tree_c path.
//!
//! The inputs are plain data ([`PrefixInputs`], [`ChallengeInputs`]), read from the vanilla
//! proofs by [`challenge_inputs`]; a challenge's witness depends on nothing but its own.

use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, Hasher};
use serde::Deserialize;
use storage_proofs_core::merkle::{MerkleProofTrait, MerkleTreeTrait};
use storage_proofs_porep::stacked;

use super::merkle::{PathLevel, TreeHasher, path_of, por_path, poseidon_hash_of};
use super::sha256::{LABEL_PARENTS, Word, create_label, element_words};
use super::{NativeWitness, WitnessSink, pack_into_inputs, to_bits_le};

/// The values the circuit's common prefix allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixInputs {
    pub replica_id: Fr,
    pub comm_d: Fr,
    pub comm_r: Fr,
    pub comm_r_last: Fr,
    pub comm_c: Fr,
}

/// A column of tree_c: one row per layer, and its inclusion path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnOpening {
    pub rows: Vec<Fr>,
    pub path: Vec<PathLevel>,
}

/// What one challenge's part of the circuit reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChallengeInputs {
    pub challenge: u64,
    pub data_leaf: Fr,
    pub comm_d_path: Vec<PathLevel>,
    pub drg_parents: Vec<ColumnOpening>,
    pub exp_parents: Vec<ColumnOpening>,
    pub comm_r_last_path: Vec<PathLevel>,
    /// The challenged column's tree_c path (the circuit hashes the labels it computes, not
    /// the column's stored rows).
    pub comm_c_path: Vec<PathLevel>,
}

/// The prefix's witness: the replica id (an input, and its bits for the labels), comm_d and
/// comm_r (inputs), comm_r_last and comm_c, and comm_r's Poseidon check.
pub fn prefix<S: WitnessSink>(out: &mut S, inputs: &PrefixInputs) {
    out.scalar(inputs.replica_id);
    out.input(inputs.replica_id);
    to_bits_le(out, inputs.replica_id);
    for commitment in [inputs.comm_d, inputs.comm_r] {
        out.scalar(commitment);
        out.input(commitment);
    }
    out.scalar(inputs.comm_r_last);
    out.scalar(inputs.comm_c);
    poseidon_hash_of(out, &[inputs.comm_c, inputs.comm_r_last]);
}

/// One challenge's witness. `replica` is the replica id as its labels hash it
/// ([`element_words`] of it).
pub fn challenge<S: WitnessSink>(out: &mut S, replica: &[Word; 8], inputs: &ChallengeInputs) {
    out.scalar(inputs.data_leaf);
    por_path(
        out,
        TreeHasher::Sha256,
        inputs.data_leaf,
        &inputs.comm_d_path,
    );
    for column in inputs.drg_parents.iter().chain(&inputs.exp_parents) {
        for &row in &column.rows {
            out.scalar(row);
        }
        let hash = poseidon_hash_of(out, &column.rows);
        por_path(out, TreeHasher::Poseidon, hash, &column.path);
    }

    let node = inputs.challenge;
    out.bits(node, 64);
    let node_bits: Vec<bool> = (0..64).map(|i| (node >> i) & 1 == 1).collect();
    pack_into_inputs(out, &node_bits);
    let node_words = [
        Word::allocated((node >> 32) as u32),
        Word::allocated(node as u32),
    ];

    let layers = inputs.drg_parents.first().map_or(0, |c| c.rows.len());
    let mut labels = Vec::with_capacity(layers);
    let mut parents = Vec::with_capacity(inputs.drg_parents.len() + inputs.exp_parents.len());
    for layer in 1..=layers {
        parents.clear();
        for column in &inputs.drg_parents {
            parents.push(column.rows[layer - 1]);
        }
        if layer > 1 {
            for column in &inputs.exp_parents {
                parents.push(column.rows[layer - 2]);
            }
        }
        let words: Vec<[Word; 8]> = parents
            .iter()
            .map(|&parent| {
                to_bits_le(out, parent);
                element_words(parent)
            })
            .collect();
        let label = create_label(
            out,
            replica,
            Word::constant(layer as u32),
            node_words,
            &expanded_parents(&words, layer),
        );
        labels.push(label);
    }

    let encoded = labels.last().copied().unwrap_or_default() + inputs.data_leaf;
    out.scalar(encoded);
    por_path(out, TreeHasher::Poseidon, encoded, &inputs.comm_r_last_path);
    let column_hash = poseidon_hash_of(out, &labels);
    por_path(out, TreeHasher::Poseidon, column_hash, &inputs.comm_c_path);
}

/// The 37 parents a label hashes, as the circuit repeats a layer's: layer 1's 6 DRG parents
/// six times and the first once more; a later layer's 14 (DRG, then expander) twice and the
/// first 9 once more.
pub fn expanded_parents(parents: &[[Word; 8]], layer: usize) -> [[Word; 8]; LABEL_PARENTS] {
    let repeated: Vec<[Word; 8]> = if layer > 1 {
        parents
            .iter()
            .chain(parents)
            .chain(&parents[..9])
            .copied()
            .collect()
    } else {
        let mut all: Vec<[Word; 8]> = std::iter::repeat_n(parents, 6).flatten().copied().collect();
        all.push(parents[0]);
        all
    };
    repeated.try_into().unwrap_or_else(|v: Vec<_>| {
        panic!(
            "{} parents at layer {layer} make {} label inputs, not {LABEL_PARENTS}",
            parents.len(),
            v.len()
        )
    })
}

/// The field elements of a tree's domain values.
fn elements<D: Domain>(values: &[D]) -> Vec<Fr> {
    values.iter().map(|&d| d.into()).collect()
}

/// A vanilla column proof's fields, which storage-proofs-porep keeps crate-private: read back
/// from its own serialization (bincode, field for field).
#[derive(Deserialize)]
struct ColumnProofFields<D, P> {
    column: ColumnFields<D>,
    inclusion_proof: P,
}

#[derive(Deserialize)]
struct ColumnFields<D> {
    #[allow(dead_code)]
    index: u32,
    rows: Vec<D>,
    #[allow(dead_code)]
    _h: std::marker::PhantomData<()>,
}

/// A labeling proof's fields (crate-private too): the challenged node.
#[derive(Deserialize)]
struct LabelingProofFields<D> {
    #[allow(dead_code)]
    parents: Vec<D>,
    #[allow(dead_code)]
    layer_index: u32,
    node: u64,
}

/// `value`'s fields as `F` mirrors them, through `value`'s own serialization.
fn read_fields<T: serde::Serialize, F: serde::de::DeserializeOwned>(
    value: &T,
    what: &str,
) -> Result<F, String> {
    let bytes = bincode::serialize(value).map_err(|e| format!("serializing {what}: {e}"))?;
    bincode::deserialize(&bytes).map_err(|e| format!("reading {what}'s fields: {e}"))
}

type TreeProof<Tree> = storage_proofs_core::merkle::MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;
type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

fn column_opening<Tree: MerkleTreeTrait>(
    proof: &stacked::ColumnProof<TreeProof<Tree>>,
) -> Result<ColumnOpening, String> {
    let fields: ColumnProofFields<TreeDomain<Tree>, TreeProof<Tree>> =
        read_fields(proof, "a column")?;
    Ok(ColumnOpening {
        rows: elements(&fields.column.rows),
        path: path_of(&fields.inclusion_proof),
    })
}

/// A partition's witness, natively: its prefix and challenges' values.
#[derive(Clone, Debug)]
pub struct PartitionWitness {
    prefix: PrefixInputs,
    replica: [Word; 8],
    challenges: Vec<ChallengeInputs>,
}

impl PartitionWitness {
    pub fn new(prefix: PrefixInputs, challenges: Vec<ChallengeInputs>) -> Self {
        Self {
            replica: element_words(prefix.replica_id),
            prefix,
            challenges,
        }
    }

    /// Partition's witness from its vanilla proofs (one per challenge, on every core).
    pub fn of<Tree: MerkleTreeTrait, G: Hasher>(
        public_inputs: &stacked::PublicInputs<TreeDomain<Tree>, G::Domain>,
        vanilla: &[stacked::Proof<Tree, G>],
    ) -> Result<Self, String> {
        use rayon::prelude::*;
        let first = vanilla
            .first()
            .ok_or("a partition without vanilla proofs")?;
        let prefix = prefix_inputs(public_inputs, first)?;
        let challenges = vanilla
            .par_iter()
            .map(challenge_inputs)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::new(prefix, challenges))
    }
}

impl NativeWitness for PartitionWitness {
    fn parts(&self) -> usize {
        self.challenges.len()
    }

    fn prefix<S: WitnessSink>(&self, out: &mut S) {
        prefix(out, &self.prefix);
    }

    fn part<S: WitnessSink>(&self, i: usize, out: &mut S) {
        challenge(out, &self.replica, &self.challenges[i]);
    }
}

/// The prefix's values for a partition of these vanilla proofs (comm_c and comm_r_last are
/// the first proof's, as `StackedCompound::circuit` takes them).
pub fn prefix_inputs<Tree: MerkleTreeTrait, G: Hasher>(
    public_inputs: &stacked::PublicInputs<TreeDomain<Tree>, G::Domain>,
    first: &stacked::Proof<Tree, G>,
) -> Result<PrefixInputs, String> {
    let tau = public_inputs
        .tau
        .as_ref()
        .ok_or("the public inputs have no comm_d and comm_r (tau)")?;
    Ok(PrefixInputs {
        replica_id: public_inputs.replica_id.into(),
        comm_d: tau.comm_d.into(),
        comm_r: tau.comm_r.into(),
        comm_r_last: first.comm_r_last().into(),
        comm_c: first.comm_c().into(),
    })
}

/// One challenge's values, read from its vanilla proof.
pub fn challenge_inputs<Tree: MerkleTreeTrait, G: Hasher>(
    proof: &stacked::Proof<Tree, G>,
) -> Result<ChallengeInputs, String> {
    let first_label = proof
        .labeling_proofs
        .first()
        .ok_or("a vanilla proof without labeling proofs")?;
    let label: LabelingProofFields<TreeDomain<Tree>> = read_fields(first_label, "a label")?;
    let columns = &proof.replica_column_proofs;
    let openings = |proofs: &[stacked::ColumnProof<TreeProof<Tree>>]| {
        proofs
            .iter()
            .map(column_opening::<Tree>)
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(ChallengeInputs {
        challenge: label.node,
        data_leaf: proof.comm_d_proofs.leaf().into(),
        comm_d_path: path_of(&proof.comm_d_proofs),
        drg_parents: openings(&columns.drg_parents)?,
        exp_parents: openings(&columns.exp_parents)?,
        comm_r_last_path: path_of(&proof.comm_r_last_proof),
        comm_c_path: column_opening::<Tree>(&columns.c_x)?.path,
    })
}

#[cfg(test)]
mod tests;
