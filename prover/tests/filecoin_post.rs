//! Filecoin WindowPoSt and WinningPoSt proofs through `proofpipe-prover prove
//! --window-post-vanilla` / `--winning-post-vanilla`, judged by filecoin-proofs-api's own
//! `verify_window_post` and `verify_winning_post`.
//!
//! The test data (2 KiB WindowPoSt and WinningPoSt parameters from a random setup; the vanilla
//! proofs of the PoRep test sector and two more sectors sealed for PoSt: a WindowPoSt of 3
//! sectors, which at filecoin-proofs' 2 sectors per 2 KiB partition is 2 partitions, the same
//! under the V1 proof, and WinningPoSts of sectors 1 and 2) is made once per test run by
//! `scripts/filecoin-testdata.sh`, which `scripts/test.sh` runs and which exports
//! `PROOFPIPE_FILECOIN_TESTDATA`. Without it these tests say so and pass, except under CI, where
//! they fail: CI must never skip them.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use base64::Engine;
use serde_json::Value;

mod support;

struct Testdata {
    params: PathBuf,
    /// WindowPoSt (StackedDrgWindow2KiBV1_2) of sectors 1, 2, 3: 2 partitions.
    window: PathBuf,
    /// The same sectors under StackedDrgWindow2KiBV1.
    window_v1: PathBuf,
    /// WinningPoSt of sector 1.
    winning: PathBuf,
    /// WinningPoSt of sector 2.
    winning_other: PathBuf,
}

fn testdata() -> Option<Testdata> {
    let dir = support::filecoin_testdata("PoSt")?;
    let data = Testdata {
        params: dir.join("params"),
        window: dir.join("window-post-2KiB.json"),
        window_v1: dir.join("window-post-2KiB-v1.json"),
        winning: dir.join("winning-post-2KiB.json"),
        winning_other: dir.join("winning-post-2KiB-other.json"),
    };
    let files = [
        &data.window,
        &data.window_v1,
        &data.winning,
        &data.winning_other,
    ];
    assert!(
        files.iter().all(|f| f.exists()) && data.params.is_dir(),
        "PROOFPIPE_FILECOIN_TESTDATA={} lacks one of {:?} or params/: run \
         scripts/filecoin-testdata.sh",
        dir.display(),
        files.map(|f| f.file_name().unwrap().to_owned())
    );
    Some(data)
}

fn prover() -> Command {
    let mut cmd = Command::cargo_bin("proofpipe-prover").unwrap();
    cmd.env("PROOFPIPE_LOG", "warn").arg("--log=warn");
    cmd.env_remove("FIL_PROOFS_PARAMETER_CACHE");
    cmd
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[derive(Clone, Copy)]
enum Kind {
    Window,
    Winning,
}

impl Kind {
    fn flag(self) -> &'static str {
        match self {
            Kind::Window => "--window-post-vanilla",
            Kind::Winning => "--winning-post-vanilla",
        }
    }

    fn verify_command(self) -> &'static str {
        match self {
            Kind::Window => "window-post-verify",
            Kind::Winning => "winning-post-verify",
        }
    }
}

/// Runs `prove --window-post-vanilla ...` (or winning); returns (exit code, stdout, stderr).
fn prove(kind: Kind, input: &Path, params: &Path, extra: &[&str]) -> (i32, String, String) {
    run(prover()
        .arg("prove")
        .arg(kind.flag())
        .arg(input)
        .arg("--params-dir")
        .arg(params)
        .args(extra))
}

/// `window-post-verify` (or winning) of `proof` against `input`.
fn post_verify(kind: Kind, input: &Path, proof: &Path, params: &Path) -> (i32, String, String) {
    run(prover()
        .arg(kind.verify_command())
        .arg(kind.flag())
        .arg(input)
        .arg("--proof")
        .arg(proof)
        .arg("--params-dir")
        .arg(params))
}

fn last_json(stdout: &str) -> Value {
    serde_json::from_str(stdout.lines().last().expect("a report line")).expect("JSON summary")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn write_json(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(v).unwrap()).unwrap();
    path
}

/// Proves `input` with --verify and --out, its partitions synthesized as `synthesis` says
/// (`one-pass`, or `matrices`: the native witness and the R1CS matrices); asserts Filecoin's
/// verifier accepted it and returns the summary and the proof.
fn prove_verified(
    kind: Kind,
    input: &Path,
    params: &Path,
    out: &Path,
    synthesis: &str,
) -> (Value, Vec<u8>) {
    let (code, stdout, stderr) = prove(
        kind,
        input,
        params,
        &[
            "--out",
            out.to_str().unwrap(),
            "--verify",
            "--json",
            "--synthesis",
            synthesis,
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = last_json(&stdout);
    assert_eq!(v["synthesis"], synthesis, "{v}");
    assert_eq!(
        v["matrices_bytes"].as_u64().unwrap() > 0,
        synthesis == "matrices",
        "{v}"
    );
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["partitions_verified"], v["partitions"], "{v}");
    let bound = v["partition_workers"].as_u64().unwrap() + v["channel_capacity"].as_u64().unwrap();
    assert!(
        v["max_synthesized_in_flight"].as_u64().unwrap() <= bound,
        "{v}"
    );
    let proof = std::fs::read(out).unwrap();
    assert_eq!(
        proof.len() as u64,
        192 * v["partitions"].as_u64().unwrap(),
        "one 192-byte proof per partition, as filecoin-proofs lays them out"
    );
    (v, proof)
}

/// curio's request for WindowPoSt partition `k` of a whole WindowPoSt input (2 sectors per
/// 2 KiB partition): its sectors' vanilla proofs and the partition index.
fn partition_of(whole: &Value, k: usize) -> Value {
    let mut v = whole.clone();
    let all = whole["vanilla_proofs"].as_array().unwrap();
    v["vanilla_proofs"] = all.chunks(2).nth(k).unwrap().to_vec().into();
    v["partition_index"] = k.into();
    v
}

#[test]
fn a_window_post_of_two_partitions_proves_and_filecoin_accepts_it() {
    let Some(data) = testdata() else { return };
    let dir = tempfile::tempdir().unwrap();
    let whole_path = dir.path().join("window.proof");
    // The whole WindowPoSt from its native witness and the R1CS matrices.
    let (v, proof) = prove_verified(
        Kind::Window,
        &data.window,
        &data.params,
        &whole_path,
        "matrices",
    );
    assert_eq!(v["post_proof"], "StackedDrgWindow2KiBV1_2", "{v}");
    assert_eq!(v["sectors"], 3, "{v}");
    assert_eq!(
        v["partitions"], 2,
        "3 sectors at 2 per 2 KiB partition: {v}"
    );
    assert_eq!(v["partition_index"], Value::Null, "{v}");

    // verify_window_post on the file alone, on a copy with one byte changed, and with its two
    // partition proofs swapped.
    let (code, stdout, stderr) = post_verify(Kind::Window, &data.window, &whole_path, &data.params);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.starts_with("VALID"), "{stdout}");
    for (name, bytes) in [
        ("flipped.proof", {
            let mut b = proof.clone();
            b[100] ^= 1;
            b
        }),
        ("swapped.proof", [&proof[192..], &proof[..192]].concat()),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (code, stdout, stderr) = post_verify(Kind::Window, &data.window, &path, &data.params);
        assert_eq!(code, 1, "{name}: {stdout}\n{stderr}");
        assert!(stdout.starts_with("INVALID"), "{name}: {stdout}");
    }

    // curio's way: partition 1 alone (sector 3, partition_index 1), proved as
    // generate_single_window_post_with_vanilla proves it and checked alone; merged with the
    // whole proof's partition 0 (merge_window_post_partition_proofs concatenates), the whole
    // WindowPoSt verifies.
    let whole = read_json(&data.window);
    let p1_input = write_json(dir.path(), "partition-1.json", &partition_of(&whole, 1));
    let p1_path = dir.path().join("partition-1.proof");
    let (v, p1) = prove_verified(Kind::Window, &p1_input, &data.params, &p1_path, "one-pass");
    assert_eq!(v["partition_index"], 1, "{v}");
    assert_eq!(
        (v["sectors"].as_u64(), v["partitions"].as_u64()),
        (Some(1), Some(1))
    );
    let merged = dir.path().join("merged.proof");
    std::fs::write(&merged, [&proof[..192], &p1[..]].concat()).unwrap();
    let (code, stdout, stderr) = post_verify(Kind::Window, &data.window, &merged, &data.params);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // Partition 1's proof is not partition 0's (sectors 1 and 2).
    let p0_input = write_json(dir.path(), "partition-0.json", &partition_of(&whole, 0));
    let (code, stdout, stderr) = post_verify(Kind::Window, &p0_input, &p1_path, &data.params);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.starts_with("INVALID"), "{stdout}");
}

#[test]
fn a_v1_window_post_partition_proves_alone() {
    let Some(data) = testdata() else { return };
    // Under V1 a sector's challenges depend on its position in the whole sector set: partition
    // 1 alone is checked against partition 1's public inputs, not verify_window_post's over
    // its sectors alone (which would treat them as partition 0).
    let dir = tempfile::tempdir().unwrap();
    let whole = read_json(&data.window_v1);
    assert_eq!(whole["registered_proof"], "StackedDrgWindow2KiBV1");
    let input = write_json(dir.path(), "v1-partition-1.json", &partition_of(&whole, 1));
    let out = dir.path().join("v1-partition-1.proof");
    let (v, proof) = prove_verified(Kind::Window, &input, &data.params, &out, "one-pass");
    assert_eq!(v["partition_index"], 1, "{v}");
    let mut flipped = proof;
    flipped[50] ^= 1;
    let path = dir.path().join("flipped.proof");
    std::fs::write(&path, flipped).unwrap();
    let (code, stdout, stderr) = post_verify(Kind::Window, &input, &path, &data.params);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
}

#[test]
fn a_winning_post_proves_and_filecoin_accepts_it() {
    let Some(data) = testdata() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("winning.proof");
    let (v, proof) = prove_verified(Kind::Winning, &data.winning, &data.params, &out, "matrices");
    assert_eq!(v["post_proof"], "StackedDrgWinning2KiBV1", "{v}");
    assert_eq!(v["verifier"], "verify_winning_post", "{v}");
    assert_eq!(
        (v["sectors"].as_u64(), v["partitions"].as_u64()),
        (Some(1), Some(1))
    );

    let (code, stdout, stderr) = post_verify(Kind::Winning, &data.winning, &out, &data.params);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.starts_with("VALID"), "{stdout}");
    let mut flipped = proof;
    flipped[100] ^= 1;
    let flipped_path = dir.path().join("flipped.proof");
    std::fs::write(&flipped_path, flipped).unwrap();
    let (code, stdout, stderr) =
        post_verify(Kind::Winning, &data.winning, &flipped_path, &data.params);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    // Against another sector (sector 2's comm_r and challenges).
    let (code, stdout, stderr) =
        post_verify(Kind::Winning, &data.winning_other, &out, &data.params);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.starts_with("INVALID"), "{stdout}");
}

/// `bytes` with its first 8 bytes (a FallbackPoStSectorProof's sector id, bincode u64) set to
/// `sector`.
fn relabelled(vanilla_b64: &str, sector: u64) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut bytes = b64.decode(vanilla_b64).unwrap();
    bytes[..8].copy_from_slice(&sector.to_le_bytes());
    b64.encode(bytes)
}

#[test]
fn vanilla_proofs_of_other_challenges_make_no_proof() {
    let Some(data) = testdata() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("none.proof");
    let refused = |kind: Kind, name: &str, v: &Value, needle: &str| {
        let input = write_json(dir.path(), name, v);
        let (code, stdout, stderr) = prove(
            kind,
            &input,
            &data.params,
            &["--out", out.to_str().unwrap(), "--verify"],
        );
        assert_eq!(code, 2, "{name}: {stdout}\n{stderr}");
        assert!(
            stderr.contains(needle),
            "{name}: expected {needle:?} in\n{stderr}"
        );
        assert!(!out.exists(), "{name}: no proof file");
    };
    let window = read_json(&data.window);
    let winning = read_json(&data.winning);
    let other_randomness = {
        let mut r = [0x11u8; 32];
        r[31] &= 0x3f;
        base64::engine::general_purpose::STANDARD.encode(r)
    };
    // The challenges come from the randomness: vanilla proofs of another randomness's.
    for (kind, good, what) in [
        (
            Kind::Window,
            &window,
            "WindowPoSt partition 0 (sectors 1, 2)",
        ),
        (
            Kind::Winning,
            &winning,
            "WinningPoSt partition 0 (sectors 1)",
        ),
    ] {
        let mut v = good.clone();
        v["randomness"] = other_randomness.clone().into();
        refused(
            kind,
            "randomness.json",
            &v,
            &format!("the vanilla proofs of {what} do not verify against the randomness"),
        );
    }
    // Sector 1's vanilla proof presented as sector 4's (challenges are per sector number).
    let mut v = winning.clone();
    v["vanilla_proofs"][0] = relabelled(v["vanilla_proofs"][0].as_str().unwrap(), 4).into();
    refused(
        Kind::Winning,
        "relabelled.json",
        &v,
        "WinningPoSt partition 0 (sectors 4) do not verify",
    );
    let mut v = window.clone();
    v["vanilla_proofs"][2] = relabelled(v["vanilla_proofs"][2].as_str().unwrap(), 9).into();
    refused(
        Kind::Window,
        "relabelled-window.json",
        &v,
        "WindowPoSt partition 1 (sectors 9) do not verify",
    );
    // A WinningPoSt vanilla proof (66 challenges) in a WindowPoSt (10 per sector).
    let mut v = window.clone();
    v["vanilla_proofs"][0] = winning["vanilla_proofs"][0].clone();
    refused(
        Kind::Window,
        "winning-in-window.json",
        &v,
        "vanilla_proofs[0] (sector 1) is not of a StackedDrgWindow2KiBV1_2 sector: 1 sector proofs \
         with 66 inclusion proofs",
    );
    // Out of order: verify_window_post reads the sectors sorted.
    let mut v = window.clone();
    v["vanilla_proofs"].as_array_mut().unwrap().swap(0, 1);
    refused(
        Kind::Window,
        "unsorted.json",
        &v,
        "not in ascending sector order (sector 2 before sector 1)",
    );
}

#[test]
fn bad_post_inputs_get_a_clear_error_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let params = dir.path();
    let case = |kind: Kind, name: &str, bytes: &[u8], params: &Path, needle: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (code, stdout, stderr) = prove(kind, &path, params, &[]);
        assert_eq!(code, 2, "{name}: {stdout}\n{stderr}");
        assert!(
            stderr.contains(needle),
            "{name}: expected {needle:?} in\n{stderr}"
        );
    };
    case(Kind::Window, "text.json", b"hello", params, "not JSON");
    case(
        Kind::Window,
        "truncated.json",
        b"{\"registered_proof\": 10, \"miner_id\": ",
        params,
        "not JSON",
    );
    case(
        Kind::Window,
        "missing.json",
        b"{\"registered_proof\": 10, \"miner_id\": 1000}",
        params,
        "the field \"randomness\" is missing",
    );
    case(
        Kind::Winning,
        "unknown.json",
        b"{\"registered_proof\": 15}",
        params,
        "registered_proof: invalid registered PoSt proof: \"15\"",
    );
    case(
        Kind::Window,
        "winning.json",
        b"{\"registered_proof\": \"StackedDrgWinning2KiBV1\", \"miner_id\": 1000, \
          \"randomness\": \"0000000000000000000000000000000000000000000000000000000000000000\", \
          \"vanilla_proofs\": []}",
        params,
        "is a WinningPoSt proof; give it with --winning-post-vanilla",
    );
    let (code, _, stderr) = prove(Kind::Window, &dir.path().join("absent.json"), params, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("absent.json"), "{stderr}");
    // Both kinds at once.
    let (code, _, stderr) = run(prover()
        .args(["prove", "--window-post-vanilla", "a.json"])
        .args(["--winning-post-vanilla", "b.json"]));
    assert_eq!(code, 2, "{stderr}");

    let Some(data) = testdata() else { return };
    let good = read_json(&data.window);
    let edited = |f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        serde_json::to_vec(&v).unwrap()
    };
    let bytes = std::fs::read(&data.window).unwrap();
    case(
        Kind::Window,
        "cut.json",
        &bytes[..bytes.len() / 2],
        &data.params,
        "not JSON",
    );
    case(
        Kind::Window,
        "garbage.json",
        &edited(&|v| v["vanilla_proofs"][1] = "AAECAwQ=".into()),
        &data.params,
        "vanilla_proofs[1] is not a bincode FallbackPoStSectorProof of a StackedDrgWindow2KiBV1_2 \
         sector",
    );
    case(
        Kind::Window,
        "resized.json",
        &edited(&|v| v["registered_proof"] = "StackedDrgWindow8MiBV1_2".into()),
        &data.params,
        "vanilla_proofs[0] (sector 1) is not of a StackedDrgWindow8MiBV1_2 sector",
    );
    case(
        Kind::Window,
        "too-many.json",
        &edited(&|v| v["partition_index"] = 0.into()),
        &data.params,
        "3 vanilla proofs for WindowPoSt partition 0, but a StackedDrgWindow2KiBV1_2 partition \
         has at most 2 sectors",
    );
    case(
        Kind::Window,
        "randomness.json",
        &edited(&|v| v["randomness"] = "AAAA".into()),
        &data.params,
        "randomness has 3 bytes, not 32",
    );
    case(
        Kind::Window,
        "field.json",
        &edited(&|v| v["randomness"] = "ff".repeat(32).into()),
        &data.params,
        "randomness is not a field element",
    );
    // Parameters missing: the file is named with the digest parameters.json expects.
    let empty = tempfile::tempdir().unwrap();
    let (code, _, stderr) = prove(Kind::Window, &data.window, empty.path(), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-0-0-")
            && stderr.contains(".params is missing")
            && stderr.contains("expected blake2b digest"),
        "{stderr}"
    );
    // A proof file of the wrong length is bad input to the verifier.
    let short = dir.path().join("short.proof");
    std::fs::write(&short, [0u8; 192]).unwrap();
    let (code, stdout, stderr) = post_verify(Kind::Window, &data.window, &short, &data.params);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr
            .contains("has 192 bytes; a StackedDrgWindow2KiBV1_2 WindowPoSt of 3 sectors has 384"),
        "{stderr}"
    );
}

/// `params matrices --post-proof` writes a PoSt partition's matrices once (from a placeholder
/// partition); a prover pointed at the directory reads them and its proof verifies.
#[test]
fn post_matrices_written_by_params_matrices_prove_a_window_post() {
    let Some(data) = testdata() else { return };
    let dir = tempfile::tempdir().unwrap();
    let write = || {
        support::json_report(
            prover()
                .args([
                    "params",
                    "matrices",
                    "--post-proof",
                    "StackedDrgWindow2KiBV1_2",
                    "--json",
                    "--dir",
                ])
                .arg(dir.path()),
        )
    };
    let first = write();
    assert_eq!(first["origin"], "recorded_and_written", "{first}");
    assert_eq!(first["proof"], "StackedDrgWindow2KiBV1_2", "{first}");
    let second = write();
    assert_eq!(second["origin"], "read", "{second}");
    assert_eq!(second["heap_bytes"], first["heap_bytes"], "{second}");
    let files = || -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.path(), e.metadata().unwrap().modified().unwrap())
            })
            .collect()
    };
    let written = files();
    assert_eq!(written.len(), 1, "one file, no temporary left: {written:?}");

    let out = dir.path().join("window.proof");
    let (code, stdout, stderr) = run(prover()
        .env("PROOFPIPE_MATRICES_DIR", dir.path())
        .arg("prove")
        .arg(Kind::Window.flag())
        .arg(&data.window)
        .arg("--params-dir")
        .arg(&data.params)
        .args(["--synthesis", "matrices", "--verify", "--json", "--out"])
        .arg(&out));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let v = last_json(&stdout);
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["matrices_bytes"], first["heap_bytes"], "{v}");
    // Read, not recorded again: the file is the one written above.
    let after: Vec<_> = files().into_iter().filter(|(p, _)| *p != out).collect();
    assert_eq!(after, written, "the matrices file was rewritten");
}

/// The placeholder PoSt partitions (`post::shape`, what `bench --post-shape` and `plan
/// --post-shape` time and size at 32 GiB) are the real circuits: the same variables in every
/// query as a real partition of sealed sectors, and the committed counts are the real (random)
/// setup's query counts.
#[test]
fn the_placeholder_post_partitions_have_the_real_partitions_r1cs() {
    use proofpipe_filecoin::params::{self, DigestCheck};
    use proofpipe_filecoin::post::{self, PostInput};
    use proofpipe_kernels::EvalAlloc;
    use proofpipe_pipeline::groth16::SynthesisMode;
    use proofpipe_pipeline::params::QueryCounts;

    let Some(data) = testdata() else { return };
    for path in [&data.window, &data.winning] {
        let input =
            proofpipe_filecoin::input_file::read(path, "reading the PoSt input", PostInput::parse)
                .unwrap();
        let proof = input.post_proof;
        let key = params::load_post(proof, &data.params, DigestCheck::Skip).unwrap();
        let counts = post::shape::counted(proof).unwrap();
        assert_eq!(
            QueryCounts::of(&key.params),
            counts.query_counts(),
            "{path:?}"
        );
        let real = post::prepare(&input, SynthesisMode::OnePass)
            .unwrap()
            .source
            .synthesize(0, key.shape, &EvalAlloc::heap())
            .unwrap();
        // The real partition from its native witness and the R1CS matrices: the same a, b, c,
        // assignment and densities as in one pass.
        let two_pass = post::prepare(&input, SynthesisMode::Matrices).unwrap();
        assert!(two_pass.matrices.is_some());
        let native = two_pass
            .source
            .synthesize(0, key.shape, &EvalAlloc::heap())
            .unwrap();
        assert_eq!(real.first_difference(&native), None, "{path:?}");
        let placeholder = post::shape::placeholder_source(proof, 0, SynthesisMode::OnePass)
            .unwrap()
            .source
            .synthesize(0, key.shape, &EvalAlloc::heap())
            .unwrap();
        assert!(
            support::same_structure(&real, &placeholder),
            "{path:?}: densities differ"
        );
        assert_ne!(real.aux, placeholder.aux, "{path:?}");
        assert_eq!(real.a_aux_density.get_total_density(), counts.a_aux_density);
        assert_eq!(real.b_aux_density.get_total_density(), counts.b_aux_density);
    }
}
