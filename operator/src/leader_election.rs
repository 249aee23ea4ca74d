//! Leader election on the Lease `proofpipe-operator`: only the holder runs the controllers.
//! The decisions are in [`crate::lease`]; this module reads and writes the Lease, always
//! with the `resourceVersion` it read, so two candidates can never both win a round.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::time::Instant;

use crate::error::{Error, KubeResultExt};
use crate::lease::{LeaseDecision, decide, held_by};

/// Name of the Lease.
pub const LEASE_NAME: &str = "proofpipe-operator";
/// How long a holder's claim lasts without renewal.
const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How often the holder renews, and how often a candidate retries.
const RENEW_EVERY: Duration = Duration::from_secs(5);

/// One candidate for the Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    namespace: String,
    identity: String,
}

/// The outcome of one round.
enum Round {
    Leading,
    Following { holder: String },
}

impl LeaderElector {
    pub fn new(client: Client, namespace: &str, identity: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            identity: identity.to_owned(),
        }
    }

    /// Waits until this candidate holds the Lease.
    pub async fn acquire(&self) -> Result<(), Error> {
        let mut last_holder = None;
        loop {
            match self.round().await? {
                Round::Leading => {
                    tracing::info!(identity = %self.identity, "acquired the leader Lease");
                    return Ok(());
                }
                Round::Following { holder } => {
                    if last_holder.as_ref() != Some(&holder) {
                        tracing::info!(%holder, "another replica leads; standing by");
                        last_holder = Some(holder);
                    }
                }
            }
            tokio::time::sleep(RENEW_EVERY).await;
        }
    }

    /// Renews the Lease every few seconds, forever; returns the reason once leadership is
    /// lost (another holder, or no successful renewal for a whole lease duration).
    pub async fn keep_renewing(&self) -> Error {
        let mut renewed = Instant::now();
        loop {
            tokio::time::sleep(RENEW_EVERY).await;
            match self.round().await {
                Ok(Round::Leading) => renewed = Instant::now(),
                Ok(Round::Following { holder }) => {
                    return self.lost(format!("now held by {holder}"));
                }
                Err(error) => {
                    tracing::warn!(error = %error.chain(), "renewing the leader Lease failed")
                }
            }
            if renewed.elapsed() >= LEASE_DURATION {
                return self.lost(format!("not renewed for {} s", LEASE_DURATION.as_secs()));
            }
        }
    }

    fn lost(&self, reason: String) -> Error {
        Error::LeaseLost {
            namespace: self.namespace.clone(),
            name: LEASE_NAME.into(),
            reason,
        }
    }

    /// Reads the Lease and claims it if [`decide`] says so. A write that loses a race (409)
    /// is a round lost, not an error.
    async fn round(&self) -> Result<Round, Error> {
        let now = Timestamp::now();
        let duration = i32::try_from(LEASE_DURATION.as_secs()).unwrap_or(i32::MAX);
        let where_ = || format!("Lease {}/{LEASE_NAME}", self.namespace);
        let Some(mut lease) = self
            .api
            .get_opt(LEASE_NAME)
            .await
            .context(|| format!("reading {}", where_()))?
        else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(LEASE_NAME.into()),
                    ..ObjectMeta::default()
                },
                spec: Some(held_by(
                    &LeaseSpec::default(),
                    &self.identity,
                    duration,
                    now,
                )),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Round::Leading),
                Err(kube::Error::Api(status)) if status.is_already_exists() => {
                    Ok(Round::Following {
                        holder: "a replica that created it first".into(),
                    })
                }
                Err(source) => Err(source).context(|| format!("creating {}", where_())),
            };
        };
        let spec = lease.spec.take().unwrap_or_default();
        if let LeaseDecision::Wait { holder } = decide(&spec, &self.identity, now) {
            return Ok(Round::Following { holder });
        }
        // `replace` sends the resourceVersion just read: a concurrent claim makes this fail.
        lease.spec = Some(held_by(&spec, &self.identity, duration, now));
        match self
            .api
            .replace(LEASE_NAME, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(Round::Leading),
            Err(kube::Error::Api(status)) if status.is_conflict() => Ok(Round::Following {
                holder: "a replica that wrote it first".into(),
            }),
            Err(source) => Err(source).context(|| format!("claiming {}", where_())),
        }
    }
}
