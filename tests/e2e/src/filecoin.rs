//! What the Filecoin scenarios share: their test data from the environment, and Filecoin's
//! own verifier on a proof.

use std::path::{Path, PathBuf};

use crate::binaries::binary;

/// The path in environment variable `name`; `None` (the test skips) when unset, unless under
/// `CI=true`, where a Filecoin test that skips is a test that did not run: it panics, saying
/// `how` the variable is set.
pub fn required_env(name: &str, how: &str) -> Option<PathBuf> {
    match std::env::var_os(name) {
        Some(value) => Some(PathBuf::from(value)),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI must run the Filecoin cluster tests: {name} is unset ({how})")
        }
        None => {
            eprintln!("SKIPPED: {name} is unset ({how})");
            None
        }
    }
}

/// Fails the test unless filecoin-proofs-api's `verify_seal` (`proofpipe-prover porep-verify`)
/// accepts `proof` for the C1 output `c1` with the parameters in `params`.
pub fn assert_verify_seal(c1: &Path, proof: &Path, params: &Path) {
    let verdict = std::process::Command::new(binary("proofpipe-prover"))
        .args(["--log", "warn", "porep-verify", "--porep-c1"])
        .arg(c1)
        .arg("--proof")
        .arg(proof)
        .arg("--params-dir")
        .arg(params)
        .output()
        .expect("run proofpipe-prover porep-verify");
    assert!(
        verdict.status.success() && String::from_utf8_lossy(&verdict.stdout).starts_with("VALID"),
        "verify_seal: {}\n{}",
        String::from_utf8_lossy(&verdict.stdout),
        String::from_utf8_lossy(&verdict.stderr)
    );
}
