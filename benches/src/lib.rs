//! Benchmarks live in `benches/`: `cargo bench -p proofpipe-benches`. Speed and memory are
//! reported as ratios against a baseline measured in the same run, so the numbers compare
//! across machines; tests assert correctness, never timings.
//!
//! - `pipeline_vs_stock`: the pipeline against bellperson's stock batch prover.
//! - `witness_then_matrix`: our synthesis against a witness-only pass plus sparse R1CS
//!   matrix products (a candidate for synthesis-bound circuits; docs/benchmarks.md).
//! - `porep_synthesis`: the real Filecoin PoRep partition (placeholder vanilla proofs of its
//!   exact shape) synthesized in one pass against two (docs/benchmarks.md).
//!
//! [`compare`] is the harness the benches and `proofpipe-prover bench` share (the pipeline and
//! the stock prover on one workload, steady state, memory trace); [`plot`] draws its timeline.

pub mod compare;
pub mod machine;
pub mod plot;

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
    let (median, min, max) = crate::compare::spread(ratios);
    println!("median of {runs}: {median:.1}x (spread {min:.1}-{max:.1})");
}

/// Times a witness computed by a circuit's gadgets (`gadgets`) against the same witness
/// computed natively (`native`), in turn, `runs` times, each run printed with the assignment's
/// size, then the median ratio. Returns the report's fields: `runs` (each run's seconds and
/// ratio), `median_ratio`, `min_ratio`, `max_ratio`.
pub fn time_gadgets_against_native(
    runs: usize,
    (inputs, aux): (usize, usize),
    mut gadgets: impl FnMut(),
    mut native: impl FnMut(),
) -> serde_json::Value {
    use std::time::Instant;
    let mut ratios = Vec::new();
    let mut rows = Vec::new();
    for run in 0..runs {
        let started = Instant::now();
        gadgets();
        let gadget_s = started.elapsed().as_secs_f64();
        let started = Instant::now();
        native();
        let native_s = started.elapsed().as_secs_f64();
        let ratio = gadget_s / native_s;
        println!(
            "run {run}: {aux} aux, {inputs} inputs | gadgets {gadget_s:.3} s | native \
             {native_s:.3} s | gadgets / native = {ratio:.1}"
        );
        rows.push(serde_json::json!({
            "run": run, "gadget_s": gadget_s, "native_s": native_s, "ratio": ratio,
        }));
        ratios.push(ratio);
    }
    let (median, min, max) = crate::compare::spread(ratios.clone());
    print_median_ratio(ratios);
    serde_json::json!({
        "runs": rows,
        "median_ratio": median,
        "min_ratio": min,
        "max_ratio": max,
    })
}

/// Writes `report` (a JSON object) with `timings`' fields (a JSON object, such as
/// [`time_gadgets_against_native`]'s), this machine's CPU model (`cpu`) and where it ran
/// (`machine`: [`machine::record`]) to the file `PROOFPIPE_BENCH_JSON` names; nothing when it
/// is unset.
pub fn write_json_report(mut report: serde_json::Value, timings: serde_json::Value) {
    let Ok(path) = std::env::var("PROOFPIPE_BENCH_JSON") else {
        return;
    };
    if let serde_json::Value::Object(fields) = timings {
        for (field, value) in fields {
            report[field] = value;
        }
    }
    report["cpu"] = machine::cpu_model().unwrap_or_default().into();
    report["machine"] = machine::record();
    std::fs::write(&path, format!("{report:#}\n"))
        .unwrap_or_else(|e| panic!("writing the report to {path}: {e}"));
}
