//! Benchmarks live in `benches/`: `cargo bench -p proofpipe-benches`. Speed and memory are
//! reported as ratios against a baseline measured in the same run, so the numbers compare
//! across machines; tests assert correctness, never timings.
//!
//! - `pipeline_vs_stock`: the pipeline against bellperson's stock batch prover.
//! - `witness_then_matrix`: our synthesis against a witness-only pass plus sparse R1CS
//!   matrix products (a candidate for synthesis-bound circuits; docs/benchmarks.md).
//! - `porep_synthesis`: the real Filecoin PoRep partition (placeholder vanilla proofs of its
//!   exact shape) synthesized in one pass against two (docs/benchmarks.md).

/// A count from the environment (`name`), else `default`; anything but a number is refused.
pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} is a number, not {v:?}"))
    })
}

/// The summary line of a benchmark's runs: the median ratio and its spread.
pub fn print_median_ratio(ratios: Vec<f64>) {
    let runs = ratios.len();
    let (median, min, max) = proofpipe_prover::bench::spread(ratios);
    println!("median of {runs}: {median:.1}x (spread {min:.1}-{max:.1})");
}
