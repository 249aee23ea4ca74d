//! One level of a tree_d (SHA-256, binary) Merkle path as storage-proofs-core's `PoRCircuit`
//! allocates it, computed natively: the index bit, the sibling, the two picks that order the
//! pair (`insert_2`), each child's 255 bits (`to_bits_le`), the SHA-256 of the two 32-byte
//! children and the packed parent. A 32 GiB challenge walks 30 such levels (~19% of its
//! witness).

use blstrs::Scalar as Fr;
use ff::PrimeField;

use super::label::packed;
use super::{WitnessSink, Word, hash};

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
    let mut message = [Word::constant(0); 16];
    for (half, child) in [left, right].into_iter().enumerate() {
        let repr = child.to_repr();
        // `to_bits_le`: the element's 255 bits, least significant first.
        for (i, limb) in repr.chunks_exact(8).enumerate() {
            let limb = u64::from_le_bytes(limb.try_into().expect("8 bytes"));
            out.bits(limb, if i == 3 { 63 } else { 64 });
        }
        // Hashed as its 32 little-endian bytes, each most significant bit first; the 256th bit
        // (the top of the last byte) is the constant the circuit pads with.
        for (j, word) in repr.chunks_exact(4).enumerate() {
            message[8 * half + j] = Word {
                value: u32::from_be_bytes(word.try_into().expect("4 bytes")),
                constant: if j == 7 { 1 << 7 } else { 0 },
                negated: 0,
            };
        }
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

            let mut native = Vec::new();
            let native_parent = tree_d_level(&mut native, cur, index_bit, sibling);
            assert_eq!(
                native.len(),
                gadget.len(),
                "index bit {index_bit}: aux count"
            );
            assert!(native == gadget, "index bit {index_bit}: aux values");
            assert_eq!(
                Some(native_parent),
                parent.get_value(),
                "index bit {index_bit}"
            );
        }
    }
}
