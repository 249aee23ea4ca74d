//! `proofpipe-simulate` on small traces: the table, the JSON, the plot, and a clear
//! refusal of a bad trace.

use std::path::Path;
use std::process::Command;

fn simulate(args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_proofpipe-simulate"))
        .args(args)
        .output()
        .expect("run proofpipe-simulate");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_trace_file_is_replayed_against_static_and_autoscaled_pools() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.csv");
    // A burst of four 10-partition jobs, then one more an hour later.
    std::fs::write(
        &trace,
        "# seconds,partitions\n0,10\n1,10\n2,10\n3,10\n3600,10,30\n",
    )
    .unwrap();
    let plot = dir.path().join("pools.svg");
    let trace_arg = trace.to_str().unwrap();
    let (ok, stdout, stderr) = simulate(&[
        "--trace",
        trace_arg,
        "--seconds-per-partition",
        "2",
        "--startup-seconds",
        "60",
        "--max-replicas",
        "4",
        "--static-pools",
        "1,4",
        "--step-seconds",
        "1",
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.starts_with("5 jobs, 50 partitions; 2.00 s per partition (modelled)"),
        "{stdout}"
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("static") || l.starts_with("autoscaled"))
        .collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"));

    let (ok, json, stderr) = simulate(&[
        "--trace",
        trace_arg,
        "--seconds-per-partition",
        "2",
        "--startup-seconds",
        "60",
        "--max-replicas",
        "4",
        "--static-pools",
        "1",
        "--step-seconds",
        "1",
        "--json",
    ]);
    assert!(ok, "{stderr}");
    let outcomes: serde_json::Value = serde_json::from_str(&json).unwrap();
    let one = &outcomes[0];
    assert_eq!(one["pool"], "static 1");
    // One prover, four 20 s jobs at once: the last is done 80 s after the burst began (it
    // arrived at 3 s), and the late job of the hour after has a 30 s deadline it meets.
    assert_eq!(one["max_seconds_to_proof"], 77.0);
    assert_eq!(one["jobs_past_deadline"], 0);
    let scaled = &outcomes[1];
    assert!(
        scaled["pool"]
            .as_str()
            .unwrap()
            .starts_with("autoscaled 0..=4")
    );
    // From zero, the pool pays the 60 s start-up, and the lone job's 30 s deadline is missed.
    assert_eq!(scaled["jobs_past_deadline"], 1);
    assert!(scaled["gpu_hours"].as_f64().unwrap() < one["gpu_hours"].as_f64().unwrap());
}

#[test]
fn a_bad_trace_line_is_refused_with_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.csv");
    std::fs::write(&trace, "0,10\n60,ten\n").unwrap();
    let (ok, _, stderr) = simulate(&["--trace", trace.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains("line 2: partitions \"ten\" is not a positive integer"),
        "{stderr}"
    );
}

#[test]
fn a_bench_report_supplies_the_measured_throughput() {
    // A report as `proofpipe-prover bench --json` writes it: a real 32 GiB PoRep run.
    let measured = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../bench-results/2026-12-02-porep32-gather-run1.json");
    let (ok, stdout, stderr) = simulate(&[
        "--bench-report",
        measured.to_str().unwrap(),
        "--bursts",
        "1",
        "--jobs-per-hour",
        "1",
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("7.02 s per partition (measured in"),
        "{stdout}"
    );

    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("bench.json");
    std::fs::write(&report, "{}").unwrap();
    let (ok, _, stderr) = simulate(&["--bench-report", report.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains("no positive pipeline.seconds_per_proof"),
        "{stderr}"
    );
}
