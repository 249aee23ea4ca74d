//! The operator's Event recorder against a real API server: a repeated message becomes a
//! series on its first Event, a different message with the same reason a new Event.
//!
//! Needs `KUBECONFIG` (e.g. `eval "$(../shared/kube-testenv/start.sh)"`); without it the
//! test prints why it is skipped and passes.

use std::time::{SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::Client;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use proofpipe_operator::runtime::event_recorder::Recorder;

#[tokio::test]
async fn repeats_become_a_series_and_new_messages_new_events() {
    if std::env::var_os("KUBECONFIG").is_none() {
        eprintln!(
            "SKIPPED repeats_become_a_series_and_new_messages_new_events: KUBECONFIG is not \
             set. Start an API server with `eval \"$(../shared/kube-testenv/start.sh)\"`."
        );
        return;
    }
    let client = Client::try_default()
        .await
        .expect("a client from KUBECONFIG");
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let namespace = format!("events-{}", nanos % 1_000_000_000_000);
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace.clone()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            },
        )
        .await
        .expect("creating the test namespace");

    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "proofpipe-operator".into(),
            instance: Some("event-recorder-test".into()),
        },
    );
    let job = ObjectReference {
        api_version: Some("proofpipe.dev/v1alpha1".into()),
        kind: Some("ProofJob".into()),
        namespace: Some(namespace.clone()),
        name: Some("j".into()),
        ..ObjectReference::default()
    };
    let assigned = |attempt: u32| Event {
        type_: EventType::Normal,
        reason: "Assigned".into(),
        note: Some(format!("assigned to prover pod p-0 (attempt {attempt})")),
        action: "Assign".into(),
        secondary: None,
    };
    for attempt in [1, 2, 2, 3, 2] {
        recorder
            .publish(&assigned(attempt), &job)
            .await
            .expect("publishing an Event");
    }

    let events: Api<K8sEvent> = Api::namespaced(client.clone(), &namespace);
    let mut seen: Vec<(String, Option<i32>)> = events
        .list(&Default::default())
        .await
        .expect("listing Events")
        .into_iter()
        .map(|event| {
            assert_eq!(event.reason.as_deref(), Some("Assigned"), "{event:?}");
            assert_eq!(
                event.reporting_instance.as_deref(),
                Some("event-recorder-test")
            );
            (
                event.note.clone().unwrap_or_default(),
                event.series.map(|series| series.count),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("assigned to prover pod p-0 (attempt 1)".into(), None),
            ("assigned to prover pod p-0 (attempt 2)".into(), Some(3)),
            ("assigned to prover pod p-0 (attempt 3)".into(), None),
        ]
    );

    // The namespace (and its Events) goes; a failure here leaves only litter.
    let _ = namespaces
        .delete(&namespace, &DeleteParams::default())
        .await;
}
