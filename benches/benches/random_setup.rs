//! Groth16 parameters from a random setup: bellperson's `generate_random_parameters` against
//! `params::random_setup::random_parameters` (the same rng, the same bytes out: checked), on
//! every core, in one run. The Filecoin test data's PoRep, SnapDeals and PoSt parameters and
//! the synthetic circuits' are made this way.
//!
//! `cargo bench -p proofpipe-benches --bench random_setup` (PROOFPIPE_BENCH_CONSTRAINTS, 65536:
//! the SHA-256 Merkle circuit; PROOFPIPE_BENCH_RUNS, 3).

use std::time::Instant;

use bellperson::groth16::{Parameters, generate_random_parameters};
use blstrs::Bls12;
use proofpipe_benches::{env_count, print_median_ratio};
use proofpipe_pipeline::circuits::CircuitKind;
use proofpipe_pipeline::params::random_setup::random_parameters;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn bytes(params: &Parameters<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    params.write(&mut out).unwrap();
    out
}

fn main() {
    let constraints = env_count("PROOFPIPE_BENCH_CONSTRAINTS", 1 << 16);
    let runs = env_count("PROOFPIPE_BENCH_RUNS", 3);
    let kind = CircuitKind::MerkleSha256;
    let mut ratios = Vec::new();
    for run in 0..runs {
        let seed = run as u64;
        let started = Instant::now();
        let theirs = generate_random_parameters::<Bls12, _, _>(
            kind.partition(constraints, 0, 0).unwrap(),
            &mut ChaCha20Rng::seed_from_u64(seed),
        )
        .unwrap();
        let bellperson = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let ours = random_parameters(
            kind.partition(constraints, 0, 0).unwrap(),
            &mut ChaCha20Rng::seed_from_u64(seed),
        )
        .unwrap();
        let table = started.elapsed().as_secs_f64();
        assert!(
            bytes(&ours) == bytes(&theirs),
            "the parameters must be bellperson's"
        );
        println!(
            "random setup, {kind} {constraints} constraints, {} threads, run {run}: bellperson {bellperson:.2} s | random_setup {table:.2} s | bellperson / random_setup = {:.1}",
            rayon::current_num_threads(),
            bellperson / table
        );
        ratios.push(bellperson / table);
    }
    print_median_ratio(ratios);
}
