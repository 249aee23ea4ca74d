//! Benchmarks live in `benches/`: `cargo bench -p proofpipe-benches`. Speed and memory are
//! reported as ratios against a baseline measured in the same run, so the numbers compare
//! across machines; tests assert correctness, never timings.
//!
//! - `pipeline_vs_stock`: the pipeline against bellperson's stock batch prover.
//! - `witness_then_matrix`: our synthesis against a witness-only pass plus sparse R1CS
//!   matrix products (a candidate for synthesis-bound circuits; docs/benchmarks.md).
//! - `porep_synthesis`: the real Filecoin PoRep partition (placeholder vanilla proofs of its
//!   exact shape) synthesized in one pass against two (docs/benchmarks.md).
