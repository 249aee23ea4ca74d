//! A job no prover of its pool can fit is held, not tried: a 32 GiB PoRep (a 44 GiB proving
//! key) sent to a pool of 1 GiB provers stays Pending with `Assigned=False` reason
//! `DoesNotFit`, a message and one Warning Event that say what memory limit would fit, no
//! prover and no attempt; a small job behind it in the same pool is proved meanwhile. Once
//! the pool's provers are given that limit the job leaves the hold.
//!
//! Needs `KUBECONFIG` (skips without it).

use k8s_openapi::api::events::v1::Event;
use kube::ResourceExt;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use proofpipe_crds::{ASSIGNED_POD_LABEL, ProofJob, ProofJobPhase, ProverPool};
use proofpipe_e2e::stack::{Stack, check_succeeded, phase};

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).expect("a well-formed object")
}

/// The `Assigned` condition's reason and message.
fn assigned(job: &ProofJob) -> Option<(String, String)> {
    let condition = job
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Assigned")?;
    Some((condition.reason.clone(), condition.message.clone()))
}

#[tokio::test]
async fn a_job_that_cannot_fit_its_pool_is_held_and_says_what_would_fit() {
    let Some(mut stack) = Stack::start("held").await else {
        return;
    };
    let params = stack.params_dir().display().to_string();
    stack
        .namespace
        .apply(&[object(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1",
            "kind": "ProverPool",
            "metadata": { "name": "small" },
            "spec": {
                "replicas": 1,
                "template": { "spec": { "containers": [{
                    "name": "prover",
                    "image": "proofpipe-prover:e2e",
                    "args": ["--listen", "127.0.0.1:0"],
                    "resources": { "limits": { "memory": "1Gi" } },
                    "env": [{ "name": "PROOFPIPE_PARAMS_DIR", "value": params }],
                }] } },
            },
        }))])
        .await;
    // First in line by priority, and far too large: its input is never read.
    stack
        .namespace
        .apply(&[
            object(serde_json::json!({
                "apiVersion": "proofpipe.dev/v1alpha1",
                "kind": "ProofJob",
                "metadata": { "name": "porep-32gib" },
                "spec": {
                    "pool": "small", "priority": 10,
                    "filecoin": {
                        "kind": "PoRepC2", "sealProof": "StackedDrg32GiBV1_1",
                        "input": { "url": "s3://unread/c1.json", "sha256": "0".repeat(64) },
                    },
                },
            })),
            object(serde_json::json!({
                "apiVersion": "proofpipe.dev/v1alpha1",
                "kind": "ProofJob",
                "metadata": { "name": "fits" },
                "spec": { "pool": "small", "circuit": "mul-chain", "constraints": 1024, "partitions": 2 },
            })),
        ])
        .await;
    let jobs = stack.jobs();

    // The queue flows past the held job.
    stack
        .wait_for("the job that fits to succeed", || async {
            let job = jobs.get("fits").await.map_err(|e| e.to_string())?;
            check_succeeded(&job)
        })
        .await;

    let held = jobs.get("porep-32gib").await.unwrap();
    let status = held.status.clone().unwrap_or_default();
    assert_eq!(status.phase, Some(ProofJobPhase::Pending), "{status:?}");
    let (reason, message) = assigned(&held).expect("an Assigned condition");
    assert_eq!(reason, "DoesNotFit", "{message}");
    for says in [
        "StackedDrg32GiBV1_1",
        "the pool's provers have 1.0 GiB",
        "raise the prover container's memory limit",
    ] {
        assert!(message.contains(says), "{says:?} not in {message:?}");
    }
    assert_eq!(
        (status.pod.as_deref(), status.attempts),
        (None, None),
        "never tried"
    );
    assert!(held.labels().get(ASSIGNED_POD_LABEL).is_none());

    let events = stack.namespace.api::<Event>();
    let list = events.list(&Default::default()).await.unwrap();
    let warnings: Vec<&Event> = list
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("DoesNotFit"))
        .collect();
    assert_eq!(warnings.len(), 1, "one Event for the hold: {warnings:?}");
    let warning = warnings[0];
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert_eq!(
        warning.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("porep-32gib")
    );
    assert!(
        warning
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("StackedDrg32GiBV1_1"),
        "{warning:?}"
    );

    // Give the provers what the message asks for: the job leaves the hold (and is deleted
    // before a prover reads its input, which does not exist).
    let needed = message
        .split("at least ")
        .nth(1)
        .and_then(|rest| rest.split(" GiB").next())
        .and_then(|gib| gib.parse::<f64>().ok())
        .expect("the needed limit in GiB");
    let limit = format!("{}Gi", needed.ceil() as u64);
    stack
        .namespace
        .api::<ProverPool>()
        .patch(
            "small",
            &PatchParams::default(),
            &Patch::Merge(
                serde_json::json!({"spec": {"template": {"spec": {"containers": [{
                    "name": "prover",
                    "image": "proofpipe-prover:e2e",
                    "args": ["--listen", "127.0.0.1:0"],
                    "resources": { "limits": { "memory": limit } },
                    "env": [{ "name": "PROOFPIPE_PARAMS_DIR", "value": params }],
                }]}}}}),
            ),
        )
        .await
        .unwrap();
    stack
        .wait_for("the held job to leave the hold", || async {
            let job = jobs.get("porep-32gib").await.map_err(|e| e.to_string())?;
            match assigned(&job) {
                Some((reason, _)) if reason != "DoesNotFit" => Ok(()),
                other => Err(format!("phase {:?}, Assigned {other:?}", phase(&job))),
            }
        })
        .await;
    jobs.delete("porep-32gib", &DeleteParams::default())
        .await
        .unwrap();
}
