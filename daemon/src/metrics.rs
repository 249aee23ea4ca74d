//! The daemon's metrics: created once per process, so counters keep counting across jobs
//! (a counter that restarts with each job breaks `rate()`). Only the buffer gauges of the
//! current pipeline come from the pipeline itself (`ProverState::pipeline_metrics`).

use std::time::Duration;

use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry,
};

use proofpipe_pipeline::metrics::PipelineMetrics;
use proofpipe_pipeline::pipeline::JobOutcome;
use proofpipe_pipeline::sizing::Plan;

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
    job_seconds: HistogramVec,
    status_writes: IntCounterVec,
    status_write_errors: IntCounterVec,
    /// The pipelines' partition, job and stage counters, shared by every job's pipeline.
    pipeline: PipelineMetrics,
    resident_memory: IntGauge,
    predicted_peak: IntGauge,
    predicted_device: IntGauge,
    streamed_bases: IntGauge,
    job_failures: IntCounterVec,
    parameter_loads: IntCounterVec,
    gpu_devices: IntGauge,
    gpu_missing: IntGauge,
}

impl DaemonMetrics {
    /// `memory_limit`: the limit every job's pipeline is planned for.
    pub fn new(memory_limit: u64) -> prometheus::Result<Self> {
        let registry = Registry::new();
        let pipeline = PipelineMetrics::new(&registry)?;
        let resident_memory = IntGauge::new(
            "proofpipe_prover_resident_memory_bytes",
            "Resident memory of the prover process (VmRSS), read at each scrape",
        )?;
        let memory_limit_bytes = IntGauge::new(
            "proofpipe_prover_memory_limit_bytes",
            "The memory limit the prover plans its pipelines for (cgroup, else \
             PROOFPIPE_MEMORY_LIMIT, else MemTotal)",
        )?;
        let predicted_peak = IntGauge::new(
            "proofpipe_prover_predicted_peak_bytes",
            "The planner's predicted peak memory for the current (or last) job's pipeline; 0 \
             before the first job",
        )?;
        let predicted_device = IntGauge::new(
            "proofpipe_prover_predicted_device_bytes",
            "The planner's predicted GPU memory per device for the current (or last) job's \
             pipeline; 0 before the first job and on the CPU backend",
        )?;
        let streamed_bases = IntGauge::new(
            "proofpipe_prover_streamed_bases_bytes",
            "Host bytes of the base points the current (or last) job's MSMs stream from \
             page-locked memory because the GPU cannot hold them (its memory or \
             PROOFPIPE_GPU_MEMORY); 0 when every base is on the GPU",
        )?;
        memory_limit_bytes.set(i64::try_from(memory_limit).unwrap_or(i64::MAX));
        registry.register(Box::new(resident_memory.clone()))?;
        registry.register(Box::new(memory_limit_bytes))?;
        registry.register(Box::new(predicted_peak.clone()))?;
        registry.register(Box::new(predicted_device.clone()))?;
        registry.register(Box::new(streamed_bases.clone()))?;
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
        let job_failures = IntCounterVec::new(
            Opts::new(
                "proofpipe_daemon_job_failures_total",
                "Jobs this daemon could not prove, by reason (InvalidInput, DoesNotFit, ...)",
            ),
            &["reason"],
        )?;
        let parameter_loads = IntCounterVec::new(
            Opts::new(
                "proofpipe_daemon_parameter_loads_total",
                "Filecoin parameter sets read from disk, by circuit identifier (a warm prover \
                 reads each set once)",
            ),
            &["set"],
        )?;
        let gpu_devices = IntGauge::new(
            "proofpipe_prover_gpu_devices",
            "GPUs the GPU stage proves on; 0 when it runs on the CPU",
        )?;
        let gpu_missing = IntGauge::new(
            "proofpipe_prover_gpu_missing",
            "1 when the GPU stage has no usable GPU: the pod requests one but the stage runs on \
             the CPU, or the prover lost its GPU mid-job (it then takes no more work)",
        )?;
        registry.register(Box::new(gpu_devices.clone()))?;
        registry.register(Box::new(gpu_missing.clone()))?;
        registry.register(Box::new(job_failures.clone()))?;
        registry.register(Box::new(parameter_loads.clone()))?;
        registry.register(Box::new(jobs_started.clone()))?;
        registry.register(Box::new(jobs_finished.clone()))?;
        let job_seconds = HistogramVec::new(
            HistogramOpts::new(
                "proofpipe_daemon_job_seconds",
                "Time from this daemon starting a job to its end (proving, then its proofs \
                 written), by proof kind (PoRepC2, SnapDealsUpdate, WindowPoStPartition, \
                 WinningPoSt, synthetic) and outcome",
            )
            .buckets(vec![
                0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0,
                1800.0, 3600.0,
            ]),
            &["kind", "outcome"],
        )?;
        registry.register(Box::new(job_seconds.clone()))?;
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
            gpu_devices,
            gpu_missing,
            registry,
            jobs_started,
            jobs_finished,
            job_seconds,
            status_writes,
            status_write_errors,
            pipeline,
            resident_memory,
            predicted_peak,
            predicted_device,
            streamed_bases,
            job_failures,
            parameter_loads,
        })
    }

    pub fn job_failed(&self, reason: &str) {
        self.job_failures.with_label_values(&[reason]).inc();
    }

    /// What the GPU stage runs on: `devices` GPUs, and whether a GPU the pod asked for is
    /// missing.
    pub fn gpu(&self, devices: usize, missing: bool) {
        self.gpu_devices
            .set(i64::try_from(devices).unwrap_or(i64::MAX));
        self.gpu_missing.set(i64::from(missing));
    }

    /// The prover lost its GPU mid-job: it has no usable GPU any more.
    pub fn gpu_lost(&self) {
        self.gpu_missing.set(1);
    }

    pub fn parameter_set_loaded(&self, identifier: &str) {
        self.parameter_loads.with_label_values(&[identifier]).inc();
    }

    /// The counters every job's pipeline adds to.
    pub fn pipeline(&self) -> PipelineMetrics {
        self.pipeline.clone()
    }

    /// The main lane's plan: its predicted host peak, GPU memory and streamed bases.
    pub fn pipeline_planned(&self, plan: &Plan) {
        let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.predicted_peak.set(gauge(plan.predicted_peak_bytes));
        let gpu = plan.gpu.as_ref();
        self.predicted_device
            .set(gauge(gpu.map_or(0, |g| g.predicted_device_bytes)));
        self.streamed_bases
            .set(gauge(gpu.map_or(0, |g| g.streamed_bytes)));
    }

    pub fn job_started(&self) {
        self.jobs_started.inc();
    }

    pub fn job_finished(&self, outcome: &JobOutcome) {
        self.jobs_finished
            .with_label_values(&[outcome_label(outcome)])
            .inc();
    }

    /// A job of `kind` that took `took` on this prover, from its start to `outcome`.
    pub fn job_took(&self, kind: &str, outcome: &JobOutcome, took: Duration) {
        self.job_seconds
            .with_label_values(&[kind, outcome_label(outcome)])
            .observe(took.as_secs_f64());
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
        // Read now: a scrape wants the memory of this moment, not of the last job event.
        if let Some(rss) = proofpipe_pipeline::rss::current_rss_bytes() {
            self.resident_memory
                .set(i64::try_from(rss).unwrap_or(i64::MAX));
        }
        proofpipe_pipeline::metrics::encode(&self.registry)
    }
}

/// The metrics' name of how a job ended.
fn outcome_label(outcome: &JobOutcome) -> &'static str {
    match outcome {
        JobOutcome::Succeeded => "succeeded",
        JobOutcome::Failed(_) => "failed",
        JobOutcome::Cancelled => "cancelled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_times_are_by_kind_and_outcome() {
        let metrics = DaemonMetrics::new(1 << 30).unwrap();
        metrics.job_took(
            "WinningPoSt",
            &JobOutcome::Succeeded,
            Duration::from_millis(230),
        );
        metrics.job_took("PoRepC2", &JobOutcome::Cancelled, Duration::from_secs(70));
        let text = metrics.text();
        for line in [
            r#"proofpipe_daemon_job_seconds_bucket{kind="WinningPoSt",outcome="succeeded",le="0.25"} 1"#,
            r#"proofpipe_daemon_job_seconds_bucket{kind="WinningPoSt",outcome="succeeded",le="0.1"} 0"#,
            r#"proofpipe_daemon_job_seconds_count{kind="PoRepC2",outcome="cancelled"} 1"#,
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
    }

    #[test]
    fn counters_show_from_the_start_and_count() {
        let metrics = DaemonMetrics::new(1 << 30).unwrap();
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

    #[test]
    fn memory_gauges_show_the_limit_the_plan_and_this_process() {
        let metrics = DaemonMetrics::new(1 << 30).unwrap();
        let plan = crate::sizing::plan_that_streams();
        metrics.pipeline_planned(&plan);
        let text = metrics.text();
        let gpu = plan.gpu.as_ref().unwrap();
        assert!(gpu.streamed_bytes > 0, "{gpu:?}");
        for line in [
            "proofpipe_prover_memory_limit_bytes 1073741824".to_string(),
            format!(
                "proofpipe_prover_predicted_peak_bytes {}",
                plan.predicted_peak_bytes
            ),
            format!(
                "proofpipe_prover_predicted_device_bytes {}",
                gpu.predicted_device_bytes
            ),
            format!(
                "proofpipe_prover_streamed_bases_bytes {}",
                gpu.streamed_bytes
            ),
        ] {
            assert!(text.contains(&line), "{line} missing from\n{text}");
        }
        let resident: u64 = text
            .lines()
            .find_map(|line| line.strip_prefix("proofpipe_prover_resident_memory_bytes "))
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no resident memory in\n{text}"));
        // This test process holds at least a megabyte, and less than the machine.
        assert!(resident > 1 << 20, "{resident}");
    }

    #[test]
    fn pipeline_counters_are_in_the_daemon_registry() {
        let metrics = DaemonMetrics::new(1 << 30).unwrap();
        metrics
            .pipeline()
            .jobs
            .with_label_values(&["succeeded"])
            .inc();
        assert!(
            metrics
                .text()
                .contains("proofpipe_jobs_total{outcome=\"succeeded\"} 1"),
            "{}",
            metrics.text()
        );
    }

    #[test]
    fn a_lost_gpu_is_a_missing_gpu() {
        let metrics = DaemonMetrics::new(1 << 30).unwrap();
        metrics.gpu(1, false);
        assert!(metrics.text().contains("proofpipe_prover_gpu_missing 0"));
        metrics.gpu_lost();
        let text = metrics.text();
        assert!(text.contains("proofpipe_prover_gpu_missing 1"), "{text}");
        assert!(text.contains("proofpipe_prover_gpu_devices 1"), "{text}");
    }
}
