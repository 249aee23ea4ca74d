//! What a job's state means to a caller awaiting it: pure functions over ProofJobs and
//! ProverPools (AwaitProof's answer and timings, queue positions, GetStatus's fleet view).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use proofpipe_crds::fit::ProverLimits;
use proofpipe_crds::{ASSIGNED_POD_LABEL, FilecoinProofKind, ProofJob, ProofJobPhase, ProverPool};
use proofpipe_model::queue::{self, QueueEntry};
use proofpipe_model::sizing::Fit;

use crate::error::GatewayError;
use crate::proto::await_proof_response::Status as AwaitStatus;
use crate::proto::{AwaitProofResponse, GpuStatus, ProofKind, QueueStatus};
use crate::submission::kind_name;

/// Where an awaited job stands.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Not finished: keep waiting.
    Pending,
    /// Finished (or gone): the answer.
    Done(AwaitProofResponse),
}

/// What the gateway knows of an awaited job.
#[derive(Clone, Copy, Debug)]
pub enum JobView<'a> {
    /// The job as last seen.
    Present(&'a ProofJob),
    /// Gone after it was seen unfinished: it was cancelled (deleted).
    Vanished,
}

/// The answer for `job_name` in `view`.
pub fn outcome(job_name: &str, view: JobView<'_>) -> Result<Outcome, GatewayError> {
    let job = match view {
        JobView::Present(job) => job,
        JobView::Vanished => return Ok(Outcome::Done(answer(job_name, AwaitStatus::Cancelled))),
    };
    if job.spec.filecoin.is_none() {
        return Err(GatewayError::NotFilecoin {
            job: job_name.to_owned(),
        });
    }
    let status = job.status.as_ref();
    let phase = status.and_then(|s| s.phase);
    match phase {
        Some(ProofJobPhase::Succeeded) => {
            let result = status
                .and_then(|s| s.filecoin.as_ref())
                .filter(|r| r.verified);
            let Some(result) = result else {
                return Err(GatewayError::BadProof {
                    job: job_name.to_owned(),
                    message: "no verified status.filecoin".into(),
                });
            };
            let proof = base64::engine::general_purpose::STANDARD
                .decode(&result.proof)
                .map_err(|e| GatewayError::BadProof {
                    job: job_name.to_owned(),
                    message: e.to_string(),
                })?;
            Ok(Outcome::Done(AwaitProofResponse {
                proof,
                ..with_timings(answer(job_name, AwaitStatus::Completed), job)
            }))
        }
        Some(ProofJobPhase::Failed) => {
            // The operator's message carries the prover's own words (an input it refused, the
            // last attempt's failure); the Failed condition's reason says which kind.
            let message = status
                .and_then(|s| s.message.clone())
                .or_else(|| status.and_then(|s| s.last_failure.as_ref().map(|f| f.message.clone())))
                .unwrap_or_else(|| "the job failed without a message".into());
            let reason = status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Failed" && c.status == "True"))
                .map(|c| format!("{}: ", c.reason))
                .unwrap_or_default();
            let message = format!("{reason}{message}");
            Ok(Outcome::Done(AwaitProofResponse {
                error_message: format!("{message} (kubectl describe proofjob {job_name})"),
                ..with_timings(answer(job_name, AwaitStatus::Failed), job)
            }))
        }
        // Deleted before it finished: cancelled, whoever deleted it.
        _ if job.metadata.deletion_timestamp.is_some() => {
            Ok(Outcome::Done(answer(job_name, AwaitStatus::Cancelled)))
        }
        _ => Ok(Outcome::Pending),
    }
}

/// The answer when the caller's `timeout_ms` passed first.
pub fn timed_out(job_name: &str) -> AwaitProofResponse {
    answer(job_name, AwaitStatus::Timeout)
}

fn answer(job_name: &str, status: AwaitStatus) -> AwaitProofResponse {
    AwaitProofResponse {
        job_id: job_name.to_owned(),
        status: status as i32,
        ..AwaitProofResponse::default()
    }
}

/// The timing fields from what the operator and the provers recorded:
/// - `queue_wait_ms`: creation to the first attempt's start;
/// - `total_ms`: creation to completion;
/// - `synthesis_ms`, `gpu_compute_ms`: the provers' mean seconds per partition in each stage,
///   times the partitions, at most the time the job spent on provers (first start to
///   completion). Partitions overlap in the pipeline (several synthesize at once, the GPU
///   stage takes the next while one finishes), and the provers do not record each stage's
///   wall time per job, so this is the stage's busy time bounded by the wall time it can have
///   taken: never more than `total_ms`;
/// - `srs_load_ms`: 0, the provers do not record parameter loading per job (a prover loads a
///   parameter set once and keeps it for every later job).
fn with_timings(mut response: AwaitProofResponse, job: &ProofJob) -> AwaitProofResponse {
    let created = job.metadata.creation_timestamp.as_ref();
    let status = job.status.as_ref();
    let millis = |from: Option<&Time>, to: Option<&Time>| match (from, to) {
        (Some(from), Some(to)) => {
            u64::try_from(to.0.as_millisecond() - from.0.as_millisecond()).unwrap_or(0)
        }
        _ => 0,
    };
    let started = status.and_then(|s| s.start_time.as_ref());
    let completed = status.and_then(|s| s.completion_time.as_ref());
    response.queue_wait_ms = millis(created, started);
    response.total_ms = millis(created, completed);
    if let Some(stages) = status.and_then(|s| s.stage_seconds.as_ref()) {
        let partitions = f64::from(job.spec.partition_count());
        let on_provers = match (started, completed) {
            (Some(_), Some(_)) => millis(started, completed),
            _ => u64::MAX,
        };
        let ms = |seconds: f64| {
            ((seconds * partitions * 1000.0).round().max(0.0) as u64).min(on_provers)
        };
        response.synthesis_ms = ms(stages.synthesis);
        response.gpu_compute_ms = ms(stages.gpu);
    }
    response
}

/// Jobs ahead of `job` in its pool's queue (0: next, or already on a prover). `job` need not
/// be among `jobs` yet (just created, not yet in the cache). Jobs the operator holds because
/// they cannot fit `pool`'s provers (ADR 0030) are not ahead of anyone.
pub fn queue_position(job: &ProofJob, pool: Option<&ProverPool>, jobs: &[Arc<ProofJob>]) -> u32 {
    if !job.is_waiting() {
        return 0;
    }
    let limits = pool.map(ProverLimits::of);
    let name = job.name_any();
    let others = jobs
        .iter()
        .map(Arc::as_ref)
        .filter(|j| j.name_any() != name && !is_held(j, limits.as_ref()));
    let order = queue::queue(&job.spec.pool, others.chain([job]));
    let ahead = order.iter().position(|j| j.name_any() == name).unwrap_or(0);
    u32::try_from(ahead).unwrap_or(u32::MAX)
}

/// How many of `pool_name`'s jobs wait for a prover (`--max-queued` counts these), held jobs
/// not counted: no prover of `pool` will take them, so they hold no prover's place.
pub fn waiting(pool_name: &str, pool: Option<&ProverPool>, jobs: &[Arc<ProofJob>]) -> usize {
    let limits = pool.map(ProverLimits::of);
    jobs.iter()
        .filter(|j| j.spec.pool == pool_name && j.is_waiting() && !is_held(j, limits.as_ref()))
        .count()
}

/// Whether the operator holds `job` out of its pool's queue: it cannot fit the pool's provers,
/// by the same rule the operator applies ([`ProverLimits::fit`]).
pub(crate) fn is_held(job: &ProofJob, limits: Option<&ProverLimits>) -> bool {
    limits.is_some_and(|limits| matches!(limits.fit(&job.spec), Fit::TooLarge(_)))
}

/// The seed engine's name for the kind of work a job does.
pub fn kind_of(job: &ProofJob) -> &'static str {
    match job.spec.filecoin.as_ref().map(|work| work.kind) {
        Some(FilecoinProofKind::PoRepC2) => kind_name(ProofKind::PorepSealCommit),
        Some(FilecoinProofKind::SnapDealsUpdate) => kind_name(ProofKind::SnapDealsUpdate),
        Some(FilecoinProofKind::WindowPoStPartition) => kind_name(ProofKind::WindowPostPartition),
        Some(FilecoinProofKind::WinningPoSt) => kind_name(ProofKind::WinningPost),
        None => "synthetic",
    }
}

/// The kinds GetStatus always lists a queue for, empty or not: those the gateway serves.
pub(crate) const SERVED_KINDS: &[ProofKind] = &[
    ProofKind::PorepSealCommit,
    ProofKind::SnapDealsUpdate,
    ProofKind::WindowPostPartition,
    ProofKind::WinningPost,
];

/// The fleet as GetStatus reports it.
#[derive(Debug, Default, PartialEq)]
pub struct Fleet {
    /// One entry per prover pod of the pool (each has one GPU in the chart's defaults).
    pub gpus: Vec<GpuStatus>,
    /// Per kind of work: jobs waiting for a prover and jobs on one.
    pub queues: Vec<QueueStatus>,
    /// Finished jobs of the pool still kept (`ttlSecondsAfterFinished`).
    pub succeeded: u64,
    pub failed: u64,
    /// The Filecoin parameter sets some prover keeps loaded, by registered proof.
    pub loaded_parameters: Vec<String>,
}

/// A pool the gateway routes to: its name, and its cached object if it exists.
pub type RoutedPool<'a> = (&'a str, Option<Arc<ProverPool>>);

/// The fleet of the gateway's pools from the cached jobs: their provers in the order given,
/// each kind's queue over all of them.
pub fn fleet(pools: &[RoutedPool<'_>], jobs: &[Arc<ProofJob>]) -> Fleet {
    let mut fleet = Fleet::default();
    let mut queues: BTreeMap<&'static str, (u32, u32)> = SERVED_KINDS
        .iter()
        .map(|&kind| (kind_name(kind), (0, 0)))
        .collect();
    let mut kinds: BTreeMap<String, &'static str> = BTreeMap::new();
    let mut loaded = std::collections::BTreeSet::new();
    for &(pool_name, ref pool) in pools {
        add_pool(
            &mut fleet,
            &mut queues,
            &mut kinds,
            &mut loaded,
            pool_name,
            pool.as_deref(),
            jobs,
        );
    }
    fleet.queues = queues
        .into_iter()
        .map(|(kind, (pending, in_progress))| QueueStatus {
            proof_kind: kind.to_owned(),
            pending,
            in_progress,
        })
        .collect();
    fleet.loaded_parameters = loaded.into_iter().collect();
    fleet
}

/// One pool's jobs and provers into the fleet's counts.
fn add_pool(
    fleet: &mut Fleet,
    queues: &mut BTreeMap<&'static str, (u32, u32)>,
    kinds: &mut BTreeMap<String, &'static str>,
    loaded: &mut std::collections::BTreeSet<String>,
    pool_name: &str,
    pool: Option<&ProverPool>,
    jobs: &[Arc<ProofJob>],
) {
    let limits = pool.map(ProverLimits::of);
    for job in jobs.iter().filter(|j| j.spec.pool == pool_name) {
        let kind = kind_of(job);
        kinds.insert(job.name_any(), kind);
        let phase = job.status.as_ref().and_then(|s| s.phase);
        let counts = queues.entry(kind).or_default();
        match phase {
            Some(ProofJobPhase::Succeeded) => fleet.succeeded += 1,
            Some(ProofJobPhase::Failed) => fleet.failed += 1,
            _ if job.is_waiting() && !is_held(job, limits.as_ref()) => counts.0 += 1,
            _ if job.labels().contains_key(ASSIGNED_POD_LABEL) => counts.1 += 1,
            _ => {}
        }
    }
    let provers = pool
        .and_then(|p| p.status.as_ref())
        .and_then(|s| s.provers.as_ref());
    for prover in provers.into_iter().flatten() {
        let ordinal = fleet.gpus.len();
        loaded.extend(prover.resident_parameters.iter().flatten().cloned());
        let devices = prover
            .gpu
            .as_ref()
            .map(|gpu| gpu.devices.as_slice())
            .unwrap_or_default();
        let bytes = |of: fn(&proofpipe_crds::GpuDeviceReport) -> i64| {
            devices
                .iter()
                .map(|d| u64::try_from(of(d)).unwrap_or(0))
                .sum::<u64>()
        };
        let current = prover.current_job.clone().unwrap_or_default();
        fleet.gpus.push(GpuStatus {
            ordinal: u32::try_from(ordinal).unwrap_or(u32::MAX),
            name: prover.pod.clone(),
            current_proof_kind: kinds.get(&current).copied().unwrap_or_default().to_owned(),
            current_job_id: current,
            // Every GPU of the prover pod; free as it was when the prover started (it keeps
            // the parameters' bases resident from its first job on).
            vram_total_bytes: bytes(|d| d.memory_bytes),
            vram_free_bytes: bytes(|d| d.free_bytes),
        });
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use proofpipe_crds::{FilecoinResult, ProofJobStatus, StageSeconds};

    use super::*;

    fn time(second: i64) -> Time {
        Time(Timestamp::from_second(1_800_000_000 + second).unwrap())
    }

    fn job(name: &str, priority: i32, created: i64) -> ProofJob {
        let mut job: ProofJob = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"pool": "gpu", "priority": priority, "filecoin": {
                "sealProof": "StackedDrg32GiBV1_1",
                "input": {"url": "s3://b/k", "sha256": "00".repeat(32)}}},
        }))
        .unwrap();
        job.metadata.creation_timestamp = Some(time(created));
        job
    }

    fn snap_job(name: &str, created: i64) -> ProofJob {
        let mut job: ProofJob = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"pool": "gpu", "filecoin": {
                "kind": "SnapDealsUpdate", "updateProof": "StackedDrg32GiBV1",
                "input": {"url": "s3://b/k", "sha256": "00".repeat(32)}}},
        }))
        .unwrap();
        job.metadata.creation_timestamp = Some(time(created));
        job
    }

    fn with_phase(mut job: ProofJob, phase: ProofJobPhase) -> ProofJob {
        job.status.get_or_insert_with(Default::default).phase = Some(phase);
        job
    }

    fn status_of(response: &AwaitProofResponse) -> AwaitStatus {
        AwaitStatus::try_from(response.status).unwrap()
    }

    #[test]
    fn a_succeeded_job_answers_its_proof_and_timings() {
        let mut done = job("a", 0, 0);
        done.status = Some(ProofJobStatus {
            phase: Some(ProofJobPhase::Succeeded),
            start_time: Some(time(2)),
            completion_time: Some(time(40)),
            stage_seconds: Some(StageSeconds {
                synthesis: 1.5,
                queue_wait: 0.1,
                gpu: 0.25,
                finalize: 0.01,
            }),
            filecoin: Some(FilecoinResult {
                proof: base64::engine::general_purpose::STANDARD.encode([7u8; 1920]),
                proof_bytes: 1920,
                verified: true,
                output_url: None,
                proved_by: "gpu-prover-0".into(),
            }),
            ..Default::default()
        });
        let Outcome::Done(response) = outcome("a", JobView::Present(&done)).unwrap() else {
            panic!("finished")
        };
        assert_eq!(status_of(&response), AwaitStatus::Completed);
        assert_eq!(response.proof, vec![7u8; 1920]);
        assert_eq!(response.queue_wait_ms, 2000);
        assert_eq!(response.total_ms, 40_000);
        // 10 partitions of a 32 GiB PoRep.
        assert_eq!(response.synthesis_ms, 15_000);
        assert_eq!(response.gpu_compute_ms, 2500);
        assert_eq!(response.srs_load_ms, 0);

        // Partitions synthesized side by side add up to more than the job's time on provers
        // (2 s to 40 s): the stage's time is never reported above that.
        done.status.as_mut().unwrap().stage_seconds = Some(StageSeconds {
            synthesis: 6.0,
            queue_wait: 0.1,
            gpu: 0.25,
            finalize: 0.01,
        });
        let Outcome::Done(response) = outcome("a", JobView::Present(&done)).unwrap() else {
            panic!("finished")
        };
        assert_eq!(response.synthesis_ms, 38_000);
        assert!(response.synthesis_ms <= response.total_ms);
        assert_eq!(response.gpu_compute_ms, 2500);
    }

    #[test]
    fn waiting_counts_the_pools_unassigned_unfinished_jobs() {
        let mut assigned = job("assigned", 0, 0);
        assigned
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(ASSIGNED_POD_LABEL.into(), "gpu-prover-0".into());
        let mut elsewhere = job("elsewhere", 0, 0);
        elsewhere.spec.pool = "cpu".into();
        let jobs: Vec<Arc<ProofJob>> = vec![
            Arc::new(job("queued", 0, 0)),
            Arc::new(snap_job("new", 1)),
            Arc::new(assigned),
            Arc::new(with_phase(job("done", 0, 0), ProofJobPhase::Succeeded)),
            Arc::new(elsewhere),
        ];
        assert_eq!(waiting("gpu", None, &jobs), 2);
    }

    #[test]
    fn a_failed_job_answers_why() {
        let mut failed = with_phase(job("a", 0, 0), ProofJobPhase::Failed);
        failed.status.as_mut().unwrap().message = Some("the input's SHA-256 is wrong".into());
        let Outcome::Done(response) = outcome("a", JobView::Present(&failed)).unwrap() else {
            panic!("finished")
        };
        assert_eq!(status_of(&response), AwaitStatus::Failed);
        assert!(response.error_message.contains("SHA-256"));
        assert!(response.proof.is_empty());
    }

    #[test]
    fn unfinished_jobs_are_pending_and_deleted_ones_cancelled() {
        for phase in [
            None,
            Some(ProofJobPhase::Queued),
            Some(ProofJobPhase::Running),
        ] {
            let mut j = job("a", 0, 0);
            if let Some(phase) = phase {
                j = with_phase(j, phase);
            }
            assert_eq!(
                outcome("a", JobView::Present(&j)).unwrap(),
                Outcome::Pending
            );
            j.metadata.deletion_timestamp = Some(time(5));
            let Outcome::Done(response) = outcome("a", JobView::Present(&j)).unwrap() else {
                panic!("being deleted")
            };
            assert_eq!(status_of(&response), AwaitStatus::Cancelled);
        }
        let Outcome::Done(response) = outcome("a", JobView::Vanished).unwrap() else {
            panic!("gone")
        };
        assert_eq!(status_of(&response), AwaitStatus::Cancelled);
    }

    #[test]
    fn a_success_without_a_verified_proof_is_not_completed() {
        let done = with_phase(job("a", 0, 0), ProofJobPhase::Succeeded);
        let error = outcome("a", JobView::Present(&done)).unwrap_err();
        assert_eq!(error.code(), tonic::Code::DataLoss);
    }

    #[test]
    fn synthetic_jobs_have_nothing_to_await() {
        let synthetic: ProofJob = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
            "metadata": {"name": "s"},
            "spec": {"pool": "gpu", "circuit": "mul-chain", "constraints": 4096, "partitions": 2},
        }))
        .unwrap();
        let error = outcome("s", JobView::Present(&synthetic)).unwrap_err();
        assert_eq!(error.code(), tonic::Code::FailedPrecondition);
    }

    #[test]
    fn queue_position_counts_the_jobs_served_first() {
        let jobs: Vec<Arc<ProofJob>> = vec![
            Arc::new(job("old-normal", 0, 0)),
            Arc::new(job("high", 100, 5)),
            Arc::new(with_phase(job("done", 100, 1), ProofJobPhase::Succeeded)),
        ];
        // A new NORMAL job waits behind both queued jobs; a CRITICAL one behind none.
        assert_eq!(queue_position(&job("new", 0, 10), None, &jobs), 2);
        assert_eq!(queue_position(&job("critical", 1000, 10), None, &jobs), 0);
        // A job already in the cache is not counted twice.
        assert_eq!(queue_position(&jobs[0], None, &jobs), 1);
        let mut assigned = job("assigned", 0, 10);
        assigned
            .labels_mut()
            .insert(ASSIGNED_POD_LABEL.into(), "gpu-prover-0".into());
        assert_eq!(queue_position(&assigned, None, &jobs), 0);
    }

    /// 32 GiB PoRep needs ~75.5 GiB of a prover, 32 GiB SnapDeals ~57.2 GiB: with 64 GiB
    /// provers the operator holds the PoReps (ADR 0030), and the gateway leaves them out.
    #[test]
    fn jobs_held_for_not_fitting_the_pool_are_not_in_its_queue() {
        let pool: ProverPool = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
            "metadata": {"name": "gpu"},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "prover", "resources": {"limits": {"memory": "64Gi"}}}]}}},
        }))
        .unwrap();
        let jobs: Vec<Arc<ProofJob>> = [
            job("porep-old", 0, 0),
            job("porep-high", 100, 1),
            snap_job("snap", 2),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        assert_eq!(
            waiting("gpu", None, &jobs),
            3,
            "no pool: nothing to judge by"
        );
        assert_eq!(waiting("gpu", Some(&pool), &jobs), 1);
        let new_snap = snap_job("snap-new", 3);
        assert_eq!(queue_position(&new_snap, None, &jobs), 3);
        assert_eq!(queue_position(&new_snap, Some(&pool), &jobs), 1);
        let pending: Vec<u32> = fleet(&[("gpu", Some(Arc::new(pool.clone())))], &jobs)
            .queues
            .iter()
            .map(|q| q.pending)
            .collect();
        assert_eq!(
            pending,
            vec![0, 1, 0, 0],
            "porep-c2, snap-update, window-post, winning-post"
        );
    }

    #[test]
    fn the_fleet_counts_queues_per_kind_and_lists_provers() {
        let mut running = with_phase(job("running", 0, 0), ProofJobPhase::Running);
        running
            .labels_mut()
            .insert(ASSIGNED_POD_LABEL.into(), "gpu-prover-0".into());
        let mut other_pool = job("elsewhere", 0, 0);
        other_pool.spec.pool = "cpu".into();
        let jobs: Vec<Arc<ProofJob>> = [
            running,
            job("queued-1", 0, 1),
            job("queued-2", 0, 2),
            with_phase(job("ok", 0, 0), ProofJobPhase::Succeeded),
            with_phase(job("bad", 0, 0), ProofJobPhase::Failed),
            other_pool,
            snap_job("snap-queued", 3),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let pool: ProverPool = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
            "metadata": {"name": "gpu"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "prover"}]}}},
            "status": {"provers": [
                {"pod": "gpu-prover-0", "phase": "Busy", "currentJob": "running",
                 "buffers": {"synthesizing": 0, "queued": 0, "gpu": 1, "finalizing": 0},
                 "gpu": {"backend": "cuda", "message": "CUDA on 1 GPU(s)", "devices": [
                     {"id": 0, "memoryBytes": 150_000_000_000_i64, "freeBytes": 149_000_000_000_i64,
                      "computeCapability": "9.0"}]},
                 "residentParameters": ["StackedDrg32GiBV1_1", "StackedDrg32GiBV1"],
                 "estimatedBytes": 0, "proofsCompleted": 3, "lastReport": "2027-01-15T08:00:00Z"},
                {"pod": "gpu-prover-1", "phase": "Idle",
                 "buffers": {"synthesizing": 0, "queued": 0, "gpu": 0, "finalizing": 0},
                 "estimatedBytes": 0, "proofsCompleted": 0, "lastReport": "2027-01-15T08:00:00Z"}
            ]}
        }))
        .unwrap();
        let fleet = fleet(&[("gpu", Some(Arc::new(pool.clone())))], &jobs);
        assert_eq!(
            fleet.queues,
            vec![
                QueueStatus {
                    proof_kind: "porep-c2".into(),
                    pending: 2,
                    in_progress: 1
                },
                QueueStatus {
                    proof_kind: "snap-update".into(),
                    pending: 1,
                    in_progress: 0
                },
                QueueStatus {
                    proof_kind: "window-post".into(),
                    pending: 0,
                    in_progress: 0
                },
                QueueStatus {
                    proof_kind: "winning-post".into(),
                    pending: 0,
                    in_progress: 0
                }
            ]
        );
        assert_eq!((fleet.succeeded, fleet.failed), (1, 1));
        assert_eq!(fleet.gpus.len(), 2);
        assert_eq!(fleet.gpus[0].current_job_id, "running");
        assert_eq!(fleet.gpus[0].current_proof_kind, "porep-c2");
        assert_eq!(
            (
                fleet.gpus[0].vram_total_bytes,
                fleet.gpus[0].vram_free_bytes
            ),
            (150_000_000_000, 149_000_000_000)
        );
        assert_eq!(fleet.gpus[1].vram_total_bytes, 0, "no GPU reported");
        assert_eq!(
            fleet.loaded_parameters,
            ["StackedDrg32GiBV1", "StackedDrg32GiBV1_1"]
        );
        assert_eq!(fleet.gpus[1].current_job_id, "");
        // No pool yet: empty queues of the kinds served, no GPUs.
        let empty = fleet_of_nothing();
        let kinds: Vec<&str> = empty.queues.iter().map(|q| q.proof_kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["porep-c2", "snap-update", "window-post", "winning-post"]
        );
        assert!(empty.queues.iter().all(|q| q.pending == 0));
        assert!(empty.gpus.is_empty());

        // Two pools (PoRep on "gpu", PoSt on "cpu"): both pools' provers, numbered in turn,
        // and each pool's jobs in their kinds' queues.
        let warm: ProverPool = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
            "metadata": {"name": "cpu"},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "prover"}]}}},
            "status": {"provers": [
                {"pod": "cpu-prover-0", "phase": "Idle",
                 "buffers": {"synthesizing": 0, "queued": 0, "gpu": 0, "finalizing": 0},
                 "residentParameters": ["StackedDrgWinning32GiBV1"],
                 "estimatedBytes": 0, "proofsCompleted": 0, "lastReport": "2027-01-15T08:00:00Z"}
            ]}
        }))
        .unwrap();
        let both = super::fleet(
            &[("cpu", Some(Arc::new(warm))), ("gpu", Some(Arc::new(pool)))],
            &jobs,
        );
        let names: Vec<_> = both
            .gpus
            .iter()
            .map(|g| (g.ordinal, g.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (0, "cpu-prover-0"),
                (1, "gpu-prover-0"),
                (2, "gpu-prover-1")
            ]
        );
        assert_eq!(
            both.queues[0].pending, 3,
            "the other pool's PoRep counts too"
        );
        assert_eq!(
            both.loaded_parameters,
            [
                "StackedDrg32GiBV1",
                "StackedDrg32GiBV1_1",
                "StackedDrgWinning32GiBV1"
            ]
        );
    }

    fn fleet_of_nothing() -> Fleet {
        fleet(&[("gpu", None)], &[])
    }
}
