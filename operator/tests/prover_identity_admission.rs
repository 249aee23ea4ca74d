//! The chart's ProofJob-status policy (ADR 0014) on a real admission chain: installed as a
//! ValidatingAdmissionPolicy, enforced by the API server's own CEL, with the prover's
//! requests made under its identity (impersonation of its ServiceAccount with the pod name
//! its bound token carries).
//!
//! `prover_identity.rs` evaluates every rule with a CEL interpreter, for any value of any
//! field; this file covers what only the API server can tell: the proofs rules (written
//! with two-variable comprehensions the interpreter lacks), the CEL cost limit at the
//! largest job the CRD admits, and a status of that size being stored at all.
//!
//! Needs `KUBECONFIG` naming an API server that enforces ValidatingAdmissionPolicies and
//! allows impersonation: kube-testenv started with `KUBE_TESTENV_ADMISSION=1` (as
//! scripts/test.sh does), or a real cluster of Kubernetes 1.34 or later. Skips without one,
//! but fails under `CI=true`.

use std::path::Path;
use std::time::Duration;

use http::{Method, Request};
use kube::Client;
use proofpipe_crds::{ASSIGNED_POD_LABEL, MAX_PARTITIONS, MAX_STATUS_PUBLIC_INPUTS};
use proofpipe_testkit::cluster::TestNamespace;
use proofpipe_testkit::wait::eventually;
use serde::Deserialize;
use serde_json::{Value as Json, json};

const JOBS: &str = "/apis/proofpipe.dev/v1alpha1";
const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Policies {
    match_conditions: Json,
    variables: Json,
    proof_job_status: Vec<Validation>,
}

#[derive(Deserialize)]
struct Validation {
    expression: String,
    message: String,
}

/// A namespace with the chart's ProofJob-status policy bound to it alone.
struct Chain {
    client: Client,
    namespace: String,
    policy: String,
}

impl Chain {
    /// A chain whose job `job-a` has `partitions` partitions (a job's spec is immutable).
    async fn start(test: &str, partitions: i32) -> Option<(Chain, TestNamespace)> {
        let test_namespace = TestNamespace::create(test).await?;
        let client = test_namespace.client.clone();
        let namespace = test_namespace.name.clone();
        let served = client
            .request::<Json>(get(&format!("{POLICIES}/validatingadmissionpolicies")))
            .await;
        if let Err(err) = served {
            let why = format!(
                "{test} needs an API server that serves ValidatingAdmissionPolicies \
                 (kube-testenv with KUBE_TESTENV_ADMISSION=1): {err}"
            );
            if std::env::var("CI").is_ok_and(|ci| ci == "true") {
                panic!("{why}");
            }
            eprintln!("SKIPPED {why}");
            return None;
        }
        let chain = Chain {
            policy: format!("prover-identity-{namespace}"),
            client,
            namespace,
        };
        chain.install_policy(partitions).await;
        Some((chain, test_namespace))
    }

    /// The policy as the chart's template builds it from the same file, bound to this
    /// namespace only (other tests share the API server).
    async fn install_policy(&self, partitions: i32) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../charts/proofpipe/policies/prover-identity.yaml");
        let text = std::fs::read_to_string(&path).expect("the chart's policy file");
        let policies: Policies = serde_yaml_ng::from_str(&text).expect("the policy file parses");
        let validations: Vec<Json> = policies
            .proof_job_status
            .iter()
            .map(|v| json!({ "expression": v.expression, "message": v.message, "reason": "Forbidden" }))
            .collect();
        let policy = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": { "name": self.policy },
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": { "resourceRules": [{
                    "apiGroups": ["proofpipe.dev"], "apiVersions": ["*"],
                    "operations": ["UPDATE"], "resources": ["proofjobs/status"],
                }]},
                "matchConditions": policies.match_conditions,
                "variables": policies.variables,
                "validations": validations,
            },
        });
        let binding = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": { "name": self.policy },
            "spec": {
                "policyName": self.policy,
                "validationActions": ["Deny"],
                "matchResources": { "namespaceSelector": { "matchLabels": {
                    "kubernetes.io/metadata.name": self.namespace,
                }}},
            },
        });
        for (kind, object) in [
            ("validatingadmissionpolicies", policy),
            ("validatingadmissionpolicybindings", binding),
        ] {
            self.client
                .request::<Json>(send(Method::POST, &format!("{POLICIES}/{kind}"), &object))
                .await
                .unwrap_or_else(|err| panic!("create the {kind}: {err}"));
        }
        // The admission plugin learns of new policies from an informer: wait until a write
        // the policy refuses is refused.
        let stored = stored_job(partitions, 0, "gpu-prover-0");
        eventually("the policy to be enforced", Duration::from_secs(30), || {
            let stored = stored.clone();
            async move {
                match self.write_as("gpu-prover-1", &stored, &stored).await {
                    Err(message) if message.contains("assigned to its own pod") => Ok(()),
                    other => Err(format!("a rogue write got {other:?}")),
                }
            }
        })
        .await
        .unwrap_or_else(|err| panic!("{err}"));
    }

    async fn remove_policy(&self) {
        for kind in [
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicies",
        ] {
            let path = format!("{POLICIES}/{kind}/{}", self.policy);
            let _ = self
                .client
                .request::<Json>(send(Method::DELETE, &path, &json!({})))
                .await;
        }
    }

    fn job_path(&self) -> String {
        format!("{JOBS}/namespaces/{}/proofjobs/job-a", self.namespace)
    }

    /// Stores `old` (labels, spec and status) as the administrator, whom the policy does not
    /// concern, creating the job on first use; returns the stored object.
    async fn store(&self, old: &Json) -> Json {
        let collection = format!("{JOBS}/namespaces/{}/proofjobs", self.namespace);
        let mut main = old.clone();
        main.as_object_mut().unwrap().remove("status");
        let current = match self.client.request::<Json>(get(&self.job_path())).await {
            Ok(current) => {
                main["metadata"]["resourceVersion"] =
                    current["metadata"]["resourceVersion"].clone();
                self.client
                    .request::<Json>(send(Method::PUT, &self.job_path(), &main))
                    .await
            }
            Err(_) => {
                self.client
                    .request::<Json>(send(Method::POST, &collection, &main))
                    .await
            }
        }
        .unwrap_or_else(|err| panic!("store the job as the administrator: {err}"));
        let mut body = old.clone();
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
        self.client
            .request::<Json>(send(
                Method::PUT,
                &format!("{}/status", self.job_path()),
                &body,
            ))
            .await
            .unwrap_or_else(|err| panic!("store the job's status as the administrator: {err}"))
    }

    /// `pod`'s prover writes `new` over the stored `old`: `Ok` when admitted, else the API
    /// server's message.
    async fn write_as(&self, pod: &str, old: &Json, new: &Json) -> Result<(), String> {
        let stored = self.store(old).await;
        let mut body = new.clone();
        body["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"].clone();
        let mut request = send(Method::PUT, &format!("{}/status", self.job_path()), &body);
        let headers = request.headers_mut();
        let user = format!("system:serviceaccount:{}:proofpipe-prover", self.namespace);
        headers.insert("Impersonate-User", user.parse().unwrap());
        // The pod name a bound token carries (`authentication.kubernetes.io/pod-name`).
        headers.insert(
            "Impersonate-Extra-authentication.kubernetes.io%2fpod-name",
            pod.parse().unwrap(),
        );
        match self.client.request::<Json>(request).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) => Err(status.message),
            Err(err) => panic!("the prover's write failed outside admission: {err}"),
        }
    }
}

fn get(path: &str) -> Request<Vec<u8>> {
    Request::get(path).body(Vec::new()).unwrap()
}

fn send(method: Method, path: &str, body: &Json) -> Request<Vec<u8>> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(body).unwrap())
        .unwrap()
}

/// One partition's entry as the daemon writes it: a 192-byte proof in base64 and the most
/// public inputs a status entry may carry.
fn proof(partition: i32, pod: &str, verified: bool) -> Json {
    json!({
        "partition": partition,
        "proof": "A".repeat(256),
        "verified": verified,
        "publicInputs": vec![format!("{:064x}", partition); MAX_STATUS_PUBLIC_INPUTS],
        "provedBy": pod,
    })
}

/// Job `job-a` of `partitions` partitions on attempt 2, assigned to `assigned`:
/// gpu-prover-0 proved the first `proved` partitions on attempt 1, every other one
/// unverified.
fn stored_job(partitions: i32, proved: i32, assigned: &str) -> Json {
    let proofs: Vec<Json> = (0..proved)
        .map(|p| proof(p, "gpu-prover-0", p % 2 == 0))
        .collect();
    json!({
        "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
        "metadata": { "name": "job-a", "labels": { ASSIGNED_POD_LABEL: assigned } },
        "spec": { "pool": "gpu", "circuit": "mul-chain", "constraints": 1024,
                  "partitions": partitions },
        "status": {
            "phase": "Running", "pod": assigned, "attempts": 2,
            "assignedPods": ["gpu-prover-0", assigned],
            "proofs": proofs,
        },
    })
}

/// What `pod`'s daemon makes of `old`: the other pod's verified entries kept, its
/// unverified ones proved anew, every partition not yet proved added.
fn takeover(old: &Json, pod: &str) -> Json {
    let partitions = old["spec"]["partitions"].as_i64().unwrap() as i32;
    let before = old["status"]["proofs"].as_array().unwrap();
    let proofs: Vec<Json> = (0..partitions)
        .map(|p| match before.get(p as usize) {
            Some(entry) if entry["verified"] == true => entry.clone(),
            _ => proof(p, pod, true),
        })
        .collect();
    let mut new = old.clone();
    new["status"]["proofs"] = json!(proofs);
    new
}

fn refused_because(result: Result<(), String>, why: &str) {
    match result {
        Ok(()) => panic!("admitted; expected a refusal: {why}"),
        Err(message) => assert!(
            message.contains(why) && !message.contains("cost"),
            "refused for {message:?}, not {why:?}"
        ),
    }
}

const WHY_OWN: &str = "only status.proofs entries whose provedBy is its own pod";
const WHY_OTHERS: &str = "may not remove or replace another pod's verified status.proofs entries";

#[tokio::test]
async fn the_proofs_rules_hold_on_the_api_servers_own_cel() {
    let Some((chain, namespace)) = Chain::start("prover-identity-admission", 4).await else {
        return;
    };
    let me = "gpu-prover-1";
    let old = stored_job(4, 2, me);
    let rightful = takeover(&old, me);
    assert_eq!(chain.write_as(me, &old, &rightful).await, Ok(()));
    // Its first write, into a status without proofs.
    let bare = stored_job(4, 0, me);
    assert_eq!(
        chain.write_as(me, &bare, &takeover(&bare, me)).await,
        Ok(())
    );
    // Another pod's entries in another order are the same entries.
    let mut reordered = rightful.clone();
    reordered["status"]["proofs"]
        .as_array_mut()
        .unwrap()
        .reverse();
    assert_eq!(chain.write_as(me, &old, &reordered).await, Ok(()));

    let mut forged = rightful.clone();
    forged["status"]["proofs"][2] = proof(2, "gpu-prover-5", true);
    refused_because(chain.write_as(me, &old, &forged).await, WHY_OWN);
    let mut changed = rightful.clone();
    changed["status"]["proofs"][0]["proof"] = json!("BBBB");
    refused_because(chain.write_as(me, &old, &changed).await, WHY_OWN);
    let mut dropped = rightful.clone();
    dropped["status"]["proofs"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    refused_because(chain.write_as(me, &old, &dropped).await, WHY_OTHERS);
    let mut taken = rightful.clone();
    taken["status"]["proofs"][0] = proof(0, me, true);
    refused_because(chain.write_as(me, &old, &taken).await, WHY_OTHERS);
    // The same write from a pod the job is not assigned to.
    refused_because(
        chain
            .write_as("gpu-prover-2", &old, &takeover(&old, "gpu-prover-2"))
            .await,
        "assigned to its own pod",
    );

    chain.remove_policy().await;
    namespace.delete().await;
}

/// At the CRD's most partitions, every entry as large as the prover writes it: the status
/// is stored (it fits etcd's request limit), a rightful takeover of the other pod's
/// unverified half is admitted within the CEL cost limit, and a rogue write is refused by
/// its rule, not by the cost limit.
#[tokio::test]
async fn the_largest_job_fits_and_its_takeover_stays_within_the_cost_limit() {
    let Some((chain, namespace)) = Chain::start("prover-identity-largest", MAX_PARTITIONS).await
    else {
        return;
    };
    let me = "gpu-prover-1";
    let old = stored_job(MAX_PARTITIONS, MAX_PARTITIONS, me);
    let stored = chain.store(&old).await;
    assert_eq!(
        stored["status"]["proofs"].as_array().map(Vec::len),
        Some(MAX_PARTITIONS as usize)
    );

    let rightful = takeover(&old, me);
    assert_eq!(chain.write_as(me, &old, &rightful).await, Ok(()));

    let mut dropped = rightful.clone();
    dropped["status"]["proofs"]
        .as_array_mut()
        .unwrap()
        .remove(MAX_PARTITIONS as usize - 2);
    refused_because(chain.write_as(me, &old, &dropped).await, WHY_OTHERS);
    let mut forged = rightful.clone();
    forged["status"]["proofs"][MAX_PARTITIONS as usize - 1] =
        proof(MAX_PARTITIONS - 1, "gpu-prover-5", true);
    refused_because(chain.write_as(me, &old, &forged).await, WHY_OWN);

    chain.remove_policy().await;
    namespace.delete().await;
}
