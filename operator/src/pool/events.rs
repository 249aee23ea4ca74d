//! The Events of a pool's changes: its pods created and deleted, its autoscaling, and its
//! provers that cannot be scheduled.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType};

use crate::pool::autoscale::Change;
use crate::runtime::events::event;

/// A pool created or deleted one pod (`action`: CreatePod, ReplacePod, DeletePod).
pub(crate) fn scaled(action: &str, note: String, pod: ObjectReference) -> Event {
    event(EventType::Normal, "Scaled", action, note, Some(pod))
}

/// A pool deleted an idle prover pod of an earlier template, to replace it from the current one.
pub(crate) fn rolled(note: String, pod: ObjectReference) -> Event {
    event(EventType::Normal, "Rolled", "RollPod", note, Some(pod))
}

/// The autoscaler changed a pool's `spec.replicas`.
pub(crate) fn autoscaled(change: Change, reason: &str) -> Event {
    let (action, note) = match change {
        Change::Up { from, to } => (
            "ScaleUp",
            format!("scaled up from {from} to {to} provers: {reason}"),
        ),
        Change::Down { from, to } => (
            "ScaleDown",
            format!("scaled down from {from} to {to} provers: {reason}"),
        ),
    };
    event(EventType::Normal, "Autoscaled", action, note, None)
}

/// Prover pods of a pool cannot be scheduled: what a node autoscaler reacts to, and what a
/// user without one must fix.
pub(crate) fn unschedulable(note: String) -> Event {
    event(
        EventType::Warning,
        "ProversUnschedulable",
        "Schedule",
        note,
        None,
    )
}

/// Prover pods of a pool wait for quota (their scheduling gates, e.g. Kueue's): expected
/// while a ClusterQueue is full, so Normal; no node autoscaler acts on them.
pub(crate) fn waiting_for_quota(note: String) -> Event {
    event(
        EventType::Normal,
        "ProversWaitingForQuota",
        "Schedule",
        note,
        None,
    )
}
