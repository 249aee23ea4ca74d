//! The gateway's Prometheus metrics: served on `/metrics` and returned by `GetMetrics`.

use std::time::Instant;

use prometheus::{
    Encoder, GaugeVec, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use tonic::Code;

use crate::observe::{FinishedJob, QueueGauge};

/// Buckets of a proof's time in seconds, per stage: from a 2 KiB PoSt (well under a second)
/// to a 64 GiB PoRep queued behind others (hours).
const PROOF_SECONDS_BUCKETS: &[f64] = &[
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0,
    3600.0, 7200.0,
];

#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    request_seconds: HistogramVec,
    /// Input bytes (C1 outputs, SnapDeals inputs) stored for new jobs.
    pub input_bytes: IntCounter,
    /// Jobs created (a repeated request id creates none).
    pub jobs_created: IntCounter,
    /// Submissions answered with an existing job (the same request id again).
    pub duplicate_submissions: IntCounter,
    /// New attempts of a request id that already had a job, by why (`attempts::Reason`).
    pub new_attempts: IntCounterVec,
    /// Submissions refused because `--max-queued` jobs were waiting, by pool.
    pub refused_queue_full: IntCounterVec,
    /// Jobs waiting for a prover, by pool and kind (set at each scrape).
    queued_jobs: IntGaugeVec,
    /// How long the oldest waiting job has waited, by pool and kind (set at each scrape).
    oldest_queued_seconds: GaugeVec,
    /// Finished jobs' time, by kind and stage (queue_wait, proving, total).
    proof_seconds: HistogramVec,
    /// Jobs seen finishing, by kind and outcome.
    jobs_finished: IntCounterVec,
    /// Callers waiting in AwaitProof or Prove now.
    pub awaiting: IntGauge,
    /// Inputs removed by the sweep because their job was gone.
    pub inputs_swept: IntCounter,
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new_custom(Some("proofpipe_gateway".into()), None)?;
        let requests = IntCounterVec::new(
            Opts::new("requests_total", "gRPC calls by method and status code"),
            &["method", "code"],
        )?;
        let request_seconds = HistogramVec::new(
            HistogramOpts::new("request_duration_seconds", "Time to answer a gRPC call").buckets(
                vec![
                    0.005, 0.025, 0.1, 0.5, 2.5, 10.0, 60.0, 300.0, 1800.0, 7200.0,
                ],
            ),
            &["method"],
        )?;
        let input_bytes = IntCounter::new(
            "input_bytes_total",
            "Input bytes (C1 outputs, SnapDeals inputs) stored in the artifact store for new jobs",
        )?;
        let jobs_created = IntCounter::new("jobs_created_total", "ProofJobs created")?;
        let duplicate_submissions = IntCounter::new(
            "duplicate_submissions_total",
            "Submissions whose request id already had a job (answered with that job)",
        )?;
        let new_attempts = IntCounterVec::new(
            Opts::new(
                "new_attempts_total",
                "New attempts of a request id that had a job, by reason (previous_failed, \
                 previous_cancelled, other_work)",
            ),
            &["reason"],
        )?;
        let refused_queue_full = IntCounterVec::new(
            Opts::new(
                "refused_queue_full_total",
                "Submissions refused with RESOURCE_EXHAUSTED because --max-queued jobs of their \
                 pool were waiting",
            ),
            &["pool"],
        )?;
        let queued_jobs = IntGaugeVec::new(
            Opts::new(
                "queued_jobs",
                "Jobs waiting for a prover (jobs no prover of the pool can fit not counted), by \
                 pool and kind",
            ),
            &["pool", "kind"],
        )?;
        let oldest_queued_seconds = GaugeVec::new(
            Opts::new(
                "oldest_queued_seconds",
                "How long the oldest job waiting for a prover has waited since it was created, \
                 by pool and kind; 0 when none waits",
            ),
            &["pool", "kind"],
        )?;
        let proof_seconds = HistogramVec::new(
            HistogramOpts::new(
                "proof_seconds",
                "Time of each proof this gateway saw finish, by kind and stage: queue_wait \
                 (created to started on a prover), proving (started to finished), total",
            )
            .buckets(PROOF_SECONDS_BUCKETS.to_vec()),
            &["kind", "stage"],
        )?;
        let jobs_finished = IntCounterVec::new(
            Opts::new(
                "jobs_finished_total",
                "Jobs this gateway saw finish, by kind and outcome (succeeded, failed)",
            ),
            &["kind", "outcome"],
        )?;
        let awaiting = IntGauge::new("awaiting", "Callers waiting in AwaitProof or Prove")?;
        let inputs_swept = IntCounter::new(
            "inputs_swept_total",
            "Stored inputs removed because their job was gone",
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(request_seconds.clone()))?;
        registry.register(Box::new(input_bytes.clone()))?;
        registry.register(Box::new(jobs_created.clone()))?;
        registry.register(Box::new(duplicate_submissions.clone()))?;
        registry.register(Box::new(new_attempts.clone()))?;
        registry.register(Box::new(refused_queue_full.clone()))?;
        registry.register(Box::new(awaiting.clone()))?;
        registry.register(Box::new(inputs_swept.clone()))?;
        registry.register(Box::new(queued_jobs.clone()))?;
        registry.register(Box::new(oldest_queued_seconds.clone()))?;
        registry.register(Box::new(proof_seconds.clone()))?;
        registry.register(Box::new(jobs_finished.clone()))?;
        Ok(Self {
            registry,
            requests,
            request_seconds,
            input_bytes,
            jobs_created,
            duplicate_submissions,
            new_attempts,
            refused_queue_full,
            queued_jobs,
            oldest_queued_seconds,
            proof_seconds,
            jobs_finished,
            awaiting,
            inputs_swept,
        })
    }

    /// The queue gauges as they are now (every pool and kind given, zeros included).
    pub fn set_queues(&self, queues: &[QueueGauge]) {
        for queue in queues {
            let labels = [queue.pool.as_str(), queue.kind];
            self.queued_jobs
                .with_label_values(&labels)
                .set(i64::try_from(queue.queued).unwrap_or(i64::MAX));
            self.oldest_queued_seconds
                .with_label_values(&labels)
                .set(queue.oldest_seconds);
        }
    }

    /// A job seen finishing: its outcome, and its stages' times when it succeeded.
    pub fn job_finished(&self, job: &FinishedJob) {
        let outcome = if job.succeeded { "succeeded" } else { "failed" };
        self.jobs_finished
            .with_label_values(&[job.kind, outcome])
            .inc();
        if !job.succeeded {
            return;
        }
        for (stage, seconds) in [
            ("queue_wait", job.queue_wait_seconds),
            ("proving", job.proving_seconds),
            ("total", job.total_seconds),
        ] {
            if let Some(seconds) = seconds {
                self.proof_seconds
                    .with_label_values(&[job.kind, stage])
                    .observe(seconds);
            }
        }
    }

    /// Counts a finished call of `method`.
    pub fn observe(&self, method: &str, code: Code, started: Instant) {
        self.requests
            .with_label_values(&[method, &format!("{code:?}")])
            .inc();
        self.request_seconds
            .with_label_values(&[method])
            .observe(started.elapsed().as_secs_f64());
    }

    /// Every metric in Prometheus' text format.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        // Encoding into a Vec cannot fail for valid metrics.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Counts `awaiting` up while a value of it lives.
pub struct AwaitingGuard(IntGauge);

impl AwaitingGuard {
    pub fn new(gauge: &IntGauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for AwaitingGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_by_method_and_code() {
        let metrics = Metrics::new().unwrap();
        metrics.observe("SubmitProof", Code::Ok, Instant::now());
        metrics.observe("SubmitProof", Code::InvalidArgument, Instant::now());
        {
            let _waiting = AwaitingGuard::new(&metrics.awaiting);
            assert_eq!(metrics.awaiting.get(), 1);
        }
        assert_eq!(metrics.awaiting.get(), 0);
        let text = metrics.render();
        assert!(text.contains(
            r#"proofpipe_gateway_requests_total{code="InvalidArgument",method="SubmitProof"} 1"#
        ));
        assert!(text.contains("proofpipe_gateway_request_duration_seconds_bucket"));
    }

    #[test]
    fn finished_jobs_and_queues_are_shown_by_kind() {
        let metrics = Metrics::new().unwrap();
        metrics.job_finished(&FinishedJob {
            kind: "winning-post",
            succeeded: true,
            queue_wait_seconds: Some(0.2),
            proving_seconds: Some(0.4),
            total_seconds: Some(0.6),
        });
        metrics.job_finished(&FinishedJob {
            kind: "porep-c2",
            succeeded: false,
            queue_wait_seconds: Some(1.0),
            proving_seconds: None,
            total_seconds: None,
        });
        metrics.set_queues(&[QueueGauge {
            pool: "warm".into(),
            kind: "window-post",
            queued: 2,
            oldest_seconds: 42.5,
        }]);
        let text = metrics.render();
        for line in [
            r#"proofpipe_gateway_proof_seconds_bucket{kind="winning-post",stage="proving",le="0.5"} 1"#,
            r#"proofpipe_gateway_proof_seconds_count{kind="winning-post",stage="total"} 1"#,
            r#"proofpipe_gateway_jobs_finished_total{kind="porep-c2",outcome="failed"} 1"#,
            r#"proofpipe_gateway_queued_jobs{kind="window-post",pool="warm"} 2"#,
            r#"proofpipe_gateway_oldest_queued_seconds{kind="window-post",pool="warm"} 42.5"#,
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
        assert!(
            !text.contains(r#"proof_seconds_count{kind="porep-c2""#),
            "a failed job's time is no proof's time"
        );
    }
}
