//! The Events the operator publishes, so `kubectl describe` tells why an object is as it is.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType};

use super::controller::Context;
use crate::job::state::JobEvent;
use crate::pool::autoscale::Change;

impl Context {
    /// Publishes `event` about `regarding`. A failure is logged, never fatal: Events explain
    /// decisions, they do not make them.
    pub(crate) async fn publish(&self, regarding: &ObjectReference, event: Event) {
        if let Err(error) = self.recorder.publish(&event, regarding).await {
            tracing::warn!(
                reason = %event.reason,
                object = ?regarding.name,
                %error,
                "publishing an Event failed"
            );
        }
    }
}

/// An Event. The recorder ([`crate::runtime::event_recorder`]) counts a repeat of the same message
/// about the same objects as a series and keeps every distinct message as its own Event.
fn event(
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
    related: Option<ObjectReference>,
) -> Event {
    Event {
        type_,
        reason: reason.into(),
        // The API server refuses notes over 1 kB.
        note: Some(truncate(note, 1024)),
        action: action.into(),
        secondary: related,
    }
}

fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max - 3;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// A reference to a Pod, for an Event's related object.
pub(crate) fn pod_reference(namespace: Option<&str>, name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: namespace.map(str::to_owned),
        name: Some(name.to_owned()),
        ..ObjectReference::default()
    }
}

/// What the job state machine decided, as an Event; `namespace` is the job's.
pub(crate) fn job_event(decided: &JobEvent, namespace: &str) -> Event {
    match decided {
        JobEvent::Assigned { pod, attempt } => event(
            EventType::Normal,
            "Assigned",
            "Assign",
            format!("assigned to prover pod {pod} (attempt {attempt})"),
            Some(pod_reference(Some(namespace), pod)),
        ),
        JobEvent::Requeued { pod, note } => event(
            EventType::Normal,
            "Requeued",
            "Requeue",
            note.clone(),
            Some(pod_reference(Some(namespace), pod)),
        ),
        JobEvent::Suspended { pod } => event(
            EventType::Normal,
            "Suspended",
            "Unassign",
            format!("spec.suspend is true: unassigned from {pod}; finished partitions are kept"),
            Some(pod_reference(Some(namespace), pod)),
        ),
        JobEvent::Stalled { pod, note } => event(
            EventType::Warning,
            "Stalled",
            "Watch",
            note.clone(),
            Some(pod_reference(Some(namespace), pod)),
        ),
        JobEvent::Held { note } => event(
            EventType::Warning,
            crate::job::state::DOES_NOT_FIT,
            "Hold",
            note.clone(),
            None,
        ),
        JobEvent::Failed { reason, note } => event(
            EventType::Warning,
            "Failed",
            "Fail",
            format!("{}: {note}", reason.as_str()),
            None,
        ),
        JobEvent::Succeeded { note } => event(
            EventType::Normal,
            "Succeeded",
            "Complete",
            note.clone(),
            None,
        ),
    }
}

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

/// A reconcile failed; the note is the whole error chain.
pub(crate) fn reconcile_failed(chain: &str, retry_in: Duration) -> Event {
    let note = format!("{chain} (retrying in {} s)", retry_in.as_secs());
    event(
        EventType::Warning,
        "ReconcileFailed",
        "Reconcile",
        note,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_notes_are_cut_on_a_character_boundary() {
        let note = truncate("é".repeat(600), 1024);
        assert!(note.len() <= 1024);
        assert!(note.ends_with("..."));
        assert_eq!(truncate("short".into(), 1024), "short");
    }
}
