//! The summary `bench` prints after its runs: one line per GPU variant and memory cap.

use proofpipe_benches::compare::{BenchReport, spread};

/// One line per GPU variant (and GPU memory cap): steady-state seconds per partition, the whole
/// run's seconds per partition and per job (all its partitions), and device busy, the median of
/// its runs with their range. `reports` pairs each run with its line's label.
pub(super) fn print_summary(reports: &[(String, BenchReport)]) {
    println!("summary (median of runs, min-max):");
    println!(
        "{:<24} {:>4} {:>26} {:>26} {:>26} {:>18}",
        "gpu options",
        "runs",
        "steady s/partition",
        "whole-run s/partition",
        "whole-run s/job",
        "device busy"
    );
    let mut labels: Vec<&str> = Vec::new();
    for (label, _) in reports {
        if !labels.contains(&label.as_str()) {
            labels.push(label);
        }
    }
    for label in labels {
        let runs: Vec<&BenchReport> = reports
            .iter()
            .filter(|(l, _)| l == label)
            .map(|(_, r)| r)
            .collect();
        let fmt = |xs: Vec<f64>, pct: bool| {
            if xs.is_empty() {
                return "n/a".to_string();
            }
            let (m, lo, hi) = spread(xs);
            if pct {
                format!("{:.0}% ({:.0}-{:.0}%)", m * 100.0, lo * 100.0, hi * 100.0)
            } else {
                format!("{m:.3} ({lo:.3}-{hi:.3})")
            }
        };
        let steady = fmt(
            runs.iter()
                .filter_map(|r| r.pipeline.steady.as_ref().map(|s| s.seconds_per_proof))
                .collect(),
            false,
        );
        let whole = fmt(
            runs.iter()
                .map(|r| r.pipeline.result.seconds_per_proof)
                .collect(),
            false,
        );
        let job = fmt(
            runs.iter().map(|r| r.pipeline.result.seconds).collect(),
            false,
        );
        let busy = fmt(
            runs.iter()
                .filter_map(|r| r.pipeline.steady.as_ref().and_then(|s| s.device_busy))
                .collect(),
            true,
        );
        println!(
            "{:<24} {:>4} {:>26} {:>26} {:>26} {:>18}",
            label,
            runs.len(),
            steady,
            whole,
            job,
            busy
        );
    }
}

/// A summary line's label: the GPU options (`cpu` without a GPU), and the cap when one holds
/// the card.
pub(super) fn summary_label(report: &BenchReport, cap: Option<u64>) -> String {
    let options = report.gpu_options.clone().unwrap_or_else(|| "cpu".into());
    match cap {
        None => options,
        Some(bytes) => format!("{options}, cap {}", bytesize::ByteSize(bytes)),
    }
}
