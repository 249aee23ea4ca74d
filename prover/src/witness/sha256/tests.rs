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
    (cs.scalar_aux().split_off(inputs), words.try_into().unwrap())
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
