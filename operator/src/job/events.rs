//! The Events of a job's transitions, as [`crate::job::state`] decides them.

use kube::runtime::events::{Event, EventType};

use crate::job::state::{DOES_NOT_FIT, JobEvent};
use crate::runtime::events::{event, pod_reference};

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
        JobEvent::Held { note } => {
            event(EventType::Warning, DOES_NOT_FIT, "Hold", note.clone(), None)
        }
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
