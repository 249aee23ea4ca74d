//! What the two controllers share: the I/O edge around the pure cores.
//!
//! - [`crate::pool::reconcile`] reconciles a ProverPool: its prover RBAC, its pods (create,
//!   replace, scale down), assignment of its queue to idle Ready provers, and its status.
//! - [`crate::job::reconcile`] reconciles a ProofJob: its phase and status from
//!   [`crate::job::state`], requeue on a lost pod, failure, TTL deletion, unassignment on
//!   suspend and on deletion (the finalizer).

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use kube::runtime::controller::{self, Action};
use kube::runtime::events::Reporter;
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::events;
use super::informers::{self, Caches};
use crate::error::Error;
use crate::names::FIELD_MANAGER;
use crate::runtime::event_recorder::Recorder;
use crate::runtime::metrics::Metrics;
use crate::runtime::retry::FailureCounts;
use crate::{job, pool};

/// Reconciles of one kind that may run at once (the default is unbounded).
pub(crate) const CONCURRENCY: u16 = 8;
/// After losing a resourceVersion race: the watch brings the new version almost at once.
pub(crate) const CONFLICT_RETRY: Duration = Duration::from_millis(500);

/// What every reconcile needs.
pub(crate) struct Context {
    pub(crate) client: Client,
    pub(crate) recorder: Recorder,
    pub(crate) metrics: Metrics,
    pub(crate) failures: FailureCounts,
    /// What the watches have seen: every read of a reconcile comes from here.
    pub(crate) caches: Caches,
    /// The delay before retrying a failed attempt (doubled per failure).
    pub(crate) retry_delay: Duration,
    /// Namespaces whose prover RBAC was applied by this process (once each).
    pub(crate) rbac_applied: Mutex<BTreeSet<String>>,
    /// Set once the process is asked to stop: the controllers take no new work.
    pub(crate) stopping: tokio::sync::watch::Receiver<bool>,
}

impl Context {
    /// Resolves once the process is asked to stop; for `Controller::graceful_shutdown_on`,
    /// which then lets the reconciles in flight finish and starts no new one.
    pub(crate) fn stopping(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        let mut stopping = self.stopping.clone();
        async move {
            // A dropped sender means the process is going away: stop too.
            let _ = stopping.wait_for(|stopping| *stopping).await;
        }
    }

    pub(crate) fn namespaced<K>(&self, namespace: &str) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), namespace)
    }
}

/// An API for `K` over the watched namespace, or all of them.
fn watched<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}

/// Runs the watches and both controllers until `stopping` turns true, then lets their
/// reconciles in flight finish and returns `Ok`; a controller or watch that stops unasked is
/// an error.
pub(crate) async fn run(
    client: Client,
    config: &crate::Config,
    metrics: Metrics,
    stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<(), Error> {
    let namespace = config.namespace.clone();
    let identity = config.identity.as_str();
    let reporter = Reporter {
        controller: FIELD_MANAGER.into(),
        instance: Some(identity.to_owned()),
    };
    let (pools, jobs, pods) = (
        watched(&client, namespace.as_deref()),
        watched(&client, namespace.as_deref()),
        watched(&client, namespace.as_deref()),
    );
    let (caches, triggers, watches) = informers::start(pools, jobs, pods, metrics.clone());
    let context = Arc::new(Context {
        recorder: Recorder::new(client.clone(), reporter),
        client,
        metrics,
        failures: FailureCounts::default(),
        caches,
        rbac_applied: Mutex::default(),
        retry_delay: config.retry_delay,
        stopping,
    });
    let controllers = async {
        tokio::select! {
            () = context.caches.ready() => {}
            () = context.stopping() => return Ok(()),
        }
        tracing::info!("caches filled; reconciling");
        let pools = Box::pin(pool::reconcile::run(context.clone(), triggers.pools));
        let jobs = Box::pin(job::reconcile::run(context.clone(), triggers.jobs));
        let (first, other) = match futures::future::select(pools, jobs).await {
            futures::future::Either::Left(((), jobs)) => {
                ("ProverPool", futures::future::Either::Left(jobs))
            }
            futures::future::Either::Right(((), pools)) => {
                ("ProofJob", futures::future::Either::Right(pools))
            }
        };
        if !*context.stopping.borrow() {
            return Err(Error::ControllerStopped(first));
        }
        // Asked to stop: the other one is finishing its reconciles in flight.
        other.await;
        Ok(())
    };
    tokio::select! {
        () = watches => Err(Error::ControllerStopped("watches")),
        result = controllers => result,
    }
}

/// Logs what a controller stream yields besides successful reconciles: a failing watch (a
/// missing permission, say) would otherwise go unnoticed. Failed reconciles were already
/// logged by [`error_policy`].
pub(crate) fn log_outcome<K, T>(
    outcome: Result<T, controller::Error<Error, watcher::Error>>,
) -> std::future::Ready<()>
where
    K: Resource<DynamicType = ()>,
{
    match outcome {
        Err(controller::Error::QueueError(error)) => {
            tracing::warn!(kind = %K::kind(&()), %error, "watching failed; retrying with backoff");
        }
        Err(controller::Error::ReconcilerFailed(..)) | Ok(_) => {}
        Err(error) => tracing::debug!(kind = %K::kind(&()), %error, "controller"),
    }
    std::future::ready(())
}

/// The namespace of a namespaced object.
pub(crate) fn namespace_of<K: Resource<DynamicType = ()>>(object: &K) -> Result<String, Error> {
    object
        .meta()
        .namespace
        .clone()
        .ok_or_else(|| Error::MissingNamespace {
            kind: K::kind(&()).into_owned(),
            name: object.meta().name.clone().unwrap_or_default(),
        })
}

/// `kind/namespace/name`, the key of an object's failure count.
fn failure_key<K: Resource<DynamicType = ()>>(object: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        object.meta().namespace.as_deref().unwrap_or_default(),
        object.meta().name.as_deref().unwrap_or_default()
    )
}

/// On a failed reconcile: a lost resourceVersion race is retried soon and quietly; anything
/// else is logged, published as a Warning Event carrying the error chain (so `kubectl
/// describe` explains a stuck object) and retried with exponential backoff.
pub(crate) fn error_policy<K>(object: Arc<K>, error: &Error, context: Arc<Context>) -> Action
where
    K: Resource<DynamicType = ()> + DeserializeOwned + Clone + Debug + Send + Sync + 'static,
{
    if error.is_conflict() {
        return Action::requeue(CONFLICT_RETRY);
    }
    let key = failure_key(&*object);
    let retry_in = context.failures.failed(&key);
    let chain = error.chain();
    tracing::warn!(object = %key, error = %chain, retry_in = ?retry_in, "reconcile failed");
    let reference = object.object_ref(&());
    tokio::spawn(async move {
        context
            .publish(&reference, events::reconcile_failed(&chain, retry_in))
            .await;
    });
    Action::requeue(retry_in)
}

/// Records a successful reconcile of `object`: clears its backoff.
pub(crate) fn succeeded<K: Resource<DynamicType = ()>>(context: &Context, object: &K) {
    context.failures.succeeded(&failure_key(object));
}
