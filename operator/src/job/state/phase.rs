//! Setting a job's phase and its conditions: waiting (Pending or Queued), and entering or
//! keeping a terminal phase. Used by [`super::decide`] and by [`super::failure`].

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use proofpipe_crds::{ProofJobPhase, ProofJobStatus};

use super::decision::{FailureReason, JobDecision, JobEvent, JobObservation};
use crate::conditions::{DesiredCondition, settle};

/// Adds `condition` to the conditions `set_phase` settled, keeping its transition time.
pub(super) fn add_condition(
    observation: &JobObservation,
    status: &mut ProofJobStatus,
    condition: DesiredCondition,
) {
    let settled = settle(
        observation.status.conditions.as_deref(),
        vec![condition],
        observation.generation,
        observation.now,
    );
    status.conditions.get_or_insert_default().extend(settled);
}

/// Not on a pod: Pending while the pool is missing or cannot fit the job, else Queued
/// (suspended or not).
pub(super) fn waiting(observation: &JobObservation, mut next: ProofJobStatus) -> JobDecision {
    next.pod = None;
    next.assigned_at = None;
    let pool = &observation.spec.pool;
    let (phase, message) = if !observation.pool_exists {
        (
            ProofJobPhase::Pending,
            format!("ProverPool {pool} not found"),
        )
    } else if observation.spec.suspend {
        (
            ProofJobPhase::Queued,
            "suspended: kept out of the queue".to_owned(),
        )
    } else if let Some(why) = &observation.does_not_fit {
        (ProofJobPhase::Pending, format!("held: {why}"))
    } else if let Some(after) = next
        .next_attempt_after
        .as_ref()
        .filter(|after| after.0 > observation.now)
    {
        (
            ProofJobPhase::Queued,
            format!(
                "retrying after {} (failure {} of at most {}): waiting for a prover of pool {pool}",
                after.0,
                next.failed.unwrap_or(0),
                observation.spec.backoff_limit + 1
            ),
        )
    } else {
        (
            ProofJobPhase::Queued,
            format!("waiting for a prover of pool {pool}"),
        )
    };
    let held = phase == ProofJobPhase::Pending && observation.pool_exists;
    let was_held = assigned_reason(observation.status) == Some(DOES_NOT_FIT);
    set_phase(observation, &mut next, phase, None, message.clone());
    let mut decision = unchanged(next);
    // Once when the job is held, not on every reconcile while it stays so.
    if held && !was_held {
        decision.event = Some(JobEvent::Held { note: message });
    }
    decision
}

/// The `Assigned` condition's reason of a job held because no prover of its pool can fit it.
pub const DOES_NOT_FIT: &str = "DoesNotFit";

fn assigned_reason(status: &ProofJobStatus) -> Option<&str> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|condition| condition.type_ == "Assigned")
        .map(|condition| condition.reason.as_str())
}

pub(super) fn fail(
    observation: &JobObservation,
    mut next: ProofJobStatus,
    reason: FailureReason,
    note: String,
) -> JobDecision {
    next.pod = None;
    next.assigned_at = None;
    let mut decision = finish(
        observation,
        next,
        ProofJobPhase::Failed,
        Some(reason),
        note.clone(),
    );
    decision.unassign = observation.assignment.is_some();
    decision.event = Some(JobEvent::Failed { reason, note });
    decision
}

/// Enter a terminal phase now.
pub(super) fn finish(
    observation: &JobObservation,
    mut next: ProofJobStatus,
    phase: ProofJobPhase,
    failure: Option<FailureReason>,
    message: String,
) -> JobDecision {
    next.completion_time = Some(Time(observation.now));
    set_phase(observation, &mut next, phase, failure, message);
    let mut decision = unchanged(next);
    decision.requeue_after = ttl_expiry(observation).map(|expiry| until(observation.now, expiry));
    decision
}

/// Already Succeeded or Failed: the phase never changes again; only the TTL matters.
pub(super) fn finished(
    observation: &JobObservation,
    mut next: ProofJobStatus,
    phase: ProofJobPhase,
) -> JobDecision {
    let now = observation.now;
    next.completion_time.get_or_insert(Time(now));
    for condition in next.conditions.iter_mut().flatten() {
        condition.observed_generation = observation.generation;
    }
    let mut decision = unchanged(next);
    // A Succeeded job keeps its label (its daemon has nothing left to cancel); a Failed one
    // must not keep a daemon working on it.
    decision.unassign = phase == ProofJobPhase::Failed && observation.assignment.is_some();
    match ttl_expiry(observation) {
        Some(expiry) if now >= expiry => decision.delete = true,
        Some(expiry) => decision.requeue_after = Some(until(now, expiry)),
        None => {}
    }
    decision
}

pub(super) fn set_phase(
    observation: &JobObservation,
    next: &mut ProofJobStatus,
    phase: ProofJobPhase,
    failure: Option<FailureReason>,
    message: String,
) {
    let suspended = observation.spec.suspend && !phase.is_finished();
    let mut desired = vec![
        match phase {
            ProofJobPhase::Running => {
                DesiredCondition::new("Assigned", true, "Assigned", message.clone())
            }
            // Pending: the pool is missing, or it exists and cannot fit the job.
            ProofJobPhase::Pending if observation.pool_exists => {
                DesiredCondition::new("Assigned", false, DOES_NOT_FIT, message.clone())
            }
            ProofJobPhase::Pending => {
                DesiredCondition::new("Assigned", false, "PoolNotFound", message.clone())
            }
            ProofJobPhase::Queued if suspended => {
                DesiredCondition::new("Assigned", false, "Suspended", "")
            }
            ProofJobPhase::Queued => {
                DesiredCondition::new("Assigned", false, "Queued", message.clone())
            }
            ProofJobPhase::Succeeded | ProofJobPhase::Failed => {
                DesiredCondition::new("Assigned", false, "Finished", "")
            }
        },
        if suspended {
            DesiredCondition::new("Suspended", true, "Suspended", "spec.suspend is true")
        } else {
            DesiredCondition::new("Suspended", false, "NotSuspended", "")
        },
    ];
    match (phase, failure) {
        (ProofJobPhase::Succeeded, _) => {
            desired.push(DesiredCondition::new(
                "Complete",
                true,
                "AllPartitionsProved",
                message.clone(),
            ));
        }
        (ProofJobPhase::Failed, Some(reason)) => {
            desired.push(DesiredCondition::new(
                "Failed",
                true,
                reason.as_str(),
                message.clone(),
            ));
        }
        _ => {}
    }
    next.phase = Some(phase);
    next.message = Some(message);
    next.conditions = Some(settle(
        next.conditions.as_deref(),
        desired,
        observation.generation,
        observation.now,
    ));
}

pub(super) fn unchanged(status: ProofJobStatus) -> JobDecision {
    JobDecision {
        status,
        unassign: false,
        delete: false,
        event: None,
        requeue_after: None,
    }
}

/// `completionTime + ttlSecondsAfterFinished`, if both are set.
fn ttl_expiry(observation: &JobObservation) -> Option<Timestamp> {
    let ttl = observation.spec.ttl_seconds_after_finished?;
    let completed = observation
        .status
        .completion_time
        .as_ref()
        .map_or(observation.now, |time| time.0);
    completed
        .checked_add(SignedDuration::from_secs(i64::from(ttl)))
        .ok()
}

/// Time from `now` to `then`, zero if `then` has passed.
pub(super) fn until(now: Timestamp, then: Timestamp) -> Duration {
    Duration::try_from(then.duration_since(now)).unwrap_or(Duration::ZERO)
}
