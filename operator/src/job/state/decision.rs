//! What the lifecycle reads ([`JobObservation`]) and what it decides ([`JobDecision`], with
//! the [`JobEvent`] worth telling): the types every part of [`super`] shares, below them all.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use proofpipe_crds::{ProofJobSpec, ProofJobStatus};

use crate::shared::prover_pods::PodHealth;

/// What the operator knows about one ProofJob when it decides.
#[derive(Clone, Debug)]
pub struct JobObservation<'a> {
    pub spec: &'a ProofJobSpec,
    pub generation: Option<i64>,
    pub status: &'a ProofJobStatus,
    /// Whether the ProverPool named by `spec.pool` exists.
    pub pool_exists: bool,
    /// Why the job cannot fit that pool's provers (the model's message, with what would
    /// fit), when it cannot ([`proofpipe_crds::fit`]): it is held, not queued.
    pub does_not_fit: Option<String>,
    /// The pod named by the assigned-pod label, with its health; `None` health when that
    /// pod does not exist.
    pub assignment: Option<(&'a str, Option<PodHealth>)>,
    /// How the assigned pod's prover ended, when it terminated (e.g. `OOMKilled (exit 137)`).
    pub termination: Option<&'a str>,
    /// The assigned prover's heartbeat from its pool entry, when it reports one.
    pub progress: Option<ProverProgress<'a>>,
    /// The delay before the first retry ([`super::RETRY_DELAY`] unless configured).
    pub retry_delay: Duration,
    pub now: Timestamp,
}

/// What the assigned prover last said about its progress (its entry of the pool's status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProverProgress<'a> {
    pub stage: &'a str,
    pub last_progress: Timestamp,
    /// The pool's `spec.progressDeadlineSeconds`.
    pub deadline: Duration,
}

/// Why a job failed, as the `Failed` condition's reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureReason {
    /// Its prover pod was lost on an attempt past `spec.backoffLimit` retries.
    BackoffLimitExceeded,
    /// `spec.activeDeadlineSeconds` passed since the first assignment.
    DeadlineExceeded,
    /// Filecoin's verifier rejected the assembled proof of a Filecoin job.
    ProofRejected,
    /// The prover found the input can never prove (it does not parse, its digest differs,
    /// Filecoin's vanilla verifier rejects it, it is of another proof type).
    InvalidInput,
    /// The pool's provers have too little memory for the job.
    DoesNotFit,
}

impl FailureReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BackoffLimitExceeded => "BackoffLimitExceeded",
            Self::DeadlineExceeded => "DeadlineExceeded",
            Self::ProofRejected => "ProofRejected",
            Self::InvalidInput => "InvalidInput",
            Self::DoesNotFit => "DoesNotFit",
        }
    }
}

/// Something worth an Event on the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobEvent {
    /// Put on a prover pod (the pool wrote the label; the job records it).
    Assigned {
        pod: String,
        attempt: i32,
    },
    /// Taken off a pod that was lost, back into the queue.
    Requeued {
        pod: String,
        note: String,
    },
    /// Taken off its pod because `spec.suspend` became true.
    Suspended {
        pod: String,
    },
    /// Its prover has made no progress past the pool's deadline.
    Stalled {
        pod: String,
        note: String,
    },
    /// Held out of its pool's queue: no prover of the pool can fit it.
    Held {
        note: String,
    },
    Failed {
        reason: FailureReason,
        note: String,
    },
    Succeeded {
        note: String,
    },
}

/// What the operator should make true for one ProofJob.
#[derive(Clone, Debug, PartialEq)]
pub struct JobDecision {
    /// The operator-owned status fields (never `proofs` or `stageSeconds`: the daemons own
    /// them).
    pub status: ProofJobStatus,
    /// Remove the assigned-pod label, which makes the daemon cancel the job.
    pub unassign: bool,
    /// Delete the job: its `ttlSecondsAfterFinished` ran out.
    pub delete: bool,
    pub event: Option<JobEvent>,
    /// When to look again even if nothing changes: a deadline or a TTL falls due.
    pub requeue_after: Option<Duration>,
}
