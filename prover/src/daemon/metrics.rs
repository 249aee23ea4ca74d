//! The daemon's own counters, next to the current pipeline's metrics on `/metrics`.

use prometheus::{IntCounter, IntCounterVec, Opts, Registry};

use crate::pipeline::JobOutcome;

/// Which status a write went to.
#[derive(Clone, Copy, Debug)]
pub enum StatusObject {
    ProofJob,
    ProverPool,
}

impl StatusObject {
    fn label(self) -> &'static str {
        match self {
            StatusObject::ProofJob => "proofjob",
            StatusObject::ProverPool => "proverpool",
        }
    }
}

pub struct DaemonMetrics {
    registry: Registry,
    jobs_started: IntCounter,
    jobs_finished: IntCounterVec,
    status_writes: IntCounterVec,
    status_write_errors: IntCounterVec,
}

impl DaemonMetrics {
    pub fn new() -> prometheus::Result<Self> {
        let registry = Registry::new();
        let jobs_started = IntCounter::new(
            "proofpipe_daemon_jobs_started_total",
            "ProofJobs this daemon started proving",
        )?;
        let jobs_finished = IntCounterVec::new(
            Opts::new(
                "proofpipe_daemon_jobs_finished_total",
                "ProofJobs this daemon stopped proving, by outcome",
            ),
            &["outcome"],
        )?;
        let status_writes = IntCounterVec::new(
            Opts::new(
                "proofpipe_daemon_status_writes_total",
                "Status applies that succeeded, by object kind",
            ),
            &["object"],
        )?;
        let status_write_errors = IntCounterVec::new(
            Opts::new(
                "proofpipe_daemon_status_write_errors_total",
                "Status applies that failed, by object kind",
            ),
            &["object"],
        )?;
        registry.register(Box::new(jobs_started.clone()))?;
        registry.register(Box::new(jobs_finished.clone()))?;
        registry.register(Box::new(status_writes.clone()))?;
        registry.register(Box::new(status_write_errors.clone()))?;
        // Every series exists from the start, so a scrape shows zeros rather than nothing.
        for outcome in ["succeeded", "failed", "cancelled"] {
            jobs_finished.with_label_values(&[outcome]);
        }
        for object in [StatusObject::ProofJob, StatusObject::ProverPool] {
            status_writes.with_label_values(&[object.label()]);
            status_write_errors.with_label_values(&[object.label()]);
        }
        Ok(Self {
            registry,
            jobs_started,
            jobs_finished,
            status_writes,
            status_write_errors,
        })
    }

    pub fn job_started(&self) {
        self.jobs_started.inc();
    }

    pub fn job_finished(&self, outcome: &JobOutcome) {
        let label = match outcome {
            JobOutcome::Succeeded => "succeeded",
            JobOutcome::Failed(_) => "failed",
            JobOutcome::Cancelled => "cancelled",
        };
        self.jobs_finished.with_label_values(&[label]).inc();
    }

    pub fn status_write(&self, object: StatusObject, ok: bool) {
        let counter = if ok {
            &self.status_writes
        } else {
            &self.status_write_errors
        };
        counter.with_label_values(&[object.label()]).inc();
    }

    pub fn text(&self) -> String {
        crate::metrics::encode(&self.registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_show_from_the_start_and_count() {
        let metrics = DaemonMetrics::new().unwrap();
        assert!(
            metrics
                .text()
                .contains("proofpipe_daemon_status_write_errors_total{object=\"proofjob\"} 0")
        );
        metrics.job_started();
        metrics.job_finished(&JobOutcome::Cancelled);
        metrics.status_write(StatusObject::ProverPool, true);
        let text = metrics.text();
        assert!(
            text.contains("proofpipe_daemon_jobs_started_total 1"),
            "{text}"
        );
        assert!(
            text.contains("proofpipe_daemon_jobs_finished_total{outcome=\"cancelled\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("proofpipe_daemon_status_writes_total{object=\"proverpool\"} 1"),
            "{text}"
        );
    }
}
