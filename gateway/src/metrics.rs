//! The gateway's Prometheus metrics: served on `/metrics` and returned by `GetMetrics`.

use std::time::Instant;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};
use tonic::Code;

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
    /// Submissions refused because `--max-queued` jobs were waiting.
    pub refused_queue_full: IntCounter,
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
        let refused_queue_full = IntCounter::new(
            "refused_queue_full_total",
            "Submissions refused with RESOURCE_EXHAUSTED because --max-queued jobs were waiting",
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
        Ok(Self {
            registry,
            requests,
            request_seconds,
            input_bytes,
            jobs_created,
            duplicate_submissions,
            new_attempts,
            refused_queue_full,
            awaiting,
            inputs_swept,
        })
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
}
