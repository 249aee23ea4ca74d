//! The proofpipe operator: reconciles ProverPools onto prover pods and ProofJobs onto those
//! provers, as fixed by ADR 0003 (docs/decisions/0003-operator-prover-contract.md).
//!
//! One folder per resource, each holding its pure decisions (no Kubernetes client) and its
//! reconciler: [`job`] (the lifecycle state machine) and [`pool`] (scaling, autoscaling,
//! assignment, pod specs, RBAC, status). What both read sits below them in [`shared`] (a
//! prover pod as the decisions see it, a pool's queue), so that neither imports the other.
//! [`runtime`] is the Kubernetes plumbing below both (leader election, informers, writes,
//! events, metrics, running a controller around a reconcile function): it knows neither.
//! [`run`] ties everything together: which controller runs which reconcile is decided here
//! (`wire`). No file imports, directly or not, a file that imports it:
//! `scripts/import-cycles.py operator` checks it (ADR 0041).

pub mod conditions;
pub mod error;
pub mod job;
pub mod names;
pub mod pool;
pub mod runtime;
pub mod shared;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::Client;

pub use error::Error;

use crate::runtime::controller::{Context, Controller, Settings, controller};
use crate::runtime::http::Health;
use crate::runtime::informers::Triggers;
use crate::runtime::leader_election::{LeaderElector, fenced_client};
use crate::runtime::lease::Timing;
use crate::runtime::metrics::Metrics;

/// How long a stopping leader waits for its reconciles in flight before releasing the Lease
/// (the chart's terminationGracePeriodSeconds, 30 s, leaves room for it).
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// How `proofpipe-operator run` runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where to serve `/metrics`, `/healthz` and `/readyz`; `None` serves nothing.
    pub listen: Option<SocketAddr>,
    /// Watch this namespace only; `None` watches all.
    pub namespace: Option<String>,
    /// Namespace of the leader Lease: the operator's own.
    pub lease_namespace: String,
    /// This replica's name in the Lease and in Events.
    pub identity: String,
    /// The delay before retrying a failed attempt, doubled with each further failure.
    pub retry_delay: std::time::Duration,
    /// Lease duration, renew deadline and retry period (client-go's defaults: 15, 10, 2 s).
    pub leader_election: Timing,
    /// On a stop request, how long the reconciles in flight may take before the Lease is
    /// released anyway.
    pub drain_timeout: Duration,
}

impl Config {
    /// The Lease namespace from `POD_NAMESPACE` (default `default`) and the identity from
    /// `POD_NAME`, else `<hostname>-<pid>`.
    pub fn from_env(listen: Option<SocketAddr>, namespace: Option<String>) -> Self {
        let lease_namespace = std::env::var("POD_NAMESPACE")
            .ok()
            .filter(|namespace| !namespace.is_empty())
            .unwrap_or_else(|| "default".into());
        let identity = std::env::var("POD_NAME")
            .ok()
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| {
                let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|name| name.trim().to_owned())
                    .unwrap_or_else(|_| "unknown-host".into());
                format!("{host}-{}", std::process::id())
            });
        Self {
            listen,
            namespace,
            lease_namespace,
            identity,
            retry_delay: job::state::RETRY_DELAY,
            leader_election: Timing::default(),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }
}

/// Runs the operator until it fails: checks the CRDs, serves the HTTP endpoints, waits for
/// the leader Lease, then runs both controllers while renewing it. Losing the Lease ends it
/// with [`Error::LeaseLost`]. Dropping the future stops everything at once (no Lease
/// release); [`run_until`] stops gracefully.
pub async fn run(client: Client, config: Config) -> Result<(), Error> {
    run_until(client, config, std::future::pending()).await
}

/// [`run`], and when `stop` resolves: a standby returns at once; the leader stops taking new
/// work, lets the reconciles in flight finish (at most `drain_timeout`, renewing the Lease
/// meanwhile), releases the Lease so that a standby takes over at its next try, and returns
/// `Ok`.
pub async fn run_until(
    client: Client,
    config: Config,
    stop: impl Future<Output = ()>,
) -> Result<(), Error> {
    let metrics = Metrics::new()?;
    let client = runtime::api_metrics::counted(client, metrics.api_requests.clone());
    let ready = Arc::new(AtomicBool::new(false));
    let server = match config.listen {
        Some(addr) => Some(
            runtime::http::serve(
                addr,
                Health {
                    metrics: metrics.clone(),
                    ready: ready.clone(),
                },
            )
            .await?,
        ),
        None => None,
    };
    let serving = async {
        match server {
            Some(server) => server.await,
            None => std::future::pending().await,
        }
    };
    let mut stop = std::pin::pin!(stop);
    let operating = async {
        let mut elector = LeaderElector::new(
            client.clone(),
            &config.lease_namespace,
            &config.identity,
            config.leader_election,
        );
        let standing_by = async {
            runtime::crd_check::ensure_installed(&client).await?;
            ready.store(true, Ordering::Relaxed);
            elector.acquire().await
        };
        tokio::select! {
            result = standing_by => result?,
            () = &mut stop => {
                tracing::info!("stopping; not the leader, nothing to hand over");
                // A no-op unless a claim went through just as the stop came.
                return elector.release().await;
            }
        }
        let (stopping, stopping_receiver) = tokio::sync::watch::channel(false);
        // The controllers write through the fence: nothing once the renew deadline passed.
        let settings = Settings {
            namespace: config.namespace.clone(),
            identity: config.identity.clone(),
            retry_delay: config.retry_delay,
        };
        let mut controllers = Box::pin(runtime::controller::run(
            fenced_client(client.clone(), elector.fence()),
            settings,
            metrics,
            stopping_receiver,
            wire,
        ));
        tokio::select! {
            // Lost: the controllers are dropped here, cancelling every reconcile.
            error = elector.keep_renewing() => return Err(error),
            result = &mut controllers => return result,
            () = &mut stop => {}
        }
        tracing::info!(
            drain_timeout = ?config.drain_timeout,
            "stopping: no new reconciles; waiting for those in flight, then releasing the Lease"
        );
        stopping.send_replace(true);
        tokio::select! {
            error = elector.keep_renewing() => return Err(error),
            drained = tokio::time::timeout(config.drain_timeout, &mut controllers) => {
                match drained {
                    Ok(result) => result?,
                    Err(_) => tracing::warn!(
                        "reconciles still in flight after {:?}; cancelling them",
                        config.drain_timeout
                    ),
                }
            }
        }
        drop(controllers);
        elector.release().await
    };
    tokio::select! {
        result = serving => result,
        result = operating => result,
    }
}

/// Which controller runs which reconcile: the one place that names both [`runtime`] and the
/// resources' reconcilers. [`runtime::controller::run`] calls it once the watches exist.
fn wire(context: &Arc<Context>, triggers: Triggers) -> Vec<Controller> {
    vec![
        controller(
            context,
            context.caches.pools.clone(),
            triggers.pools,
            pool::reconcile::reconcile,
        ),
        controller(
            context,
            context.caches.jobs.clone(),
            triggers.jobs,
            job::reconcile::reconcile,
        ),
    ]
}

/// Both CustomResourceDefinitions as one multi-document YAML stream, ProofJob first: the
/// output of `proofpipe-operator crds`, and the content of `crds/proofpipe-crds.yaml`.
pub fn crds_yaml() -> Result<String, serde_yaml_ng::Error> {
    let documents = proofpipe_crds::crds()
        .iter()
        .map(serde_yaml_ng::to_string)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(documents
        .iter()
        .map(|document| format!("---\n{document}"))
        .collect())
}
