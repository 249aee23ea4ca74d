//! The ProofJob lifecycle as a pure function: (spec, current status, the assigned pod as
//! observed, now) -> the status the operator writes and what it must do besides.
//!
//! The assigned-pod label is the truth about assignment (the daemon acts on it);
//! `status.pod` mirrors it. A label without a matching `status.pod` is an assignment not yet
//! recorded (the operator stopped between the two writes), so it is recorded here: this is
//! also how the pool reconciler builds the status of a job it has just assigned.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use proofpipe_crds::{AttemptFailure, ProofJobPhase, ProofJobSpec, ProofJobStatus, ProverFailure};

use crate::conditions::{DesiredCondition, settle};
use crate::prover_pods::PodHealth;

/// What the operator knows about one ProofJob when it decides.
#[derive(Clone, Debug)]
pub struct JobObservation<'a> {
    pub spec: &'a ProofJobSpec,
    pub generation: Option<i64>,
    pub status: &'a ProofJobStatus,
    /// Whether the ProverPool named by `spec.pool` exists.
    pub pool_exists: bool,
    /// The pod named by the assigned-pod label, with its health; `None` health when that
    /// pod does not exist.
    pub assignment: Option<(&'a str, Option<PodHealth>)>,
    /// How the assigned pod's prover ended, when it terminated (e.g. `OOMKilled (exit 137)`).
    pub termination: Option<&'a str>,
    /// The assigned prover's heartbeat from its pool entry, when it reports one.
    pub progress: Option<ProverProgress<'a>>,
    /// The delay before the first retry ([`RETRY_DELAY`] unless configured).
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

/// Slack beyond the deadline before the operator calls a prover stalled: the progress time
/// is reported to within 30 s, and the prover's own watchdog should act first.
const STALL_SLACK: Duration = Duration::from_secs(60);

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

/// The operator-owned part of a status: everything except what the daemons write.
pub fn operator_fields(status: &ProofJobStatus) -> ProofJobStatus {
    ProofJobStatus {
        proofs: None,
        stage_seconds: None,
        filecoin: None,
        ..status.clone()
    }
}

/// Whether `pod` is one the job was assigned to (`status.assignedPods`), so that what it
/// wrote into the status counts. Any holder of the prover Role can write a job's status; only
/// the operator records assignments (ADR 0014).
pub fn proved_by_assigned_pod(status: &ProofJobStatus, pod: &str) -> bool {
    status.counts_work_of(pod)
}

/// Distinct partitions of `0..partitions` that have a verified proof by a pod the job was
/// assigned to.
pub fn verified_partitions(status: &ProofJobStatus, partitions: i32) -> i32 {
    let verified: BTreeSet<i32> = status
        .proofs
        .iter()
        .flatten()
        .filter(|proof| proof.verified && (0..partitions).contains(&proof.partition))
        .filter(|proof| proved_by_assigned_pod(status, &proof.proved_by))
        .map(|proof| proof.partition)
        .collect();
    i32::try_from(verified.len()).unwrap_or(i32::MAX)
}

/// The next status of a job, and what to do besides writing it.
pub fn decide(observation: &JobObservation) -> JobDecision {
    let JobObservation {
        spec,
        status: current,
        now,
        ..
    } = *observation;
    let mut next = operator_fields(current);
    next.observed_generation = observation.generation;
    let partitions = spec.partition_count();
    let done = verified_partitions(current, partitions);
    next.partitions_done = Some(done);
    next.partitions_total = Some(partitions);
    next.progress = Some(format!("{done}/{partitions}"));

    if let Some(phase) = current.phase.filter(|phase| phase.is_finished()) {
        return finished(observation, next, phase);
    }
    // A Filecoin job is done when its assembled proof has passed Filecoin's verifier, which
    // the prover does after the last partition; until then it keeps its pod.
    let filecoin = current
        .filecoin
        .as_ref()
        .filter(|result| proved_by_assigned_pod(current, &result.proved_by));
    let outcome = match (&spec.filecoin, filecoin) {
        _ if done < partitions => None,
        (None, _) => Some(Ok(format!(
            "all {partitions} partitions proved and verified"
        ))),
        (Some(_), None) => None,
        (Some(work), Some(result)) if result.verified => Some(Ok(format!(
            "all {partitions} partitions proved; the {}-byte proof passed {}{}",
            result.proof_bytes,
            work.kind.verifier(),
            result
                .output_url
                .as_ref()
                .map_or(String::new(), |url| format!(" and was written to {url}"))
        ))),
        (Some(work), Some(result)) => Some(Err(format!(
            "Filecoin's {} rejected the proof {} assembled from the partitions",
            work.kind.verifier(),
            result.proved_by
        ))),
    };
    match outcome {
        Some(Ok(note)) => {
            let mut decision = finish(
                observation,
                next,
                ProofJobPhase::Succeeded,
                None,
                note.clone(),
            );
            decision.event = Some(JobEvent::Succeeded { note });
            return decision;
        }
        Some(Err(note)) => return fail(observation, next, FailureReason::ProofRejected, note),
        None => {}
    }
    let deadline = deadline(spec, current);
    if let Some(deadline) = deadline
        && now >= deadline
    {
        let note = format!(
            "activeDeadlineSeconds ({}) passed since the job started",
            spec.active_deadline_seconds.unwrap_or_default()
        );
        return fail(observation, next, FailureReason::DeadlineExceeded, note);
    }

    let report = observation
        .assignment
        .and_then(|(pod, _)| this_attempts_report(current, pod));
    let mut decision = match observation.assignment {
        Some((pod, _)) if spec.suspend => {
            let mut decision = waiting(observation, next);
            decision.unassign = true;
            decision.event = Some(JobEvent::Suspended {
                pod: pod.to_owned(),
            });
            decision
        }
        Some((pod, health)) if report.is_some() => reported(
            observation,
            next,
            pod,
            health,
            report.expect("the guard checked it"),
        ),
        Some((pod, Some(health))) if health.is_alive() => running(observation, next, pod),
        Some((pod, health)) => lost(observation, next, pod, health),
        None => waiting(observation, next),
    };
    // Look again when the deadline passes, or the retry delay ends (its message changes).
    let retry = decision
        .status
        .next_attempt_after
        .as_ref()
        .filter(|after| after.0 > now)
        .map(|after| until(now, after.0));
    decision.requeue_after = [
        decision.requeue_after,
        deadline.map(|deadline| until(now, deadline)),
        retry,
    ]
    .into_iter()
    .flatten()
    .min();
    decision
}

/// The job is on a live pod: record the assignment if it is new.
fn running(observation: &JobObservation, mut next: ProofJobStatus, pod: &str) -> JobDecision {
    let now = observation.now;
    let newly_assigned = next.pod.as_deref() != Some(pod);
    // Record the pod among those whose proofs count. Checked on every reconcile, not only a
    // new assignment, so that a job running when the operator was upgraded gets its list.
    let mut pods = next
        .assigned_pods
        .take()
        .unwrap_or_else(|| legacy_provers(observation.status));
    if !pods.iter().any(|assigned| assigned == pod) {
        pods.push(pod.to_owned());
    }
    next.assigned_pods = Some(pods);
    if newly_assigned {
        next.pod = Some(pod.to_owned());
        next.assigned_at = Some(Time(now));
        next.attempts = Some(next.attempts.unwrap_or(0) + 1);
        next.start_time.get_or_insert(Time(now));
        next.next_attempt_after = None;
    }
    let attempt = next.attempts.unwrap_or(1);
    let message = format!("proving on {pod} (attempt {attempt})");
    let was_stalled = stalled_condition(observation.status);
    set_phase(
        observation,
        &mut next,
        ProofJobPhase::Running,
        None,
        message,
    );
    let stall = observation
        .progress
        .filter(|_| !newly_assigned)
        .and_then(|progress| stalled_for(progress, now).map(|idle| (progress, idle)));
    let mut decision = unchanged(next);
    if newly_assigned {
        decision.event = Some(JobEvent::Assigned {
            pod: pod.to_owned(),
            attempt,
        });
    }
    match stall {
        Some((progress, idle)) => {
            let note = format!(
                "prover {pod} has made no progress for {} s in stage {} (progressDeadlineSeconds \
                 {}); it should restart and the job be retried",
                idle.as_secs(),
                progress.stage,
                progress.deadline.as_secs()
            );
            add_condition(
                observation,
                &mut decision.status,
                DesiredCondition::new("Progressing", false, "NoProgress", note.clone()),
            );
            if !was_stalled {
                decision.event = Some(JobEvent::Stalled {
                    pod: pod.to_owned(),
                    note,
                });
            }
        }
        // Known to move: say so, and look again when the deadline (and the slack) would pass
        // without progress.
        None => {
            if let Some(progress) = observation.progress {
                add_condition(
                    observation,
                    &mut decision.status,
                    DesiredCondition::new("Progressing", true, "Progressing", ""),
                );
                let idle = until(progress.last_progress, now);
                let due = progress.deadline + STALL_SLACK;
                decision.requeue_after = Some(due.saturating_sub(idle).max(Duration::from_secs(1)));
            }
        }
    }
    decision
}

/// How long the prover has been without progress, if past its deadline and the slack.
fn stalled_for(progress: ProverProgress, now: Timestamp) -> Option<Duration> {
    let idle = until(progress.last_progress, now);
    (idle > progress.deadline + STALL_SLACK).then_some(idle)
}

/// Whether `status` already says the job's prover is stalled.
fn stalled_condition(status: &ProofJobStatus) -> bool {
    status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Progressing" && c.status == "False")
}

/// Adds `condition` to the conditions `set_phase` settled, keeping its transition time.
fn add_condition(
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

/// The assigned prover's failure report of the current attempt, if it made one.
fn this_attempts_report<'a>(status: &'a ProofJobStatus, pod: &str) -> Option<&'a ProverFailure> {
    status.prover_failure.as_ref().filter(|report| {
        report.pod == pod
            && status.pod.as_deref() == Some(pod)
            && Some(report.attempt) == status.attempts
    })
}

/// The prover reported that it could not prove the job on this attempt. A permanent
/// failure (an input that can never prove, a job too large for the pool) fails the job at
/// once; any other counts as a failed attempt, retried under `spec.backoffLimit` while the
/// prover, still up, takes other work.
fn reported(
    observation: &JobObservation,
    mut next: ProofJobStatus,
    pod: &str,
    health: Option<PodHealth>,
    report: &ProverFailure,
) -> JobDecision {
    let attempts = next.attempts.unwrap_or(0);
    if !report.permanent {
        // A stalled prover exits after its report: the pod's end is part of the same failure.
        let how = match (health, observation.termination) {
            (Some(health), Some(how)) if !health.is_alive() => {
                format!(". The prover ended with {how}")
            }
            _ => String::new(),
        };
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

/// The pods to start `assignedPods` with for a job that has none: the provers of its
/// proofs if an operator before `assignedPods` assigned it (their proofs counted then and
/// must keep counting, or a requeued job would never finish: the daemons skip verified
/// partitions), else none.
fn legacy_provers(status: &ProofJobStatus) -> Vec<String> {
    let mut pods: Vec<String> = Vec::new();
    if status.assigned_pods.is_none() && status.attempts.unwrap_or(0) > 0 {
        for proof in status.proofs.iter().flatten() {
            if !pods.contains(&proof.proved_by) {
                pods.push(proof.proved_by.clone());
            }
        }
    }
    pods
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
fn lost(
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

/// Not on a pod: Pending while the pool is missing, else Queued (suspended or not).
fn waiting(observation: &JobObservation, mut next: ProofJobStatus) -> JobDecision {
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
    set_phase(observation, &mut next, phase, None, message);
    unchanged(next)
}

fn fail(
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
fn finish(
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
fn finished(
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

fn set_phase(
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

fn unchanged(status: ProofJobStatus) -> JobDecision {
    JobDecision {
        status,
        unassign: false,
        delete: false,
        event: None,
        requeue_after: None,
    }
}

/// `startTime + activeDeadlineSeconds`, once the job has started and if it has a deadline.
fn deadline(spec: &ProofJobSpec, status: &ProofJobStatus) -> Option<Timestamp> {
    let seconds = spec.active_deadline_seconds?;
    let start = status.start_time.as_ref()?.0;
    start.checked_add(SignedDuration::from_secs(seconds)).ok()
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
fn until(now: Timestamp, then: Timestamp) -> Duration {
    Duration::try_from(then.duration_since(now)).unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use proofpipe_crds::PartitionProof;

    use super::*;

    fn spec() -> ProofJobSpec {
        serde_json::from_value(serde_json::json!({
            "pool": "gpu", "circuit": "mul-chain", "constraints": 4096, "partitions": 4,
        }))
        .unwrap()
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn proof(partition: i32, verified: bool) -> PartitionProof {
        PartitionProof {
            partition,
            proof: "AAAA".into(),
            verified,
            public_inputs: vec![],
            proved_by: "gpu-prover-0".into(),
        }
    }

    /// Decides for `spec` and `status` with the pool present.
    fn decide_at(
        spec: &ProofJobSpec,
        status: &ProofJobStatus,
        assignment: Option<(&str, Option<PodHealth>)>,
        now: Timestamp,
    ) -> JobDecision {
        decide(&JobObservation {
            spec,
            generation: Some(1),
            status,
            pool_exists: true,
            assignment,
            termination: None,
            progress: None,
            retry_delay: RETRY_DELAY,
            now,
        })
    }

    /// The status after the job is assigned to `pod` at `now`.
    fn assigned(
        spec: &ProofJobSpec,
        status: &ProofJobStatus,
        pod: &str,
        now: Timestamp,
    ) -> ProofJobStatus {
        decide_at(spec, status, Some((pod, Some(PodHealth::Ready))), now).status
    }

    fn condition<'a>(status: &'a ProofJobStatus, type_: &str) -> Option<(&'a str, &'a str)> {
        status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == type_)
            .map(|c| (c.status.as_str(), c.reason.as_str()))
    }

    fn filecoin_spec() -> ProofJobSpec {
        serde_json::from_value(serde_json::json!({
            "pool": "gpu", "filecoin": {
                "sealProof": "StackedDrg32GiBV1_1",
                "input": { "url": "s3://b/c1.json", "sha256": "ab".repeat(32) },
            },
        }))
        .unwrap()
    }

    fn filecoin_result(verified: bool) -> proofpipe_crds::FilecoinResult {
        proofpipe_crds::FilecoinResult {
            proof: "AAAA".into(),
            proof_bytes: 1920,
            verified,
            output_url: Some("s3://b/proof".into()),
            proved_by: "gpu-prover-0".into(),
        }
    }

    #[test]
    fn a_filecoin_job_succeeds_only_once_verify_seal_accepted_its_proof() {
        let spec = filecoin_spec();
        let running = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        assert_eq!(
            running.progress.as_deref(),
            Some("0/10"),
            "10 partitions at 32 GiB"
        );
        let mut proved = running.clone();
        proved.proofs = Some((0..10).map(|p| proof(p, true)).collect());
        let ready = Some(("gpu-prover-0", Some(PodHealth::Ready)));
        // Every partition proved, the sector proof not yet assembled: still the prover's.
        let assembling = decide_at(&spec, &proved, ready, at(5));
        assert_eq!(assembling.status.phase, Some(ProofJobPhase::Running));
        assert!(!assembling.unassign);

        proved.filecoin = Some(filecoin_result(true));
        let done = decide_at(&spec, &proved, ready, at(6));
        assert_eq!(done.status.phase, Some(ProofJobPhase::Succeeded));
        let Some(JobEvent::Succeeded { note }) = &done.event else {
            panic!("{:?}", done.event)
        };
        assert!(
            note.contains("1920-byte proof passed verify_seal and was written to s3://b/proof"),
            "{note}"
        );
        assert!(
            done.status.filecoin.is_none(),
            "status.filecoin is the prover's field"
        );

        proved.filecoin = Some(filecoin_result(false));
        let rejected = decide_at(&spec, &proved, ready, at(6));
        assert_eq!(rejected.status.phase, Some(ProofJobPhase::Failed));
        assert_eq!(
            condition(&rejected.status, "Failed"),
            Some(("True", "ProofRejected"))
        );
    }

    #[test]
    fn a_snap_deals_job_has_its_update_proofs_partitions_and_verifier() {
        let spec: ProofJobSpec = serde_json::from_value(serde_json::json!({
            "pool": "gpu", "filecoin": {
                "kind": "SnapDealsUpdate", "updateProof": "StackedDrg32GiBV1",
                "input": { "url": "s3://b/snap.json", "sha256": "ab".repeat(32) },
            },
        }))
        .unwrap();
        let running = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        assert_eq!(
            running.progress.as_deref(),
            Some("0/16"),
            "16 partitions at 32 GiB"
        );
        let mut proved = running.clone();
        proved.proofs = Some((0..16).map(|p| proof(p, true)).collect());
        let ready = Some(("gpu-prover-0", Some(PodHealth::Ready)));
        let assembling = decide_at(&spec, &proved, ready, at(5));
        assert_eq!(assembling.status.phase, Some(ProofJobPhase::Running));

        proved.filecoin = Some(proofpipe_crds::FilecoinResult {
            proof_bytes: 3072,
            ..filecoin_result(true)
        });
        let done = decide_at(&spec, &proved, ready, at(6));
        assert_eq!(done.status.phase, Some(ProofJobPhase::Succeeded));
        let Some(JobEvent::Succeeded { note }) = &done.event else {
            panic!("{:?}", done.event)
        };
        assert!(
            note.contains("all 16 partitions proved; the 3072-byte proof passed verify_empty_sector_update_proof"),
            "{note}"
        );

        proved.filecoin = Some(filecoin_result(false));
        let rejected = decide_at(&spec, &proved, ready, at(6));
        assert_eq!(rejected.status.phase, Some(ProofJobPhase::Failed));
        assert!(
            rejected
                .status
                .message
                .as_deref()
                .is_some_and(|m| m.contains("verify_empty_sector_update_proof rejected")),
            "{:?}",
            rejected.status.message
        );
    }

    fn report(pod: &str, attempt: i32, reason: &str, permanent: bool) -> ProverFailure {
        ProverFailure {
            pod: pod.into(),
            attempt,
            reason: reason.into(),
            message: format!("{reason} happened"),
            permanent,
            time: Time(at(3)),
        }
    }

    #[test]
    fn a_permanent_failure_the_prover_reports_fails_the_job_at_once() {
        let spec = spec();
        let mut status = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        status.prover_failure = Some(report("gpu-prover-0", 1, "InvalidInput", true));
        let ready = Some(("gpu-prover-0", Some(PodHealth::Ready)));
        let decision = decide_at(&spec, &status, ready, at(4));
        assert_eq!(decision.status.phase, Some(ProofJobPhase::Failed));
        assert_eq!(
            condition(&decision.status, "Failed"),
            Some(("True", "InvalidInput"))
        );
        assert!(decision.unassign, "the prover is freed for other work");
        let last = decision.status.last_failure.as_ref().unwrap();
        assert_eq!(
            (last.reason.as_str(), last.message.as_str()),
            ("InvalidInput", "InvalidInput happened")
        );
        assert!(
            decision
                .status
                .message
                .as_deref()
                .unwrap()
                .starts_with("InvalidInput happened; "),
            "{:?}",
            decision.status.message
        );
        let mut too_big = status.clone();
        too_big.prover_failure = Some(report("gpu-prover-0", 1, "DoesNotFit", true));
        let decision = decide_at(&spec, &too_big, ready, at(4));
        assert_eq!(
            condition(&decision.status, "Failed"),
            Some(("True", "DoesNotFit"))
        );
    }

    #[test]
    fn a_transient_failure_the_prover_reports_is_a_failed_attempt_retried_later() {
        let spec = spec();
        let mut status = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        status.prover_failure = Some(report("gpu-prover-0", 1, "StorageUnavailable", false));
        let ready = Some(("gpu-prover-0", Some(PodHealth::Ready)));
        let decision = decide_at(&spec, &status, ready, at(4));
        assert_eq!(decision.status.phase, Some(ProofJobPhase::Queued));
        assert!(decision.unassign);
        assert_eq!(decision.status.failed, Some(1));
        let last = decision.status.last_failure.as_ref().unwrap();
        assert_eq!(last.reason, "StorageUnavailable");
        assert_eq!(
            last.message,
            "prover gpu-prover-0 reported: StorageUnavailable happened"
        );
        assert!(matches!(decision.event, Some(JobEvent::Requeued { .. })));
        // A stalled prover exits after its report: the pod's end is the same failure, counted
        // once, with how it ended.
        let mut stalled = status.clone();
        stalled.prover_failure = Some(report("gpu-prover-0", 1, "Stalled", false));
        let decision = decide(&JobObservation {
            spec: &spec,
            generation: Some(1),
            status: &stalled,
            pool_exists: true,
            assignment: Some(("gpu-prover-0", Some(PodHealth::Terminated))),
            termination: Some("Error (exit 3)"),
            progress: None,
            retry_delay: RETRY_DELAY,
            now: at(4),
        });
        let last = decision.status.last_failure.as_ref().unwrap();
        assert_eq!(last.reason, "Stalled");
        assert!(
            last.message
                .ends_with(". The prover ended with Error (exit 3)"),
            "{last:?}"
        );
        assert_eq!(decision.status.failed, Some(1));
    }

    #[test]
    fn a_report_of_another_attempt_or_pod_is_history() {
        let spec = spec();
        let mut status = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        let ready = Some(("gpu-prover-0", Some(PodHealth::Ready)));
        for stale in [
            report("gpu-prover-0", 0, "InvalidInput", true),
            report("gpu-prover-3", 1, "InvalidInput", true),
        ] {
            status.prover_failure = Some(stale);
            let decision = decide_at(&spec, &status, ready, at(4));
            assert_eq!(decision.status.phase, Some(ProofJobPhase::Running));
            assert!(!decision.unassign);
        }
    }

    #[test]
    fn a_prover_without_progress_past_its_deadline_marks_the_job_once() {
        let spec = spec();
        let status = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        let ready = Some(("gpu-prover-0", Some(PodHealth::Ready)));
        let observe = |status: &ProofJobStatus, now: Timestamp| {
            decide(&JobObservation {
                spec: &spec,
                generation: Some(1),
                status,
                pool_exists: true,
                assignment: ready,
                termination: None,
                progress: Some(ProverProgress {
                    stage: "loading parameters",
                    last_progress: at(10),
                    deadline: Duration::from_secs(100),
                }),
                retry_delay: RETRY_DELAY,
                now,
            })
        };
        let fine = observe(&status, at(100));
        assert_eq!(
            condition(&fine.status, "Progressing"),
            Some(("True", "Progressing"))
        );
        assert_eq!(
            fine.requeue_after,
            Some(Duration::from_secs(70)),
            "looked at again when deadline and slack pass"
        );
        let stuck = observe(&fine.status, at(171));
        assert_eq!(
            condition(&stuck.status, "Progressing"),
            Some(("False", "NoProgress"))
        );
        let Some(JobEvent::Stalled { note, .. }) = &stuck.event else {
            panic!("{:?}", stuck.event)
        };
        assert!(
            note.contains("no progress for 161 s in stage loading parameters"),
            "{note}"
        );
        assert_eq!(
            stuck.status.phase,
            Some(ProofJobPhase::Running),
            "the prover's call"
        );
        let again = observe(&stuck.status, at(200));
        assert_eq!(again.event, None, "one Event per stall");
    }

    #[test]
    fn a_new_job_is_queued_or_pending_without_its_pool() {
        let spec = spec();
        let queued = decide_at(&spec, &ProofJobStatus::default(), None, at(0));
        assert_eq!(queued.status.phase, Some(ProofJobPhase::Queued));
        assert_eq!(queued.status.progress.as_deref(), Some("0/4"));
        assert_eq!(
            condition(&queued.status, "Assigned"),
            Some(("False", "Queued"))
        );
        assert!(!queued.unassign && !queued.delete && queued.event.is_none());

        let pending = decide(&JobObservation {
            spec: &spec,
            generation: Some(1),
            status: &ProofJobStatus::default(),
            pool_exists: false,
            assignment: None,
            termination: None,
            progress: None,
            retry_delay: RETRY_DELAY,
            now: at(0),
        });
        assert_eq!(pending.status.phase, Some(ProofJobPhase::Pending));
        assert_eq!(
            pending.status.message.as_deref(),
            Some("ProverPool gpu not found")
        );
    }

    #[test]
    fn assignment_is_recorded_once() {
        let spec = spec();
        let first = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(5));
        assert_eq!(first.phase, Some(ProofJobPhase::Running));
        assert_eq!(first.pod.as_deref(), Some("gpu-prover-0"));
        assert_eq!(first.attempts, Some(1));
        assert_eq!(first.start_time, Some(Time(at(5))));
        assert_eq!(first.assigned_at, Some(Time(at(5))));
        assert_eq!(condition(&first, "Assigned"), Some(("True", "Assigned")));

        // Seen again later on the same pod: nothing changes, so nothing is written.
        let again = assigned(&spec, &first, "gpu-prover-0", at(60));
        assert_eq!(again, first);
    }

    #[test]
    fn a_lost_pod_requeues_and_the_next_assignment_counts_an_attempt() {
        let spec = spec();
        let mut running = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        running.proofs = Some(vec![proof(0, true)]);

        for health in [
            None,
            Some(PodHealth::Terminated),
            Some(PodHealth::Terminating),
        ] {
            let requeued = decide_at(&spec, &running, Some(("gpu-prover-0", health)), at(10));
            assert!(requeued.unassign, "{health:?}");
            assert_eq!(requeued.status.phase, Some(ProofJobPhase::Queued));
            assert_eq!(requeued.status.pod, None);
            assert_eq!(requeued.status.attempts, Some(1));
            // The verified proof is kept and still counts.
            assert_eq!(requeued.status.progress.as_deref(), Some("1/4"));
            assert!(
                matches!(requeued.event, Some(JobEvent::Requeued { ref pod, .. }) if pod == "gpu-prover-0")
            );
        }

        let oom = decide(&JobObservation {
            spec: &spec,
            generation: Some(1),
            status: &running,
            pool_exists: true,
            assignment: Some(("gpu-prover-0", Some(PodHealth::Terminated))),
            termination: Some("OOMKilled (exit 137)"),
            progress: None,
            retry_delay: RETRY_DELAY,
            now: at(10),
        });
        assert!(
            matches!(oom.event, Some(JobEvent::Requeued { ref note, .. })
                if note.ends_with("finished partitions are kept. The prover ended with OOMKilled (exit 137)")),
            "{:?}",
            oom.event
        );

        let requeued = decide_at(&spec, &running, Some(("gpu-prover-0", None)), at(10)).status;
        let second = assigned(&spec, &requeued, "gpu-prover-1", at(20));
        assert_eq!(second.attempts, Some(2));
        assert_eq!(
            second.start_time,
            Some(Time(at(0))),
            "startTime is the first attempt's"
        );
        assert_eq!(second.assigned_at, Some(Time(at(20))));
    }

    #[test]
    fn losing_the_pod_past_the_backoff_limit_fails_the_job() {
        let mut spec = spec();
        spec.backoff_limit = 1;
        let mut status = ProofJobStatus::default();
        for (attempt, pod) in ["gpu-prover-0", "gpu-prover-1"].into_iter().enumerate() {
            status = assigned(&spec, &status, pod, at(0));
            let decision = decide_at(&spec, &status, Some((pod, None)), at(1));
            if attempt == 0 {
                assert_eq!(decision.status.phase, Some(ProofJobPhase::Queued));
            } else {
                assert_eq!(decision.status.phase, Some(ProofJobPhase::Failed));
                assert_eq!(
                    condition(&decision.status, "Failed"),
                    Some(("True", "BackoffLimitExceeded"))
                );
                assert!(decision.unassign);
                assert_eq!(decision.status.completion_time, Some(Time(at(1))));
                assert!(matches!(
                    decision.event,
                    Some(JobEvent::Failed {
                        reason: FailureReason::BackoffLimitExceeded,
                        ..
                    })
                ));
            }
            status = decision.status;
        }
    }

    #[test]
    fn the_deadline_counts_from_the_first_assignment() {
        let mut spec = spec();
        spec.active_deadline_seconds = Some(100);
        let queued = decide_at(&spec, &ProofJobStatus::default(), None, at(0));
        assert_eq!(
            queued.requeue_after, None,
            "no deadline before the job starts"
        );

        let running = assigned(&spec, &queued.status, "gpu-prover-0", at(50));
        let before = decide_at(
            &spec,
            &running,
            Some(("gpu-prover-0", Some(PodHealth::Ready))),
            at(120),
        );
        assert_eq!(before.status.phase, Some(ProofJobPhase::Running));
        assert_eq!(before.requeue_after, Some(Duration::from_secs(30)));

        let after = decide_at(
            &spec,
            &running,
            Some(("gpu-prover-0", Some(PodHealth::Ready))),
            at(150),
        );
        assert_eq!(after.status.phase, Some(ProofJobPhase::Failed));
        assert_eq!(
            condition(&after.status, "Failed"),
            Some(("True", "DeadlineExceeded"))
        );
        assert!(after.unassign);
        assert_eq!(after.status.pod, None);
    }

    #[test]
    fn all_verified_partitions_succeed_the_job_and_ttl_deletes_it_later() {
        let mut spec = spec();
        spec.ttl_seconds_after_finished = Some(60);
        let mut running = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        // An unverified proof and a duplicate do not count.
        running.proofs = Some(vec![
            proof(0, true),
            proof(1, true),
            proof(1, true),
            proof(2, false),
            proof(3, true),
        ]);
        let three = decide_at(
            &spec,
            &running,
            Some(("gpu-prover-0", Some(PodHealth::Ready))),
            at(5),
        );
        assert_eq!(three.status.progress.as_deref(), Some("3/4"));
        assert_eq!(three.status.phase, Some(ProofJobPhase::Running));

        running.proofs.as_mut().unwrap().push(proof(2, true));
        let done = decide_at(
            &spec,
            &running,
            Some(("gpu-prover-0", Some(PodHealth::Ready))),
            at(10),
        );
        assert_eq!(done.status.phase, Some(ProofJobPhase::Succeeded));
        assert_eq!(done.status.progress.as_deref(), Some("4/4"));
        assert_eq!(
            condition(&done.status, "Complete"),
            Some(("True", "AllPartitionsProved"))
        );
        assert_eq!(
            done.status.proofs, None,
            "the daemons' fields are never written"
        );
        assert!(!done.unassign, "a succeeded job keeps its label");
        assert_eq!(done.requeue_after, Some(Duration::from_secs(60)));

        // As stored: the operator's fields plus the daemon's proofs.
        let stored = ProofJobStatus {
            proofs: running.proofs.clone(),
            ..done.status.clone()
        };
        let later = decide_at(&spec, &stored, Some(("gpu-prover-0", None)), at(40));
        assert_eq!(later.status, done.status, "a finished job stays as it is");
        assert!(!later.delete);
        assert_eq!(later.requeue_after, Some(Duration::from_secs(30)));

        let expired = decide_at(&spec, &stored, None, at(70));
        assert!(expired.delete);
    }

    #[test]
    fn suspend_unassigns_keeps_proofs_and_holds_the_job() {
        let mut spec = spec();
        let mut running = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        running.proofs = Some(vec![proof(0, true)]);
        spec.suspend = true;
        let suspended = decide_at(
            &spec,
            &running,
            Some(("gpu-prover-0", Some(PodHealth::Ready))),
            at(5),
        );
        assert!(suspended.unassign);
        assert_eq!(suspended.status.phase, Some(ProofJobPhase::Queued));
        assert_eq!(suspended.status.progress.as_deref(), Some("1/4"));
        assert_eq!(
            condition(&suspended.status, "Suspended"),
            Some(("True", "Suspended"))
        );
        assert_eq!(
            suspended.event,
            Some(JobEvent::Suspended {
                pod: "gpu-prover-0".into()
            })
        );

        spec.suspend = false;
        let resumed = decide_at(&spec, &suspended.status, None, at(9));
        assert_eq!(
            condition(&resumed.status, "Suspended"),
            Some(("False", "NotSuspended"))
        );
        assert_eq!(
            resumed.status.attempts,
            Some(1),
            "suspension costs no attempt"
        );
    }

    #[test]
    fn a_suspension_is_not_a_failed_attempt() {
        let mut spec = spec();
        spec.backoff_limit = 0;
        let running = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        spec.suspend = true;
        let suspended = decide_at(
            &spec,
            &running,
            Some(("gpu-prover-0", Some(PodHealth::Ready))),
            at(5),
        );
        spec.suspend = false;
        let resumed = decide_at(&spec, &suspended.status, None, at(6)).status;
        let second = assigned(&spec, &resumed, "gpu-prover-1", at(7));
        assert_eq!(second.attempts, Some(2));
        assert_eq!(second.failed, None, "no attempt failed");
        // With backoffLimit 0 the first real failure is the last.
        let lost = decide_at(&spec, &second, Some(("gpu-prover-1", None)), at(8));
        assert_eq!(lost.status.phase, Some(ProofJobPhase::Failed));
        assert_eq!(lost.status.failed, Some(1));

        // With backoffLimit 1 the same history is retried once.
        spec.backoff_limit = 1;
        let lost = decide_at(&spec, &second, Some(("gpu-prover-1", None)), at(8));
        assert_eq!(lost.status.phase, Some(ProofJobPhase::Queued));
    }

    #[test]
    fn a_failed_attempt_is_retried_after_a_growing_delay_and_its_reason_is_kept() {
        assert_eq!(
            [1, 2, 3, 6, 7, 40].map(|n| retry_delay(n, RETRY_DELAY).as_secs()),
            [10, 20, 40, 320, 360, 360]
        );
        let mut spec = spec();
        spec.backoff_limit = 3;
        let running = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        let lost = decide(&JobObservation {
            spec: &spec,
            generation: Some(1),
            status: &running,
            pool_exists: true,
            assignment: Some(("gpu-prover-0", Some(PodHealth::Terminated))),
            termination: Some("Error (exit 1): memory limit 64 MiB is too small"),
            progress: None,
            retry_delay: RETRY_DELAY,
            now: at(30),
        });
        assert!(lost.unassign);
        assert_eq!(lost.status.phase, Some(ProofJobPhase::Queued));
        assert_eq!(lost.status.next_attempt_after, Some(Time(at(40))));
        assert_eq!(lost.requeue_after, Some(Duration::from_secs(10)));
        let failure = lost.status.last_failure.clone().unwrap();
        assert_eq!((failure.attempt, failure.reason.as_str()), (1, "Error"));
        assert!(
            failure.message.contains("memory limit 64 MiB is too small"),
            "{failure:?}"
        );
        assert!(
            lost.status
                .message
                .as_deref()
                .unwrap()
                .contains("retrying after"),
            "{:?}",
            lost.status.message
        );
        // Once the delay is over the job waits plainly, and its next assignment clears it.
        let waiting = decide_at(&spec, &lost.status, None, at(41));
        assert_eq!(
            waiting.status.message.as_deref(),
            Some("waiting for a prover of pool gpu")
        );
        let again = assigned(&spec, &waiting.status, "gpu-prover-1", at(42));
        assert_eq!(again.next_attempt_after, None);
        assert_eq!(again.last_failure, Some(failure), "kept for the record");
    }

    #[test]
    fn a_failed_job_still_labelled_is_unassigned() {
        let spec = spec();
        let failed = ProofJobStatus {
            phase: Some(ProofJobPhase::Failed),
            ..ProofJobStatus::default()
        };
        let decision = decide_at(
            &spec,
            &failed,
            Some(("gpu-prover-0", Some(PodHealth::Ready))),
            at(0),
        );
        assert!(decision.unassign);
        assert_eq!(decision.status.phase, Some(ProofJobPhase::Failed));
    }

    fn proof_by(partition: i32, pod: &str) -> PartitionProof {
        PartitionProof {
            proved_by: pod.into(),
            ..proof(partition, true)
        }
    }

    #[test]
    fn only_proofs_by_pods_the_job_was_assigned_to_count() {
        let spec = spec();
        let ready = |pod| Some((pod, Some(PodHealth::Ready)));
        // Attempt 1 on gpu-prover-0 proves partitions 0 and 1, then its pod is lost.
        let mut first = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        first.proofs = Some(vec![
            proof_by(0, "gpu-prover-0"),
            proof_by(1, "gpu-prover-0"),
        ]);
        let requeued = decide_at(&spec, &first, Some(("gpu-prover-0", None)), at(10)).status;
        // Attempt 2 on gpu-prover-1, which proves partition 2; another prover of the
        // namespace, never assigned this job, writes a verified proof of partition 3.
        let mut second = assigned(&spec, &requeued, "gpu-prover-1", at(20));
        assert_eq!(
            second.assigned_pods,
            Some(vec!["gpu-prover-0".into(), "gpu-prover-1".into()])
        );
        let mut proofs = first.proofs.clone().unwrap();
        proofs.extend([proof_by(2, "gpu-prover-1"), proof_by(3, "gpu-prover-7")]);
        second.proofs = Some(proofs);

        let forged = decide_at(&spec, &second, ready("gpu-prover-1"), at(30));
        assert_eq!(forged.status.phase, Some(ProofJobPhase::Running));
        assert_eq!(
            forged.status.progress.as_deref(),
            Some("3/4"),
            "the earlier attempt's proofs count, the stranger's does not"
        );
        assert_eq!(forged.status.assigned_pods, second.assigned_pods);

        // The assigned prover proves partition 3 itself: now the job is done.
        second.proofs.as_mut().unwrap()[3] = proof_by(3, "gpu-prover-1");
        let done = decide_at(&spec, &second, ready("gpu-prover-1"), at(40));
        assert_eq!(done.status.phase, Some(ProofJobPhase::Succeeded));
    }

    #[test]
    fn a_filecoin_result_by_a_stranger_does_not_finish_the_job() {
        let spec = filecoin_spec();
        let mut proved = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
        proved.proofs = Some((0..10).map(|p| proof(p, true)).collect());
        let ready = Some(("gpu-prover-0", Some(PodHealth::Ready)));
        for verified in [true, false] {
            proved.filecoin = Some(proofpipe_crds::FilecoinResult {
                proved_by: "gpu-prover-7".into(),
                ..filecoin_result(verified)
            });
            let decision = decide_at(&spec, &proved, ready, at(5));
            assert_eq!(
                decision.status.phase,
                Some(ProofJobPhase::Running),
                "a stranger's result (verified: {verified}) neither finishes nor fails the job"
            );
        }
    }

    #[test]
    fn a_job_assigned_before_assigned_pods_existed_keeps_its_proofs() {
        let spec = spec();
        // As an earlier operator left it: attempt 2 running on gpu-prover-1, a proof from
        // attempt 1's gpu-prover-0, no assignedPods.
        let legacy = ProofJobStatus {
            phase: Some(ProofJobPhase::Running),
            pod: Some("gpu-prover-1".into()),
            attempts: Some(2),
            proofs: Some(vec![
                proof_by(0, "gpu-prover-0"),
                proof_by(1, "gpu-prover-1"),
            ]),
            ..ProofJobStatus::default()
        };
        let decision = decide_at(
            &spec,
            &legacy,
            Some(("gpu-prover-1", Some(PodHealth::Ready))),
            at(0),
        );
        assert_eq!(decision.status.progress.as_deref(), Some("2/4"));
        assert_eq!(
            decision.status.assigned_pods,
            Some(vec!["gpu-prover-0".into(), "gpu-prover-1".into()])
        );
        assert_eq!(decision.event, None, "not a new assignment");

        // A job never assigned counts nobody's proofs.
        let never = ProofJobStatus {
            proofs: Some(vec![proof_by(0, "gpu-prover-0")]),
            ..ProofJobStatus::default()
        };
        let queued = decide_at(&spec, &never, None, at(0));
        assert_eq!(queued.status.progress.as_deref(), Some("0/4"));
    }
}
