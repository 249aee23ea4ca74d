//! One watch per kind (ProverPool, ProofJob, prover Pods) feeding one cache each, shared by
//! both controllers, and the triggers that decide which reconciles a change starts.
//!
//! kube-runtime's shared streams would give the caches, but their subscribers never see a
//! deletion, and a deleted pod is exactly what a job must react to; so the watch events are
//! handled here: each is applied to its cache and then mapped, with the object's previous
//! version from the cache, to the reconciles it concerns ([`crate::runtime::triggers`]).

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, reflector};
use kube::{Api, Resource, ResourceExt};
use proofpipe_crds::{ProofJob, ProverPool};
use serde::de::DeserializeOwned;

use crate::names::{POOL_LABEL, all_provers_selector};
use crate::runtime::metrics::Metrics;
use crate::runtime::triggers::{
    job_concerns_pool, jobs_on_pod, pool_concerns_jobs, pool_needs_reconcile,
    unfinished_jobs_of_pool,
};

/// The caches the reconciles read instead of the API server.
#[derive(Clone)]
pub(crate) struct Caches {
    pub pools: Store<ProverPool>,
    pub jobs: Store<ProofJob>,
    pub pods: Store<Pod>,
}

impl Caches {
    /// Waits until every cache holds a full list (so that no decision is made from half a
    /// picture at start-up).
    pub async fn ready(&self) {
        // Errors only if a writer was dropped, which happens only when the process stops.
        let _ = self.pools.wait_until_ready().await;
        let _ = self.jobs.wait_until_ready().await;
        let _ = self.pods.wait_until_ready().await;
    }

    /// The prover pods of pool `pool` in `namespace`.
    pub fn pods_of_pool(&self, namespace: &str, pool: &str) -> Vec<Pod> {
        self.pods
            .state()
            .iter()
            .filter(|pod| {
                pod.namespace().as_deref() == Some(namespace)
                    && pod.labels().get(POOL_LABEL).map(String::as_str) == Some(pool)
            })
            .map(|pod| (**pod).clone())
            .collect()
    }

    /// The jobs of pool `pool` in `namespace`.
    pub fn jobs_of_pool(&self, namespace: &str, pool: &str) -> Vec<ProofJob> {
        self.jobs
            .state()
            .iter()
            .filter(|job| job.namespace().as_deref() == Some(namespace) && job.spec.pool == pool)
            .map(|job| (**job).clone())
            .collect()
    }

    /// Waits (briefly) until the cache of `K` satisfies `done`: after a write, so that the
    /// next reconcile of the same object decides from a cache that includes it. The watch
    /// usually delivers within milliseconds; on a timeout the next reconcile may redo a
    /// decision, which the resourceVersion-conditional writes then refuse.
    pub async fn settle<K>(store: &Store<K>, done: impl Fn(&Store<K>) -> bool)
    where
        K: Resource + Clone + 'static,
        K::DynamicType: Eq + Hash + Clone,
    {
        let deadline = tokio::time::Instant::now() + SETTLE_TIMEOUT;
        while !done(store) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Caches {
    /// Whether `store` no longer holds the version of `object` that a reconcile read (it
    /// holds a later one, or the object is gone): the reconcile's own write has arrived.
    pub fn moved_past<K>(store: &Store<K>, object: &K) -> bool
    where
        K: Resource<DynamicType = ()> + Clone + 'static,
    {
        store
            .get(&ObjectRef::from_obj(object))
            .is_none_or(|cached| cached.resource_version() != object.resource_version())
    }
}

/// The longest a reconcile waits for the cache to show its own writes.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(5);

/// Requests for reconciles, fed by the informers.
pub(crate) struct Triggers {
    pub pools: UnboundedReceiver<ObjectRef<ProverPool>>,
    pub jobs: UnboundedReceiver<ObjectRef<ProofJob>>,
}

/// Starts the three watches; returns their caches, the reconcile triggers, and the future
/// that runs the watches (it ends only if the process stops).
pub(crate) fn start(
    pools_api: Api<ProverPool>,
    jobs_api: Api<ProofJob>,
    pods_api: Api<Pod>,
    metrics: Metrics,
) -> (Caches, Triggers, impl Future<Output = ()>) {
    let (pool_writer, pool_store) = writer::<ProverPool>();
    let (job_writer, job_store) = writer::<ProofJob>();
    let (pod_writer, pod_store) = writer::<Pod>();
    let caches = Caches {
        pools: pool_store,
        jobs: job_store,
        pods: pod_store,
    };
    let (pool_tx, pool_rx) = unbounded();
    let (job_tx, job_rx) = unbounded();

    let pools = {
        let jobs = caches.jobs.clone();
        let (pool_tx, job_tx) = (pool_tx.clone(), job_tx.clone());
        let pool_metrics = metrics.clone();
        inform(
            pools_api,
            watcher::Config::default(),
            pool_writer,
            move |old: Option<&ProverPool>, new: Option<&ProverPool>| {
                let pool = new.or(old).expect("one of the two exists");
                if new.is_none()
                    && let Some(namespace) = pool.namespace()
                {
                    // Pools have no finalizer: this is the only sign of their deletion.
                    pool_metrics.forget_pool(&namespace, &pool.name_any());
                }
                if pool_needs_reconcile(old, new) && new.is_some() {
                    send(&pool_tx, ObjectRef::from_obj(pool));
                }
                if pool_concerns_jobs(old, new) {
                    let namespace = pool.namespace();
                    let name = pool.name_any();
                    let jobs = jobs.state();
                    for job in unfinished_jobs_of_pool(&jobs, namespace.as_deref(), &name) {
                        send(&job_tx, ObjectRef::from_obj(job));
                    }
                }
            },
        )
    };
    let jobs = {
        let (pool_tx, job_tx) = (pool_tx.clone(), job_tx.clone());
        inform(
            jobs_api,
            watcher::Config::default(),
            job_writer,
            move |old: Option<&ProofJob>, new: Option<&ProofJob>| {
                metrics.job_phase_changed(old.and_then(phase_of), new.and_then(phase_of));
                if let Some(job) = new {
                    send(&job_tx, ObjectRef::from_obj(job));
                }
                if job_concerns_pool(old, new) {
                    for job in old.into_iter().chain(new) {
                        if let Some(namespace) = job.namespace() {
                            send(&pool_tx, ObjectRef::new(&job.spec.pool).within(&namespace));
                        }
                    }
                }
            },
        )
    };
    let pods = {
        let jobs = caches.jobs.clone();
        inform(
            pods_api,
            watcher::Config::default().labels(&all_provers_selector()),
            pod_writer,
            move |old: Option<&Pod>, new: Option<&Pod>| {
                // Pods change rarely (their kubelet, the operator); any change may matter
                // to their pool (health, scheduling) and to the job they run.
                let pod = new.or(old).expect("one of the two exists");
                let namespace = pod.namespace();
                if let (Some(namespace), Some(pool)) = (&namespace, pod.labels().get(POOL_LABEL)) {
                    send(&pool_tx, ObjectRef::new(pool).within(namespace));
                }
                let name = pod.name_any();
                let jobs = jobs.state();
                for job in jobs_on_pod(&jobs, namespace.as_deref(), &name) {
                    send(&job_tx, ObjectRef::from_obj(job));
                }
            },
        )
    };
    let run = async move {
        tokio::join!(pools, jobs, pods);
    };
    (
        caches,
        Triggers {
            pools: pool_rx,
            jobs: job_rx,
        },
        run,
    )
}

/// A job's namespace and phase, for the jobs-by-phase gauge.
fn phase_of(job: &ProofJob) -> Option<(&str, &str)> {
    let phase = job
        .status
        .as_ref()
        .and_then(|status| status.phase)
        .map_or("New", |phase| phase.as_str());
    Some((job.metadata.namespace.as_deref()?, phase))
}

fn writer<K>() -> (Writer<K>, Store<K>)
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    let (reader, writer) = reflector::store();
    (writer, reader)
}

fn send<K: Resource>(channel: &UnboundedSender<ObjectRef<K>>, target: ObjectRef<K>)
where
    K::DynamicType: Eq + Hash + Clone,
{
    // The receiver goes only when its controller stopped, and then the process stops too.
    let _ = channel.unbounded_send(target);
}

/// Runs one watch: applies each event to the cache, then tells `changed` the object's
/// previous and new versions. A re-list (after the watch expired) is compared with the cache
/// as it was, so that changes and deletions missed meanwhile still trigger.
async fn inform<K>(
    api: Api<K>,
    config: watcher::Config,
    mut writer: Writer<K>,
    changed: impl Fn(Option<&K>, Option<&K>),
) where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let reader = writer.as_reader();
    let mut before_relist: HashMap<ObjectRef<K>, Arc<K>> = HashMap::new();
    let mut events = watcher::watcher(api, config)
        .default_backoff()
        // Managed fields are most of an object's size and no decision reads them.
        .modify(|object| object.managed_fields_mut().clear())
        .boxed();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(kind = %K::kind(&()), %error, "watching failed; retrying with backoff");
                continue;
            }
        };
        match &event {
            Event::Apply(object) => {
                let previous = reader.get(&ObjectRef::from_obj(object));
                writer.apply_watcher_event(&event);
                changed(previous.as_deref(), Some(object));
            }
            Event::Delete(object) => {
                writer.apply_watcher_event(&event);
                changed(Some(object), None);
            }
            Event::Init => {
                before_relist = reader
                    .state()
                    .into_iter()
                    .map(|object| (ObjectRef::from_obj(&*object), object))
                    .collect();
                writer.apply_watcher_event(&event);
            }
            Event::InitApply(_) => writer.apply_watcher_event(&event),
            Event::InitDone => {
                writer.apply_watcher_event(&event);
                for object in reader.state() {
                    let previous = before_relist.remove(&ObjectRef::from_obj(&*object));
                    let same = previous.as_ref().is_some_and(|previous| {
                        previous.resource_version() == object.resource_version()
                    });
                    if !same {
                        changed(previous.as_deref(), Some(&object));
                    }
                }
                for (_, gone) in before_relist.drain() {
                    changed(Some(&gone), None);
                }
            }
        }
    }
}
