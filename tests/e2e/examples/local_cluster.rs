//! The whole product on the API server of `KUBECONFIG` (e.g. kube-testenv), for a person to
//! watch with kubectl: the operator, the pod runner playing the kubelet for the prover pods,
//! a pool of two provers and a few jobs.
//!
//!     eval "$(../shared/kube-testenv/start.sh)"
//!     cargo build -p proofpipe-prover -p proofpipe-operator
//!     cargo run -p proofpipe-e2e --example local_cluster      # prints the namespace
//!     kubectl -n <namespace> get pj,pp -w
//!
//! Runs until Ctrl-C, or for `PROOFPIPE_DEMO_SECONDS` seconds.

use std::time::Duration;

use proofpipe_e2e::stack::Stack;

#[tokio::main]
async fn main() {
    let Some(stack) = Stack::start("demo").await else {
        eprintln!("KUBECONFIG is not set: start an API server first (see the top of this file)");
        std::process::exit(2);
    };
    stack.apply("pool.yaml").await;
    stack.apply("demo-jobs.yaml").await;
    println!("namespace: {}", stack.namespace.name);
    println!("watch it:  kubectl -n {} get proofjobs,proverpools -w", stack.namespace.name);
    let seconds = std::env::var("PROOFPIPE_DEMO_SECONDS").ok().and_then(|s| s.parse().ok());
    match seconds {
        Some(s) => tokio::time::sleep(Duration::from_secs(s)).await,
        None => tokio::signal::ctrl_c().await.expect("waiting for Ctrl-C"),
    }
}
