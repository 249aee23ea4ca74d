//! What the gateway's metrics show, from its caches: pure, so each figure is tested on plain
//! jobs and pools.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use proofpipe_crds::fit::ProverLimits;
use proofpipe_crds::{ProofJob, ProofJobPhase};
use proofpipe_model::queue::QueueEntry;

use crate::outcome::{RoutedPool, SERVED_KINDS, is_held, kind_of};
use crate::submission::kind_name;

/// One pool's queue of one kind, now.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueGauge {
    pub pool: String,
    pub kind: &'static str,
    /// Jobs waiting for a prover (held jobs, which no prover of the pool can fit, not counted).
    pub queued: usize,
    /// Seconds since the oldest of them was created; 0 when none waits.
    pub oldest_seconds: f64,
}

/// Every kind's queue in each of `pools` (by name, with the cached pool if it exists) at
/// `now`: a gauge per pool and kind, zeros included, so an alert on a kind's wait sees the
/// series before the first job.
pub fn queue_gauges(
    pools: &[RoutedPool<'_>],
    jobs: &[Arc<ProofJob>],
    now: &Time,
) -> Vec<QueueGauge> {
    let mut gauges = Vec::new();
    for &(pool_name, ref pool) in pools {
        let limits = pool.as_deref().map(ProverLimits::of);
        for kind in SERVED_KINDS.iter().copied().map(kind_name) {
            let waiting = jobs.iter().filter(|job| {
                job.spec.pool == pool_name
                    && kind_of(job) == kind
                    && job.is_waiting()
                    && !is_held(job, limits.as_ref())
            });
            let (queued, oldest) = waiting.fold((0, 0.0_f64), |(count, oldest), job| {
                let age = job
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map_or(0.0, |created| seconds_between(created, now));
                (count + 1, oldest.max(age))
            });
            gauges.push(QueueGauge {
                pool: pool_name.to_owned(),
                kind,
                queued,
                oldest_seconds: oldest,
            });
        }
    }
    gauges
}

/// A finished job, as the proof-time histograms take it.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedJob {
    pub kind: &'static str,
    pub succeeded: bool,
    /// Created to started on a prover (its last attempt's start).
    pub queue_wait_seconds: Option<f64>,
    /// Started to finished.
    pub proving_seconds: Option<f64>,
    /// Created to finished: what the caller waited, submission to proof.
    pub total_seconds: Option<f64>,
}

/// `job`'s times if it is finished; a time whose two ends the job does not record is `None`.
pub fn finished_job(job: &ProofJob) -> Option<FinishedJob> {
    let status = job.status.as_ref()?;
    let succeeded = match status.phase? {
        ProofJobPhase::Succeeded => true,
        ProofJobPhase::Failed => false,
        _ => return None,
    };
    let created = job.metadata.creation_timestamp.as_ref();
    let started = status.start_time.as_ref();
    let completed = status.completion_time.as_ref();
    let between = |from: Option<&Time>, to: Option<&Time>| Some(seconds_between(from?, to?));
    Some(FinishedJob {
        kind: kind_of(job),
        succeeded,
        queue_wait_seconds: between(created, started),
        proving_seconds: between(started, completed),
        total_seconds: between(created, completed),
    })
}

/// Seconds from `from` to `to`, 0 if `to` is earlier (clocks of different writers).
fn seconds_between(from: &Time, to: &Time) -> f64 {
    let nanos = to.0.as_nanosecond() - from.0.as_nanosecond();
    (nanos.max(0) as f64) / 1e9
}

#[cfg(test)]
mod tests {
    use k8s_openapi::jiff::Timestamp;
    use kube::ResourceExt;

    use super::*;

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(1_800_000_000 + second).unwrap())
    }

    fn job(name: &str, pool: &str, kind: &str, created: i64) -> ProofJob {
        let work = match kind {
            "WinningPoSt" => {
                serde_json::json!({"kind": kind, "postProof": "StackedDrgWinning32GiBV1"})
            }
            _ => serde_json::json!({"sealProof": "StackedDrg32GiBV1_1"}),
        };
        let mut filecoin = work;
        filecoin["input"] = serde_json::json!({"url": "s3://b/k", "sha256": "00".repeat(32)});
        let mut job: ProofJob = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"pool": pool, "filecoin": filecoin},
        }))
        .unwrap();
        job.metadata.creation_timestamp = Some(at(created));
        job
    }

    #[test]
    fn queues_count_waiting_jobs_per_pool_and_kind_with_the_oldest_wait() {
        let mut assigned = job("on-a-prover", "warm", "WinningPoSt", 0);
        assigned.labels_mut().insert(
            proofpipe_crds::ASSIGNED_POD_LABEL.into(),
            "warm-prover-0".into(),
        );
        let jobs: Vec<Arc<ProofJob>> = [
            assigned,
            job("w1", "warm", "WinningPoSt", 10),
            job("w2", "warm", "WinningPoSt", 40),
            job("p1", "gpu", "PoRepC2", 5),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let gauges = queue_gauges(&[("warm", None), ("gpu", None)], &jobs, &at(100));
        assert_eq!(gauges.len(), 8, "4 kinds in each of 2 pools");
        let find = |pool: &str, kind: &str| {
            gauges
                .iter()
                .find(|g| g.pool == pool && g.kind == kind)
                .map(|g| (g.queued, g.oldest_seconds))
                .unwrap()
        };
        assert_eq!(
            find("warm", "winning-post"),
            (2, 90.0),
            "the assigned one is not waiting"
        );
        assert_eq!(find("gpu", "porep-c2"), (1, 95.0));
        assert_eq!(find("gpu", "winning-post"), (0, 0.0));
        assert_eq!(find("warm", "porep-c2"), (0, 0.0));
    }

    #[test]
    fn a_finished_job_s_times_come_from_its_timestamps() {
        let mut done = job("done", "gpu", "WinningPoSt", 0);
        let status = done.status.get_or_insert_with(Default::default);
        status.phase = Some(ProofJobPhase::Succeeded);
        status.start_time = Some(at(3));
        status.completion_time = Some(at(5));
        assert_eq!(
            finished_job(&done),
            Some(FinishedJob {
                kind: "winning-post",
                succeeded: true,
                queue_wait_seconds: Some(3.0),
                proving_seconds: Some(2.0),
                total_seconds: Some(5.0),
            })
        );
        let mut failed = job("failed", "gpu", "PoRepC2", 0);
        failed.status.get_or_insert_with(Default::default).phase = Some(ProofJobPhase::Failed);
        let failed = finished_job(&failed).unwrap();
        assert!(!failed.succeeded);
        assert_eq!(failed.proving_seconds, None, "never started");
        let running = job("running", "gpu", "PoRepC2", 0);
        assert_eq!(finished_job(&running), None);
    }
}
