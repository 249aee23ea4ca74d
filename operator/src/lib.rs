//! The proofpipe operator: reconciles ProverPools onto prover pods and ProofJobs onto those
//! provers, as fixed by ADR 0003 (docs/decisions/0003-operator-prover-contract.md).
//!
//! The decisions are pure functions without a Kubernetes client, each in the module named
//! for its concept: [`queue`], [`assignment`], [`job_state`], [`scaling`], [`pod_spec`],
//! [`pool_status`], [`prover_rbac`], [`lease`]. The `controller` module and
//! [`leader_election`] are the thin I/O edges around them; [`run`] ties everything together.

pub mod api_metrics;
pub mod assignment;
pub mod autoscale;
pub mod conditions;
mod controller;
pub mod crd_check;
pub mod error;
mod http;
pub mod job_state;
pub mod leader_election;
pub mod lease;
pub mod metrics;
pub mod names;
pub mod pod_spec;
pub mod pool_decision;
pub mod pool_status;
pub mod prover_pods;
pub mod prover_rbac;
pub mod queue;
mod retry;
pub mod scaling;
pub mod simulate;
pub mod triggers;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kube::Client;

pub use error::Error;

use crate::http::Health;
use crate::leader_election::LeaderElector;
use crate::metrics::Metrics;

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
            retry_delay: job_state::RETRY_DELAY,
        }
    }
}

/// Runs the operator until it fails: checks the CRDs, serves the HTTP endpoints, waits for
/// the leader Lease, then runs both controllers while renewing it. Losing the Lease ends it
/// with [`Error::LeaseLost`]. Dropping the future stops everything.
pub async fn run(client: Client, config: Config) -> Result<(), Error> {
    let metrics = Metrics::new()?;
    let client = api_metrics::counted(client, metrics.api_requests.clone());
    let ready = Arc::new(AtomicBool::new(false));
    let server = match config.listen {
        Some(addr) => Some(
            http::serve(
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
    let operating = async {
        crd_check::ensure_installed(&client).await?;
        ready.store(true, Ordering::Relaxed);
        let elector = LeaderElector::new(client.clone(), &config.lease_namespace, &config.identity);
        elector.acquire().await?;
        let error = tokio::select! {
            error = elector.keep_renewing() => error,
            error = controller::run(client, &config, metrics) => error,
        };
        Err(error)
    };
    tokio::select! {
        result = serving => result,
        result = operating => result,
    }
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
