//! The job lifecycle, decided from plain statuses: no cluster.
use proofpipe_crds::PartitionProof;

use super::*;
use crate::shared::prover_pods::PodHealth;

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
        does_not_fit: None,
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
        note.contains(
            "all 16 partitions proved; the 3072-byte proof passed verify_empty_sector_update_proof"
        ),
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
        does_not_fit: None,
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
fn a_report_whose_label_already_went_is_still_recorded_and_the_job_not_offered_before() {
    // The operator removes the label, then writes the status that records why. A status
    // write that lost a race (its resourceVersion moved) or an operator that stopped between
    // the two leaves the label gone and the status naming the pod with its report.
    let spec = spec();
    let mut status = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
    status.prover_failure = Some(report("gpu-prover-0", 1, "GpuLost", false));
    let decision = decide_at(&spec, &status, None, at(4));
    assert_eq!(decision.status.phase, Some(ProofJobPhase::Queued));
    assert_eq!(decision.status.pod, None);
    assert_eq!(decision.status.failed, None, "a lost GPU is not charged");
    let last = decision.status.last_failure.as_ref().unwrap();
    assert_eq!(
        (last.reason.as_str(), last.pod.as_str()),
        ("GpuLost", "gpu-prover-0")
    );
    assert!(
        matches!(&decision.event, Some(JobEvent::Requeued { pod, .. }) if pod == "gpu-prover-0"),
        "{:?}",
        decision.event
    );

    // Until that status lands the job is not in the queue, so no prover takes it first.
    let mut job = crate::shared::queue::tests::job("j", 0, 0);
    job.status = Some(status);
    assert!(
        !crate::shared::queue::is_queued(&job),
        "still leaving its pod"
    );
    job.status = Some(decision.status);
    assert!(
        crate::shared::queue::is_queued(&job),
        "queued once recorded"
    );
}

#[test]
fn a_prover_that_lost_its_gpu_hands_the_job_back_without_charging_it() {
    let spec = spec(); // backoffLimit 3
    let mut status = assigned(&spec, &ProofJobStatus::default(), "gpu-prover-0", at(0));
    status.proofs = Some(vec![proof(0, true)]);
    status.prover_failure = Some(report("gpu-prover-0", 1, "GpuLost", false));
    let ready = Some(("gpu-prover-0", Some(PodHealth::Ready)));
    let decision = decide_at(&spec, &status, ready, at(4));
    assert_eq!(decision.status.phase, Some(ProofJobPhase::Queued));
    assert!(decision.unassign);
    assert_eq!(decision.status.failed, None, "not charged");
    assert_eq!(decision.status.next_attempt_after, None, "no retry delay");
    assert_eq!(
        decision.status.partitions_done,
        Some(1),
        "its proofs are kept"
    );
    let last = decision.status.last_failure.as_ref().unwrap();
    assert_eq!((last.reason.as_str(), last.attempt), ("GpuLost", 1));
    assert_eq!(
        last.message,
        "prover gpu-prover-0 lost its GPU during attempt 1: GpuLost happened"
    );
    let Some(JobEvent::Requeued { pod, note }) = &decision.event else {
        panic!("{:?}", decision.event)
    };
    assert_eq!(pod, "gpu-prover-0");
    assert!(
        note.contains("not counted against backoffLimit (still 0 failure(s) of at most 4)"),
        "{note}"
    );

    // With PROOFPIPE_REQUIRE_GPU the prover exits after its report: the same disruption,
    // with how the pod ended, still not charged.
    let exited = decide(&JobObservation {
        spec: &spec,
        generation: Some(1),
        status: &status,
        pool_exists: true,
        does_not_fit: None,
        assignment: Some(("gpu-prover-0", Some(PodHealth::Terminated))),
        termination: Some("Error (exit 1)"),
        progress: None,
        retry_delay: RETRY_DELAY,
        now: at(4),
    });
    assert_eq!(exited.status.failed, None);
    assert!(
        exited
            .status
            .last_failure
            .as_ref()
            .unwrap()
            .message
            .ends_with(". The prover ended with Error (exit 1)"),
        "{:?}",
        exited.status.last_failure
    );

    // Attempt 2 on another prover: a GPU lost again is no longer an accident of the
    // hardware, so it counts (with the usual retry delay).
    let requeued = decision.status;
    let mut second = assigned(&spec, &requeued, "gpu-prover-1", at(5));
    assert_eq!(second.attempts, Some(2));
    second.prover_failure = Some(report("gpu-prover-1", 2, "GpuLost", false));
    let decision = decide_at(
        &spec,
        &second,
        Some(("gpu-prover-1", Some(PodHealth::Ready))),
        at(6),
    );
    assert_eq!(decision.status.phase, Some(ProofJobPhase::Queued));
    assert_eq!(decision.status.failed, Some(1));
    assert!(decision.status.next_attempt_after.is_some());
    let last = decision.status.last_failure.as_ref().unwrap();
    assert!(
        last.message
            .contains("attempt 1 lost its GPU too (on gpu-prover-0), so this one counts"),
        "{last:?}"
    );
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
            does_not_fit: None,
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
        does_not_fit: None,
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
fn a_job_that_cannot_fit_is_held_with_one_event_and_released_when_it_can() {
    let spec = spec();
    let held_at = |status: &ProofJobStatus, why: Option<&str>, now| {
        decide(&JobObservation {
            spec: &spec,
            generation: Some(1),
            status,
            pool_exists: true,
            does_not_fit: why.map(str::to_owned),
            assignment: None,
            termination: None,
            progress: None,
            retry_delay: RETRY_DELAY,
            now,
        })
    };
    let why = "a StackedDrg32GiBV1_1 prover needs a memory limit of at least 64.6 GiB";
    let held = held_at(&ProofJobStatus::default(), Some(why), at(0));
    assert_eq!(held.status.phase, Some(ProofJobPhase::Pending));
    assert_eq!(
        condition(&held.status, "Assigned"),
        Some(("False", "DoesNotFit"))
    );
    assert_eq!(
        held.status.message.as_deref(),
        Some(format!("held: {why}").as_str())
    );
    assert_eq!(
        held.event,
        Some(JobEvent::Held {
            note: format!("held: {why}")
        })
    );
    assert!(!held.unassign);

    // Still held later: nothing to write, no second Event.
    let again = held_at(&held.status, Some(why), at(60));
    assert_eq!(again.status, held.status);
    assert_eq!(again.event, None);

    // The pool's provers grew: the job joins the queue.
    let released = held_at(&held.status, None, at(120));
    assert_eq!(released.status.phase, Some(ProofJobPhase::Queued));
    assert_eq!(
        condition(&released.status, "Assigned"),
        Some(("False", "Queued"))
    );
    assert_eq!(released.event, None);
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
        does_not_fit: None,
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
        does_not_fit: None,
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
