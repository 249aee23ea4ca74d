//! A Merkle inclusion path as storage-proofs-core's `PoRCircuit` synthesizes it (leaf and root
//! already allocated, as `enforce_inclusion` hands them over), computed natively: per level the
//! index bits (least significant first), the siblings, the picks that insert the current node
//! among them (`insert_2`, `insert_4`, `insert_8`, hand-optimized for those arities) and the
//! level's hash; then every level's index bits packed into public inputs.

use blstrs::Scalar as Fr;
use filecoin_hashers::{
    POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8, POSEIDON_CONSTANTS_11,
};

use super::poseidon::poseidon_hash;
use super::sha256::{hash2, tree_d_level};
use super::{WitnessSink, pack_into_inputs};

/// The hash a tree's levels use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeHasher {
    /// tree_c, tree_r_last (arity 2, 4 or 8 per level).
    Poseidon,
    /// tree_d (binary).
    Sha256,
}

/// One level of a path: the siblings, in order, and the node's position among the level's
/// `siblings.len() + 1` children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathLevel {
    pub siblings: Vec<Fr>,
    pub index: usize,
}

/// A Merkle proof's path as plain levels.
pub fn path_of<P: storage_proofs_core::merkle::MerkleProofTrait>(proof: &P) -> Vec<PathLevel> {
    proof
        .path()
        .into_iter()
        .map(|(siblings, index)| PathLevel {
            siblings: siblings.into_iter().map(Into::into).collect(),
            index,
        })
        .collect()
}

/// The path's witness from `leaf` up; returns the computed root.
pub fn por_path<S: WitnessSink>(
    out: &mut S,
    hasher: TreeHasher,
    leaf: Fr,
    path: &[PathLevel],
) -> Fr {
    let mut cur = leaf;
    let mut index_bits = Vec::with_capacity(3 * path.len());
    for level in path {
        let arity = level.siblings.len() + 1;
        assert!(
            arity.is_power_of_two() && arity >= 2,
            "a Merkle level of arity {arity}: Filecoin's trees have 2, 4 or 8"
        );
        let bits = arity.trailing_zeros();
        let bit = |i: u32| (level.index >> i) & 1 == 1;
        index_bits.extend((0..bits).map(bit));
        cur = match hasher {
            TreeHasher::Sha256 => {
                assert_eq!(arity, 2, "tree_d is binary");
                tree_d_level(out, cur, bit(0), level.siblings[0])
            }
            TreeHasher::Poseidon => {
                for i in 0..bits {
                    out.bits(u64::from(bit(i)), 1);
                }
                for &sibling in &level.siblings {
                    out.scalar(sibling);
                }
                let children = insert(out, cur, level.index, &level.siblings);
                poseidon_hash_of(out, &children)
            }
        };
    }
    pack_into_inputs(out, &index_bits);
    cur
}

/// A path as storage-proofs-core's `por_no_challenge_input` synthesizes it (the SnapDeals
/// circuit's): the leaf, the root and every level's siblings already allocated by the caller,
/// the index bits those of a challenge allocated elsewhere (least significant first, each level
/// taking as many as its arity needs), so per level only the insertion's picks and the hash.
/// Returns the computed root.
pub fn por_without_inputs<S: WitnessSink>(
    out: &mut S,
    hasher: TreeHasher,
    leaf: Fr,
    levels: &[Vec<Fr>],
    challenge: u64,
) -> Fr {
    let mut cur = leaf;
    let mut index = challenge;
    for siblings in levels {
        let arity = siblings.len() + 1;
        assert!(
            arity.is_power_of_two() && arity >= 2,
            "a Merkle level of arity {arity}: Filecoin's trees have 2, 4 or 8"
        );
        let position = (index as usize) & (arity - 1);
        index >>= arity.trailing_zeros();
        let children = insert(out, cur, position, siblings);
        cur = match hasher {
            TreeHasher::Sha256 => {
                assert_eq!(arity, 2, "tree_d is binary");
                hash2(out, children[0], children[1])
            }
            TreeHasher::Poseidon => poseidon_hash_of(out, &children),
        };
    }
    cur
}

/// Poseidon of `preimage` with the constants of its arity (2, 4, 8: tree levels; 11: columns).
pub fn poseidon_hash_of<S: WitnessSink>(out: &mut S, preimage: &[Fr]) -> Fr {
    match preimage.len() {
        2 => poseidon_hash(out, &*POSEIDON_CONSTANTS_2, preimage),
        4 => poseidon_hash(out, &*POSEIDON_CONSTANTS_4, preimage),
        8 => poseidon_hash(out, &*POSEIDON_CONSTANTS_8, preimage),
        11 => poseidon_hash(out, &*POSEIDON_CONSTANTS_11, preimage),
        n => panic!("Poseidon of {n} elements: Filecoin hashes 2, 4, 8 or 11"),
    }
}

/// `pick`: `a` if `condition`, else `b`, allocated.
pub(crate) fn pick<S: WitnessSink>(out: &mut S, condition: bool, a: Fr, b: Fr) -> Fr {
    let c = if condition { a } else { b };
    out.scalar(c);
    c
}

/// storage-proofs-core's `insert` for 2, 4 and 8 children: `element` at position `index` among
/// `siblings`, through the gadget's own picks in its order.
fn insert<S: WitnessSink>(out: &mut S, element: Fr, index: usize, siblings: &[Fr]) -> Vec<Fr> {
    let bit = |i: u32| (index >> i) & 1 == 1;
    let a = element;
    match siblings.len() + 1 {
        2 => {
            let b = siblings[0];
            vec![pick(out, bit(0), b, a), pick(out, bit(0), a, b)]
        }
        4 => {
            let (b0, b1) = (bit(0), bit(1));
            let [b, c, d] = siblings.try_into().expect("3 siblings");
            let p0_x0 = pick(out, b0, b, a);
            let p0 = pick(out, b1, b, p0_x0);
            let p1_x0 = pick(out, b0, a, b);
            let p1 = pick(out, b1, c, p1_x0);
            let p2_x1 = pick(out, b0, d, a);
            let p2 = pick(out, b1, p2_x1, c);
            let p3_x1 = pick(out, b0, a, d);
            let p3 = pick(out, b1, p3_x1, d);
            vec![p0, p1, p2, p3]
        }
        8 => {
            let (b0, b1, b2) = (bit(0), bit(1), bit(2));
            let [b, c, d, e, f, g, h] = siblings.try_into().expect("7 siblings");
            let nor = !b0 && !b1;
            let and = b0 && b1;
            out.bits(u64::from(nor), 1);
            out.bits(u64::from(and), 1);
            let p0_xx0 = pick(out, nor, a, b);
            let p0 = pick(out, b2, b, p0_xx0);
            let p1_x00 = pick(out, b0, a, b);
            let p1_xx0 = pick(out, b1, c, p1_x00);
            let p1 = pick(out, b2, c, p1_xx0);
            let p2_x10 = pick(out, b0, d, a);
            let p2_xx0 = pick(out, b1, p2_x10, c);
            let p2 = pick(out, b2, d, p2_xx0);
            let p3_xx0 = pick(out, and, a, d);
            let p3 = pick(out, b2, e, p3_xx0);
            let p4_xx1 = pick(out, nor, a, f);
            let p4 = pick(out, b2, p4_xx1, e);
            let p5_x01 = pick(out, b0, a, f);
            let p5_xx1 = pick(out, b1, g, p5_x01);
            let p5 = pick(out, b2, p5_xx1, f);
            let p6_x11 = pick(out, b0, h, a);
            let p6_xx1 = pick(out, b1, p6_x11, g);
            let p6 = pick(out, b2, p6_xx1, g);
            let p7_xx1 = pick(out, and, a, h);
            let p7 = pick(out, b2, p7_xx1, h);
            vec![p0, p1, p2, p3, p4, p5, p6, p7]
        }
        n => panic!("insertion among {n} children: Filecoin's trees have 2, 4 or 8"),
    }
}

#[cfg(test)]
mod tests {
    use bellperson::ConstraintSystem;
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::util_cs::witness_cs::WitnessCS;
    use ff::Field;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use filecoin_hashers::sha256::Sha256Hasher;
    use filecoin_hashers::{Hasher, PoseidonArity};
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};
    use storage_proofs_core::gadgets::por::{AuthPath, PoRCircuit};
    use storage_proofs_core::gadgets::variables::Root;
    use storage_proofs_core::merkle::DiskStore;
    use storage_proofs_core::merkle::MerkleTreeWrapper;
    use typenum::{U0, U2, U4, U8};

    use super::*;
    use crate::witness::Assignment;

    /// A random path of `base` levels of arity U, then one of V and one of W where nonzero.
    fn random_path<U: PoseidonArity, V: PoseidonArity, W: PoseidonArity>(
        rng: &mut ChaCha20Rng,
        base: usize,
    ) -> Vec<PathLevel> {
        std::iter::repeat_n(U::to_usize(), base)
            .chain([V::to_usize(), W::to_usize()])
            .filter(|&a| a > 0)
            .map(|arity| PathLevel {
                siblings: (0..arity - 1).map(|_| Fr::random(&mut *rng)).collect(),
                index: rng.next_u32() as usize % arity,
            })
            .collect()
    }

    fn held_to_por_circuit<H: 'static + Hasher, U, V, W>(hasher: TreeHasher, base: usize, seed: u64)
    where
        U: 'static + PoseidonArity,
        V: 'static + PoseidonArity,
        W: 'static + PoseidonArity,
    {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let path = random_path::<U, V, W>(&mut rng, base);
        let leaf = Fr::random(&mut rng);
        let mut native = Assignment::default();
        let root = por_path(&mut native, hasher, leaf, &path);

        let mut cs = WitnessCS::<Fr>::new();
        let leaf_num = AllocatedNum::alloc(cs.namespace(|| "leaf"), || Ok(leaf)).unwrap();
        let root_num = AllocatedNum::alloc(cs.namespace(|| "root"), || Ok(root)).unwrap();
        let (inputs, aux) = (cs.scalar_inputs().len(), cs.scalar_aux().len());
        let options: Vec<(Vec<Option<Fr>>, Option<usize>)> = path
            .iter()
            .map(|l| {
                (
                    l.siblings.iter().copied().map(Some).collect(),
                    Some(l.index),
                )
            })
            .collect();
        let auth_path: AuthPath<H, U, V, W> = options.into();
        PoRCircuit::<MerkleTreeWrapper<H, DiskStore<H::Domain>, U, V, W>>::synthesize(
            cs.namespace(|| "por"),
            Root::from_allocated::<WitnessCS<Fr>>(leaf_num),
            auth_path,
            Root::from_allocated::<WitnessCS<Fr>>(root_num),
            true,
        )
        .unwrap();
        let what = format!(
            "{hasher:?} ({}, {}, {})",
            U::to_usize(),
            V::to_usize(),
            W::to_usize()
        );
        assert_eq!(native.aux, cs.scalar_aux()[aux..], "{what}: aux");
        assert_eq!(
            native.inputs,
            cs.scalar_inputs()[inputs..],
            "{what}: inputs"
        );
        // The circuit enforces the computed root equals the given one; a satisfied test
        // system says the native root is the tree's.
    }

    #[test]
    fn paths_are_witnessed_value_for_value_as_por_circuit_allocates_them() {
        held_to_por_circuit::<PoseidonHasher, U8, U0, U0>(TreeHasher::Poseidon, 3, 31);
        held_to_por_circuit::<PoseidonHasher, U8, U8, U0>(TreeHasher::Poseidon, 3, 32);
        held_to_por_circuit::<PoseidonHasher, U8, U8, U2>(TreeHasher::Poseidon, 2, 33);
        held_to_por_circuit::<PoseidonHasher, U4, U2, U0>(TreeHasher::Poseidon, 3, 34);
        held_to_por_circuit::<PoseidonHasher, U2, U0, U0>(TreeHasher::Poseidon, 4, 35);
        held_to_por_circuit::<Sha256Hasher, U2, U0, U0>(TreeHasher::Sha256, 3, 36);
    }

    #[test]
    fn every_insertion_position_is_picked_as_the_gadget_picks_it() {
        let mut rng = ChaCha20Rng::seed_from_u64(37);
        for arity in [2usize, 4, 8] {
            let siblings: Vec<Fr> = (0..arity - 1).map(|_| Fr::random(&mut rng)).collect();
            let element = Fr::random(&mut rng);
            for index in 0..arity {
                let children = insert(&mut Assignment::default(), element, index, &siblings);
                let mut expected = siblings.clone();
                expected.insert(index, element);
                assert_eq!(children, expected, "arity {arity}, index {index}");
            }
        }
    }

    #[test]
    fn index_bits_pack_into_capacity_sized_inputs() {
        let mut out = Assignment::default();
        let bits: Vec<bool> = (0..300).map(|i| i % 3 == 0).collect();
        pack_into_inputs(&mut out, &bits);
        assert_eq!(out.inputs.len(), 2);
        let low: u64 = (0..64).filter(|i| i % 3 == 0).map(|i| 1u64 << i).sum();
        assert_eq!(out.inputs[0].to_bytes_le()[..8], low.to_le_bytes());
    }
}
