//! What the operator needs to know about a prover pod, read from a Pod without a client.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::names::{TEMPLATE_HASH_LABEL, prover_pod_ordinal};

/// Where a prover pod is in its life, as far as taking work goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PodHealth {
    /// Created, not (yet) Ready: scheduling, pulling, loading parameters, or failing its
    /// readiness probe.
    Starting,
    /// Running and Ready: may take a job.
    Ready,
    /// Finished (phase Failed or Succeeded): its prover is gone for good and the pod must be
    /// replaced. Prover pods never restart (`restartPolicy: Never`).
    Terminated,
    /// Being deleted.
    Terminating,
}

impl PodHealth {
    /// Whether the prover in this pod still exists or will: jobs assigned to a pod that is not
    /// alive are requeued.
    pub fn is_alive(self) -> bool {
        matches!(self, Self::Starting | Self::Ready)
    }
}

/// One prover pod, as the pure cores see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProverPod {
    pub name: String,
    pub uid: Option<String>,
    /// The `n` of `<pool>-prover-<n>`; `None` for a pod carrying the pool's labels under a
    /// name the operator did not give (it is still counted and may be scaled away).
    pub ordinal: Option<u32>,
    pub health: PodHealth,
    /// Why the scheduler cannot place the pod, while it cannot (`PodScheduled` is False
    /// with reason `Unschedulable`).
    pub unschedulable: Option<String>,
    /// The scheduling gates holding the pod back (Kueue's `kueue.x-k8s.io/admission` until
    /// its ClusterQueue has quota for it): the scheduler does not consider a gated pod, nor
    /// does a node autoscaler add nodes for it.
    pub gated: Option<String>,
    /// Created from an earlier version of the pool's template (or carrying no template hash
    /// at all): it is replaced once it is idle (see `scaling`).
    pub outdated: bool,
}

impl ProverPod {
    /// Reads a Pod of `pool`, whose template hash is now `template_hash`.
    pub fn observe(pool: &str, pod: &Pod, template_hash: &str) -> Self {
        let name = pod.name_any();
        Self {
            ordinal: prover_pod_ordinal(pool, &name),
            health: health(pod),
            unschedulable: unschedulable(pod),
            gated: scheduling_gates(pod),
            uid: pod.metadata.uid.clone(),
            outdated: pod.labels().get(TEMPLATE_HASH_LABEL).map(String::as_str)
                != Some(template_hash),
            name,
        }
    }
}

/// The health of the pod a job is assigned to: `None` when it does not exist, or when the
/// pod of that name is not the one the job was assigned to (`assigned_uid`, when recorded).
pub fn assigned_pod_health(pod: Option<&Pod>, assigned_uid: Option<&str>) -> Option<PodHealth> {
    let pod = pod?;
    match (assigned_uid, pod.metadata.uid.as_deref()) {
        (Some(assigned), Some(uid)) if assigned != uid => None,
        _ => Some(health(pod)),
    }
}

/// How the prover container of a terminated pod ended, e.g. `OOMKilled (exit 137)`, with
/// what to do about it when that is known.
pub fn termination(pod: &Pod) -> Option<String> {
    let terminated = pod
        .status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find_map(|status| status.state.as_ref()?.terminated.as_ref())?;
    let reason = terminated.reason.as_deref().unwrap_or("terminated");
    let mut text = format!("{reason} (exit {})", terminated.exit_code);
    // The prover's last words: its termination message, or the end of its log
    // (terminationMessagePolicy FallbackToLogsOnError).
    if let Some(words) = terminated.message.as_deref().map(last_lines)
        && !words.is_empty()
    {
        text.push_str(": ");
        text.push_str(&words);
    }
    if reason == "OOMKilled" {
        text.push_str(
            ": the pipeline outgrew the memory limit; raise limits.memory or lower \
             spec.pipeline.partitionWorkers / channelCapacity (docs/operating.md)",
        );
    }
    Some(text)
}

/// The last few non-empty lines of `message`, joined with " | ", at most ~800 bytes: enough
/// for the error that ended a prover, short enough for an Event and a status field.
fn last_lines(message: &str) -> String {
    const LINES: usize = 4;
    const BYTES: usize = 800;
    let mut lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .rev()
        .take(LINES)
        .collect();
    lines.reverse();
    let joined = lines.join(" | ");
    match joined.char_indices().rev().nth(BYTES) {
        Some((start, _)) => format!("...{}", &joined[start..]),
        None => joined,
    }
}

/// The scheduler's message for a pod it cannot place, e.g. `0/4 nodes are available: 4
/// Insufficient nvidia.com/gpu.`
fn unschedulable(pod: &Pod) -> Option<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled")?;
    (condition.status == "False" && condition.reason.as_deref() == Some("Unschedulable")).then(
        || {
            condition
                .message
                .clone()
                .unwrap_or_else(|| "no node can take it".to_owned())
        },
    )
}

/// The names of the pod's scheduling gates, while it has any.
fn scheduling_gates(pod: &Pod) -> Option<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let gates = pod.spec.as_ref()?.scheduling_gates.as_ref()?;
    (!gates.is_empty()).then(|| {
        gates
            .iter()
            .map(|gate| gate.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    })
}

fn health(pod: &Pod) -> PodHealth {
    if pod.metadata.deletion_timestamp.is_some() {
        return PodHealth::Terminating;
    }
    let status = pod.status.as_ref();
    match status.and_then(|s| s.phase.as_deref()) {
        Some("Failed" | "Succeeded") => return PodHealth::Terminated,
        Some("Running") => {}
        _ => return PodHealth::Starting,
    }
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    if ready {
        PodHealth::Ready
    } else {
        PodHealth::Starting
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Prover pod `gpu-prover-<n>` of the pool, as the pure cores see it.
    pub(crate) fn prover(n: u32, health: PodHealth) -> ProverPod {
        ProverPod {
            name: format!("gpu-prover-{n}"),
            uid: None,
            ordinal: Some(n),
            health,
            unschedulable: None,
            gated: None,
            outdated: false,
        }
    }

    /// [`prover`], created from an earlier template.
    pub(crate) fn outdated_prover(n: u32, health: PodHealth) -> ProverPod {
        ProverPod {
            outdated: true,
            ..prover(n, health)
        }
    }

    /// A pod of `pool` named `name` in `phase`, Ready or not.
    pub(crate) fn pod(name: &str, phase: &str, ready: bool) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "status": {
                "phase": phase,
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            },
        }))
        .unwrap()
    }

    #[test]
    fn ready_needs_running_and_the_ready_condition() {
        let observe = |pod: &Pod| ProverPod::observe("gpu", pod, "h1").health;
        assert_eq!(
            observe(&pod("gpu-prover-0", "Running", true)),
            PodHealth::Ready
        );
        assert_eq!(
            observe(&pod("gpu-prover-0", "Running", false)),
            PodHealth::Starting
        );
        assert_eq!(
            observe(&pod("gpu-prover-0", "Pending", false)),
            PodHealth::Starting
        );
        assert_eq!(observe(&Pod::default()), PodHealth::Starting);
        assert_eq!(
            observe(&pod("gpu-prover-0", "Failed", false)),
            PodHealth::Terminated
        );
        assert_eq!(
            observe(&pod("gpu-prover-0", "Succeeded", false)),
            PodHealth::Terminated
        );
    }

    #[test]
    fn a_replacement_under_the_same_name_is_not_the_assigned_pod() {
        let mut replacement = pod("gpu-prover-0", "Running", true);
        replacement.metadata.uid = Some("new".into());
        assert_eq!(assigned_pod_health(Some(&replacement), Some("old")), None);
        assert_eq!(
            assigned_pod_health(Some(&replacement), Some("new")),
            Some(PodHealth::Ready)
        );
        // Assigned before UIDs were recorded: the name is all there is to go by.
        assert_eq!(
            assigned_pod_health(Some(&replacement), None),
            Some(PodHealth::Ready)
        );
        assert_eq!(assigned_pod_health(None, Some("old")), None);
    }

    #[test]
    fn a_failed_provers_last_words_are_kept() {
        let log = "INFO starting\n\nINFO planning\nERROR proving failed: memory limit 64 MiB is too \
                   small for this job: it needs 186.8 MiB\n";
        let failed: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gpu-prover-0"},
            "status": {
                "phase": "Failed",
                "containerStatuses": [{
                    "name": "prover", "image": "p", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 1, "reason": "Error", "message": log}},
                }],
            },
        }))
        .unwrap();
        assert_eq!(
            termination(&failed).unwrap(),
            "Error (exit 1): INFO starting | INFO planning | ERROR proving failed: memory limit \
             64 MiB is too small for this job: it needs 186.8 MiB"
        );
        let long = last_lines(&"x".repeat(5000));
        assert!(
            long.len() <= 804 && long.starts_with("..."),
            "{}",
            long.len()
        );
    }

    #[test]
    fn a_terminated_container_says_how_it_ended() {
        let oom: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gpu-prover-0"},
            "status": {
                "phase": "Failed",
                "containerStatuses": [{
                    "name": "prover", "image": "p", "imageID": "", "ready": false, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
                }],
            },
        }))
        .unwrap();
        let note = termination(&oom).unwrap();
        assert!(
            note.starts_with("OOMKilled (exit 137): the pipeline outgrew the memory limit"),
            "{note}"
        );
        assert_eq!(termination(&pod("gpu-prover-0", "Running", true)), None);
    }

    #[test]
    fn a_pending_pod_no_node_can_take_is_unschedulable() {
        let pending: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gpu-prover-1"},
            "status": {
                "phase": "Pending",
                "conditions": [{
                    "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
                }],
            },
        }))
        .unwrap();
        let observed = ProverPod::observe("gpu", &pending, "h1");
        assert_eq!(observed.health, PodHealth::Starting);
        assert_eq!(
            observed.unschedulable.as_deref(),
            Some("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
        );
        // Scheduled, or merely not yet looked at by the scheduler: not unschedulable.
        let running = ProverPod::observe("gpu", &pod("gpu-prover-0", "Running", true), "h1");
        assert_eq!(running.unschedulable, None);
        assert_eq!(
            ProverPod::observe("gpu", &Pod::default(), "h1").unschedulable,
            None
        );
    }

    #[test]
    fn a_pod_kueue_holds_is_gated_not_unschedulable() {
        let gated: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gpu-prover-2"},
            "spec": {
                "containers": [],
                "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            },
            "status": {
                "phase": "Pending",
                "conditions": [{
                    "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }],
            },
        }))
        .unwrap();
        let observed = ProverPod::observe("gpu", &gated, "h1");
        assert_eq!(observed.gated.as_deref(), Some("kueue.x-k8s.io/admission"));
        assert_eq!(observed.unschedulable, None);
        // Admitted: Kueue removed the gate.
        let mut admitted = gated.clone();
        admitted.spec.as_mut().unwrap().scheduling_gates = Some(vec![]);
        assert_eq!(ProverPod::observe("gpu", &admitted, "h1").gated, None);
    }

    #[test]
    fn a_pod_is_outdated_unless_it_carries_the_current_template_hash() {
        let mut current = pod("gpu-prover-0", "Running", true);
        current
            .labels_mut()
            .insert(TEMPLATE_HASH_LABEL.into(), "h1".into());
        assert!(!ProverPod::observe("gpu", &current, "h1").outdated);
        assert!(ProverPod::observe("gpu", &current, "h2").outdated);
        // Created before pods carried the hash: its template is unknown, so it is rolled.
        assert!(ProverPod::observe("gpu", &pod("gpu-prover-1", "Running", true), "h1").outdated);
    }

    #[test]
    fn a_pod_being_deleted_is_terminating_even_if_ready() {
        let mut ready = pod("gpu-prover-3", "Running", true);
        ready.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        let observed = ProverPod::observe("gpu", &ready, "h1");
        assert_eq!(observed.health, PodHealth::Terminating);
        assert_eq!(observed.ordinal, Some(3));
        assert!(!observed.health.is_alive());
    }
}
