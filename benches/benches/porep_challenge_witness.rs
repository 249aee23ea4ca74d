//! One PoRep challenge's whole witness (the placeholder partition of the sector size, sliced
//! to one challenge: its prefix and the challenge's labels, tree_d, tree_c and tree_r_last
//! paths and column hashes): `StackedCircuit`'s own synthesis on bellperson's witness-only
//! constraint system (the gadgets, as two-pass synthesis computed it before) against
//! `witness::porep` (native, the same values in the same order), each on one thread, in one
//! run. The two witnesses are checked equal, value for value, before anything is timed.
//!
//! `cargo bench -p proofpipe-benches --bench porep_challenge_witness` (PROOFPIPE_BENCH_SECTOR:
//! a sector size or seal proof as `prove` takes it, 32GiB by default; PROOFPIPE_BENCH_RUNS, 3;
//! PROOFPIPE_BENCH_JSON: a file for the report).

use std::time::Instant;

use proofpipe_benches::{env_count, time_gadgets_against_native, write_json_report};
use proofpipe_filecoin::parse_seal_proof;
use proofpipe_filecoin::shape::{Placeholder, PlaceholderWitness};
use proofpipe_pipeline::witness::Assignment;
use serde_json::json;

fn main() {
    let sector = std::env::var("PROOFPIPE_BENCH_SECTOR").unwrap_or_else(|_| "32GiB".into());
    let seal_proof =
        parse_seal_proof(&sector).unwrap_or_else(|e| panic!("PROOFPIPE_BENCH_SECTOR: {e}"));
    let runs = env_count("PROOFPIPE_BENCH_RUNS", 3);
    let placeholder = Placeholder {
        challenges_per_partition: Some(1),
        ..Placeholder::of(seal_proof)
    };
    let started = Instant::now();
    let witness = PlaceholderWitness::new(placeholder).expect("the placeholder challenge");
    println!(
        "{sector} PoRep, one challenge: vanilla proof and circuit built in {:.2} s",
        started.elapsed().as_secs_f64()
    );

    let gadget = witness.by_gadgets().expect("the circuit's own synthesis");
    let mut native = Assignment::default();
    witness.natively_into(&mut native);
    assert_eq!(
        (native.inputs.len(), native.aux.len()),
        (gadget.inputs.len(), gadget.aux.len()),
        "the native witness must have the circuit's (inputs, aux) counts"
    );
    assert!(
        native == gadget,
        "the native witness must equal the circuit's own, value for value"
    );
    let (inputs, aux) = (gadget.inputs.len(), gadget.aux.len());
    drop(gadget);

    let ratios = time_gadgets_against_native(
        runs,
        (inputs, aux),
        || drop(witness.by_gadgets().expect("the circuit's own synthesis")),
        // The native witness writes into kept capacity, as synthesis writes into the
        // partition's preallocated assignment.
        || witness.natively_into(&mut native),
    );
    let report = json!({
        "bench": "porep_challenge_witness",
        "command": "cargo bench -p proofpipe-benches --bench porep_challenge_witness",
        "sector": sector,
        "challenges": 1,
        "inputs": inputs,
        "aux": aux,
        "identical": true,
        "threads": 1,
    });
    write_json_report(report, ratios);
}
