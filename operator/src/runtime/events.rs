//! How the operator's Events are made, so `kubectl describe` tells why an object is as it is.
//! Which Events there are, with their reasons and notes, is the resources' business
//! (`job::events`, `pool::events`); the one Event every controller publishes, a failed
//! reconcile, is here.

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType};

/// An Event. The recorder ([`crate::runtime::event_recorder`]) counts a repeat of the same message
/// about the same objects as a series and keeps every distinct message as its own Event.
pub(crate) fn event(
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
