//! The gateway's load invariants at CI size (the benchmark is `examples/gateway_load.rs`):
//! 60 concurrent Prove calls, 15 of them repeated, into 4 stand-in provers: every call answers
//! COMPLETED with the proof of its own input, one job per request id, no job proved twice.
//!
//! Needs `KUBECONFIG` (skips without it) and the operator and gateway binaries.

use proofpipe_e2e::cluster::TestNamespace;
use proofpipe_e2e::gateway_load::{LoadArgs, run};

#[tokio::test]
async fn concurrent_and_repeated_calls_each_get_their_own_proof_once() {
    let Some(namespace) = TestNamespace::create("gateway-load").await else {
        return;
    };
    let args = LoadArgs {
        submissions: 60,
        provers: 4,
        duplicates: 15,
        prove_ms: 20,
        input_bytes: 2048,
    };
    let report = run(&namespace, &args).await;
    eprintln!("{}", report.table());
    assert_eq!(report.problems(), Vec::<String>::new());
    namespace.delete().await;
}
