//! The operator's Prometheus metrics.

use std::time::Instant;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

/// Every metric, registered in one registry served on `/metrics`.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    reconciles: IntCounterVec,
    reconcile_failures: IntCounterVec,
    reconcile_duration: HistogramVec,
    queue_depth: IntGaugeVec,
    queued_partitions: IntGaugeVec,
    outdated_provers: IntGaugeVec,
    ready_provers: IntGaugeVec,
    pub jobs_assigned: IntCounter,
    pub jobs_requeued: IntCounter,
    /// Requests the operator sent to the API server, by verb and resource: its load on a
    /// shared control plane (counted by [`crate::runtime::api_metrics`]).
    pub api_requests: IntCounterVec,
    /// Seconds from a job's creation to its first assignment.
    pub queue_wait: HistogramVec,
    /// Seconds from a job's creation to its completion, by outcome (Succeeded, Failed).
    pub time_to_proof: HistogramVec,
    /// ProofJobs by namespace and phase, from the operator's cache (set at each scrape).
    jobs: IntGaugeVec,
}

/// How a reconcile ended, as the `outcome` label of `reconciles_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It wrote something.
    Applied,
    /// Everything already matched.
    Unchanged,
    /// A write lost an optimistic-concurrency race; retried soon.
    Conflict,
    /// It failed (or was cancelled).
    Failed,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::Unchanged => "unchanged",
            Self::Conflict => "conflict",
            Self::Failed => "failed",
        }
    }
}

impl Metrics {
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new_custom(Some("proofpipe_operator".into()), None)?;
        let reconciles = IntCounterVec::new(
            Opts::new("reconciles_total", "Reconciles by kind and outcome"),
            &["kind", "outcome"],
        )?;
        let reconcile_failures = IntCounterVec::new(
            Opts::new(
                "reconcile_failures_total",
                "Reconciles that returned an error, by kind",
            ),
            &["kind"],
        )?;
        let reconcile_duration = HistogramVec::new(
            HistogramOpts::new("reconcile_duration_seconds", "Time spent in one reconcile")
                .buckets(vec![
                    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                ]),
            &["kind"],
        )?;
        let queue_depth = IntGaugeVec::new(
            Opts::new("queue_depth", "ProofJobs queued on a pool"),
            &["namespace", "pool"],
        )?;
        let queued_partitions = IntGaugeVec::new(
            Opts::new(
                "queued_partitions",
                "Partitions of the ProofJobs queued on a pool: what HPA or KEDA scale a pool on \
                 when spec.autoscaling is unset",
            ),
            &["namespace", "pool"],
        )?;
        let outdated_provers = IntGaugeVec::new(
            Opts::new(
                "outdated_provers",
                "Prover pods of a pool still on an earlier template: nonzero while a template \
                 change rolls out; stuck above zero means a roll waits (see the pool's \
                 ProversUpToDate condition)",
            ),
            &["namespace", "pool"],
        )?;
        let ready_provers = IntGaugeVec::new(
            Opts::new(
                "ready_provers",
                "Prover pods of a pool that are Ready (status.readyReplicas): with queue_depth, \
                 whether queued jobs can be assigned at all",
            ),
            &["namespace", "pool"],
        )?;
        let jobs_assigned =
            IntCounter::new("jobs_assigned_total", "ProofJobs assigned to a prover pod")?;
        let jobs_requeued = IntCounter::new(
            "jobs_requeued_total",
            "ProofJobs requeued after losing their prover pod",
        )?;
        let api_requests = IntCounterVec::new(
            Opts::new(
                "api_requests_total",
                "Requests sent to the Kubernetes API server, by verb and resource",
            ),
            &["verb", "resource"],
        )?;
        // Proofs take seconds to hours; queues, milliseconds to hours.
        let long_buckets = vec![
            0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 14400.0,
        ];
        let queue_wait = HistogramVec::new(
            HistogramOpts::new(
                "job_queue_wait_seconds",
                "Seconds from a ProofJob's creation to its first assignment",
            )
            .buckets(long_buckets.clone()),
            &["namespace", "pool"],
        )?;
        let time_to_proof = HistogramVec::new(
            HistogramOpts::new(
                "job_duration_seconds",
                "Seconds from a ProofJob's creation to its completion, by phase reached",
            )
            .buckets(long_buckets),
            &["namespace", "pool", "phase"],
        )?;
        let jobs = IntGaugeVec::new(
            Opts::new("jobs", "ProofJobs by namespace and phase"),
            &["namespace", "phase"],
        )?;
        registry.register(Box::new(api_requests.clone()))?;
        registry.register(Box::new(queue_wait.clone()))?;
        registry.register(Box::new(time_to_proof.clone()))?;
        registry.register(Box::new(jobs.clone()))?;
        registry.register(Box::new(reconciles.clone()))?;
        registry.register(Box::new(reconcile_failures.clone()))?;
        registry.register(Box::new(reconcile_duration.clone()))?;
        registry.register(Box::new(queue_depth.clone()))?;
        registry.register(Box::new(queued_partitions.clone()))?;
        registry.register(Box::new(outdated_provers.clone()))?;
        registry.register(Box::new(ready_provers.clone()))?;
        registry.register(Box::new(jobs_assigned.clone()))?;
        registry.register(Box::new(jobs_requeued.clone()))?;
        Ok(Self {
            registry,
            reconciles,
            reconcile_failures,
            reconcile_duration,
            queue_depth,
            queued_partitions,
            outdated_provers,
            ready_provers,
            jobs_assigned,
            jobs_requeued,
            api_requests,
            queue_wait,
            time_to_proof,
            jobs,
        })
    }

    /// Starts timing a reconcile of `kind`; the guard records it when dropped.
    pub fn reconcile(&self, kind: &'static str) -> ReconcileGuard<'_> {
        ReconcileGuard {
            metrics: self,
            kind,
            started: Instant::now(),
            outcome: Outcome::Failed,
        }
    }

    /// The jobs and partitions still queued on `pool` after a reconcile's assignments.
    pub fn set_queue_depth(&self, namespace: &str, pool: &str, jobs: usize, partitions: u64) {
        self.queue_depth
            .with_label_values(&[namespace, pool])
            .set(i64::try_from(jobs).unwrap_or(i64::MAX));
        self.queued_partitions
            .with_label_values(&[namespace, pool])
            .set(i64::try_from(partitions).unwrap_or(i64::MAX));
    }

    /// The prover pods of `pool` not (yet) on its current template.
    pub fn set_outdated_provers(&self, namespace: &str, pool: &str, pods: usize) {
        self.outdated_provers
            .with_label_values(&[namespace, pool])
            .set(i64::try_from(pods).unwrap_or(i64::MAX));
    }

    /// The Ready prover pods of `pool`, as its status reports them.
    pub fn set_ready_provers(&self, namespace: &str, pool: &str, pods: i32) {
        self.ready_provers
            .with_label_values(&[namespace, pool])
            .set(i64::from(pods));
    }

    /// Makes the pool's job-duration series exist, at 0, before its first job ends: a
    /// series born at 1 shows no `increase()`, so the chart's ProofpipeJobFailed alert
    /// would miss a pool's first failure.
    pub fn pool_seen(&self, namespace: &str, pool: &str) {
        for phase in ["Succeeded", "Failed"] {
            self.time_to_proof
                .with_label_values(&[namespace, pool, phase]);
        }
    }

    /// Forgets a deleted pool's series: its gauges, and its job histograms too, so pools
    /// that come and go do not pile up series.
    pub fn forget_pool(&self, namespace: &str, pool: &str) {
        // An error only means the pool had no gauge yet.
        let _ = self.queue_depth.remove_label_values(&[namespace, pool]);
        let _ = self
            .queued_partitions
            .remove_label_values(&[namespace, pool]);
        let _ = self
            .outdated_provers
            .remove_label_values(&[namespace, pool]);
        let _ = self.ready_provers.remove_label_values(&[namespace, pool]);
        let _ = self.queue_wait.remove_label_values(&[namespace, pool]);
        for phase in ["Succeeded", "Failed"] {
            let _ = self
                .time_to_proof
                .remove_label_values(&[namespace, pool, phase]);
        }
    }

    /// Moves one job between phases in the jobs-by-phase gauge (`None`: it did not / no
    /// longer exists; phase "New" until the operator first sets one).
    pub fn job_phase_changed(&self, old: Option<(&str, &str)>, new: Option<(&str, &str)>) {
        if old == new {
            return;
        }
        if let Some((namespace, phase)) = old {
            self.jobs.with_label_values(&[namespace, phase]).dec();
        }
        if let Some((namespace, phase)) = new {
            self.jobs.with_label_values(&[namespace, phase]).inc();
        }
    }

    /// The metrics in the Prometheus text format.
    pub fn render(&self) -> String {
        let mut text = Vec::new();
        // Encoding into a Vec fails only for metric families that break the format's rules,
        // which the types above cannot produce.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut text);
        String::from_utf8_lossy(&text).into_owned()
    }
}

/// Times one reconcile. Dropped without [`ReconcileGuard::finish`] (an error, a panic, a
/// cancelled future), the reconcile counts as failed.
pub struct ReconcileGuard<'a> {
    metrics: &'a Metrics,
    kind: &'static str,
    started: Instant,
    outcome: Outcome,
}

impl ReconcileGuard<'_> {
    pub fn finish(mut self, outcome: Outcome) {
        self.outcome = outcome;
    }
}

impl Drop for ReconcileGuard<'_> {
    fn drop(&mut self) {
        let metrics = self.metrics;
        metrics
            .reconcile_duration
            .with_label_values(&[self.kind])
            .observe(self.started.elapsed().as_secs_f64());
        metrics
            .reconciles
            .with_label_values(&[self.kind, self.outcome.as_str()])
            .inc();
        if self.outcome == Outcome::Failed {
            metrics
                .reconcile_failures
                .with_label_values(&[self.kind])
                .inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_counts_outcomes_and_durations() {
        let metrics = Metrics::new().unwrap();
        metrics.reconcile("ProofJob").finish(Outcome::Applied);
        drop(metrics.reconcile("ProofJob"));
        metrics.set_queue_depth("ns", "gpu", 3, 30);
        metrics.set_outdated_provers("ns", "gpu", 2);
        metrics.set_ready_provers("ns", "gpu", 1);
        metrics.pool_seen("ns", "gpu");
        metrics.jobs_assigned.inc();
        metrics.job_phase_changed(None, Some(("ns", "New")));
        metrics.job_phase_changed(Some(("ns", "New")), Some(("ns", "Queued")));
        metrics.job_phase_changed(None, Some(("ns", "Queued")));

        let text = metrics.render();
        for line in [
            r#"proofpipe_operator_reconciles_total{kind="ProofJob",outcome="applied"} 1"#,
            r#"proofpipe_operator_reconciles_total{kind="ProofJob",outcome="failed"} 1"#,
            r#"proofpipe_operator_reconcile_failures_total{kind="ProofJob"} 1"#,
            r#"proofpipe_operator_reconcile_duration_seconds_count{kind="ProofJob"} 2"#,
            r#"proofpipe_operator_queue_depth{namespace="ns",pool="gpu"} 3"#,
            r#"proofpipe_operator_queued_partitions{namespace="ns",pool="gpu"} 30"#,
            r#"proofpipe_operator_outdated_provers{namespace="ns",pool="gpu"} 2"#,
            r#"proofpipe_operator_ready_provers{namespace="ns",pool="gpu"} 1"#,
            r#"proofpipe_operator_job_duration_seconds_count{namespace="ns",phase="Failed",pool="gpu"} 0"#,
            "proofpipe_operator_jobs_assigned_total 1",
            "proofpipe_operator_jobs_requeued_total 0",
            r#"proofpipe_operator_jobs{namespace="ns",phase="Queued"} 2"#,
            r#"proofpipe_operator_jobs{namespace="ns",phase="New"} 0"#,
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }

        metrics.forget_pool("ns", "gpu");
        assert!(!metrics.render().contains(r#"pool="gpu""#));
    }
}
