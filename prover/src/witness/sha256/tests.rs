use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::sha256::sha256_compression_function;
use bellperson::gadgets::uint32::UInt32;
use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use super::*;

/// Records what a gadget allocates, as a witness-only constraint system does.
#[derive(Default)]
struct Recorder {
    aux: Vec<Fr>,
}

impl ConstraintSystem<Fr> for Recorder {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        unreachable!("the compression allocates no inputs")
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// The gadget's auxiliary values for one block whose message bits and state are allocated,
/// past the allocations of those inputs themselves; and the new state.
fn gadget_block(state: [u32; 8], block: [u32; 16]) -> (Vec<Fr>, [u32; 8]) {
    let mut cs = Recorder::default();
    let state: Vec<UInt32> = state
        .iter()
        .enumerate()
        .map(|(i, &w)| UInt32::alloc(cs.namespace(|| format!("state {i}")), Some(w)).unwrap())
        .collect();
    let bits: Vec<Boolean> = block
        .iter()
        .flat_map(|&w| (0..32).rev().map(move |i| (w >> i) & 1 == 1))
        .enumerate()
        .map(|(i, b)| {
            Boolean::from(
                AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(b)).unwrap(),
            )
        })
        .collect();
    let inputs = cs.aux.len();
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
    (cs.aux.split_off(inputs), words.try_into().unwrap())
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
