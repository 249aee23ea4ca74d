//! The operator's Event recorder against a real API server: a repeated message becomes a
//! series on its first Event, a different message with the same reason a new Event.
//!
//! Needs `KUBECONFIG` (e.g. `eval "$(../shared/kube-testenv/start.sh)"`); without it the
//! test prints why it is skipped and passes.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::Api;
use kube::runtime::events::{Event, EventType, Reporter};
use proofpipe_operator::runtime::event_recorder::Recorder;
use proofpipe_testkit::cluster::TestNamespace;

#[tokio::test]
async fn repeats_become_a_series_and_new_messages_new_events() {
    let Some(test_namespace) = TestNamespace::create("events").await else {
        return;
    };
    let (client, namespace) = (test_namespace.client.clone(), test_namespace.name.clone());

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

    // The namespace (and its Events) goes.
    test_namespace.delete().await;
}
