//! What the Filecoin scenarios share: their test data from the environment, the pool their
//! jobs go to, what a prover's log says of a job's synthesis, and Filecoin's own verifiers on a
//! proof (through `proofpipe-prover porep-verify` and `snap-verify`).

use std::path::{Path, PathBuf};

use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::binaries::binary;
use crate::prover_metrics::without_colors;

/// The pool `name` of one prover pod with 4 GiB (a 2 KiB proof of any kind needs less) that
/// reads Filecoin's parameters from `params`, with `env` (a JSON array of EnvVars) added to
/// its container's env and `args` to its args. The prover binary listens on an ephemeral port
/// (the pod runner's pods share the host's network).
pub fn filecoin_pool(name: &str, params: &Path, env: &Value, args: &[&str]) -> DynamicObject {
    let mut container_env = vec![
        json!({ "name": "PROOFPIPE_LOG", "value": "info" }),
        json!({ "name": "FIL_PROOFS_PARAMETER_CACHE", "value": params.display().to_string() }),
    ];
    container_env.extend(env.as_array().expect("env is a JSON array").iter().cloned());
    let mut container_args = vec!["--listen", "127.0.0.1:0"];
    container_args.extend_from_slice(args);
    serde_json::from_value(json!({
        "apiVersion": "proofpipe.dev/v1alpha1",
        "kind": "ProverPool",
        "metadata": { "name": name },
        "spec": {
            "replicas": 1,
            "template": { "spec": { "containers": [{
                "name": "prover",
                "image": "proofpipe-prover:e2e",
                "args": container_args,
                "resources": { "limits": { "memory": "4Gi" } },
                "env": container_env,
            }] } },
        },
    }))
    .expect("a ProverPool")
}

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

/// How the prover whose log is `log` synthesized Filecoin job `job`'s partitions: the
/// `synthesis=` field (`matrices` or `one-pass`) of its line saying the job's input was read and
/// checked; `None` when there is no such line.
pub fn logged_synthesis(log: &str, job: &str) -> Option<String> {
    let job_field = format!("job={job}");
    without_colors(log).lines().find_map(|line| {
        let mut words = line.split_whitespace();
        if !line.contains("read and checked") || !words.clone().any(|w| w == job_field) {
            return None;
        }
        words.find_map(|w| {
            let value = w.strip_prefix("synthesis=")?;
            Some(value.trim_matches('"').to_owned())
        })
    })
}

/// Fails the test unless filecoin-proofs-api's `verify_seal` (`proofpipe-prover porep-verify`)
/// accepts `proof` for the C1 output `c1` with the parameters in `params`.
pub fn assert_verify_seal(c1: &Path, proof: &Path, params: &Path) {
    assert_verifier_accepts("porep-verify", "--porep-c1", c1, proof, params);
}

/// Fails the test unless filecoin-proofs-api's `verify_empty_sector_update_proof`
/// (`proofpipe-prover snap-verify`) accepts `proof` for the SnapDeals input `snap` (the JSON
/// of docs/filecoin.md) with the parameters in `params`.
pub fn assert_verify_snap(snap: &Path, proof: &Path, params: &Path) {
    assert_verifier_accepts("snap-verify", "--snap-vanilla", snap, proof, params);
}

/// Fails the test unless filecoin-proofs-api's `verify_window_post` or `verify_winning_post`
/// (`proofpipe-prover window-post-verify` / `winning-post-verify`, by the input's proof)
/// accepts `proof` for the PoSt input `post` (one WindowPoSt partition, a whole WindowPoSt or
/// a WinningPoSt) with the parameters in `params`.
pub fn assert_verify_post(post: &Path, proof: &Path, params: &Path) {
    let text = std::fs::read_to_string(post).expect("read the PoSt input");
    let command = if text.contains("StackedDrgWinning") {
        "winning-post-verify"
    } else {
        "window-post-verify"
    };
    assert_verifier_accepts(command, "--post-vanilla", post, proof, params);
}

/// Whether `verify_empty_sector_update_proof` (`proofpipe-prover snap-verify`) accepts `proof`
/// for `snap`: false when it says INVALID or cannot read the proof at all.
pub fn verify_snap(snap: &Path, proof: &Path, params: &Path) -> bool {
    verdict("snap-verify", "--snap-vanilla", snap, proof, params).0
}

fn assert_verifier_accepts(
    command: &str,
    input_flag: &str,
    input: &Path,
    proof: &Path,
    params: &Path,
) {
    let (valid, output) = verdict(command, input_flag, input, proof, params);
    assert!(valid, "{command}: {output}");
}

/// Runs the verifier `command`: whether it said VALID (and exited 0), and what it printed.
fn verdict(
    command: &str,
    input_flag: &str,
    input: &Path,
    proof: &Path,
    params: &Path,
) -> (bool, String) {
    let verdict = std::process::Command::new(binary("proofpipe-prover"))
        .args(["--log", "warn", command, input_flag])
        .arg(input)
        .arg("--proof")
        .arg(proof)
        .arg("--params-dir")
        .arg(params)
        .output()
        .unwrap_or_else(|e| panic!("run proofpipe-prover {command}: {e}"));
    let stdout = String::from_utf8_lossy(&verdict.stdout);
    let valid = verdict.status.success() && stdout.starts_with("VALID");
    let printed = format!("{stdout}\n{}", String::from_utf8_lossy(&verdict.stderr));
    (valid, printed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_synthesis_is_read_from_its_line_alone() {
        let log = "2026 INFO proofpipe_daemon::filecoin: C1 output read and checked \
                   \u{1b}[3mjob\u{1b}[0m\u{1b}[2m=\u{1b}[0msector-1-small kind=PoRepC2 partitions=1 \
                   \u{1b}[3msynthesis\u{1b}[0m\u{1b}[2m=\u{1b}[0mone-pass\n\
                   2026 INFO proofpipe_daemon::filecoin: C1 output read and checked job=sector-1 \
                   kind=PoRepC2 partitions=1 synthesis=matrices\n";
        assert_eq!(
            logged_synthesis(log, "sector-1-small").as_deref(),
            Some("one-pass")
        );
        assert_eq!(
            logged_synthesis(log, "sector-1").as_deref(),
            Some("matrices")
        );
        assert_eq!(logged_synthesis(log, "sector-2"), None);
    }
}
