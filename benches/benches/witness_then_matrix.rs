//! Synthesis in one pass (`groth16::synthesize`: each constraint's A, B, C linear
//! combinations evaluated as the gadgets enforce them) against two
//! (`groth16::synthesize_from_matrices`: the gadgets run for the witness only, then a, b, c
//! are products of the R1CS matrices, recorded once per circuit size, with the assignment).
//!
//! Reports, per circuit and size, in one run: both times for one partition on one thread (as
//! a pipeline worker runs it) and their ratio (> 1: the matrices are faster), the one-off
//! recording time, and the matrices' size. The two results are checked equal.
//!
//! `cargo bench -p proofpipe-benches --bench witness_then_matrix`; choose cases with
//! `PROOFPIPE_BENCH="merkle-sha256:262144,mul-chain:262144"` (circuit:constraints).

use std::time::{Duration, Instant};

use proofpipe_pipeline::circuits::CircuitKind;
use proofpipe_pipeline::groth16::{R1csMatrices, synthesize, synthesize_from_matrices};

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

fn main() {
    let spec = std::env::var("PROOFPIPE_BENCH")
        .unwrap_or_else(|_| "merkle-sha256:262144,mul-chain:262144".into());
    for case in spec.split(',') {
        let (circuit, constraints) = case
            .split_once(':')
            .unwrap_or_else(|| panic!("case {case:?} is not circuit:constraints"));
        let kind: CircuitKind = circuit.parse().unwrap_or_else(|e| panic!("{e}"));
        let n: usize = constraints.parse().expect("constraints is a number");
        let shape = kind.shape(n).unwrap_or_else(|e| panic!("{e}"));
        let circuit = || kind.partition(n, 1, 0).expect("a valid size");

        let (matrices, record_time) =
            timed(|| R1csMatrices::record(circuit(), shape).expect("recording"));
        let (direct, direct_time) = timed(|| synthesize(circuit(), shape).expect("synthesis"));
        let (split, split_time) =
            timed(|| synthesize_from_matrices(circuit(), &matrices).expect("synthesis"));
        assert!(
            split.a == direct.a && split.b == direct.b && split.c == direct.c,
            "the two syntheses must agree"
        );
        println!(
            "{} 2^{:.0}: one pass {:.3} s | matrices {:.3} s | one pass / matrices = {:.2} | recorded once in {:.3} s: {} nonzeros ({:.1} per constraint), {:.1} MiB ({:.1} B per nonzero)",
            kind.name(),
            (n as f64).log2(),
            direct_time.as_secs_f64(),
            split_time.as_secs_f64(),
            direct_time.as_secs_f64() / split_time.as_secs_f64(),
            record_time.as_secs_f64(),
            matrices.nonzeros(),
            matrices.nonzeros() as f64 / shape.constraints as f64,
            matrices.heap_bytes() as f64 / f64::from(1 << 20),
            matrices.heap_bytes() as f64 / matrices.nonzeros() as f64,
        );
    }
}
