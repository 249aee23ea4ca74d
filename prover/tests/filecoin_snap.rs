//! Filecoin SnapDeals (EmptySectorUpdate) proofs through `proofpipe-prover prove --snap-vanilla`,
//! judged by filecoin-proofs-api's own `verify_empty_sector_update_proof`.
//!
//! The test data (2 KiB SnapDeals parameters from a random setup, the PoRep test sector
//! snap-updated with filecoin-proofs-api, and a second sector sealed and updated the same way)
//! is made once per test run by `scripts/filecoin-testdata.sh`, which `scripts/test.sh` runs and
//! which exports `PROOFPIPE_FILECOIN_TESTDATA`. Without it these tests say so and pass, except
//! under CI, where they fail: CI must never skip them.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

mod support;

struct Testdata {
    params: PathBuf,
    /// The PoRep test sector (miner 1000, sector 1) snap-updated: its SnapDeals input.
    snap: PathBuf,
    /// Another sector (sector 2, sealed from another seed) snap-updated.
    other: PathBuf,
}

fn testdata() -> Option<Testdata> {
    let dir = support::filecoin_testdata("SnapDeals")?;
    let data = Testdata {
        params: dir.join("params"),
        snap: dir.join("snap-2KiB.json"),
        other: dir.join("snap-2KiB-other.json"),
    };
    assert!(
        data.snap.exists() && data.other.exists() && data.params.is_dir(),
        "PROOFPIPE_FILECOIN_TESTDATA={} lacks snap-2KiB.json, snap-2KiB-other.json or \
         params/: run scripts/filecoin-testdata.sh",
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

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `prove --snap-vanilla ...`; returns (exit code, stdout, stderr).
fn prove(input: &Path, params: &Path, extra: &[&str]) -> (i32, String, String) {
    run(prover()
        .arg("prove")
        .arg("--snap-vanilla")
        .arg(input)
        .arg("--params-dir")
        .arg(params)
        .args(extra))
}

fn snap_verify(input: &Path, proof: &Path, params: &Path) -> (i32, String, String) {
    run(prover()
        .arg("snap-verify")
        .arg("--snap-vanilla")
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

/// In one pass and from the R1CS matrices with the native witness (what the daemon does by
/// default): both proofs verify.
#[test]
fn a_snap_update_proves_through_the_pipeline_and_filecoin_accepts_it() {
    let Some(data) = testdata() else { return };
    let dir = tempfile::tempdir().unwrap();
    let proof_path = dir.path().join("snap.proof");
    for synthesis in ["matrices", "one-pass"] {
        let (code, stdout, stderr) = prove(
            &data.snap,
            &data.params,
            &[
                "--out",
                proof_path.to_str().unwrap(),
                "--verify",
                "--json",
                "--synthesis",
                synthesis,
            ],
        );
        assert_eq!(code, 0, "{synthesis}: {stdout}\n{stderr}");
        let v = last_json(&stdout);
        assert_eq!(v["verify_empty_sector_update_proof"], true, "{v}");
        assert_eq!(v["update_proof"], "StackedDrg2KiBV1", "{v}");
        let partitions = v["partitions"].as_u64().unwrap();
        assert_eq!(partitions, 1, "storage-proofs-update's count for 2 KiB");
        assert_eq!(v["partitions_verified"].as_u64(), Some(partitions), "{v}");
        let bound =
            v["partition_workers"].as_u64().unwrap() + v["channel_capacity"].as_u64().unwrap();
        assert!(
            v["max_synthesized_in_flight"].as_u64().unwrap() <= bound,
            "{v}"
        );
    }
    let partitions = 1;
    let proof = std::fs::read(&proof_path).unwrap();
    assert_eq!(
        proof.len() as u64,
        192 * partitions,
        "generate_empty_sector_update_proof_with_vanilla's layout"
    );

    // Filecoin's verifier on the file alone, on a copy with one byte changed, and against
    // another sector's commitments.
    let (code, stdout, stderr) = snap_verify(&data.snap, &proof_path, &data.params);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.starts_with("VALID"), "{stdout}");
    let mut flipped = proof.clone();
    flipped[100] ^= 1;
    let flipped_path = dir.path().join("flipped.proof");
    std::fs::write(&flipped_path, flipped).unwrap();
    let (code, stdout, stderr) = snap_verify(&data.snap, &flipped_path, &data.params);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let (code, stdout, stderr) = snap_verify(&data.other, &proof_path, &data.params);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stdout.starts_with("INVALID"), "{stdout}");
}

#[test]
fn vanilla_proofs_of_another_sector_make_no_proof() {
    let Some(data) = testdata() else { return };
    // This sector's commitments with the other sector's vanilla proofs: no proof of them could
    // verify (the circuit is not satisfied). proofpipe refuses them before proving, naming
    // them, exits 2 and writes nothing.
    let mut mixed = read_json(&data.snap);
    mixed["vanilla_proofs"] = read_json(&data.other)["vanilla_proofs"].clone();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("mixed.json");
    std::fs::write(&input, serde_json::to_vec(&mixed).unwrap()).unwrap();
    let out = dir.path().join("mixed.proof");
    let (code, stdout, stderr) = prove(
        &input,
        &data.params,
        &["--out", out.to_str().unwrap(), "--verify"],
    );
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "vanilla_proofs[0] does not verify against comm_r_old, comm_r_new and comm_d_new"
        ),
        "{stderr}"
    );
    assert!(!out.exists(), "no proof file");
}

#[test]
fn bad_snap_inputs_get_a_clear_error_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    let params = dir.path();
    let case = |name: &str, bytes: &[u8], params: &Path, needle: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (code, stdout, stderr) = prove(&path, params, &[]);
        assert_eq!(code, 2, "{name}: {stdout}\n{stderr}");
        assert!(
            stderr.contains(needle),
            "{name}: expected {needle:?} in\n{stderr}"
        );
    };
    case("text.json", b"hello", params, "not JSON");
    case(
        "truncated.json",
        b"{\"registered_proof\": \"StackedDrg2KiBV1\", \"comm_r_old\": \"",
        params,
        "not JSON",
    );
    case(
        "missing.json",
        b"{\"registered_proof\": \"StackedDrg2KiBV1\"}",
        params,
        "the field \"comm_r_old\" is missing",
    );
    case(
        "size.json",
        b"{\"registered_proof\": \"StackedDrg16GiBV1\"}",
        params,
        "registered_proof",
    );
    let (code, _, stderr) = prove(&dir.path().join("absent.json"), params, &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("absent.json"), "{stderr}");

    let Some(data) = testdata() else { return };
    let good = read_json(&data.snap);
    let edited = |f: &dyn Fn(&mut Value)| {
        let mut v = good.clone();
        f(&mut v);
        serde_json::to_vec(&v).unwrap()
    };
    let bytes = std::fs::read(&data.snap).unwrap();
    case(
        "cut.json",
        &bytes[..bytes.len() / 2],
        &data.params,
        "not JSON",
    );
    case(
        "resized.json",
        &edited(&|v| v["registered_proof"] = "StackedDrg32GiBV1".into()),
        &data.params,
        "it has 1 vanilla proofs where StackedDrg32GiBV1 has 16 partitions",
    );
    case(
        "garbage.json",
        &edited(&|v| v["vanilla_proofs"][0] = "AAECAwQ=".into()),
        &data.params,
        "vanilla_proofs[0] is not a bincode PartitionProof of a StackedDrg2KiBV1 sector",
    );
    case(
        "comm.json",
        &edited(&|v| v["comm_d_new"] = "AAAA".into()),
        &data.params,
        "comm_d_new has 3 bytes, not 32",
    );
    // Parameters missing: the file is named with the digest parameters.json expects.
    let empty = tempfile::tempdir().unwrap();
    let (code, _, stderr) = prove(&data.snap, empty.path(), &[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0-fb9e095bebdd77511c0269b967b4d87ba8b8a525edaa0e165de23ba454510194.params is missing"
        ) && stderr.contains("expected blake2b digest"),
        "{stderr}"
    );
}

/// The committed 2 KiB SnapDeals count, made from storage-proofs-update's blank circuit, is the
/// real partition's: the real parameters' query counts, and the sizes and densities of the
/// partition synthesized from the test sector's vanilla proof. So `plan --snap-shape` plans the
/// circuit that proves.
#[test]
fn the_counted_snap_shape_is_the_real_partitions() {
    use proofpipe_filecoin::params::{self, DigestCheck};
    use proofpipe_filecoin::snap::{self, SnapInput};
    use proofpipe_kernels::EvalAlloc;
    use proofpipe_pipeline::params::QueryCounts;

    let Some(data) = testdata() else { return };
    let input = proofpipe_filecoin::input_file::read(
        &data.snap,
        "reading the SnapDeals input",
        SnapInput::parse,
    )
    .unwrap();
    let proof = input.update_proof;
    let key = params::load_update(proof, &data.params, DigestCheck::Skip).unwrap();
    let counts = snap::shape::counted(proof).unwrap();
    assert_eq!(QueryCounts::of(&key.params), counts.query_counts());
    let real = snap::prepare(&input, proofpipe_pipeline::groth16::SynthesisMode::OnePass)
        .unwrap()
        .source
        .synthesize(0, key.shape, &EvalAlloc::heap())
        .unwrap();
    assert_eq!(
        (real.inputs.len(), real.aux.len()),
        (counts.inputs, counts.aux)
    );
    assert_eq!(real.a_aux_density.get_total_density(), counts.a_aux_density);
    assert_eq!(
        real.b_input_density.get_total_density(),
        counts.b_input_density
    );
    assert_eq!(real.b_aux_density.get_total_density(), counts.b_aux_density);
}
