//! The `proofpipe-prover` binary end to end: proofs verify, bad input gets a clear error and
//! exit code, and measured memory stays under the plan.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

fn prover(params_dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("proofpipe-prover").unwrap();
    cmd.env("PROOFPIPE_LOG", "warn").arg("--log=warn");
    cmd.env("XDG_CACHE_HOME", params_dir);
    cmd
}

/// Runs `<command> ... --json` and returns its report (the last stdout line).
fn command_json(command: &str, params_dir: &Path, args: &[&str]) -> Value {
    let out = prover(params_dir)
        .arg(command)
        .args(args)
        .arg("--json")
        .arg("--params-dir")
        .arg(params_dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{command} {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().expect("a report line"))
        .expect("the last line is JSON")
}

/// Runs `prove ... --json` and returns its summary.
fn prove_json(params_dir: &Path, args: &[&str]) -> Value {
    command_json("prove", params_dir, args)
}

fn num(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// `plan ... --memory-limit 128GiB --cores 16 --gpus 1 --json` with `args` first: its report.
fn plan_on_an_h200_node(dir: &Path, args: &[&str]) -> Value {
    let out = prover(dir)
        .arg("plan")
        .args(args)
        .args([
            "--memory-limit",
            "128GiB",
            "--cores",
            "16",
            "--gpus",
            "1",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `args` and expects exit code 2 with `needle` in stderr.
fn refused(dir: &Path, args: &[&str], needle: &str) {
    let out = prover(dir).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: expected {needle:?} in:\n{stderr}"
    );
}

#[test]
fn prove_verifies_every_partition_and_reports_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    for circuit in ["mul-chain", "merkle-sha256"] {
        let constraints = if circuit == "mul-chain" {
            "2048"
        } else {
            "32768"
        };
        let v = prove_json(
            dir.path(),
            &[
                "--circuit",
                circuit,
                "--constraints",
                constraints,
                "--partitions",
                "3",
            ],
        );
        assert_eq!(num(&v, "proofs"), 3, "{v}");
        assert_eq!(num(&v, "verified"), 3, "{v}");
        let bound = num(&v, "partition_workers") + num(&v, "channel_capacity");
        assert!(num(&v, "max_synthesized_in_flight") <= bound, "{v}");
        assert!(v["seconds_per_proof"].as_f64().unwrap() > 0.0);
        assert!(
            num(&v, "peak_rss_bytes") <= num(&v, "predicted_peak_bytes"),
            "measured above predicted: {v}"
        );
    }
}

#[test]
fn two_pass_synthesis_proves_and_counts_its_matrices_in_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    for (circuit, constraints) in [("mul-chain", "4096"), ("merkle-sha256", "32768")] {
        let args = |synthesis| {
            [
                "--circuit",
                circuit,
                "--constraints",
                constraints,
                "--partitions",
                "3",
                "--partition-workers",
                "2",
                "--channel-capacity",
                "1",
                "--synthesis",
                synthesis,
            ]
        };
        let one_pass = prove_json(dir.path(), &args("one-pass"));
        let two_pass = prove_json(dir.path(), &args("matrices"));
        assert_eq!(two_pass["synthesis"], "matrices", "{two_pass}");
        assert_eq!(num(&two_pass, "verified"), 3, "{two_pass}");
        assert_eq!(num(&one_pass, "matrices_bytes"), 0, "{one_pass}");
        let matrices = num(&two_pass, "matrices_bytes");
        assert!(matrices > 0, "{two_pass}");
        assert_eq!(
            num(&two_pass, "predicted_peak_bytes"),
            num(&one_pass, "predicted_peak_bytes") + matrices,
            "the same pipeline plus the matrices, once"
        );
        assert!(
            num(&two_pass, "peak_rss_bytes") <= num(&two_pass, "predicted_peak_bytes"),
            "measured above predicted: {two_pass}"
        );
    }
}

#[test]
fn memory_limit_sweep_stays_under_prediction_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut workers = Vec::new();
    // From below the minimum to plenty: each run either refuses clearly or stays in bounds.
    for limit in ["120MiB", "136MiB", "170MiB", "4GiB"] {
        let out = prover(dir.path())
            .args([
                "prove",
                "--constraints",
                "16384",
                "--partitions",
                "6",
                "--json",
                "--memory-limit",
                limit,
                "--params-dir",
            ])
            .arg(dir.path())
            .output()
            .unwrap();
        if out.status.code() == Some(2) {
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("is too small"),
                "limit {limit}"
            );
            assert!(
                workers.is_empty(),
                "a larger limit was refused after a smaller one ran"
            );
            continue;
        }
        assert!(
            out.status.success(),
            "limit {limit}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let v: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
        let (peak, predicted, limit_bytes) = (
            num(&v, "peak_rss_bytes"),
            num(&v, "predicted_peak_bytes"),
            num(&v, "memory_limit_bytes"),
        );
        assert!(
            peak <= predicted && predicted <= limit_bytes,
            "limit {limit}: peak {peak} predicted {predicted}: {v}"
        );
        let bound = num(&v, "partition_workers") + num(&v, "channel_capacity");
        assert!(num(&v, "max_synthesized_in_flight") <= bound, "{v}");
        assert_eq!(num(&v, "verified"), 6);
        workers.push(num(&v, "partition_workers"));
    }
    assert!(
        workers.len() >= 2,
        "the sweep should include runnable limits: {workers:?}"
    );
    assert!(
        workers.windows(2).all(|w| w[0] <= w[1]),
        "more memory gave fewer workers: {workers:?}"
    );
    assert_eq!(
        workers[0], 1,
        "the smallest runnable limit should allow one worker: {workers:?}"
    );
}

/// The acceptance size: 4 partitions of 2^16 constraints, both circuits. Generating
/// the parameters takes about a minute each on two cores, so CI runs this once (ignored in
/// a plain `cargo test`).
#[test]
#[ignore = "slow: generates 2^16 parameters; run with --include-ignored"]
fn proves_four_partitions_of_65536_constraints_for_both_circuits() {
    let dir = tempfile::tempdir().unwrap();
    for circuit in ["mul-chain", "merkle-sha256"] {
        let v = prove_json(
            dir.path(),
            &[
                "--circuit",
                circuit,
                "--constraints",
                "65536",
                "--partitions",
                "4",
            ],
        );
        assert_eq!(num(&v, "verified"), 4, "{v}");
        assert!(
            num(&v, "peak_rss_bytes") <= num(&v, "predicted_peak_bytes"),
            "{v}"
        );
        eprintln!(
            "{circuit}: {:.2}s per proof, peak RSS {} bytes",
            v["seconds_per_proof"].as_f64().unwrap(),
            num(&v, "peak_rss_bytes")
        );
    }
}

fn fails_with(dir: &Path, args: &[&str], code: i32, needle: &str) {
    let out = prover(dir)
        .args(args)
        .arg("--params-dir")
        .arg(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: expected {needle:?} in:\n{stderr}"
    );
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fails_with(
        d,
        &["prove", "--partitions", "0"],
        2,
        "at least one partition",
    );
    fails_with(
        d,
        &["prove", "--circuit", "sha-tree"],
        2,
        "use one of mul-chain, merkle-sha256",
    );
    fails_with(
        d,
        &["prove", "--constraints", "8"],
        2,
        "needs at least 16 constraints",
    );
    fails_with(
        d,
        &["prove", "--memory-limit", "20MiB"],
        2,
        "memory limit 20.0 MiB is too small",
    );
    fails_with(
        d,
        &["prove", "--memory-limit", "plenty"],
        2,
        "is not a size",
    );
    fails_with(
        d,
        &[
            "prove",
            "--circuit",
            "merkle-sha256",
            "--constraints",
            "4096",
        ],
        2,
        "merkle-sha256 needs at least",
    );
}

#[test]
fn plan_reports_the_sizing_as_json_and_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = prover(dir.path())
        .args([
            "plan",
            "--constraints",
            "16777216",
            "--memory-limit",
            "128GiB",
            "--cores",
            "16",
            "--gpus",
            "1",
            "--partitions",
            "10",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(num(&v, "partition_workers") >= 1);
    assert!(num(&v, "channel_capacity") >= 1);
    assert!(num(&v, "predicted_peak_bytes") <= 128 << 30);
    let table = prover(dir.path())
        .args(["plan", "--memory-limit", "1GiB"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("partition_workers") && text.contains("predicted peak"),
        "{text}"
    );
}

/// `plan --post-shape` sizes the real 32 GiB WindowPoSt partition and WinningPoSt from their
/// committed counts, exactly; what `--post-shape` cannot do is refused with exit code 2.
#[test]
fn post_shape_plans_from_its_counts_and_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let plan = |proof: &str| plan_on_an_h200_node(dir.path(), &["--post-shape", proof]);
    let window = plan("StackedDrgWindow32GiBV1_2");
    assert_eq!(
        window["circuit"], "StackedDrgWindow32GiBV1_2 partition",
        "{window}"
    );
    assert_eq!(num(&window["shape"], "constraints"), 125_305_057);
    // H (2^27 - 1), L (aux), A (inputs + A aux density), B (1 + B aux density) in G1; B in G2.
    let b = 1 + 91_925_766;
    let g1 = ((1u64 << 27) - 1) + 126_902_376 + (25_840 + 96_179_805) + b;
    assert_eq!(
        num(&window["plan"]["breakdown"], "params_bytes"),
        g1 * 96 + b * 192
    );
    assert!(num(&window, "predicted_peak_bytes") <= 128 << 30);
    // curio's number for the 32 GiB WinningPoSt.
    let winning = plan("3");
    assert_eq!(
        winning["circuit"], "StackedDrgWinning32GiBV1 partition",
        "{winning}"
    );
    assert_eq!(num(&winning["shape"], "constraints"), 370_723);

    // From the matrices: 10.1 GiB of them counted, the a/b/c no longer held twice.
    let two_pass = plan_on_an_h200_node(
        dir.path(),
        &[
            "--post-shape",
            "StackedDrgWindow32GiBV1_2",
            "--synthesis",
            "matrices",
        ],
    );
    let matrices = num(&two_pass["plan"]["breakdown"], "matrices_bytes");
    assert!(
        (10 << 30..11 << 30).contains(&matrices),
        "{matrices} bytes of matrices"
    );
    assert_eq!(num(&window["plan"]["breakdown"], "matrices_bytes"), 0);

    let fails = |args: &[&str], needle: &str| refused(dir.path(), args, needle);
    fails(
        &["bench", "--post-shape", "3", "--stock-partitions", "1"],
        "stock prover not run",
    );
    fails(
        &["plan", "--post-shape", "StackedDrg32GiBV1_1"],
        "--post-shape",
    );
    fails(
        &["bench", "--post-shape", "3", "--porep-shape", "32GiB"],
        "cannot be used with",
    );
}

/// `plan --snap-shape` sizes a SnapDeals update from its committed counts: all 16 partitions
/// at 32 GiB, the parameters' exact bytes, in one pass or from the matrices; what it cannot do
/// is refused.
#[test]
fn snap_shape_plans_from_its_counts_and_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let update = plan_on_an_h200_node(dir.path(), &["--snap-shape", "32GiB"]);
    assert_eq!(
        update["circuit"], "StackedDrg32GiBV1 SnapDeals partition",
        "{update}"
    );
    assert_eq!(num(&update["shape"], "constraints"), 81_049_504);
    // H (2^27 - 1), L (aux), A (inputs + A aux density), B (1 + B aux density) in G1; B in G2.
    let b = 1 + 20_983_607;
    let g1 = ((1u64 << 27) - 1) + 80_978_488 + (5 + 80_743_581) + b;
    assert_eq!(
        num(&update["plan"]["breakdown"], "params_bytes"),
        g1 * 96 + b * 192
    );
    assert!(num(&update, "predicted_peak_bytes") <= 128 << 30);
    // Sixteen partitions of one request: more than one in flight where memory allows.
    assert!(num(&update, "partition_workers") > 1, "{update}");

    let fails = |args: &[&str], needle: &str| refused(dir.path(), args, needle);
    // From the matrices (their predicted bytes counted), every core on one partition.
    let two_pass = plan_on_an_h200_node(
        dir.path(),
        &["--snap-shape", "32GiB", "--synthesis", "matrices"],
    );
    let matrices = num(&two_pass["plan"]["breakdown"], "matrices_bytes");
    assert!(
        (3 << 30..6 << 30).contains(&matrices),
        "the 32 GiB SnapDeals matrices: {two_pass}"
    );
    assert!(
        num(&two_pass, "predicted_peak_bytes") <= 128 << 30,
        "{two_pass}"
    );
    fails(
        &["plan", "--snap-shape", "32GiB", "--porep-shape", "32GiB"],
        "cannot be used with",
    );
    fails(
        &[
            "plan",
            "--snap-shape",
            "32GiB",
            "--memory-limit",
            "64GiB",
            "--cores",
            "15",
            "--gpus",
            "1",
            "--gpu-memory",
            "141GB",
        ],
        "StackedDrg32GiBV1 SnapDeals partition at 81049504 constraints needs at least 66.7 GiB",
    );
}

/// `plan --porep-shape` sizes the real 32 GiB partition from its committed counts, exactly;
/// what `--porep-shape` cannot do is refused with exit code 2.
#[test]
fn porep_shape_plans_from_its_counts_and_refuses_what_it_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    let plan = |synthesis: &str| {
        plan_on_an_h200_node(
            dir.path(),
            &["--porep-shape", "32GiB", "--synthesis", synthesis],
        )
    };
    let one_pass = plan("one-pass");
    assert_eq!(
        one_pass["circuit"], "StackedDrg32GiBV1_1 partition",
        "{one_pass}"
    );
    assert_eq!(num(&one_pass["shape"], "constraints"), 130_278_869);
    // 427,253,522 G1 points (H, L, A, B) and 33,112,282 G2 points (B).
    let breakdown = &one_pass["plan"]["breakdown"];
    assert_eq!(
        num(breakdown, "params_bytes"),
        427_253_522 * 96 + 33_112_282 * 192
    );
    assert_eq!(num(breakdown, "matrices_bytes"), 0);
    assert!(num(&one_pass, "predicted_peak_bytes") <= 128 << 30);
    let two_pass = plan("matrices");
    let matrices = num(&two_pass["plan"]["breakdown"], "matrices_bytes");
    // 6.5 GiB: a stored coefficient is a 4-byte index into the matrix's table (ADR 0039).
    assert!(matrices > 6 << 30 && matrices < 7 << 30, "{two_pass}");
    assert!(num(&two_pass, "partition_workers") <= num(&one_pass, "partition_workers"));

    let fails = |args: &[&str], needle: &str| refused(dir.path(), args, needle);
    fails(
        &["bench", "--porep-shape", "2KiB", "--stock-partitions", "1"],
        "stock prover not run",
    );
    fails(
        &["bench", "--porep-shape", "16GiB"],
        "neither a sector size",
    );
    fails(
        &["bench", "--porep-shape", "2KiB", "--circuit", "mul-chain"],
        "cannot be used with",
    );
    fails(
        &[
            "bench",
            "--porep-shape",
            "StackedDrg32GiBV1_2_Feat_NonInteractivePoRep",
        ],
        "non-interactive",
    );
    fails(
        &["plan", "--porep-shape", "32GiB", "--memory-limit", "40GiB"],
        "is too small",
    );
    fails(
        &["plan", "--synthesis", "matrices"],
        "only for --porep-shape",
    );
}

#[test]
fn params_are_listed_and_corruption_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    prover(d)
        .args([
            "params",
            "--circuit",
            "mul-chain",
            "--constraints",
            "64",
            "--params-dir",
        ])
        .arg(d)
        .assert()
        .success();
    let list = prover(d)
        .args(["params", "--check", "--params-dir"])
        .arg(d)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains("ok   "));

    let file = d.join("mul-chain-64.params");
    let mut bytes = std::fs::read(&file).unwrap();
    let i = bytes.len() - 100;
    bytes[i] ^= 1;
    std::fs::write(&file, bytes).unwrap();
    let list = prover(d)
        .args(["params", "--check", "--params-dir"])
        .arg(d)
        .output()
        .unwrap();
    assert_eq!(list.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&list.stdout).contains("is corrupt"));
    fails_with(
        d,
        &["prove", "--constraints", "64", "--partitions", "1"],
        1,
        "--regenerate",
    );
    prover(d)
        .args([
            "params",
            "--circuit",
            "mul-chain",
            "--constraints",
            "64",
            "--regenerate",
            "--params-dir",
        ])
        .arg(d)
        .assert()
        .success();
    prove_json(d, &["--constraints", "64", "--partitions", "1"]);
}

/// Runs `bench ... --json` and returns its report.
fn bench_json(params_dir: &Path, args: &[&str]) -> Value {
    command_json("bench", params_dir, args)
}

/// With a real setup every proof of both provers verifies; with timing-only parameters the
/// same work runs, nothing claims to verify, nothing is cached, and the report says so.
#[test]
fn bench_compares_with_stock_and_labels_timing_only_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--constraints",
        "1024",
        "--partitions",
        "3",
        "--stock-partitions",
        "2",
    ];
    let real = bench_json(dir.path(), &args);
    assert_eq!(real["params"], "setup", "{real}");
    assert_eq!(num(&real["pipeline"], "verified"), 3, "{real}");
    assert_eq!(num(&real["stock"], "verified"), 2, "{real}");
    assert!(real["throughput_ratio"].as_f64().unwrap() > 0.0);
    let steady = &real["pipeline"]["steady"];
    let busy = steady["gpu_stage_busy"].as_f64().unwrap();
    assert!(busy > 0.0 && busy <= 1.0, "{steady}");

    let timing_dir = tempfile::tempdir().unwrap();
    let mut timing_args = args.to_vec();
    timing_args.push("--timing-only-params");
    let timing = bench_json(timing_dir.path(), &timing_args);
    assert_eq!(timing["params"], "timing-only", "{timing}");
    assert_eq!(num(&timing["pipeline"], "proofs"), 3, "{timing}");
    assert_eq!(num(&timing["pipeline"], "verified"), 0, "{timing}");
    assert_eq!(num(&timing["stock"], "verified"), 0, "{timing}");
    let cached: Vec<_> = std::fs::read_dir(timing_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".params"))
        .collect();
    assert!(
        cached.is_empty(),
        "timing-only parameters were cached: {cached:?}"
    );
}

#[test]
fn json_logs_are_one_object_per_line_with_the_stage_fields() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("proofpipe-prover")
        .unwrap()
        .env("XDG_CACHE_HOME", dir.path())
        .args(["--log=info", "--log-format", "json", "prove"])
        .args(["--constraints", "1024", "--partitions", "2", "--params-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<Value> = stderr
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line:?}")))
        .collect();
    let buffers = lines
        .iter()
        .find(|line| line["message"] == "BUFFERS" && line["stage"] == "gpu")
        .unwrap_or_else(|| panic!("no BUFFERS line for the gpu stage in\n{stderr}"));
    for field in [
        "synthesis",
        "queueWait",
        "gpu",
        "finalize",
        "estimated_bytes",
    ] {
        assert!(buffers[field].is_u64(), "{field} missing in {buffers}");
    }
}
