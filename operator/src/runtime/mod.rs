//! The Kubernetes plumbing of our own (ADR 0024 says why each piece stays ours): leader
//! election over a Lease, the informers and what triggers which reconcile, the event
//! recorder, the writes with their field manager, retries, the API and reconcile metrics,
//! the CRD pre-check and the HTTP endpoints. No domain decision lives here.

pub mod api_metrics;
pub(crate) mod controller;
pub mod crd_check;
pub mod event_recorder;
pub(crate) mod events;
pub(crate) mod http;
pub(crate) mod informers;
pub mod leader_election;
pub mod lease;
pub mod metrics;
pub(crate) mod retry;
pub mod triggers;
pub(crate) mod writes;
