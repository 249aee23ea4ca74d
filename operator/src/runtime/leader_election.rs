//! Leader election on the Lease `proofpipe-operator`: only the holder runs the controllers.
//! The decisions are in [`crate::runtime::lease`] (client-go's rules, ADR 0012); this module reads and
//! writes the Lease, always with the `resourceVersion` it read (so two candidates can never
//! both win a round), bounds every API call by a timeout, and keeps the [`Fence`] that stops
//! the controllers' writes once leadership may have passed to another replica.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::jiff::Timestamp;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use tokio::time::Instant;

use crate::error::{Error, KubeResultExt};
use crate::runtime::lease::{
    LeaseDecision, Observation, Timing, decide, held_by, holder, leadership_deadline, may_lead,
    observe, released,
};

/// Name of the Lease.
pub const LEASE_NAME: &str = "proofpipe-operator";

/// Until when this replica may write as the leader: the deadline of its last successful
/// renewal ([`crate::runtime::lease::may_lead`]), or closed. The controllers' client checks it before
/// every write ([`fenced_client`]), so a leader that resumes after a pause past its renew
/// deadline writes nothing, even in the moment before its renewal loop notices.
#[derive(Debug, Default)]
pub struct Fence {
    until: Mutex<Option<Instant>>,
}

impl Fence {
    /// Whether a write may go out now.
    pub fn is_open(&self) -> bool {
        self.lock().is_some_and(|until| Instant::now() < until)
    }

    fn open_until(&self, until: Instant) {
        *self.lock() = Some(until);
    }

    fn close(&self) {
        *self.lock() = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        // A panic while holding this lock cannot leave a half-written Option.
        self.until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `client` with every request that is not a read (GET, HEAD, OPTIONS: lists and watches
/// included) refused while `fence` is closed, with [`Error::NotLeader`].
pub fn fenced_client(client: Client, fence: Arc<Fence>) -> Client {
    let default_namespace = client.default_namespace().to_owned();
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let client = client.clone();
        let fence = fence.clone();
        async move {
            let read = matches!(
                *request.method(),
                http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
            );
            // Checked when the request is about to be sent, not when it was built.
            if !read && !fence.is_open() {
                return Err(tower::BoxError::from(Error::NotLeader {
                    method: request.method().to_string(),
                    path: request.uri().path().to_owned(),
                }));
            }
            client.send(request).await.map_err(tower::BoxError::from)
        }
    });
    Client::new(service, default_namespace)
}

/// One candidate for the Lease.
pub struct LeaderElector {
    api: Api<Lease>,
    namespace: String,
    identity: String,
    timing: Timing,
    /// The Lease as last read, and since when unchanged (client-go's observedRecord/Time).
    observed: Option<Observation>,
    /// When the last successful claim or renewal started, while leading.
    renewed: Option<Instant>,
    fence: Arc<Fence>,
}

/// The outcome of one round.
enum Round {
    Leading,
    /// The write went through, but after the renew deadline: it decides nothing.
    Late,
    Following {
        holder: String,
    },
}

impl LeaderElector {
    pub fn new(client: Client, namespace: &str, identity: &str, timing: Timing) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            identity: identity.to_owned(),
            timing,
            observed: None,
            renewed: None,
            fence: Arc::default(),
        }
    }

    /// The fence for the controllers' client; open only while this replica leads.
    pub fn fence(&self) -> Arc<Fence> {
        self.fence.clone()
    }

    /// Waits until this candidate holds the Lease, trying every retry period.
    pub async fn acquire(&mut self) -> Result<(), Error> {
        let mut last_holder = None;
        loop {
            let started = Instant::now();
            match self
                .bounded_round(started, self.timing.renew_deadline)
                .await
            {
                Ok(Round::Leading) => {
                    tracing::info!(identity = %self.identity, "acquired the leader Lease");
                    return Ok(());
                }
                Ok(Round::Late) => {
                    tracing::warn!("claimed the leader Lease too late to count; trying again");
                }
                Ok(Round::Following { holder }) => {
                    if last_holder.as_ref() != Some(&holder) {
                        tracing::info!(%holder, "another replica leads; standing by");
                        last_holder = Some(holder);
                    }
                }
                Err(error) => {
                    tracing::warn!(error = %error.chain(), "trying to acquire the leader Lease failed");
                }
            }
            tokio::time::sleep_until(started + self.timing.retry_period).await;
        }
    }

    /// Renews the Lease every retry period for as long as it may; returns why leadership
    /// ended: another holder, or no successful renewal within the renew deadline (measured
    /// on this process's monotonic clock from the start of the last successful one). The
    /// fence is closed before it returns. Dropping the future between rounds is harmless;
    /// calling it again goes on renewing.
    pub async fn keep_renewing(&mut self) -> Error {
        let mut last_try = self.renewed;
        loop {
            let Some(renewed) = self.renewed else {
                return self.lost("not leading".into());
            };
            let deadline = leadership_deadline(renewed.into_std(), &self.timing);
            // The next try a retry period after the last one started, but never after the
            // deadline: a leader that missed it must find out at once.
            let next = last_try.unwrap_or(renewed) + self.timing.retry_period;
            tokio::time::sleep_until(next.min(Instant::from_std(deadline))).await;
            let started = Instant::now();
            last_try = Some(started);
            if !may_lead(renewed.into_std(), started.into_std(), &self.timing) {
                return self.lost(format!(
                    "not renewed within the renew deadline of {:?}",
                    self.timing.renew_deadline
                ));
            }
            // The round may last only until the deadline: a reply after it decides nothing.
            let budget = Instant::from_std(deadline).saturating_duration_since(started);
            match self.bounded_round(started, budget).await {
                // Late: the check at the top of the loop ends it.
                Ok(Round::Leading | Round::Late) => {}
                Ok(Round::Following { holder }) => {
                    return self.lost(format!("now held by {holder}"));
                }
                Err(error) => {
                    tracing::warn!(error = %error.chain(), "renewing the leader Lease failed");
                }
            }
        }
    }

    /// Gives the Lease up, as client-go's `ReleaseOnCancel` does, so that a standby takes
    /// it at its next try: only if this replica still leads by its own clock and the Lease
    /// still names it, and conditional on the `resourceVersion` read.
    pub async fn release(&mut self) -> Result<(), Error> {
        self.fence.close();
        let Some(renewed) = self.renewed.take() else {
            return Ok(());
        };
        if !may_lead(renewed.into_std(), Instant::now().into_std(), &self.timing) {
            tracing::info!(
                "not releasing the leader Lease: past the renew deadline, it may be another's"
            );
            return Ok(());
        }
        let timeout = self.timing.renew_deadline;
        let where_ = format!("Lease {}/{LEASE_NAME}", self.namespace);
        let lease = bounded(timeout, self.api.get_opt(LEASE_NAME))
            .await
            .and_then(|read| read.context(|| format!("reading {where_} to release it")))?;
        let Some(mut lease) = lease else {
            return Ok(());
        };
        let spec = lease.spec.take().unwrap_or_default();
        if holder(&spec) != Some(self.identity.as_str()) {
            return Ok(());
        }
        if !may_lead(renewed.into_std(), Instant::now().into_std(), &self.timing) {
            return Ok(());
        }
        lease.spec = Some(released(&spec, Timestamp::now()));
        bounded(
            timeout,
            self.api.replace(LEASE_NAME, &PostParams::default(), &lease),
        )
        .await
        .and_then(|written| written.context(|| format!("releasing {where_}")))?;
        tracing::info!("released the leader Lease");
        Ok(())
    }

    fn lost(&self, reason: String) -> Error {
        self.fence.close();
        Error::LeaseLost {
            namespace: self.namespace.clone(),
            name: LEASE_NAME.into(),
            reason,
        }
    }

    /// One round within `budget`; on success records `started` as the last renewal and
    /// opens the fence until its deadline.
    async fn bounded_round(&mut self, started: Instant, budget: Duration) -> Result<Round, Error> {
        let round = bounded(budget, self.round(started + budget)).await??;
        if let Round::Leading = round {
            let deadline = leadership_deadline(started.into_std(), &self.timing);
            if Instant::now().into_std() >= deadline {
                // Written, but too late to count: the deadline passed while it was in flight.
                return Ok(Round::Late);
            }
            self.renewed = Some(started);
            self.fence.open_until(Instant::from_std(deadline));
        } else if let Round::Following { .. } = round {
            self.renewed = None;
            self.fence.close();
        }
        Ok(round)
    }

    /// Reads the Lease and claims or renews it if [`decide`] says so, writing only before
    /// `write_by`. A write that loses a race (409 on create or replace) is a round lost, not
    /// an error.
    async fn round(&mut self, write_by: Instant) -> Result<Round, Error> {
        // The timeout around a round fires only when the round next waits, and a reply that
        // was ready when a paused process resumes is taken first: so the deadline is
        // checked again right before each write.
        let too_late = || Instant::now() >= write_by;
        let where_ = || format!("Lease {}/{LEASE_NAME}", self.namespace);
        let duration = self.timing.lease_duration_seconds();
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
                    Timestamp::now(),
                )),
            };
            if too_late() {
                return Ok(Round::Late);
            }
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
        // Seen now, after the reply: the record was written no later than this, so its
        // holder's renew deadline ends before our expiry (measured from here) does.
        let seen = Instant::now().into_std();
        let observation = observe(
            self.observed.as_ref(),
            &spec,
            lease.metadata.resource_version.as_deref(),
            seen,
        );
        let decision = decide(&observation, &self.identity, seen);
        self.observed = Some(observation);
        if let LeaseDecision::Wait { holder } = decision {
            return Ok(Round::Following { holder });
        }
        if too_late() {
            return Ok(Round::Late);
        }
        // `replace` sends the resourceVersion just read: a concurrent claim makes this fail.
        lease.spec = Some(held_by(&spec, &self.identity, duration, Timestamp::now()));
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

/// `future` cut off after `timeout`: every API call of a round is bounded, so a hung
/// connection cannot hold a decision past the renew deadline.
async fn bounded<T>(timeout: Duration, future: impl Future<Output = T>) -> Result<T, Error> {
    tokio::time::timeout(timeout, future)
        .await
        .map_err(|_| Error::LeaseTimeout(timeout))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    /// A client whose "API server" counts the requests that reach it and answers 200 `{}`
    /// (enough for a ConfigMap).
    fn counting_client(seen: Arc<AtomicUsize>) -> Client {
        let service = tower::service_fn(move |_request: http::Request<kube::client::Body>| {
            seen.fetch_add(1, Ordering::SeqCst);
            async move {
                let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#;
                Ok::<_, std::convert::Infallible>(http::Response::new(kube::client::Body::from(
                    body.to_vec(),
                )))
            }
        });
        Client::new(service, "default")
    }

    #[tokio::test]
    async fn a_closed_fence_stops_writes_and_lets_reads_through() {
        let seen = Arc::new(AtomicUsize::new(0));
        let fence = Arc::new(Fence::default());
        let api: Api<ConfigMap> =
            Api::default_namespaced(fenced_client(counting_client(seen.clone()), fence.clone()));
        let map = ConfigMap {
            metadata: ObjectMeta {
                name: Some("x".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };

        api.get("x").await.expect("reads pass a closed fence");
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        let refused = api.create(&PostParams::default(), &map).await.unwrap_err();
        assert!(refused.to_string().contains("not the leader"), "{refused}");
        assert_eq!(seen.load(Ordering::SeqCst), 1, "the write never left");

        fence.open_until(Instant::now() + Duration::from_secs(60));
        api.create(&PostParams::default(), &map)
            .await
            .expect("open: writes pass");
        assert_eq!(seen.load(Ordering::SeqCst), 2);

        // Past its deadline the fence is shut without anyone closing it.
        fence.open_until(Instant::now());
        assert!(!fence.is_open());
        assert!(api.create(&PostParams::default(), &map).await.is_err());
        assert_eq!(seen.load(Ordering::SeqCst), 2);
    }
}
