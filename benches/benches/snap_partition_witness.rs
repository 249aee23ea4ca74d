//! A SnapDeals partition witnessed both ways: `EmptySectorUpdateCircuit`'s own synthesis on
//! bellperson's witness-only constraint system (the gadgets, what one-pass synthesis runs)
//! against `witness::snap` (native, the same values in the same order), each on one thread, in
//! one run, on placeholder vanilla proofs of the sector size's exact shape. The two witnesses
//! are checked equal first, value for value.
//!
//! `cargo bench -p proofpipe-benches --bench snap_partition_witness` (PROOFPIPE_BENCH_UPDATE:
//! an update proof as `prove` takes it, 32GiB by default; PROOFPIPE_BENCH_RUNS, 3;
//! PROOFPIPE_BENCH_JSON: a file for the report).

use std::time::Instant;

use proofpipe_benches::{env_count, time_gadgets_against_native, write_json_report};
use proofpipe_filecoin::snap::shape::PlaceholderSnapWitness;
use proofpipe_filecoin::snap::{parse_update_proof, update_proof_name};
use proofpipe_pipeline::witness::Assignment;
use serde_json::json;

fn main() {
    let asked = std::env::var("PROOFPIPE_BENCH_UPDATE").unwrap_or_else(|_| "32GiB".into());
    let proof =
        parse_update_proof(&asked).unwrap_or_else(|e| panic!("PROOFPIPE_BENCH_UPDATE: {e}"));
    let name = update_proof_name(proof);
    let runs = env_count("PROOFPIPE_BENCH_RUNS", 3);
    let started = Instant::now();
    let witness = PlaceholderSnapWitness::new(proof, 0).expect("the placeholder partition");
    println!(
        "{name} partition 0: vanilla proof built in {:.2} s",
        started.elapsed().as_secs_f64()
    );

    let gadget = witness.by_gadgets().expect("the circuit's own synthesis");
    let mut native = Assignment::default();
    witness.natively_into(&mut native);
    assert!(
        native.aux == gadget.aux && native.inputs == gadget.inputs,
        "the native witness must equal the circuit's own, value for value"
    );
    let (inputs, aux) = (native.inputs.len(), native.aux.len());
    drop(gadget);

    let ratios = time_gadgets_against_native(
        runs,
        (inputs, aux),
        || drop(witness.by_gadgets().expect("the circuit's own synthesis")),
        || witness.natively_into(&mut native),
    );
    let report = json!({
        "bench": "snap_partition_witness",
        "command": "cargo bench -p proofpipe-benches --bench snap_partition_witness",
        "update_proof": name,
        "inputs": inputs,
        "aux": aux,
        "parts": witness.parts(),
        "identical": true,
        "threads": 1,
    });
    write_json_report(report, ratios);
}
