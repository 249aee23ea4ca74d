//! An Event recorder that keeps every distinct message.
//!
//! kube-runtime's `Recorder` folds Events by (type, reason, action, reporter, regarding,
//! related) and keeps the first note: "assigned to prover pod p (attempt 1)" then shows ×3
//! after attempts 2 and 3, and Requeued Events with different causes merge into the first.
//! This one writes the same `events.k8s.io/v1` Events, but the note is part of the key: the
//! same message again becomes a series (`series.count` + 1), a different message a new
//! Event. The cache that remembers recent Events is bounded by age (6 min, as kube's, and
//! client-go's series window) and by size.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use kube::{Client, ResourceExt};

/// How long a published Event can still grow into a series.
pub const CACHE_TTL: SignedDuration = SignedDuration::from_mins(6);
/// The most Events remembered at once; beyond it the least recently seen is forgotten (its
/// next repeat starts a new Event, which loses nothing but the count).
pub const MAX_ENTRIES: usize = 4096;

/// The identity of an object for keying: kube's `ObjectReference` has no `Hash`, and its
/// `resourceVersion` or `fieldPath` must not split a series.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ObjectKey {
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
}

impl From<&ObjectReference> for ObjectKey {
    fn from(reference: &ObjectReference) -> Self {
        Self {
            api_version: reference.api_version.clone(),
            kind: reference.kind.clone(),
            namespace: reference.namespace.clone(),
            name: reference.name.clone(),
            uid: reference.uid.clone(),
        }
    }
}

/// What makes two Events the same occurrence: kube's key plus the note (one recorder has
/// one reporter, so the reporter is left out).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct EventKey {
    warning: bool,
    reason: String,
    action: String,
    note: Option<String>,
    regarding: ObjectKey,
    related: Option<ObjectKey>,
}

impl EventKey {
    fn new(event: &Event, regarding: &ObjectReference) -> Self {
        Self {
            warning: event.type_ == EventType::Warning,
            reason: event.reason.clone(),
            action: event.action.clone(),
            note: event.note.clone(),
            regarding: regarding.into(),
            related: event.secondary.as_ref().map(ObjectKey::from),
        }
    }
}

/// The pure part: which Event object a publish writes, and whether it creates or patches.
#[derive(Debug)]
pub struct EventCache {
    reporter: Reporter,
    ttl: SignedDuration,
    max_entries: usize,
    entries: HashMap<EventKey, K8sEvent>,
}

/// What to send for one publish.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    /// A new Event.
    Create(K8sEvent),
    /// A repeat: the earlier Event with its `series` advanced.
    Patch(K8sEvent),
}

impl Write {
    pub fn event(&self) -> &K8sEvent {
        match self {
            Write::Create(event) | Write::Patch(event) => event,
        }
    }
}

impl EventCache {
    pub fn new(reporter: Reporter, ttl: SignedDuration, max_entries: usize) -> Self {
        Self {
            reporter,
            ttl,
            max_entries,
            entries: HashMap::new(),
        }
    }

    /// Events remembered now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What publishing `event` about `regarding` at `now` writes. Call [`Self::record`]
    /// with it once the write succeeded.
    pub fn prepare(&mut self, event: &Event, regarding: &ObjectReference, now: Timestamp) -> Write {
        let ttl = self.ttl;
        self.entries
            .retain(|_, earlier| last_observed(earlier).is_some_and(|seen| seen + ttl > now));
        match self.entries.get(&EventKey::new(event, regarding)) {
            Some(earlier) => {
                let count = earlier.series.as_ref().map_or(2, |series| series.count + 1);
                let mut repeat = earlier.clone();
                repeat.series = Some(EventSeries {
                    count,
                    last_observed_time: MicroTime(now),
                });
                Write::Patch(repeat)
            }
            None => Write::Create(self.generate(event, regarding, now)),
        }
    }

    /// Remembers a written Event, forgetting the least recently seen one when full.
    pub fn record(&mut self, event: &Event, regarding: &ObjectReference, written: K8sEvent) {
        let key = EventKey::new(event, regarding);
        if !self.entries.contains_key(&key) && self.entries.len() >= self.max_entries {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, earlier)| last_observed(earlier))
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(key, written);
    }

    /// A new Event object, shaped as kube-runtime's `Recorder` shapes it.
    fn generate(&self, event: &Event, regarding: &ObjectReference, now: Timestamp) -> K8sEvent {
        let controller = &self.reporter.controller;
        K8sEvent {
            action: Some(event.action.clone()),
            reason: Some(event.reason.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            related: event.secondary.clone(),
            note: event.note.clone(),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                name: Some(format!(
                    "{}.{:x}",
                    regarding.name.as_ref().unwrap_or(controller),
                    now.as_nanosecond()
                )),
                ..ObjectMeta::default()
            },
            reporting_controller: Some(controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| controller.clone()),
            ),
            type_: Some(
                match event.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .into(),
            ),
            ..K8sEvent::default()
        }
    }
}

fn last_observed(event: &K8sEvent) -> Option<Timestamp> {
    match (&event.series, &event.event_time) {
        (Some(series), _) => Some(series.last_observed_time.0),
        (None, Some(time)) => Some(time.0),
        (None, None) => None,
    }
}

/// Publishes Events through an [`EventCache`]; cheap to clone (the cache is shared).
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    cache: Arc<Mutex<EventCache>>,
}

impl Recorder {
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self {
            client,
            cache: Arc::new(Mutex::new(EventCache::new(
                reporter,
                CACHE_TTL,
                MAX_ENTRIES,
            ))),
        }
    }

    /// Publishes `event` about `regarding`: a new Event, or a repeat of the same message
    /// counted in the earlier one's series.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let write = self.lock().prepare(event, regarding, Timestamp::now());
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let events: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        let written = match write {
            Write::Create(new) => events.create(&PostParams::default(), &new).await?,
            Write::Patch(repeat) => {
                let patched = events
                    .patch(
                        &repeat.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&repeat),
                    )
                    .await;
                match patched {
                    Ok(patched) => patched,
                    // The API server dropped the Event (its own TTL, or a deletion): begin
                    // a new one rather than lose this occurrence.
                    Err(kube::Error::Api(status)) if status.code == 404 => {
                        let new = self.lock().generate(event, regarding, Timestamp::now());
                        events.create(&PostParams::default(), &new).await?
                    }
                    Err(error) => return Err(error),
                }
            }
        };
        self.lock().record(event, regarding, written);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, EventCache> {
        // A panic while holding the lock leaves a consistent map (every change is one
        // insert, remove or retain): keep using it.
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reporter() -> Reporter {
        Reporter {
            controller: "proofpipe-operator".into(),
            instance: Some("op-0".into()),
        }
    }

    fn pod(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            ..ObjectReference::default()
        }
    }

    fn job() -> ObjectReference {
        ObjectReference {
            api_version: Some("proofpipe.dev/v1alpha1".into()),
            kind: Some("ProofJob".into()),
            namespace: Some("ns".into()),
            name: Some("j".into()),
            uid: Some("u1".into()),
            ..ObjectReference::default()
        }
    }

    fn assigned(attempt: u32) -> Event {
        Event {
            type_: EventType::Normal,
            reason: "Assigned".into(),
            note: Some(format!("assigned to prover pod p-0 (attempt {attempt})")),
            action: "Assign".into(),
            secondary: Some(pod("p-0")),
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    /// Publishes through the cache as `Recorder::publish` does, with every write succeeding.
    fn publish(cache: &mut EventCache, event: &Event, now: Timestamp) -> Write {
        let write = cache.prepare(event, &job(), now);
        cache.record(event, &job(), write.event().clone());
        write
    }

    #[test]
    fn a_different_note_is_a_new_event_and_the_same_note_a_series() {
        let mut cache = EventCache::new(reporter(), CACHE_TTL, MAX_ENTRIES);
        let Write::Create(first) = publish(&mut cache, &assigned(1), at(0)) else {
            panic!("the first publish creates")
        };
        assert_eq!(
            first.note.as_deref(),
            Some("assigned to prover pod p-0 (attempt 1)")
        );
        assert_eq!(first.reporting_instance.as_deref(), Some("op-0"));
        assert_eq!(first.regarding, Some(job()));
        assert_eq!(first.related, Some(pod("p-0")));
        assert_eq!(first.type_.as_deref(), Some("Normal"));
        assert!(first.metadata.name.as_deref().unwrap().starts_with("j."));

        // Same reason, action, object and related pod, another message: kube's Recorder
        // would patch the first Event; this is a new one.
        let Write::Create(second) = publish(&mut cache, &assigned(2), at(1)) else {
            panic!("another note creates a new Event")
        };
        assert_ne!(second.metadata.name, first.metadata.name);
        assert_eq!(second.series, None);

        // The first message again: a series on the first Event.
        let Write::Patch(repeat) = publish(&mut cache, &assigned(1), at(2)) else {
            panic!("the same note patches")
        };
        assert_eq!(repeat.metadata.name, first.metadata.name);
        assert_eq!(repeat.note, first.note);
        let series = repeat.series.clone().unwrap();
        assert_eq!((series.count, series.last_observed_time.0), (2, at(2)));
        let Write::Patch(again) = publish(&mut cache, &assigned(1), at(3)) else {
            panic!("the same note patches")
        };
        assert_eq!(again.series.unwrap().count, 3);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn type_reason_and_related_object_still_split_events() {
        let mut cache = EventCache::new(reporter(), CACHE_TTL, MAX_ENTRIES);
        publish(&mut cache, &assigned(1), at(0));
        let mut other_pod = assigned(1);
        other_pod.secondary = Some(pod("p-1"));
        let mut warning = assigned(1);
        warning.type_ = EventType::Warning;
        let mut reason = assigned(1);
        reason.reason = "Requeued".into();
        for event in [other_pod, warning, reason] {
            assert!(matches!(
                publish(&mut cache, &event, at(1)),
                Write::Create(_)
            ));
        }
        assert_eq!(cache.len(), 4);
    }

    #[test]
    fn a_series_ends_after_the_ttl_since_it_was_last_seen() {
        let mut cache = EventCache::new(reporter(), CACHE_TTL, MAX_ENTRIES);
        publish(&mut cache, &assigned(1), at(0));
        // Seen again at 5 min: the window restarts from there.
        assert!(matches!(
            publish(&mut cache, &assigned(1), at(300)),
            Write::Patch(_)
        ));
        assert!(matches!(
            publish(&mut cache, &assigned(1), at(300 + 359)),
            Write::Patch(_)
        ));
        assert!(matches!(
            publish(&mut cache, &assigned(1), at(300 + 359 + 361)),
            Write::Create(_)
        ));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_full_cache_forgets_the_least_recently_seen_event() {
        let mut cache = EventCache::new(reporter(), CACHE_TTL, 2);
        publish(&mut cache, &assigned(1), at(0));
        publish(&mut cache, &assigned(2), at(1));
        // Attempt 1 is seen again, so attempt 2 is now the least recent.
        publish(&mut cache, &assigned(1), at(2));
        publish(&mut cache, &assigned(3), at(3));
        assert_eq!(cache.len(), 2);
        assert!(matches!(
            publish(&mut cache, &assigned(1), at(4)),
            Write::Patch(_)
        ));
        assert!(matches!(
            publish(&mut cache, &assigned(2), at(5)),
            Write::Create(_)
        ));
    }
}
