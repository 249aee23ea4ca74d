//! Benchmarks live in `benches/`: `cargo bench -p proofpipe-benches`. Speed and memory are
//! reported as ratios against bellperson's stock batch prover measured in the same run, so
//! the numbers compare across machines; tests assert correctness, never timings.
