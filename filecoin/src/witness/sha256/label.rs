//! storage-proofs-porep's `create_label_circuit`, computed natively: a PoRep label is the
//! SHA-256 of the replica id, the layer and node, and the node's 37 parent labels (each
//! padded to 32 bytes), packed into a field element. The labels of a 32 GiB challenge's 11
//! layers are ~79% of its witness.

use blstrs::Scalar as Fr;
use ff::PrimeField;

use super::{WitnessSink, Word, hash};

/// Parents hashed per label (6 DRG and 8 expander parents, repeated), as the circuit takes
/// them.
pub const LABEL_PARENTS: usize = 37;

/// The label's witness (the hash's bits, then the packed label) and the label. `replica_id`
/// and each parent are 32-byte words as the circuit pads them (its bits most significant
/// first; what the circuit pads with is constant); `layer` is the layer's word (constant in
/// the circuit), `node` the challenged node's 64 bits, most significant word first.
pub fn create_label<S: WitnessSink>(
    out: &mut S,
    replica_id: &[Word; 8],
    layer: Word,
    node: [Word; 2],
    parents: &[[Word; 8]; LABEL_PARENTS],
) -> Fr {
    let mut message = Vec::with_capacity(8 * (2 + LABEL_PARENTS));
    message.extend_from_slice(replica_id);
    message.push(layer);
    message.extend_from_slice(&node);
    // The second 32 bytes are padded with constant zeros.
    message.extend_from_slice(&[Word::constant(0); 5]);
    for parent in parents {
        message.extend_from_slice(parent);
    }
    let digest = hash(out, &message);
    let label = packed(digest.map(|w| w.value));
    out.scalar(label);
    label
}

/// A field element's 255 bits as the circuit hands them to a label (most significant first),
/// with the constant zero it pads them with to 32 bytes: the last bit of `values`.
pub fn padded_element(mut values: [u32; 8]) -> [Word; 8] {
    values[7] &= !1;
    std::array::from_fn(|i| Word {
        value: values[i],
        constant: u32::from(i == 7),
        negated: 0,
    })
}

/// A field element as a SHA-256 gadget reads it from `reverse_bit_numbering(to_bits_le)`: its
/// 32 little-endian bytes, each most significant bit first (so the words are the bytes read
/// big-endian); the 256th bit, the top of the last byte, is the constant the circuit pads with.
pub fn element_words(value: Fr) -> [Word; 8] {
    let repr = value.to_repr();
    std::array::from_fn(|j| Word {
        value: u32::from_be_bytes(repr[4 * j..4 * j + 4].try_into().expect("4 bytes")),
        constant: if j == 7 { 1 << 7 } else { 0 },
        negated: 0,
    })
}

/// Such an element as the gadget's input: its 255 bits allocated on `cs`, most significant
/// first. The reference the native label is held to (tests) and timed against (benches).
pub fn allocate_gadget_element<CS: bellperson::ConstraintSystem<Fr>>(
    cs: &mut CS,
    element: &[Word; 8],
) -> Result<Vec<bellperson::gadgets::boolean::Boolean>, bellperson::SynthesisError> {
    use bellperson::gadgets::boolean::AllocatedBit;
    (0..255)
        .map(|i| {
            let bit = (element[i / 32].value >> (31 - i % 32)) & 1 == 1;
            AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(bit)).map(Into::into)
        })
        .collect()
}

/// A digest packed as Filecoin's SHA-256 circuits pack it (`pack_bits` of the digest's bits
/// with each byte's bit order reversed, the first `CAPACITY`): the digest's bytes read
/// little-endian with the two top bits cleared.
pub(crate) fn packed(digest: [u32; 8]) -> Fr {
    let mut bytes = [0u8; 32];
    for (chunk, word) in bytes.chunks_exact_mut(4).zip(digest) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    bytes[31] &= 0x3f;
    Option::from(Fr::from_repr(bytes)).expect("254 bits are below the modulus")
}

#[cfg(test)]
mod tests {
    use bellperson::ConstraintSystem;
    use bellperson::gadgets::boolean::Boolean;
    use bellperson::gadgets::uint32::UInt32;
    use bellperson::util_cs::witness_cs::WitnessCS;
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};
    use storage_proofs_core::gadgets::uint64::UInt64;
    use storage_proofs_porep::stacked::create_label_circuit;

    use super::*;

    fn element(rng: &mut ChaCha20Rng) -> [Word; 8] {
        padded_element(std::array::from_fn(|_| rng.next_u32()))
    }

    #[test]
    fn a_label_is_witnessed_bit_for_bit_as_create_label_circuit_allocates_it() {
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        for layer in [1, 11] {
            let replica_id = element(&mut rng);
            let parents: [[Word; 8]; LABEL_PARENTS] = std::array::from_fn(|_| element(&mut rng));
            let node = u64::from(rng.next_u32()) << 3;

            let mut cs = WitnessCS::<Fr>::new();
            let replica_bits = allocate_gadget_element(&mut cs, &replica_id).unwrap();
            let parent_bits: Vec<Vec<Boolean>> = parents
                .iter()
                .map(|p| allocate_gadget_element(&mut cs, p).unwrap())
                .collect();
            let node_bits = UInt64::alloc(cs.namespace(|| "node"), Some(node)).unwrap();
            let inputs = cs.scalar_aux().len();
            let num = create_label_circuit(
                cs.namespace(|| "label"),
                &replica_bits,
                parent_bits,
                UInt32::constant(layer),
                node_bits,
            )
            .unwrap();
            let gadget = cs.scalar_aux().split_off(inputs);

            let mut native = crate::witness::Assignment::default();
            let label = create_label(
                &mut native,
                &replica_id,
                Word::constant(layer),
                [
                    Word::allocated((node >> 32) as u32),
                    Word::allocated(node as u32),
                ],
                &parents,
            );
            assert_eq!(native.aux.len(), gadget.len(), "layer {layer}: aux count");
            assert!(native.aux == gadget, "layer {layer}: aux values");
            assert_eq!(Some(label), num.get_value(), "layer {layer}: the label");
        }
    }
}
