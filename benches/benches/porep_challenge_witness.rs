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

use proofpipe_benches::{env_count, print_median_ratio};
use proofpipe_prover::filecoin::parse_seal_proof;
use proofpipe_prover::filecoin::shape::{Placeholder, PlaceholderWitness};
use proofpipe_prover::witness::Assignment;
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

    let mut ratios = Vec::new();
    let mut rows = Vec::new();
    for run in 0..runs {
        let started = Instant::now();
        let gadget = witness.by_gadgets().expect("the circuit's own synthesis");
        let gadget_s = started.elapsed().as_secs_f64();
        drop(gadget);
        // The native witness writes into kept capacity, as synthesis writes into the
        // partition's preallocated assignment.
        let started = Instant::now();
        witness.natively_into(&mut native);
        let native_s = started.elapsed().as_secs_f64();
        let ratio = gadget_s / native_s;
        println!(
            "run {run}: {aux} aux, {inputs} inputs | gadgets {gadget_s:.3} s | native \
             {native_s:.3} s | gadgets / native = {ratio:.1}"
        );
        rows.push(json!({"run": run, "gadget_s": gadget_s, "native_s": native_s, "ratio": ratio}));
        ratios.push(ratio);
    }
    let (median, min, max) = proofpipe_prover::bench::spread(ratios.clone());
    print_median_ratio(ratios);
    if let Ok(path) = std::env::var("PROOFPIPE_BENCH_JSON") {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|m| m.trim().to_string())
            })
            .unwrap_or_default();
        let report = json!({
            "bench": "porep_challenge_witness",
            "command": "cargo bench -p proofpipe-benches --bench porep_challenge_witness",
            "sector": sector,
            "challenges": 1,
            "inputs": inputs,
            "aux": aux,
            "identical": true,
            "threads": 1,
            "cpu": cpu,
            "runs": rows,
            "median_ratio": median,
            "min_ratio": min,
            "max_ratio": max,
        });
        std::fs::write(&path, format!("{report:#}\n"))
            .unwrap_or_else(|e| panic!("writing the report to {path}: {e}"));
    }
}
