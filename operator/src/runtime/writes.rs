//! Every write the operator makes, each one server-side apply with the field manager
//! `proofpipe-operator` (forced: ADR 0003 makes the operator the only writer of these
//! fields) unless said otherwise. ProofJob writes carry the `resourceVersion` they were
//! computed from, so a write based on a stale read fails with 409 instead of, say,
//! assigning a job twice.

use json_patch::jsonptr::PointerBuf;
use json_patch::{PatchOperation, RemoveOperation, TestOperation};
use std::fmt::Debug;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use proofpipe_crds::{ProofJob, ProofJobStatus, ProverPool, ProverPoolStatus};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::{Error, KubeResultExt};
use crate::names::{ASSIGNED_POD_LABEL, ASSIGNED_POD_UID_ANNOTATION, FIELD_MANAGER, FINALIZER};
use crate::shared::prover_pods::ProverPod;

fn apply() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

/// The head of an apply body for `K`: apiVersion, kind, metadata.
fn apply_body<K: Resource<DynamicType = ()>>(name: &str, resource_version: Option<&str>) -> Value {
    let mut metadata = json!({ "name": name });
    if let Some(version) = resource_version {
        metadata["resourceVersion"] = json!(version);
    }
    json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": metadata,
    })
}

/// Sets (`Some(pod)`) or removes (`None`) the assigned-pod label, the pod-UID annotation
/// and the finalizer of `job`, in one write conditional on its `resourceVersion`; returns
/// the job as written.
pub(crate) async fn set_assigned_pod(
    api: &Api<ProofJob>,
    job: &ProofJob,
    pod: Option<&ProverPod>,
) -> Result<ProofJob, Error> {
    let name = job.name_any();
    let body = assignment_body(&name, job.resource_version().as_deref(), pod);
    api.patch(&name, &apply(), &Patch::Apply(&body))
        .await
        .context(|| {
            let namespace = job.namespace().unwrap_or_default();
            match pod {
                Some(pod) => format!("assigning ProofJob {namespace}/{name} to pod {}", pod.name),
                None => format!("unassigning ProofJob {namespace}/{name}"),
            }
        })
}

/// The apply body of an assignment. The finalizer comes and goes with the label: only an
/// assigned job has a daemon to stop when it is deleted (ADR 0029), and one write instead
/// of two per job. Leaving a key out of the applied metadata removes it: this manager is
/// its only owner (a finalizer added by an operator before this one is removed by
/// [`remove_finalizer`]).
fn assignment_body(name: &str, resource_version: Option<&str>, pod: Option<&ProverPod>) -> Value {
    let mut body = apply_body::<ProofJob>(name, resource_version);
    if let Some(pod) = pod {
        body["metadata"]["labels"] = json!({ ASSIGNED_POD_LABEL: pod.name });
        body["metadata"]["annotations"] = pod.uid.as_ref().map_or_else(
            || json!({}),
            |uid| json!({ ASSIGNED_POD_UID_ANNOTATION: uid }),
        );
        body["metadata"]["finalizers"] = json!([FINALIZER]);
    } else {
        body["metadata"]["labels"] = json!({});
        body["metadata"]["annotations"] = json!({});
    }
    body
}

/// Removes the finalizer from a job being deleted, where another field manager added it
/// (the kube-runtime finalizer helper of earlier operators), so that unassigning did not.
/// A JSON patch that tests the list first: a stale read fails instead of dropping another
/// controller's finalizer.
pub(crate) async fn remove_finalizer(api: &Api<ProofJob>, job: &ProofJob) -> Result<(), Error> {
    let name = job.name_any();
    let Some(index) = job.finalizers().iter().position(|f| f == FINALIZER) else {
        return Ok(());
    };
    let index = index.to_string();
    let path = PointerBuf::from_tokens(["metadata", "finalizers", index.as_str()]);
    let patch = json_patch::Patch(vec![
        PatchOperation::Test(TestOperation {
            path: path.clone(),
            value: json!(FINALIZER),
        }),
        PatchOperation::Remove(RemoveOperation { path }),
    ]);
    match api
        .patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
    {
        // Gone already (the finalizer was the last one, removed by an earlier reconcile), or
        // a failed test: the list changed since it was read, and the watch brings the
        // change, whose reconcile tries again.
        Err(kube::Error::Api(status)) if status.is_not_found() || status.is_invalid() => Ok(()),
        result => result.map(drop),
    }
    .context(|| {
        format!(
            "removing the finalizer of ProofJob {}/{name}",
            job.namespace().unwrap_or_default()
        )
    })
}

/// Applies the operator-owned status fields of `job`, conditional on its `resourceVersion`.
pub(crate) async fn set_job_status(
    api: &Api<ProofJob>,
    job: &ProofJob,
    status: &ProofJobStatus,
) -> Result<ProofJob, Error> {
    let name = job.name_any();
    let mut body = apply_body::<ProofJob>(&name, job.resource_version().as_deref());
    body["status"] = json!(status);
    api.patch_status(&name, &apply(), &Patch::Apply(&body))
        .await
        .context(|| {
            format!(
                "patching status of ProofJob {}/{name}",
                job.namespace().unwrap_or_default()
            )
        })
}

pub(crate) async fn delete_job(api: &Api<ProofJob>, job: &ProofJob) -> Result<(), Error> {
    let name = job.name_any();
    match api.delete(&name, &DeleteParams::default()).await {
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        result => result.map(drop),
    }
    .context(|| {
        format!(
            "deleting ProofJob {}/{name}",
            job.namespace().unwrap_or_default()
        )
    })
}

/// Applies the operator-owned status fields of `pool`. Not conditional: the operator is the
/// only writer of these fields, and each daemon's entry is its own list-map key.
pub(crate) async fn set_pool_status(
    api: &Api<ProverPool>,
    pool: &ProverPool,
    status: &ProverPoolStatus,
) -> Result<(), Error> {
    let name = pool.name_any();
    let mut body = apply_body::<ProverPool>(&name, None);
    body["status"] = json!(status);
    api.patch_status(&name, &apply(), &Patch::Apply(&body))
        .await
        .map(drop)
        .context(|| {
            format!(
                "patching status of ProverPool {}/{name}",
                pool.namespace().unwrap_or_default()
            )
        })
}

/// Sets `spec.replicas` of an autoscaled pool through the scale subresource, as HPA does:
/// a merge patch of that one field, so a user's other fields and managers are untouched.
pub(crate) async fn set_pool_replicas(
    api: &Api<ProverPool>,
    pool: &ProverPool,
    replicas: i32,
) -> Result<(), Error> {
    let name = pool.name_any();
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    let patch = json!({ "spec": { "replicas": replicas } });
    api.patch_scale(&name, &params, &Patch::Merge(&patch))
        .await
        .map(drop)
        .context(|| {
            format!(
                "scaling ProverPool {}/{name} to {replicas} replicas",
                pool.namespace().unwrap_or_default()
            )
        })
}

/// Removes the `status.provers` entries of `pods` (pods that no longer exist). The entries
/// belong to the daemons' field managers, so this is a JSON patch, each removal guarded by a
/// test of the entry's pod: a list that changed meanwhile fails the patch (left to the next
/// reconcile) instead of removing a live prover's entry.
pub(crate) async fn remove_prover_entries(
    api: &Api<ProverPool>,
    pool: &ProverPool,
    pods: &[String],
) -> Result<(), Error> {
    let entries = pool
        .status
        .as_ref()
        .and_then(|status| status.provers.as_deref())
        .unwrap_or_default();
    let mut operations = Vec::new();
    // From the end, so that each removal leaves the indexes still to visit in place.
    for (index, entry) in entries.iter().enumerate().rev() {
        if pods.contains(&entry.pod) {
            let index = index.to_string();
            operations.push(PatchOperation::Test(TestOperation {
                path: PointerBuf::from_tokens(["status", "provers", index.as_str(), "pod"]),
                value: json!(entry.pod),
            }));
            operations.push(PatchOperation::Remove(RemoveOperation {
                path: PointerBuf::from_tokens(["status", "provers", index.as_str()]),
            }));
        }
    }
    let name = pool.name_any();
    let patch = Patch::<()>::Json(json_patch::Patch(operations));
    match api
        .patch_status(&name, &PatchParams::default(), &patch)
        .await
    {
        // A failed test: the list changed since it was read. The next reconcile retries.
        Err(kube::Error::Api(status)) if status.is_invalid() => Ok(()),
        result => result.map(drop),
    }
    .context(|| {
        format!(
            "removing stale prover entries {pods:?} from ProverPool {}/{name}",
            pool.namespace().unwrap_or_default()
        )
    })
}

/// Applies `object`, of a built-in kind: its k8s-openapi type serializes its own
/// `apiVersion` and `kind`, as an apply body needs.
pub(crate) async fn apply_object<K>(api: &Api<K>, object: &K) -> Result<(), Error>
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Serialize,
{
    let name = object.name_any();
    api.patch(&name, &apply(), &Patch::Apply(object))
        .await
        .map(drop)
        .context(|| {
            format!(
                "applying {} {}/{name}",
                K::kind(&()),
                object.namespace().unwrap_or_default()
            )
        })
}

/// Creates `pod`; one that already exists (a watch that lagged) is fine.
pub(crate) async fn create_pod(api: &Api<Pod>, pod: &Pod) -> Result<(), Error> {
    match api.create(&PostParams::default(), pod).await {
        Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
        result => result.map(drop),
    }
    .context(|| {
        format!(
            "creating Pod {}/{}",
            pod.namespace().unwrap_or_default(),
            pod.name_any()
        )
    })
}

pub(crate) async fn delete_pod(api: &Api<Pod>, namespace: &str, name: &str) -> Result<(), Error> {
    match api.delete(name, &DeleteParams::default()).await {
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        result => result.map(drop),
    }
    .context(|| format!("deleting Pod {namespace}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::prover_pods::PodHealth;
    use crate::shared::prover_pods::tests::prover;

    #[test]
    fn the_finalizer_comes_and_goes_with_the_assignment() {
        let mut pod = prover(1, PodHealth::Ready);
        pod.uid = Some("uid-1".into());
        let assigned = assignment_body("job-a", Some("41"), Some(&pod));
        assert_eq!(
            assigned["metadata"],
            json!({
                "name": "job-a", "resourceVersion": "41",
                "labels": { ASSIGNED_POD_LABEL: "gpu-prover-1" },
                "annotations": { ASSIGNED_POD_UID_ANNOTATION: "uid-1" },
                "finalizers": [FINALIZER],
            })
        );
        // Unassigned: every key this manager applied is left out, so the API server drops
        // the label, the annotation and the finalizer it owned.
        let unassigned = assignment_body("job-a", Some("42"), None);
        assert_eq!(
            unassigned["metadata"],
            json!({ "name": "job-a", "resourceVersion": "42", "labels": {}, "annotations": {} })
        );
    }
}
