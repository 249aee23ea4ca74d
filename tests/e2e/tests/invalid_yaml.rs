//! Invalid objects from `fixtures/invalid/` are refused by the API server itself, with a
//! message that names the field and the rule. (`crds/tests/api_server.rs` covers every rule;
//! this checks the user's path: YAML files, as `kubectl apply -f` would send them.)
//!
//! Needs `KUBECONFIG` (e.g. `eval "$(../shared/kube-testenv/start.sh)"`); skips without it.

use proofpipe_e2e::cluster::TestNamespace;
use proofpipe_e2e::fixtures;

#[tokio::test]
async fn invalid_fixtures_are_rejected_with_clear_messages() {
    let Some(namespace) = TestNamespace::create("invalid-yaml").await else {
        return;
    };
    let cases = [
        (
            "missing-pool.yaml",
            ["spec.pool", "Required value"].as_slice(),
        ),
        (
            "zero-partitions.yaml",
            &["spec.partitions", "should be greater than or equal to 1"],
        ),
        (
            "unknown-circuit.yaml",
            &[
                "spec.circuit",
                "circuit must be one of mul-chain, merkle-sha256",
            ],
        ),
        (
            "negative-seed.yaml",
            &["spec.seed", "should be greater than or equal to 0"],
        ),
        (
            "negative-replicas.yaml",
            &["spec.replicas", "should be greater than or equal to 0"],
        ),
        (
            "reserved-env.yaml",
            &[
                "spec.template.spec.containers[0].env[0].name",
                "PROOFPIPE_* variables are set by the operator",
            ],
        ),
        (
            "merkle-too-small.yaml",
            &["spec.constraints", "merkle-sha256 needs at least 26870"],
        ),
    ];
    for (file, expected) in cases {
        let objects = fixtures::load(&format!("invalid/{file}"));
        let message = namespace.rejection(&objects[0]).await;
        for part in expected {
            assert!(
                message.contains(part),
                "{file}: expected {part:?} in the API server's message {message:?}"
            );
        }
    }
    namespace.delete().await;
}
