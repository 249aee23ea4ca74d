//! One level of a tree_d (SHA-256, binary) Merkle path as storage-proofs-core's `PoRCircuit`
//! allocates it, computed natively: the index bit, the sibling, the two picks that order the
//! pair (`insert_2`), each child's 255 bits (`to_bits_le`), the SHA-256 of the two 32-byte
//! children and the packed parent. A 32 GiB challenge walks 30 such levels (~19% of its
//! witness).

use blstrs::Scalar as Fr;

use super::label::{element_words, packed};
use super::{WitnessSink, Word, hash};
use crate::witness::to_bits_le;

/// The level's witness; returns the parent. `index_bit` says whether `cur` is the right child.
pub fn tree_d_level<S: WitnessSink>(out: &mut S, cur: Fr, index_bit: bool, sibling: Fr) -> Fr {
    out.bits(u64::from(index_bit), 1);
    out.scalar(sibling);
    let (left, right) = if index_bit {
        (sibling, cur)
    } else {
        (cur, sibling)
    };
    out.scalar(left);
    out.scalar(right);
    hash2(out, left, right)
}

/// filecoin-hashers' `Sha256Function::hash2_circuit` of two allocated numbers (also what a
/// binary level's `hash_multi_leaf_circuit` does): each one's 255 bits (`to_bits_le`), the
/// SHA-256 of their 64 bytes, and the digest packed into a field element (its top two bits
/// dropped); returns that element.
pub fn hash2<S: WitnessSink>(out: &mut S, left: Fr, right: Fr) -> Fr {
    let mut message = [Word::constant(0); 16];
    for (half, child) in [left, right].into_iter().enumerate() {
        to_bits_le(out, child);
        message[8 * half..8 * half + 8].copy_from_slice(&element_words(child));
    }
    let parent = packed(hash(out, &message).map(|w| w.value));
    out.scalar(parent);
    parent
}

#[cfg(test)]
mod tests {
    use bellperson::ConstraintSystem;
    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::util_cs::witness_cs::WitnessCS;
    use ff::Field;
    use filecoin_hashers::HashFunction;
    use filecoin_hashers::sha256::Sha256Function;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;
    use storage_proofs_core::gadgets::insertion::insert;

    use super::*;

    #[test]
    fn a_tree_d_level_is_witnessed_bit_for_bit_as_por_circuit_allocates_it() {
        let mut rng = ChaCha20Rng::seed_from_u64(12);
        for index_bit in [false, true] {
            let (cur, sibling) = (Fr::random(&mut rng), Fr::random(&mut rng));
            let mut cs = WitnessCS::<Fr>::new();
            let cur_num = AllocatedNum::alloc(cs.namespace(|| "cur"), || Ok(cur)).unwrap();
            let inputs = cs.scalar_aux().len();
            let bit: Boolean = AllocatedBit::alloc(cs.namespace(|| "index bit"), Some(index_bit))
                .unwrap()
                .into();
            let path = AllocatedNum::alloc(cs.namespace(|| "path"), || Ok(sibling)).unwrap();
            let inserted = insert(&mut cs, &cur_num, &[bit], &[path]).unwrap();
            let parent = <Sha256Function as HashFunction<_>>::hash_multi_leaf_circuit::<
                typenum::U2,
                _,
            >(cs.namespace(|| "hash"), &inserted, 0)
            .unwrap();
            let gadget = cs.scalar_aux().split_off(inputs);

            let mut native = crate::witness::Assignment::default();
            let native_parent = tree_d_level(&mut native, cur, index_bit, sibling);
            assert_eq!(
                native.aux.len(),
                gadget.len(),
                "index bit {index_bit}: aux count"
            );
            assert!(native.aux == gadget, "index bit {index_bit}: aux values");
            assert_eq!(
                Some(native_parent),
                parent.get_value(),
                "index bit {index_bit}"
            );
        }
    }
}
