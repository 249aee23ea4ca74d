//! A 32 GiB WindowPoSt partition's first sectors witnessed both ways: `FallbackPoStCircuit`'s
//! own synthesis on bellperson's witness-only constraint system (the gadgets, what one-pass
//! synthesis runs) against `witness::post` (native, the same values in the same order), each
//! on one thread, in one run. The two witnesses are checked equal first: the aux value for
//! value, the inputs once bellperson's per-group temporary ONEs are left out.
//!
//! `cargo bench -p proofpipe-benches --bench post_sector_witness` (PROOFPIPE_BENCH_POST: a
//! registered PoSt proof as `prove` takes it, StackedDrgWindow32GiBV1_2 by default;
//! PROOFPIPE_BENCH_SECTORS, 16; PROOFPIPE_BENCH_RUNS, 3; PROOFPIPE_BENCH_JSON: a file for the
//! report).

use std::time::Instant;

use blstrs::Scalar as Fr;
use ff::Field;
use proofpipe_benches::{env_count, time_gadgets_against_native, write_json_report};
use proofpipe_filecoin::post::parse_post_proof;
use proofpipe_filecoin::post::shape::PlaceholderPostWitness;
use proofpipe_pipeline::witness::Assignment;
use serde_json::json;

fn main() {
    let proof_name = std::env::var("PROOFPIPE_BENCH_POST")
        .unwrap_or_else(|_| "StackedDrgWindow32GiBV1_2".into());
    let proof =
        parse_post_proof(&proof_name).unwrap_or_else(|e| panic!("PROOFPIPE_BENCH_POST: {e}"));
    let sectors = env_count("PROOFPIPE_BENCH_SECTORS", 16);
    let runs = env_count("PROOFPIPE_BENCH_RUNS", 3);
    let started = Instant::now();
    let witness = PlaceholderPostWitness::new(proof, sectors).expect("the placeholder sectors");
    println!(
        "{proof_name}, {sectors} sectors: vanilla proofs and circuit built in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    // One core for the gadgets: the circuit would spread its sector groups over rayon's threads.
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    let by_gadgets =
        || one_thread.install(|| witness.by_gadgets().expect("the circuit's own synthesis"));

    let gadget = by_gadgets();
    let mut native = Assignment::default();
    witness.natively_into(&mut native);
    let without_ones =
        |inputs: &[Fr]| -> Vec<Fr> { inputs.iter().copied().filter(|x| *x != Fr::ONE).collect() };
    assert!(
        native.aux == gadget.aux && without_ones(&native.inputs) == without_ones(&gadget.inputs),
        "the native witness must equal the circuit's own, value for value"
    );
    let (inputs, aux) = (native.inputs.len(), native.aux.len());
    drop(gadget);

    let ratios = time_gadgets_against_native(
        runs,
        (inputs, aux),
        || drop(by_gadgets()),
        || witness.natively_into(&mut native),
    );
    let report = json!({
        "bench": "post_sector_witness",
        "command": "cargo bench -p proofpipe-benches --bench post_sector_witness",
        "post_proof": proof_name,
        "sectors": sectors,
        "inputs": inputs,
        "aux": aux,
        "identical": true,
        "threads": 1,
    });
    write_json_report(report, ratios);
}
