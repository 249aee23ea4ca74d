//! Filecoin PoRep C2 through `proofpipe-prover prove --porep-c1`, judged by filecoin-proofs-api's
//! own `verify_seal`.
//!
//! The test data (2 KiB PoRep parameters from a random setup, ~1 GB and ~3 min on 2 cores, and
//! a sector sealed with filecoin-proofs-api) is made once per test run by
//! `scripts/filecoin-testdata.sh`, which `scripts/test.sh` runs and which exports
//! `PROOFPIPE_FILECOIN_TESTDATA`. Without it these tests say so and pass, except under CI,
//! where they fail: CI must never skip them.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use base64::Engine;
use serde_json::Value;

mod support;

struct Testdata {
    params: PathBuf,
    /// lotus-bench's commit-2 file of a sealed 2 KiB sector (miner 1000, sector 1).
    c1: PathBuf,
}

fn testdata() -> Option<Testdata> {
    let dir = support::filecoin_testdata("PoRep")?;
    let data = Testdata {
        params: dir.join("params"),
        c1: dir.join("c1-2KiB.json"),
    };
    assert!(
        data.c1.exists() && data.params.is_dir(),
        "PROOFPIPE_FILECOIN_TESTDATA={} lacks c1-2KiB.json or params/: run scripts/filecoin-testdata.sh",
        dir.display()
    );
    Some(data)
}

fn prover() -> Command {
    let mut cmd = Command::cargo_bin("proofpipe-prover").unwrap();
    cmd.env("PROOFPIPE_LOG", "warn").arg("--log=warn");
    cmd.env_remove("FIL_PROOFS_PARAMETER_CACHE");
    cmd
}

/// Runs `prove --porep-c1 ...`; returns (exit code, stdout, stderr).
fn prove(c1: &Path, params: &Path, extra: &[&str]) -> (i32, String, String) {
    let out = prover()
        .arg("prove")
        .arg("--porep-c1")
        .arg(c1)
        .arg("--params-dir")
        .arg(params)
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn last_json(stdout: &str) -> Value {
    serde_json::from_str(stdout.lines().last().expect("a report line")).expect("JSON summary")
}

#[test]
fn a_sealed_sector_proves_through_the_pipeline_and_verify_seal_accepts_it() {
    let Some(data) = testdata() else { return };
    let dir = tempfile::tempdir().unwrap();
    let proof_path = dir.path().join("proof.bin");
    let (code, stdout, stderr) = prove(
        &data.c1,
        &data.params,
        &["--out", proof_path.to_str().unwrap(), "--verify", "--json"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = last_json(&stdout);
    assert_eq!(v["verify_seal"], true, "{v}");
    assert_eq!(v["seal_proof"], "StackedDrg2KiBV1_1", "{v}");
    let partitions = v["partitions"].as_u64().unwrap();
    assert_eq!(v["partitions_verified"].as_u64(), Some(partitions), "{v}");
    let proof = std::fs::read(&proof_path).unwrap();
    assert_eq!(
        proof.len() as u64,
        192 * partitions,
        "seal_commit_phase2's layout"
    );
    // Filecoin's verifier on the file alone, and on a copy with one byte changed.
    let out = verify_as(&data.params, &proof_path, &data.c1, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("VALID"));
    let mut flipped = proof.clone();
    flipped[100] ^= 1;
    let flipped_path = dir.path().join("flipped.bin");
    std::fs::write(&flipped_path, flipped).unwrap();
    let out = verify_as(&data.params, &flipped_path, &data.c1, &[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bound = v["partition_workers"].as_u64().unwrap() + v["channel_capacity"].as_u64().unwrap();
    assert!(
        v["max_synthesized_in_flight"].as_u64().unwrap() <= bound,
        "{v}"
    );

    // The C1 output was sealed by miner 1000: the proof is valid for it and for no one else,
    // and the pipeline's per-partition check cannot see that; verify_seal must.
    let out = verify_as(&data.params, &proof_path, &data.c1, &["--miner-id", "1001"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("INVALID"));

    // The same C1 output raw, as SealCommitPhase1 returned it, with the sector named apart:
    // read as the commit-2 file was (the proof above is valid for it).
    let file: Value = serde_json::from_slice(&std::fs::read(&data.c1).unwrap()).unwrap();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(file["Phase1Out"].as_str().unwrap())
        .unwrap();
    let raw_path = dir.path().join("c1-raw.json");
    std::fs::write(&raw_path, raw).unwrap();
    let out = verify_as(
        &data.params,
        &proof_path,
        &raw_path,
        &["--sector-number", "1", "--miner-id", "1000"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("VALID"));
}

/// `porep-verify` of `proof` against `c1` with `extra` arguments.
fn verify_as(params: &Path, proof: &Path, c1: &Path, extra: &[&str]) -> std::process::Output {
    prover()
        .arg("porep-verify")
        .arg("--porep-c1")
        .arg(c1)
        .arg("--proof")
        .arg(proof)
        .arg("--params-dir")
        .arg(params)
        .args(extra)
        .output()
        .unwrap()
}

/// The matrices written once by `params matrices` (from a placeholder partition) are read
/// back, checked, by the next command and by a proving run, whose proof verify_seal accepts.
#[test]
fn matrices_written_by_params_matrices_prove_a_sealed_sector() {
    let Some(data) = testdata() else { return };
    let dir = tempfile::tempdir().unwrap();
    let write = || {
        support::json_report(
            prover()
                .args([
                    "params",
                    "matrices",
                    "--seal-proof",
                    "2KiB",
                    "--json",
                    "--dir",
                ])
                .arg(dir.path()),
        )
    };
    let first = write();
    assert_eq!(first["origin"], "recorded_and_written", "{first}");
    let second = write();
    assert_eq!(second["origin"], "read", "{second}");
    assert_eq!(second["heap_bytes"], first["heap_bytes"], "{second}");
    assert_eq!(second["nonzeros"], first["nonzeros"], "{second}");
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "one file, no temporary left: {files:?}");

    let v = support::json_report(
        prover()
            .env("PROOFPIPE_MATRICES_DIR", dir.path())
            .arg("prove")
            .arg("--porep-c1")
            .arg(&data.c1)
            .arg("--params-dir")
            .arg(&data.params)
            .args(["--synthesis", "matrices", "--verify", "--json"]),
    );
    // Two-pass synthesis (the witness, then a, b, c from the matrices), counted in the plan.
    assert_eq!(v["verify_seal"], true, "{v}");
    assert_eq!(v["synthesis"], "matrices", "{v}");
    assert_eq!(v["matrices_bytes"], first["heap_bytes"], "{v}");
    assert!(
        first["heap_bytes"].as_u64().unwrap() > 100 << 20,
        "2 KiB matrices are 141 MiB: {first}"
    );
}

/// A C1 output names its sector: a proof asked for another is refused before any proving.
/// (A proof checked for another prover is rejected by verify_seal: the first test.)
#[test]
fn a_proof_asked_for_another_sector_is_refused() {
    let Some(data) = testdata() else { return };
    let (code, _, stderr) = prove(&data.c1, &data.params, &["--sector-number", "2"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("SectorNum is 1 but --sector-number says 2"),
        "{stderr}"
    );
}

#[test]
fn missing_parameters_name_the_file_and_its_digest() {
    let Some(data) = testdata() else { return };
    let empty = tempfile::tempdir().unwrap();
    let (code, _, stderr) = prove(&data.c1, empty.path(), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-"
        ) && stderr.contains(".params is missing")
            && stderr.contains("expected blake2b digest"),
        "{stderr}"
    );
    // Parameters from a random setup are not production files: a digest check refuses them.
    let (code, _, stderr) = prove(&data.c1, &data.params, &["--verify-params-digest"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("does not match"), "{stderr}");
}

#[test]
fn bad_c1_files_get_a_clear_error_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let params = dir.path();
    let case = |name: &str, bytes: &[u8], extra: &[&str], needle: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (code, stdout, stderr) = prove(&path, params, extra);
        assert_eq!(code, 2, "{name}: {stdout}\n{stderr}");
        assert!(
            stderr.contains(needle),
            "{name}: expected {needle:?} in\n{stderr}"
        );
    };
    case(
        "truncated.json",
        b"{\"SectorNum\": 1, \"Phase1Out\": \"eyJy",
        &[],
        "not JSON",
    );
    case("text.json", b"hello", &[], "not JSON");
    case(
        "other.json",
        b"{\"SectorNum\": 1, \"Phase1Out\": \"e30=\", \"SectorSize\": 2048}",
        &[],
        "does not hold a C1 output",
    );
    case(
        "raw.json",
        b"{\"registered_proof\": \"StackedDrg2KiBV1_1\"}",
        &["--sector-number", "1"],
        "not a SealCommitPhase1Output",
    );
    let missing = dir.path().join("absent.json");
    let (code, _, stderr) = prove(&missing, params, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("reading the C1 output") && stderr.contains("absent.json"),
        "{stderr}"
    );

    if let Some(data) = testdata() {
        // A real C1 output cut short.
        let bytes = std::fs::read(&data.c1).unwrap();
        case("cut.json", &bytes[..bytes.len() / 2], &[], "not JSON");
        // Edited to claim another sector size than its proofs are for.
        let mut file: Value = serde_json::from_slice(&bytes).unwrap();
        file["SectorSize"] = 34359738368u64.into();
        case(
            "resized.json",
            &serde_json::to_vec(&file).unwrap(),
            &[],
            "SectorSize says 34359738368 bytes but the C1 output is for StackedDrg2KiBV1_1",
        );
    }
}
