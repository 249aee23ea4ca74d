//! Prometheus metrics of the pipeline, in a registry per pipeline (so tests and several
//! pipelines in one process never collide), encoded in the text exposition format.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};

/// Counters and histograms the pipeline updates as partitions move.
#[derive(Clone)]
pub struct PipelineMetrics {
    pub partitions: IntCounterVec,
    pub jobs: IntCounterVec,
    pub stage_seconds: HistogramVec,
    pub pending_partitions: IntGauge,
}

impl PipelineMetrics {
    pub fn new(registry: &Registry) -> prometheus::Result<Self> {
        let partitions = IntCounterVec::new(
            Opts::new(
                "proofpipe_partitions_total",
                "Partitions that left the pipeline, by outcome",
            ),
            &["outcome"],
        )?;
        let jobs = IntCounterVec::new(
            Opts::new("proofpipe_jobs_total", "Jobs finished, by outcome"),
            &["outcome"],
        )?;
        let stage_seconds = HistogramVec::new(
            HistogramOpts::new(
                "proofpipe_stage_seconds",
                "Seconds a partition spent in each stage",
            )
            .buckets(prometheus::exponential_buckets(0.005, 2.0, 16)?),
            &["stage"],
        )?;
        let pending_partitions = IntGauge::new(
            "proofpipe_pending_partitions",
            "Partitions waiting for a synthesis worker",
        )?;
        registry.register(Box::new(partitions.clone()))?;
        registry.register(Box::new(jobs.clone()))?;
        registry.register(Box::new(stage_seconds.clone()))?;
        registry.register(Box::new(pending_partitions.clone()))?;
        Ok(Self {
            partitions,
            jobs,
            stage_seconds,
            pending_partitions,
        })
    }
}

/// The registry's metrics in Prometheus' text format.
pub fn encode(registry: &Registry) -> String {
    let mut out = Vec::new();
    TextEncoder::new()
        .encode(&registry.gather(), &mut out)
        .expect("text encoding cannot fail");
    String::from_utf8(out).expect("the text format is UTF-8")
}
