//! The binary's refusals at start-up: each says what is missing and how to give it.

use std::process::Command;

fn gateway() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_proofpipe-gateway"));
    // No cluster is needed: these fail before connecting.
    command
        .env_remove("KUBECONFIG")
        .env("PROOFPIPE_LOG", "error");
    command
}

#[test]
fn without_a_token_or_an_explicit_opt_out_it_refuses_to_start() {
    let output = gateway()
        .args(["--pool", "gpu", "--artifacts", "file:///tmp/x"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no --token-file") && stderr.contains("--allow-unauthenticated"),
        "{stderr}"
    );
}

#[test]
fn a_missing_token_file_is_named() {
    let output = gateway()
        .args(["--pool", "gpu", "--artifacts", "file:///tmp/x"])
        .args(["--token-file", "/nonexistent/token"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("/nonexistent/token"), "{stderr}");
}

#[test]
fn a_token_and_the_opt_out_together_are_refused() {
    let output = gateway()
        .args(["--pool", "gpu", "--artifacts", "file:///tmp/x"])
        .args(["--token-file", "/t", "--allow-unauthenticated"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be used with"));
}
