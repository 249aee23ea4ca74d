//! A failed attempt: the prover's own report, or its pod lost. Permanent failures end the
//! job; the others go back to the queue after a growing delay, under `spec.backoffLimit`. A
//! prover that lost its GPU hands the job back: a disruption, not a failure (ADR 0032).

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::SignedDuration;
use proofpipe_crds::{AttemptFailure, GPU_LOST_REASON, ProofJobStatus, ProverFailure};

use super::decision::{FailureReason, JobDecision, JobEvent, JobObservation};
use super::phase::{fail, waiting};
use crate::shared::prover_pods::PodHealth;

/// The prover reported that it could not prove the job on this attempt. A permanent
/// failure (an input that can never prove, a job too large for the pool) fails the job at
/// once; any other counts as a failed attempt, retried under `spec.backoffLimit` while the
/// prover, still up, takes other work.
pub(super) fn reported(
    observation: &JobObservation,
    mut next: ProofJobStatus,
    pod: &str,
    health: Option<PodHealth>,
    report: &ProverFailure,
) -> JobDecision {
    let attempts = next.attempts.unwrap_or(0);
    // A stalled prover exits after its report, as does one that lost its GPU with
    // PROOFPIPE_REQUIRE_GPU: the pod's end is part of the same event.
    let how = match (health, observation.termination) {
        (Some(health), Some(how)) if !health.is_alive() => {
            format!(". The prover ended with {how}")
        }
        _ => String::new(),
    };
    if report.is_gpu_lost() {
        return handed_back(observation, next, pod, report, how);
    }
    if !report.permanent {
        return attempt_failed(
            observation,
            next,
            pod,
            report.reason.clone(),
            format!("prover {pod} reported: {}", report.message),
            how,
        );
    }
    next.failed = Some(next.failed.unwrap_or(0) + 1);
    next.last_failure = Some(AttemptFailure {
        attempt: attempts,
        pod: pod.to_owned(),
        reason: report.reason.clone(),
        message: report.message.clone(),
        time: Time(observation.now),
    });
    let reason = match report.reason.as_str() {
        "DoesNotFit" => FailureReason::DoesNotFit,
        _ => FailureReason::InvalidInput,
    };
    let note = format!(
        "{}; prover {pod} found it can never be proved, so it is not retried",
        report.message
    );
    fail(observation, next, reason, note)
}

/// The prover lost its GPU and handed the job back (ADR 0032): the GPU failed, not the job,
/// so the job goes back to the queue at once, its finished partitions kept, without counting
/// a failure against `spec.backoffLimit` (as batch/v1 Job's pod failure policy ignores a
/// disruption). `lastFailure` says what happened. Counted after all when the attempt before
/// also ended with a lost GPU on another prover: a job whose every attempt loses its GPU
/// (a kernel fault its data provokes, say) must not take a pool's provers out one by one
/// forever.
fn handed_back(
    observation: &JobObservation,
    mut next: ProofJobStatus,
    pod: &str,
    report: &ProverFailure,
    how: String,
) -> JobDecision {
    let attempts = next.attempts.unwrap_or(0);
    let what = format!(
        "prover {pod} lost its GPU during attempt {attempts}: {}",
        report.message
    );
    let again = observation.status.last_failure.as_ref().filter(|last| {
        last.reason == GPU_LOST_REASON && last.attempt == attempts - 1 && last.pod != pod
    });
    if let Some(last) = again {
        let what = format!(
            "{what}; attempt {} lost its GPU too (on {}), so this one counts",
            last.attempt, last.pod
        );
        return attempt_failed(
            observation,
            next,
            pod,
            GPU_LOST_REASON.to_owned(),
            what,
            how,
        );
    }
    next.last_failure = Some(AttemptFailure {
        attempt: attempts,
        pod: pod.to_owned(),
        reason: GPU_LOST_REASON.to_owned(),
        message: format!("{what}{how}"),
        time: Time(observation.now),
    });
    // No retry delay: nothing is wrong with the job.
    next.next_attempt_after = None;
    let failed = next.failed.unwrap_or(0);
    let mut decision = waiting(observation, next);
    decision.unassign = true;
    decision.event = Some(JobEvent::Requeued {
        pod: pod.to_owned(),
        note: format!(
            "{what}; requeued at once and not counted against backoffLimit (still {failed} \
             failure(s) of at most {}); finished partitions are kept{how}",
            observation.spec.backoff_limit + 1
        ),
    });
    decision
}

/// The first delay before retrying a failed attempt; it doubles with each further failure.
pub const RETRY_DELAY: Duration = Duration::from_secs(10);
/// The longest delay before a retry (batch/v1 Job's cap).
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(360);

/// The delay before the attempt that follows failure number `failures` (1-based): `first`,
/// doubling with each failure (10 s, 20 s, 40 s, ... by default), at most 6 minutes.
pub fn retry_delay(failures: i32, first: Duration) -> Duration {
    let doublings = u32::try_from(failures.saturating_sub(1))
        .unwrap_or(0)
        .min(16);
    first.saturating_mul(1 << doublings).min(MAX_RETRY_DELAY)
}

/// The assigned pod is gone, failed or being deleted: the attempt failed. Requeue after the
/// retry delay, or fail once `spec.backoffLimit` failures have been retried.
pub(super) fn lost(
    observation: &JobObservation,
    next: ProofJobStatus,
    pod: &str,
    health: Option<PodHealth>,
) -> JobDecision {
    let (reason, what) = match health {
        None => ("PodDeleted".to_owned(), "was deleted"),
        Some(PodHealth::Terminated) => (
            observation
                .termination
                .and_then(|how| how.split([' ', ':']).next())
                .filter(|reason| !reason.is_empty())
                .unwrap_or("Terminated")
                .to_owned(),
            "terminated",
        ),
        Some(_) => ("PodTerminating".to_owned(), "is being deleted"),
    };
    let how = match (health, observation.termination) {
        (Some(_), Some(how)) => format!(". The prover ended with {how}"),
        _ => String::new(),
    };
    let attempts = next.attempts.unwrap_or(0);
    attempt_failed(
        observation,
        next,
        pod,
        reason,
        format!("prover pod {pod} {what} during attempt {attempts}"),
        how,
    )
}

/// The current attempt failed for `reason` (`what` happened, `how` the prover ended): the
/// job goes back to the queue after the retry delay, or fails once `spec.backoffLimit`
/// failures have been retried.
fn attempt_failed(
    observation: &JobObservation,
    mut next: ProofJobStatus,
    pod: &str,
    reason: String,
    what: String,
    how: String,
) -> JobDecision {
    let attempts = next.attempts.unwrap_or(0);
    let failed = next.failed.unwrap_or(0) + 1;
    next.failed = Some(failed);
    next.last_failure = Some(AttemptFailure {
        attempt: attempts,
        pod: pod.to_owned(),
        reason,
        message: format!("{what}{how}"),
        time: Time(observation.now),
    });
    let limit = observation.spec.backoff_limit;
    if failed > limit {
        let note = format!(
            "{what}; that is failure {failed}, and backoffLimit ({limit}) allows no more \
             retries{how}"
        );
        return fail(observation, next, FailureReason::BackoffLimitExceeded, note);
    }
    let delay = retry_delay(failed, observation.retry_delay);
    next.next_attempt_after = observation
        .now
        .checked_add(SignedDuration::try_from(delay).unwrap_or_default())
        .ok()
        .map(Time);
    let mut decision = waiting(observation, next);
    decision.unassign = true;
    decision.requeue_after = Some(delay);
    decision.event = Some(JobEvent::Requeued {
        pod: pod.to_owned(),
        note: format!(
            "{what}; failure {failed} of at most {}, retrying in {} s; finished partitions are \
             kept{how}",
            limit + 1,
            delay.as_secs()
        ),
    });
    decision
}
