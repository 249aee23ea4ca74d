//! The ProofJob lifecycle as a pure function: (spec, current status, the assigned pod as
//! observed, now) -> the status the operator writes and what it must do besides.
//!
//! The assigned-pod label is the truth about assignment (the daemon acts on it);
//! `status.pod` mirrors it. A label without a matching `status.pod` is an assignment not yet
//! recorded (the operator stopped between the two writes), so it is recorded here: this is
//! also how the pool reconciler builds the status of a job it has just assigned.
//!
//! [`decide`] is here; below it, with no way back up: `failure` (a failed attempt),
//! `phase` (setting the phase and conditions) and `decision` (the types all of them
//! share).

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use proofpipe_crds::{ProofJobPhase, ProofJobSpec, ProofJobStatus, ProverFailure};

use crate::conditions::DesiredCondition;
pub use decision::{FailureReason, JobDecision, JobEvent, JobObservation, ProverProgress};
pub use failure::{MAX_RETRY_DELAY, RETRY_DELAY, retry_delay};
use failure::{lost, reported};
pub use phase::DOES_NOT_FIT;
use phase::{add_condition, fail, finish, finished, set_phase, unchanged, until, waiting};

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
/// assigned to (the model's rule, shared with the provers).
pub fn verified_partitions(status: &ProofJobStatus, partitions: i32) -> i32 {
    let proved = status.proved_partitions(u32::try_from(partitions).unwrap_or(0));
    i32::try_from(proved.len()).unwrap_or(i32::MAX)
}

/// Slack beyond the deadline before the operator calls a prover stalled: the progress time
/// is reported to within 30 s, and the prover's own watchdog should act first.
const STALL_SLACK: Duration = Duration::from_secs(60);

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

    // The label goes before the status that records why (the operator stopped between the
    // two writes, or the status write lost a race): the attempt's report is still to record.
    let assignment = observation.assignment.or_else(|| {
        current
            .pod
            .as_deref()
            .filter(|pod| this_attempts_report(current, pod).is_some())
            .map(|pod| (pod, None))
    });
    let report = assignment.and_then(|(pod, _)| this_attempts_report(current, pod));
    let mut decision = match assignment {
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

/// The assigned prover's failure report of the current attempt, if it made one.
fn this_attempts_report<'a>(status: &'a ProofJobStatus, pod: &str) -> Option<&'a ProverFailure> {
    status.prover_failure.as_ref().filter(|report| {
        report.pod == pod
            && status.pod.as_deref() == Some(pod)
            && Some(report.attempt) == status.attempts
    })
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

/// `startTime + activeDeadlineSeconds`, once the job has started and if it has a deadline.
fn deadline(spec: &ProofJobSpec, status: &ProofJobStatus) -> Option<Timestamp> {
    let seconds = spec.active_deadline_seconds?;
    let start = status.start_time.as_ref()?.0;
    start.checked_add(SignedDuration::from_secs(seconds)).ok()
}

mod decision;
mod failure;
mod phase;
#[cfg(test)]
mod tests;
