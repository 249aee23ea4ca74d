use bellperson::ConstraintSystem;
use bellperson::gadgets::sha256::sha256_compression_function;
use bellperson::util_cs::witness_cs::WitnessCS;
use blstrs::Scalar as Fr;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use super::*;

/// The gadget's auxiliary values for one block whose message bits and state are allocated,
/// past the allocations of those inputs themselves; and the new state.
fn gadget_block(state: [u32; 8], block: [u32; 16]) -> (Vec<Fr>, [u32; 8]) {
    let mut cs = WitnessCS::<Fr>::new();
    let (state, bits) = allocate_gadget_block(&mut cs, state, block).unwrap();
    let inputs = cs.scalar_aux().len();
    let out = sha256_compression_function(cs.namespace(|| "block"), &bits, &state).unwrap();
    (cs.scalar_aux().split_off(inputs), state_words(&out))
}

/// The values of a compression's output words.
fn state_words(out: &[bellperson::gadgets::uint32::UInt32]) -> [u32; 8] {
    let words: Vec<u32> = out
        .iter()
        .map(|w| {
            w.clone()
                .into_bits()
                .iter()
                .enumerate()
                .map(|(i, b)| u32::from(b.get_value().unwrap()) << i)
                .sum()
        })
        .collect();
    words.try_into().unwrap()
}

#[test]
fn a_block_of_allocated_bits_is_witnessed_bit_for_bit_as_the_gadget_allocates_it() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    for _ in 0..3 {
        let state: [u32; 8] = std::array::from_fn(|_| rng.next_u32());
        let block: [u32; 16] = std::array::from_fn(|_| rng.next_u32());
        let (gadget, gadget_state) = gadget_block(state, block);
        let mut native = Vec::new();
        let native_state = compress_general_block(&mut native, state, block);
        assert_eq!(gadget.len(), GENERAL_BLOCK_AUX);
        assert_eq!(native.len(), gadget.len());
        if let Some(first) = (0..native.len()).find(|&i| native[i] != gadget[i]) {
            panic!(
                "aux {first} differs: native {:?}, gadget {:?}",
                native[first], gadget[first]
            );
        }
        assert_eq!(native_state, gadget_state);
        assert!(gadget.iter().all(|v| *v == Fr::ZERO || *v == Fr::ONE));
    }
}

#[test]
fn the_new_state_is_sha256s_compression() {
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let state: [u32; 8] = std::array::from_fn(|_| rng.next_u32());
    let block: [u32; 16] = std::array::from_fn(|_| rng.next_u32());
    let mut expected = state;
    let bytes: Vec<u8> = block.iter().flat_map(|w| w.to_be_bytes()).collect();
    sha2::compress256(
        &mut expected,
        &[*sha2::digest::generic_array::GenericArray::from_slice(
            &bytes,
        )],
    );
    let mut sink = Vec::new();
    assert_eq!(compress_general_block(&mut sink, state, block), expected);
}

/// The gadget on a block whose state and message bits are constants where `Word::constant`
/// says so (allocated elsewhere): its auxiliary values past the inputs, and the new state.
fn gadget_masked(state: [Word; 8], block: [Word; 16]) -> (Vec<Fr>, [u32; 8]) {
    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use bellperson::gadgets::uint32::UInt32;
    let mut cs = WitnessCS::<Fr>::new();
    let bit = |cs: &mut WitnessCS<Fr>, w: Word, i: u32| -> Boolean {
        let value = (w.value >> i) & 1 == 1;
        if (w.constant >> i) & 1 == 1 {
            Boolean::constant(value)
        } else {
            AllocatedBit::alloc(cs.namespace(|| "input"), Some(value))
                .unwrap()
                .into()
        }
    };
    let state: Vec<UInt32> = state
        .iter()
        .map(|&w| UInt32::from_bits(&(0..32).map(|i| bit(&mut cs, w, i)).collect::<Vec<_>>()))
        .collect();
    let bits: Vec<Boolean> = block
        .iter()
        .flat_map(|&w| (0..32).rev().map(move |i| (w, i)))
        .map(|(w, i)| bit(&mut cs, w, i))
        .collect();
    let inputs = cs.scalar_aux().len();
    let out = sha256_compression_function(cs.namespace(|| "block"), &bits, &state).unwrap();
    (cs.scalar_aux().split_off(inputs), state_words(&out))
}

fn assert_same_as_gadget(what: &str, state: [Word; 8], block: [Word; 16]) -> usize {
    let (gadget, gadget_state) = gadget_masked(state, block);
    let mut native = Vec::new();
    let native_state = compress_block(&mut native, state, block);
    if let Some(first) = (0..native.len().min(gadget.len())).find(|&i| native[i] != gadget[i]) {
        panic!(
            "{what}: aux {first} differs: native {:?}, gadget {:?}",
            native[first], gadget[first]
        );
    }
    assert_eq!(native.len(), gadget.len(), "{what}: aux count");
    assert_eq!(
        native_state.map(|w| w.value),
        gadget_state,
        "{what}: new state"
    );
    native.len()
}

const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// A hash's first block (constant IV), a padding-only block (constant message), a block of
/// constant and allocated words (a label's first), random bits constant anywhere, and a
/// block of nothing but constants (no aux at all).
#[test]
fn blocks_with_constant_bits_are_witnessed_bit_for_bit_as_the_gadget_allocates_them() {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let allocated = |rng: &mut ChaCha20Rng| Word::allocated(rng.next_u32());
    let iv = IV.map(Word::constant);

    let block: [Word; 16] = std::array::from_fn(|_| allocated(&mut rng));
    assert_same_as_gadget("IV block", iv, block);

    let state: [Word; 8] = std::array::from_fn(|_| allocated(&mut rng));
    let mut padding = [Word::constant(0); 16];
    padding[0] = Word::constant(0x8000_0000);
    padding[15] = Word::constant(512);
    let padding_aux = assert_same_as_gadget("padding block", state, padding);
    assert_eq!(padding_aux, 19_014, "no message schedule is allocated");

    let mut label = block;
    label[8] = Word::constant(5);
    for word in &mut label[11..] {
        *word = Word::constant(0);
    }
    assert_same_as_gadget("label's first block", iv, label);

    for round in 0..6 {
        let masked = |rng: &mut ChaCha20Rng| Word {
            value: rng.next_u32(),
            // Sparse, dense and word-sized constant runs.
            constant: match round % 3 {
                0 => rng.next_u32() & rng.next_u32(),
                1 => rng.next_u32() | rng.next_u32(),
                _ => {
                    if rng.next_u32().is_multiple_of(2) {
                        u32::MAX
                    } else {
                        0
                    }
                }
            },
            negated: 0,
        };
        let state: [Word; 8] = std::array::from_fn(|_| masked(&mut rng));
        let block: [Word; 16] = std::array::from_fn(|_| masked(&mut rng));
        assert_same_as_gadget(&format!("random constants {round}"), state, block);
    }

    let constants: [Word; 16] = std::array::from_fn(|_| Word::constant(rng.next_u32()));
    assert_eq!(assert_same_as_gadget("all constants", iv, constants), 0);
}

/// Whole hashes as the `sha256` gadget computes them: tree_d's (two allocated 256-bit halves),
/// a label's length (39 x 256 bits, some words constant) and odd lengths; the digest is
/// SHA-256's.
#[test]
fn whole_hashes_are_witnessed_bit_for_bit_as_the_gadget_allocates_them() {
    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use sha2::Digest;
    let mut rng = ChaCha20Rng::seed_from_u64(10);
    for (words, constant_every) in [(16, 0), (312, 7), (3, 2), (14, 0), (15, 3), (31, 5)] {
        let message: Vec<Word> = (0..words)
            .map(|i| {
                let value = rng.next_u32();
                if constant_every != 0 && i % constant_every == 0 {
                    Word::constant(value)
                } else {
                    Word::allocated(value)
                }
            })
            .collect();
        let mut cs = WitnessCS::<Fr>::new();
        let bits: Vec<Boolean> = message
            .iter()
            .flat_map(|&w| (0..32).rev().map(move |i| (w, i)))
            .map(|(w, i)| {
                let value = (w.value >> i) & 1 == 1;
                if w.is_allocated() {
                    AllocatedBit::alloc(cs.namespace(|| "input"), Some(value))
                        .unwrap()
                        .into()
                } else {
                    Boolean::constant(value)
                }
            })
            .collect();
        let inputs = cs.scalar_aux().len();
        let digest_bits =
            bellperson::gadgets::sha256::sha256(cs.namespace(|| "hash"), &bits).unwrap();
        let gadget = cs.scalar_aux().split_off(inputs);
        let mut native = Vec::new();
        let digest = hash(&mut native, &message).map(|w| w.value);
        assert_eq!(native.len(), gadget.len(), "{words} words: aux count");
        assert!(native == gadget, "{words} words: aux values");
        let gadget_digest: Vec<u32> = digest_bits
            .chunks(32)
            .map(|w| {
                w.iter()
                    .fold(0, |acc, b| (acc << 1) | u32::from(b.get_value().unwrap()))
            })
            .collect();
        assert_eq!(digest.to_vec(), gadget_digest, "{words} words: digest");
        let bytes: Vec<u8> = message.iter().flat_map(|w| w.value.to_be_bytes()).collect();
        let expected: Vec<u32> = sha2::Sha256::digest(&bytes)
            .chunks(4)
            .map(|c| u32::from_be_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(digest.to_vec(), expected, "{words} words: SHA-256");
    }
}
