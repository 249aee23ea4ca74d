//! What the prover's Filecoin test files share: finding the test data, comparing two
//! partitions' R1CS structure, running the CLI for its JSON report. Each test file is its own crate and uses part of this.
#![allow(dead_code)]

use std::path::PathBuf;

use proofpipe_pipeline::groth16::Synthesized;

/// The Filecoin test data (`PROOFPIPE_FILECOIN_TESTDATA`, made by `scripts/filecoin-testdata.sh`,
/// which `scripts/test.sh` runs and exports). Unset: the test says so (naming `what` it would
/// have used) and passes, except under CI, where it fails: CI must never skip these tests.
pub fn filecoin_testdata(what: &str) -> Option<PathBuf> {
    match std::env::var_os("PROOFPIPE_FILECOIN_TESTDATA") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!(
                "CI must run the Filecoin tests: scripts/test.sh exports PROOFPIPE_FILECOIN_TESTDATA"
            )
        }
        None => {
            eprintln!(
                "SKIPPED: PROOFPIPE_FILECOIN_TESTDATA is unset; run scripts/filecoin-testdata.sh \
                 (or scripts/test.sh, which does) to make the 2 KiB {what} test data"
            );
            None
        }
    }
}

/// Whether two synthesized partitions use the same variables in every query: every density
/// bit, not just the counts.
pub fn same_structure(a: &Synthesized, b: &Synthesized) -> bool {
    a.a.len() == b.a.len()
        && a.inputs.len() == b.inputs.len()
        && a.aux.len() == b.aux.len()
        && a.a_aux_density.bv == b.a_aux_density.bv
        && a.b_input_density.bv == b.b_input_density.bv
        && a.b_aux_density.bv == b.b_aux_density.bv
}

/// Runs `command`, which must succeed (else its stdout and stderr are shown), and returns the
/// JSON report on the last line of its stdout.
pub fn json_report(command: &mut assert_cmd::Command) -> serde_json::Value {
    let out = command.output().expect("the command runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().expect("a report line")).expect("a JSON report")
}
