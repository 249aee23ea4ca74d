//! The pod statuses a kubelet would write, built as data so their shape is unit-tested.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    ContainerStatus, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::env::POD_IP;

/// How a container's process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    /// The exit code, `128 + signal` for a signal death (what a container runtime reports).
    pub code: i32,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// Whether the kernel's OOM killer ended it.
    pub oom_killed: bool,
}

impl Exit {
    fn reason(self) -> &'static str {
        match self {
            Exit {
                oom_killed: true, ..
            } => "OOMKilled",
            Exit { code: 0, .. } => "Completed",
            _ => "Error",
        }
    }
}

/// The container a status is about.
#[derive(Clone, Debug)]
pub struct ContainerRef<'a> {
    /// The container's name in the pod spec.
    pub name: &'a str,
    /// Its image, reported back as is.
    pub image: &'a str,
}

/// A pod whose container has started: Running and Ready.
///
/// Readiness is reported as soon as the process runs: the runner does not probe.
pub fn running(container: &ContainerRef, started: &Time) -> PodStatus {
    PodStatus {
        phase: Some("Running".into()),
        conditions: Some(conditions(true, started)),
        container_statuses: Some(vec![container_status(
            container,
            true,
            ContainerState {
                running: Some(ContainerStateRunning {
                    started_at: Some(started.clone()),
                }),
                ..ContainerState::default()
            },
        )]),
        ..placed(started)
    }
}

/// A pod whose container exited: Succeeded on exit 0, Failed otherwise.
pub fn terminated(
    container: &ContainerRef,
    started: &Time,
    finished: &Time,
    exit: Exit,
    message: Option<String>,
) -> PodStatus {
    let reason = exit.reason();
    PodStatus {
        phase: Some(
            if exit.code == 0 {
                "Succeeded"
            } else {
                "Failed"
            }
            .into(),
        ),
        message: (exit.code != 0).then(|| {
            format!(
                "container {} exited with code {} ({reason})",
                container.name, exit.code
            )
        }),
        conditions: Some(conditions(false, finished)),
        container_statuses: Some(vec![container_status(
            container,
            false,
            ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: exit.code,
                    signal: exit.signal,
                    reason: Some(reason.into()),
                    started_at: Some(started.clone()),
                    finished_at: Some(finished.clone()),
                    message,
                    ..ContainerStateTerminated::default()
                }),
                ..ContainerState::default()
            },
        )]),
        ..placed(started)
    }
}

/// A pod the runner cannot start (no binary for its image, an env source it cannot resolve):
/// Failed, with `reason` and `message` saying why.
pub fn not_started(container: &ContainerRef, now: &Time, reason: &str, message: &str) -> PodStatus {
    PodStatus {
        phase: Some("Failed".into()),
        reason: Some(reason.into()),
        message: Some(message.into()),
        conditions: Some(conditions(false, now)),
        container_statuses: Some(vec![container_status(
            container,
            false,
            ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some(reason.into()),
                    message: Some(message.into()),
                }),
                ..ContainerState::default()
            },
        )]),
        ..placed(now)
    }
}

/// A pod no node can take: Pending with `PodScheduled=False, reason=Unschedulable`, as the
/// scheduler reports it (what cluster-autoscaler and Karpenter react to).
pub fn unschedulable(now: &Time, message: &str) -> PodStatus {
    PodStatus {
        phase: Some("Pending".into()),
        conditions: Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some("Unschedulable".into()),
            message: Some(message.into()),
            last_transition_time: Some(now.clone()),
            ..PodCondition::default()
        }]),
        ..PodStatus::default()
    }
}

/// What kube-apiserver writes on a pod created with scheduling gates (Kueue's until its
/// ClusterQueue admits it): Pending, not scheduled, reason `SchedulingGated`.
pub fn scheduling_gated(now: &Time) -> PodStatus {
    PodStatus {
        phase: Some("Pending".into()),
        conditions: Some(vec![PodCondition {
            type_: "PodScheduled".into(),
            status: "False".into(),
            reason: Some("SchedulingGated".into()),
            message: Some("Scheduling is blocked due to non-empty scheduling gates".into()),
            last_transition_time: Some(now.clone()),
            ..PodCondition::default()
        }]),
        ..PodStatus::default()
    }
}

/// The fields every status of a bound pod has.
fn placed(start: &Time) -> PodStatus {
    PodStatus {
        host_ip: Some(POD_IP.into()),
        pod_ip: Some(POD_IP.into()),
        pod_ips: Some(vec![PodIP { ip: POD_IP.into() }]),
        start_time: Some(start.clone()),
        ..PodStatus::default()
    }
}

fn conditions(ready: bool, at: &Time) -> Vec<PodCondition> {
    let condition = |type_: &str, status: bool| PodCondition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        last_transition_time: Some(at.clone()),
        reason: (!status).then(|| "PodCompleted".into()),
        ..PodCondition::default()
    };
    vec![
        condition("PodScheduled", true),
        condition("Initialized", true),
        condition("ContainersReady", ready),
        condition("Ready", ready),
    ]
}

fn container_status(
    container: &ContainerRef,
    ready: bool,
    state: ContainerState,
) -> ContainerStatus {
    ContainerStatus {
        name: container.name.into(),
        image: container.image.into(),
        image_id: String::new(),
        ready,
        started: Some(state.running.is_some()),
        restart_count: 0,
        state: Some(state),
        ..ContainerStatus::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    const PROVER: ContainerRef<'static> = ContainerRef {
        name: "prover",
        image: "proofpipe-prover:e2e",
    };

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap())
    }

    fn condition(status: &PodStatus, type_: &str) -> String {
        let conditions = status.conditions.as_ref().unwrap();
        let found = conditions.iter().find(|c| c.type_ == type_).unwrap();
        found.status.clone()
    }

    #[test]
    fn an_unschedulable_pod_is_pending_without_a_node() {
        let status = unschedulable(&at(5), "0/1 nodes are available");
        assert_eq!(status.phase.as_deref(), Some("Pending"));
        assert_eq!(condition(&status, "PodScheduled"), "False");
        assert_eq!(status.pod_ip, None);
        let scheduled = &status.conditions.as_ref().unwrap()[0];
        assert_eq!(scheduled.reason.as_deref(), Some("Unschedulable"));
    }

    #[test]
    fn running_pod_is_ready_on_loopback() {
        let status = running(&PROVER, &at(100));
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(status.pod_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(status.start_time, Some(at(100)));
        for type_ in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
            assert_eq!(condition(&status, type_), "True", "{type_}");
        }
        let container = &status.container_statuses.unwrap()[0];
        assert!(container.ready);
        assert_eq!(container.image, "proofpipe-prover:e2e");
        let running = container.state.as_ref().unwrap().running.as_ref().unwrap();
        assert_eq!(running.started_at, Some(at(100)));
    }

    #[test]
    fn exit_zero_succeeds_and_is_no_longer_ready() {
        let exit = Exit {
            code: 0,
            signal: None,
            oom_killed: false,
        };
        let status = terminated(&PROVER, &at(100), &at(160), exit, None);
        assert_eq!(status.phase.as_deref(), Some("Succeeded"));
        assert_eq!(status.message, None);
        assert_eq!(condition(&status, "Ready"), "False");
        let container = &status.container_statuses.unwrap()[0];
        let terminated = container
            .state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap();
        assert_eq!(
            (terminated.exit_code, terminated.reason.as_deref()),
            (0, Some("Completed"))
        );
        assert_eq!(terminated.finished_at, Some(at(160)));
    }

    #[test]
    fn nonzero_exit_fails_with_the_code() {
        let exit = Exit {
            code: 3,
            signal: None,
            oom_killed: false,
        };
        let status = terminated(&PROVER, &at(100), &at(101), exit, None);
        assert_eq!(status.phase.as_deref(), Some("Failed"));
        assert_eq!(
            status.message.as_deref(),
            Some("container prover exited with code 3 (Error)")
        );
        assert_eq!(condition(&status, "ContainersReady"), "False");
    }

    #[test]
    fn oom_kill_is_reported_as_such() {
        let exit = Exit {
            code: 137,
            signal: Some(9),
            oom_killed: true,
        };
        let status = terminated(&PROVER, &at(100), &at(101), exit, None);
        let container = &status.container_statuses.unwrap()[0];
        let terminated = container
            .state
            .as_ref()
            .unwrap()
            .terminated
            .as_ref()
            .unwrap();
        assert_eq!(terminated.reason.as_deref(), Some("OOMKilled"));
        assert_eq!((terminated.exit_code, terminated.signal), (137, Some(9)));
    }

    #[test]
    fn unstartable_pod_fails_with_reason_and_message() {
        let status = not_started(&PROVER, &at(5), "UnmappedImage", "no binary for image x");
        assert_eq!(status.phase.as_deref(), Some("Failed"));
        assert_eq!(status.reason.as_deref(), Some("UnmappedImage"));
        assert_eq!(status.message.as_deref(), Some("no binary for image x"));
        assert_eq!(condition(&status, "Ready"), "False");
        let container = &status.container_statuses.unwrap()[0];
        let waiting = container.state.as_ref().unwrap().waiting.as_ref().unwrap();
        assert_eq!(waiting.reason.as_deref(), Some("UnmappedImage"));
    }
}
