//! The whole product on the API server of `KUBECONFIG` (e.g. kube-testenv), for a person to
//! watch with kubectl: the operator, the pod runner playing the kubelet for the prover pods,
//! a pool of two provers and a few jobs.
//!
//!     eval "$(../shared/kube-testenv/start.sh)"
//!     cargo build -p proofpipe-prover -p proofpipe-operator
//!     cargo run -p proofpipe-e2e --example local_cluster      # prints the namespace
//!     kubectl -n <namespace> get pj,pp -w
//!
//! Runs until Ctrl-C or SIGTERM, or for `PROOFPIPE_DEMO_SECONDS` seconds; then the stack is
//! dropped, which stops the operator and the prover processes.

use std::time::Duration;

use proofpipe_e2e::stack::Stack;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() {
    let Some(stack) = Stack::start("demo").await else {
        eprintln!("KUBECONFIG is not set: start an API server first (see the top of this file)");
        std::process::exit(2);
    };
    stack.apply("pool.yaml").await;
    stack.apply("demo-jobs.yaml").await;
    println!("namespace: {}", stack.namespace.name);
    println!(
        "watch it:  kubectl -n {} get proofjobs,proverpools -w",
        stack.namespace.name
    );
    let seconds = std::env::var("PROOFPIPE_DEMO_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok());
    let mut terminate = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    let deadline = async {
        match seconds {
            Some(s) => tokio::time::sleep(Duration::from_secs(s)).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = deadline => {}
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    drop(stack);
}
