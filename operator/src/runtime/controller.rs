//! What the controllers share: the [`Context`] every reconcile gets, running a controller of
//! one kind around the reconcile function it is handed ([`controller`]), and running the
//! watches with the controllers made over them ([`run`]). Which controller runs which
//! reconcile is decided above (`wire` in lib.rs): nothing in `runtime` knows the
//! resources' modules.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc::UnboundedReceiver;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::controller::{self, Action};
use kube::runtime::events::{Event, Reporter};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::events;
use super::informers::{self, Caches, Triggers};
use crate::error::Error;
use crate::names::FIELD_MANAGER;
use crate::runtime::event_recorder::Recorder;
use crate::runtime::metrics::Metrics;
use crate::runtime::retry::FailureCounts;

/// Reconciles of one kind that may run at once (the default is unbounded).
const CONCURRENCY: u16 = 8;
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

/// What the controllers are run with: the part of [`crate::Config`] they read.
pub(crate) struct Settings {
    /// Watch this namespace only; `None` watches all.
    pub(crate) namespace: Option<String>,
    /// This replica's name in Events.
    pub(crate) identity: String,
    /// The delay before retrying a failed attempt (doubled per failure).
    pub(crate) retry_delay: Duration,
}

/// A controller of one kind, made by [`controller`], for [`run`] to run.
pub(crate) struct Controller {
    kind: Cow<'static, str>,
    running: BoxFuture<'static, ()>,
}

/// A controller of `K`: `reconcile` runs for the objects of `store` that `triggers` name (the
/// informers decide which changes are worth a reconcile: [`crate::runtime::triggers`]), at
/// most [`CONCURRENCY`] at once; a failed one goes through [`error_policy`]. Once the process
/// is asked to stop it starts no new reconcile and ends when those in flight have.
pub(crate) fn controller<K, R, F>(
    context: &Arc<Context>,
    store: Store<K>,
    triggers: UnboundedReceiver<ObjectRef<K>>,
    reconcile: R,
) -> Controller
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    R: FnMut(Arc<K>, Arc<Context>) -> F + Send + 'static,
    F: Future<Output = Result<Action, Error>> + Send + 'static,
{
    let running = kube::runtime::Controller::for_stream(
        futures::stream::pending::<Result<K, watcher::Error>>(),
        store,
    )
    .reconcile_on(triggers)
    .with_config(controller::Config::default().concurrency(CONCURRENCY))
    .graceful_shutdown_on(context.stopping())
    .run(reconcile, error_policy, context.clone())
    .for_each(log_outcome::<K, _>);
    Controller {
        kind: K::kind(&()),
        running: running.boxed(),
    }
}

/// Runs the watches, and the controllers `wire` makes over their caches and triggers, until
/// `stopping` turns true; then lets their reconciles in flight finish and returns `Ok`. A
/// controller or watch that stops unasked is an error.
pub(crate) async fn run(
    client: Client,
    settings: Settings,
    metrics: Metrics,
    stopping: tokio::sync::watch::Receiver<bool>,
    wire: impl FnOnce(&Arc<Context>, Triggers) -> Vec<Controller>,
) -> Result<(), Error> {
    let reporter = Reporter {
        controller: FIELD_MANAGER.into(),
        instance: Some(settings.identity),
    };
    let namespace = settings.namespace.as_deref();
    let (pools, jobs, pods) = (
        watched(&client, namespace),
        watched(&client, namespace),
        watched(&client, namespace),
    );
    let (caches, triggers, watches) = informers::start(pools, jobs, pods, metrics.clone());
    let context = Arc::new(Context {
        recorder: Recorder::new(client.clone(), reporter),
        client,
        metrics,
        failures: FailureCounts::default(),
        caches,
        rbac_applied: Mutex::default(),
        retry_delay: settings.retry_delay,
        stopping,
    });
    let (mut kinds, running): (Vec<_>, Vec<_>) = wire(&context, triggers)
        .into_iter()
        .map(|controller| (controller.kind, controller.running))
        .unzip();
    let controllers = async {
        tokio::select! {
            () = context.caches.ready() => {}
            () = context.stopping() => return Ok(()),
        }
        if running.is_empty() {
            context.stopping().await;
            return Ok(());
        }
        tracing::info!("caches filled; reconciling");
        let ((), first, others) = futures::future::select_all(running).await;
        if !*context.stopping.borrow() {
            return Err(Error::ControllerStopped(kinds.swap_remove(first)));
        }
        // Asked to stop: the others are finishing their reconciles in flight.
        futures::future::join_all(others).await;
        Ok(())
    };
    tokio::select! {
        () = watches => Err(Error::ControllerStopped("watches".into())),
        result = controllers => result,
    }
}

/// Logs what a controller stream yields besides successful reconciles: a failing watch (a
/// missing permission, say) would otherwise go unnoticed. Failed reconciles were already
/// logged by [`error_policy`].
fn log_outcome<K, T>(
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
fn error_policy<K>(object: Arc<K>, error: &Error, context: Arc<Context>) -> Action
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
