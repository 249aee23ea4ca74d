//! The gateway's view of its namespace: one watch of ProofJobs and one of ProverPools into
//! in-memory caches. Every call reads these; awaiting callers wake on each change instead of
//! polling the API server, so 500 waiting callers cost the API server one watch.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use proofpipe_crds::{ProofJob, ProverPool};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

#[derive(Clone)]
pub struct Caches {
    jobs: Store<ProofJob>,
    pools: Store<ProverPool>,
    namespace: String,
    /// Bumped on every job event: awaiting callers wait for it to move.
    job_changes: watch::Receiver<u64>,
}

impl Caches {
    /// Starts both watches in `namespace` and waits until each has listed once.
    /// `on_finished` is called once for each job this process sees finish (Succeeded or
    /// Failed) after its first listing: jobs already finished then are not reported.
    pub async fn start(
        client: Client,
        namespace: &str,
        on_finished: impl Fn(&ProofJob) + Send + 'static,
    ) -> Self {
        let mut finished = FinishedJobs::default();
        let (jobs, job_changes) = watch_into_store::<ProofJob>(
            Api::namespaced(client.clone(), namespace),
            move |event| finished.see(event, &on_finished),
        );
        let (pools, _) = watch_into_store::<ProverPool>(Api::namespaced(client, namespace), |_| {});
        // The writers live in the watch tasks, which run for the process' life.
        let _ = jobs.wait_until_ready().await;
        let _ = pools.wait_until_ready().await;
        Self {
            jobs,
            pools,
            namespace: namespace.to_owned(),
            job_changes,
        }
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn job(&self, name: &str) -> Option<Arc<ProofJob>> {
        self.jobs.get(&ObjectRef::new(name).within(&self.namespace))
    }

    pub fn jobs(&self) -> Vec<Arc<ProofJob>> {
        self.jobs.state()
    }

    pub fn pool(&self, name: &str) -> Option<Arc<ProverPool>> {
        self.pools
            .get(&ObjectRef::new(name).within(&self.namespace))
    }

    /// A receiver that sees every later change of any job.
    pub fn job_changes(&self) -> watch::Receiver<u64> {
        let mut changes = self.job_changes.clone();
        changes.mark_unchanged();
        changes
    }
}

/// The names of finished jobs already reported, so each is reported once (a finished job is
/// applied again on every later change, and on every re-list).
#[derive(Default)]
struct FinishedJobs {
    reported: HashSet<String>,
}

impl FinishedJobs {
    fn see(&mut self, event: &watcher::Event<ProofJob>, report: &impl Fn(&ProofJob)) {
        let finished = |job: &ProofJob| {
            job.status
                .as_ref()
                .and_then(|s| s.phase)
                .is_some_and(proofpipe_crds::ProofJobPhase::is_finished)
        };
        match event {
            // The first listing's (and a re-list's) finished jobs: known, not news.
            watcher::Event::InitApply(job) if finished(job) => {
                self.reported.insert(job.name_any());
            }
            // Reported once: a finished job is applied again on each later change.
            watcher::Event::Apply(job) if finished(job) && self.reported.insert(job.name_any()) => {
                report(job);
            }
            watcher::Event::Delete(job) => {
                self.reported.remove(&job.name_any());
            }
            _ => {}
        }
    }
}

/// Watches `api` into a store, calling `on_event` with each event; the receiver moves on every
/// applied event.
fn watch_into_store<K>(
    api: Api<K>,
    mut on_event: impl FnMut(&watcher::Event<K>) + Send + 'static,
) -> (Store<K>, watch::Receiver<u64>)
where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let (reader, writer) = reflector::store();
    let (changed, changes) = watch::channel(0u64);
    let events = watcher::watcher(api, watcher::Config::default())
        // Managed fields are most of an object's size and nothing here reads them.
        .modify(|object| object.managed_fields_mut().clear())
        .default_backoff();
    tokio::spawn(reflector::reflector(writer, events).for_each(move |event| {
        match event {
            Ok(event) => {
                on_event(&event);
                changed.send_modify(|version| *version = version.wrapping_add(1));
            }
            Err(error) => {
                tracing::warn!(kind = %K::kind(&()), %error, "watching failed; retrying with backoff")
            }
        }
        std::future::ready(())
    }));
    (reader, changes)
}
