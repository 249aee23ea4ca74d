//! The committed CRD YAML, `crds/proofpipe-crds.yaml`, and the Helm chart's copy that
//! installs them, `charts/proofpipe/crds/`, must both be what `proofpipe-operator crds`
//! prints today.

const COMMITTED: &str = include_str!("../../crds/proofpipe-crds.yaml");
const CHART_COPY: &str = include_str!("../../charts/proofpipe/crds/proofpipe-crds.yaml");

/// The documents of a YAML stream as JSON values, so that the comparison ignores key order
/// and formatting, which can shift with serde features, but nothing else.
fn documents(yaml: &str) -> Vec<serde_json::Value> {
    serde_yaml_ng::Deserializer::from_str(yaml)
        .map(|document| serde::Deserialize::deserialize(document).expect("valid YAML"))
        .collect()
}

#[test]
fn committed_crd_yaml_matches_the_types() {
    let generated = proofpipe_operator::crds_yaml().expect("render the CRDs");
    assert!(
        documents(COMMITTED) == documents(&generated),
        "CRD YAML drifted from the types: run \
         `cargo run -p proofpipe-operator -- crds > crds/proofpipe-crds.yaml`"
    );
}

#[test]
fn chart_crds_match_the_types() {
    let generated = proofpipe_operator::crds_yaml().expect("render the CRDs");
    assert!(
        documents(CHART_COPY) == documents(&generated),
        "the chart's CRDs drifted from the types: run \
         `cargo run -p proofpipe-operator -- crds > charts/proofpipe/crds/proofpipe-crds.yaml`"
    );
}

#[test]
fn proof_job_comes_first() {
    let kinds: Vec<_> = documents(COMMITTED)
        .iter()
        .map(|crd| crd["spec"]["names"]["kind"].clone())
        .collect();
    assert_eq!(kinds, ["ProofJob", "ProverPool"]);
}

#[test]
fn chart_installs_both_crds() {
    let names: Vec<_> = documents(CHART_COPY)
        .iter()
        .map(|crd| crd["metadata"]["name"].clone())
        .collect();
    assert_eq!(
        names,
        ["proofjobs.proofpipe.dev", "proverpools.proofpipe.dev"]
    );
}
