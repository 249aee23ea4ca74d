//! One SHA-256 compression's witness (a block whose message bits and state are allocated, as
//! in every PoRep label and tree_d hash but the first block and the padding-only ones): the
//! gadget (bellperson's `sha256_compression_function` on its witness-only constraint system,
//! as synthesis computes it today) against `witness::sha256::compress_general_block` (native
//! u32 arithmetic, the same values in the same order), on one thread, in one run. The two
//! witnesses are checked equal first.
//!
//! `cargo bench -p proofpipe-benches --bench sha256_witness` (PROOFPIPE_BENCH_BLOCKS, 2000).

use std::time::{Duration, Instant};

use bellperson::ConstraintSystem;
use bellperson::gadgets::sha256::sha256_compression_function;
use bellperson::util_cs::witness_cs::WitnessCS;
use blstrs::Scalar as Fr;
use proofpipe_filecoin::witness::sha256::{
    GENERAL_BLOCK_AUX, allocate_gadget_block, compress_general_block,
};

/// A block's gadget witness and the time of the compression alone (inputs allocated first).
fn gadget(state: [u32; 8], block: [u32; 16]) -> (Vec<Fr>, Duration) {
    let mut cs = WitnessCS::<Fr>::new();
    let (state, bits) = allocate_gadget_block(&mut cs, state, block).unwrap();
    let before = cs.scalar_aux().len();
    let started = Instant::now();
    sha256_compression_function(cs.namespace(|| "block"), &bits, &state).unwrap();
    let took = started.elapsed();
    (cs.scalar_aux().split_off(before), took)
}

/// Deterministic pseudo-random words (xorshift): inputs only, nothing depends on their quality.
fn words<const N: usize>(seed: &mut u64) -> [u32; N] {
    std::array::from_fn(|_| {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed as u32
    })
}

fn main() {
    let blocks: usize = std::env::var("PROOFPIPE_BENCH_BLOCKS")
        .ok()
        .map_or(2000, |v| {
            v.parse().expect("PROOFPIPE_BENCH_BLOCKS is a number")
        });
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    let inputs: Vec<([u32; 8], [u32; 16])> = (0..blocks)
        .map(|_| (words(&mut seed), words(&mut seed)))
        .collect();

    let mut native = Vec::with_capacity(GENERAL_BLOCK_AUX);
    for &(state, block) in inputs.iter().take(10) {
        native.clear();
        compress_general_block(&mut native, state, block);
        assert!(
            gadget(state, block).0 == native,
            "the native witness must equal the gadget's"
        );
    }

    let mut gadget_time = Duration::ZERO;
    for &(state, block) in &inputs {
        gadget_time += gadget(state, block).1;
    }
    let started = Instant::now();
    let mut checksum = 0usize;
    for &(state, block) in &inputs {
        native.clear();
        let out = compress_general_block(&mut native, state, block);
        checksum = checksum.wrapping_add(out[0] as usize + native.len());
    }
    let native_time = started.elapsed();
    std::hint::black_box(checksum);
    let per = |d: Duration| d.as_secs_f64() * 1e6 / blocks as f64;
    println!(
        "sha256 compression witness, {blocks} blocks of {GENERAL_BLOCK_AUX} aux, one thread: gadget {:.1} us/block | native {:.1} us/block | gadget / native = {:.1}",
        per(gadget_time),
        per(native_time),
        gadget_time.as_secs_f64() / native_time.as_secs_f64()
    );
}
