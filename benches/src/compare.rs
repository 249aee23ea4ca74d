//! Throughput of the pipeline against bellperson's stock batch prover
//! (`create_random_proof_batch`) on the same circuit, parameters and machine, in one run.

use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::create_random_proof_batch;
use blstrs::Bls12;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde::Serialize;

use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16;
use proofpipe_pipeline::params::{CircuitParams, ParamsKind, ProvingKey};
use proofpipe_pipeline::pipeline::{
    BusySpan, JobHandle, JobOutcome, JobSpec, PartitionSource, Pipeline, PipelineConfig,
    ReplaySource, Stage, TimelinePoint, reserve_gpu_memory,
};
use proofpipe_pipeline::rss;

/// One prover's run over the same partitions.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub seconds: f64,
    pub proofs: usize,
    pub verified: usize,
    pub proofs_per_second: f64,
    pub seconds_per_proof: f64,
    /// Peak RSS during this run (the parameters included), if measurable.
    pub peak_rss_bytes: Option<u64>,
}

/// Fraction of wall time each stage's workers were busy.
#[derive(Clone, Debug, Serialize)]
pub struct BusyFractions {
    pub synthesis: f64,
    pub gpu: f64,
    pub finalize: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct PipelineRun {
    #[serde(flatten)]
    pub result: RunResult,
    pub backend: &'static str,
    pub config: PipelineConfig,
    pub busy: BusyFractions,
    pub max_synthesized_in_flight: u64,
    /// The most partitions holding their large buffers at once (synthesizing + queued +
    /// GPU stage).
    pub max_held: u64,
    /// Host and device memory sampled through the run, against the stage counts.
    pub memory: MemoryTrace,
    /// The run without its ramp-up (None with fewer than two partitions).
    pub steady: Option<SteadyState>,
    #[serde(skip)]
    pub timeline: Vec<TimelinePoint>,
    #[serde(skip)]
    pub spans: Vec<BusySpan>,
}

/// The pipeline once it is full: from the first partition entering the GPU stage to the last
/// leaving it. The ramp-up (the first synthesis, before the GPU has work) is outside.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SteadyState {
    pub window_seconds: f64,
    /// Seconds between consecutive partitions leaving the GPU stage, averaged over the
    /// partitions after the first.
    pub seconds_per_proof: f64,
    /// Fraction of the window in which at least one partition was in the GPU stage.
    pub gpu_stage_busy: f64,
    /// Fraction of the window the device(s) ran kernels (held by a worker, copies
    /// included), from the backend's kernel clock; None for the CPU backend.
    pub device_busy: Option<f64>,
}

/// The steady state of a run from its busy spans; `device_seconds` is the kernel time the
/// backend measured over the run, `devices` how many GPUs shared it.
pub fn steady_state(
    spans: &[BusySpan],
    device_seconds: Option<f64>,
    devices: usize,
) -> Option<SteadyState> {
    let mut gpu: Vec<(f64, f64)> = spans
        .iter()
        .filter(|s| s.stage == Stage::Gpu)
        .map(|s| (s.start, s.end))
        .collect();
    if gpu.len() < 2 {
        return None;
    }
    gpu.sort_by(|a, b| a.0.total_cmp(&b.0));
    let start = gpu[0].0;
    let mut ends: Vec<f64> = gpu.iter().map(|s| s.1).collect();
    ends.sort_by(f64::total_cmp);
    let end = *ends.last().expect("two spans or more");
    let window = end - start;
    // Union of the GPU-stage spans: merge the sorted intervals.
    let mut covered = 0.0;
    let (mut cur_start, mut cur_end) = gpu[0];
    for &(s, e) in &gpu[1..] {
        if s > cur_end {
            covered += cur_end - cur_start;
            (cur_start, cur_end) = (s, e);
        } else {
            cur_end = cur_end.max(e);
        }
    }
    covered += cur_end - cur_start;
    Some(SteadyState {
        window_seconds: window,
        seconds_per_proof: (end - ends[0]) / (ends.len() - 1) as f64,
        gpu_stage_busy: covered / window,
        device_busy: device_seconds.map(|d| d / (window * devices.max(1) as f64)),
    })
}

/// One sample of the process's memory and the pipeline's stage counts.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct MemorySample {
    pub seconds: f64,
    pub rss_bytes: u64,
    /// Device memory in use (all devices together; every process's), 0 without a GPU.
    pub device_bytes: u64,
    pub synthesizing: u64,
    pub queued: u64,
    pub gpu: u64,
    pub finalizing: u64,
}

/// What the memory sampler saw over a pipeline run (every 20 ms).
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemoryTrace {
    /// Before the pipeline started: the process with its parameters (and, on a GPU, its
    /// resident bases and CUDA context from the warm-up, if one ran).
    pub rss_before_bytes: u64,
    pub device_before_bytes: u64,
    /// The sample with the highest RSS, and the one with the most device memory.
    pub at_peak_rss: MemorySample,
    pub at_peak_device: MemorySample,
    /// Every 10th sample, for plots and fits.
    pub samples: Vec<MemorySample>,
}

/// Samples RSS, device memory and the stage counts on a thread until stopped.
struct MemorySampler {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<MemoryTrace>,
}

impl MemorySampler {
    fn start(
        tracker: Arc<proofpipe_pipeline::pipeline::BufferTracker>,
        backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
    ) -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let device = move || backend.device_memory_used().iter().sum::<u64>();
        let mut trace = MemoryTrace {
            rss_before_bytes: rss::current_rss_bytes().unwrap_or(0),
            device_before_bytes: device(),
            ..MemoryTrace::default()
        };
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut n = 0u64;
            loop {
                let done = flag.load(std::sync::atomic::Ordering::Relaxed);
                let b = tracker.snapshot();
                let sample = MemorySample {
                    seconds: started.elapsed().as_secs_f64(),
                    rss_bytes: rss::current_rss_bytes().unwrap_or(0),
                    device_bytes: device(),
                    synthesizing: b.synthesizing,
                    queued: b.queued,
                    gpu: b.gpu,
                    finalizing: b.finalizing,
                };
                if sample.rss_bytes > trace.at_peak_rss.rss_bytes {
                    trace.at_peak_rss = sample;
                }
                if sample.device_bytes > trace.at_peak_device.device_bytes {
                    trace.at_peak_device = sample;
                }
                if n.is_multiple_of(10) || done {
                    trace.samples.push(sample);
                }
                n += 1;
                if done {
                    return trace;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        });
        Self { stop, thread }
    }

    fn finish(self) -> MemoryTrace {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// Time in one kernel kind during the timed pipeline run (GPU backends only).
#[derive(Clone, Debug, Serialize)]
pub struct KernelRow {
    pub kernel: &'static str,
    /// False for transfers made outside the device lock (they overlap other kernels).
    pub holds_device: bool,
    pub calls: u64,
    pub seconds: f64,
    pub ms_per_call: f64,
    pub elements: u64,
}

fn kernel_rows(
    before: &[(&'static str, proofpipe_kernels::KernelStat)],
    after: &[(&'static str, proofpipe_kernels::KernelStat)],
) -> Vec<KernelRow> {
    after
        .iter()
        .map(|(name, a)| {
            let b = before
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, b)| *b)
                .unwrap_or_default();
            let calls = a.calls - b.calls;
            let seconds = a.seconds - b.seconds;
            KernelRow {
                kernel: name,
                holds_device: proofpipe_kernels::holds_device(name),
                calls,
                seconds,
                ms_per_call: if calls == 0 {
                    0.0
                } else {
                    seconds * 1e3 / calls as f64
                },
                elements: a.elements - b.elements,
            }
        })
        .collect()
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// A circuit's name (`mul-chain`), or what a [`SourceWorkload`] proves.
    pub circuit: String,
    /// Constraints per partition, the input constraints included for a [`SourceWorkload`].
    pub constraints: usize,
    pub partitions: u32,
    pub cpu_cores: usize,
    /// `timing-only` parameters: the timings are real, no proof could verify.
    pub params: ParamsKind,
    /// Which stock prover ran: bellperson on the CPU, or with its CUDA kernels (ec-gpu-gen).
    pub stock_prover: &'static str,
    /// How the pipeline's partitions were made (`replay`: copies of one synthesized partition).
    pub feed: FeedKind,
    /// The GPU backend's options in this run (`all`, `none`, `split+h`, ...), None on the CPU.
    pub gpu_options: Option<String>,
    pub stock: RunResult,
    pub pipeline: PipelineRun,
    /// Per-kernel time of the pipeline run (empty for the CPU backend).
    pub kernels: Vec<KernelRow>,
    /// GPU memory per device in use: (device, total bytes).
    pub gpus: Vec<(usize, u64)>,
    /// Pipeline throughput over stock throughput: above 1 means the pipeline is faster.
    pub throughput_ratio: f64,
}

fn run_result(seconds: f64, proofs: usize, verified: usize, peak: Option<u64>) -> RunResult {
    RunResult {
        seconds,
        proofs,
        verified,
        proofs_per_second: if proofs == 0 {
            0.0
        } else {
            proofs as f64 / seconds
        },
        seconds_per_proof: seconds / proofs.max(1) as f64,
        peak_rss_bytes: peak,
    }
}

/// bellperson as this binary was built: with its CUDA kernels (feature `stock-gpu`) or not.
pub const STOCK_PROVER: &str = if cfg!(feature = "stock-gpu") {
    "bellperson-cuda (ec-gpu-gen)"
} else {
    "bellperson-cpu"
};

/// bellperson's stock batch prover: synthesizes every partition at once, then proves them
/// in one batch.
pub fn run_stock(
    params: &CircuitParams,
    partitions: u32,
    seed: u64,
) -> Result<RunResult, ProverError> {
    rss::reset_peak_rss();
    let start = Instant::now();
    let circuits = (0..partitions)
        .map(|p| params.circuit.partition(params.constraints, seed, p))
        .collect::<Result<Vec<_>, _>>()?;
    let mut rng = ChaCha20Rng::from_entropy();
    let proofs = create_random_proof_batch::<Bls12, _, _, _>(circuits, &params.params, &mut rng)
        .map_err(|e| ProverError::Proving {
            partition: 0,
            message: format!("stock batch prover: {e}"),
        })?;
    let seconds = start.elapsed().as_secs_f64();
    let peak = rss::peak_rss_bytes();
    // Verify outside the timing, against the public inputs our own synthesis computes.
    let mut verified = 0;
    let checkable = if params.kind.verifiable() {
        proofs.len()
    } else {
        0
    };
    for (p, proof) in proofs.iter().enumerate().take(checkable) {
        let circuit = params
            .circuit
            .partition(params.constraints, seed, p as u32)?;
        let s = groth16::synthesize(circuit, params.shape).map_err(|e| ProverError::Synthesis {
            partition: p as u32,
            message: e.to_string(),
        })?;
        verified += usize::from(groth16::verify(&params.pvk, proof, s.public_inputs()));
    }
    Ok(run_result(seconds, proofs.len(), verified, peak))
}

/// How the pipeline's partitions are made.
#[derive(Clone, Default)]
pub enum Feed {
    /// Each partition synthesized from its own witness.
    #[default]
    Synthesis,
    /// Partition 0 synthesized once, every partition a copy of it: the stages after synthesis
    /// at the rate they can go. One source serves every run it is given to.
    Replay(Arc<ReplaySource>),
}

impl Feed {
    /// Replayed partitions of the synthetic job `params` describes (seed `seed`).
    pub fn replay(params: &CircuitParams, seed: u64) -> Self {
        Self::Replay(Arc::new(ReplaySource::new(Arc::new(
            proofpipe_pipeline::pipeline::SyntheticSource {
                circuit: params.circuit,
                constraints: params.constraints,
                seed,
                matrices: None,
            },
        ))))
    }

    pub fn kind(&self) -> FeedKind {
        match self {
            Feed::Synthesis => FeedKind::Synthesis,
            Feed::Replay(_) => FeedKind::Replay,
        }
    }
}

/// [`Feed`] as reports name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeedKind {
    Synthesis,
    Replay,
}

/// The pipeline on the same partitions, in a pipeline of its own.
pub fn run_pipeline(
    params: Arc<CircuitParams>,
    partitions: u32,
    seed: u64,
    config: PipelineConfig,
    backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
    feed: &Feed,
) -> Result<PipelineRun, ProverError> {
    run_submitted(config, backend, |pipeline| match feed {
        Feed::Synthesis => {
            let mut spec = JobSpec::new(params.circuit, params.constraints, partitions);
            spec.seed = seed;
            pipeline.submit(spec, params)
        }
        Feed::Replay(source) => {
            pipeline.submit_source(source.clone(), params.key.clone(), partitions, 0, &[])
        }
    })
}

/// Partitions that are not one of proofpipe's own circuits (a Filecoin PoRep partition of a
/// sector size's shape), with the proving key they are proved with.
pub struct SourceWorkload {
    /// What is proved, for the report (`circuit` in the JSON).
    pub name: String,
    pub source: Arc<dyn PartitionSource>,
    pub key: Arc<ProvingKey>,
}

/// The pipeline over `partitions` partitions of `workload`, in a pipeline of its own.
pub fn run_source_pipeline(
    workload: &SourceWorkload,
    partitions: u32,
    config: PipelineConfig,
    backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
) -> Result<PipelineRun, ProverError> {
    run_submitted(config, backend, |pipeline| {
        pipeline.submit_source(
            workload.source.clone(),
            workload.key.clone(),
            partitions,
            0,
            &[],
        )
    })
}

/// Starts a pipeline, submits one job with `submit`, waits for it and measures the run.
fn run_submitted(
    mut config: PipelineConfig,
    backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
    submit: impl FnOnce(&Pipeline) -> Result<JobHandle, ProverError>,
) -> Result<PipelineRun, ProverError> {
    config.record_timeline = true;
    rss::reset_peak_rss();
    let pipeline = Pipeline::start(config, backend.clone())?;
    let sampler = MemorySampler::start(pipeline.buffer_tracker(), backend);
    let start = Instant::now();
    let report = submit(&pipeline)?.wait();
    let seconds = start.elapsed().as_secs_f64();
    let peak = rss::peak_rss_bytes();
    let memory = sampler.finish();
    if let JobOutcome::Failed(e) = &report.outcome {
        return Err(ProverError::Proving {
            partition: 0,
            message: e.clone(),
        });
    }
    let busy = pipeline.stage_busy();
    let c = pipeline.config().clone();
    let spans = pipeline.busy_spans();
    let fraction = |busy: f64, workers: usize| busy / (seconds * workers as f64);
    let verified = report.proofs.iter().filter(|p| p.verified).count();
    let run = PipelineRun {
        result: run_result(seconds, report.proofs.len(), verified, peak),
        backend: pipeline.backend_name(),
        busy: BusyFractions {
            synthesis: fraction(busy.synthesis, c.partition_workers),
            gpu: fraction(busy.gpu, c.gpu_workers),
            finalize: fraction(busy.finalize, c.finalize_workers),
        },
        config: c,
        max_synthesized_in_flight: pipeline.buffers().max_synthesized_in_flight,
        max_held: pipeline.buffers().max_held,
        memory,
        steady: None,
        timeline: pipeline.buffer_timeline(),
        spans,
    };
    pipeline.shutdown();
    Ok(run)
}

/// Runs both provers on the same partitions and compares their throughput (per proof, so
/// the stock prover may run fewer partitions: `stock_partitions`; 0 skips it, and the
/// ratio is then 0). `warm_up`: reserve the GPU stage's memory as a prover does when its
/// parameters load, and prove one partition first, so neither side pays for first-touch page
/// faults of the parameters (and a GPU backend has its bases resident before the timed run).
pub fn compare(
    params: Arc<CircuitParams>,
    partitions: u32,
    stock_partitions: u32,
    config: PipelineConfig,
    backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
    warm_up: bool,
    feed: &Feed,
) -> Result<BenchReport, ProverError> {
    let seed = 1;
    if warm_up {
        reserve_gpu_memory(backend.as_ref(), &config, params.constraints);
        run_pipeline(
            params.clone(),
            1,
            seed + 1,
            config.clone(),
            backend.clone(),
            &Feed::Synthesis,
        )?;
    }
    let stock = if stock_partitions == 0 {
        run_result(0.0, 0, 0, None)
    } else {
        run_stock(&params, stock_partitions, seed)?
    };
    let before = backend.kernel_stats();
    let pipeline = run_pipeline(
        params.clone(),
        partitions,
        seed,
        config,
        backend.clone(),
        feed,
    )?;
    let throughput_ratio = if stock.proofs == 0 {
        0.0
    } else {
        pipeline.result.proofs_per_second / stock.proofs_per_second
    };
    let m = measured(pipeline, &before, &backend);
    Ok(BenchReport {
        circuit: params.circuit.to_string(),
        constraints: params.constraints,
        partitions,
        cpu_cores: cpu_cores(),
        params: params.kind,
        stock_prover: STOCK_PROVER,
        feed: feed.kind(),
        gpu_options: None,
        stock,
        pipeline: m.pipeline,
        kernels: m.kernels,
        gpus: m.gpus,
        throughput_ratio,
    })
}

/// The pipeline alone over `partitions` partitions of `workload` (after the GPU stage's
/// memory is reserved and a one-partition warm-up, if `warm_up`): no stock run, whose prover cannot take a source's partitions, so
/// `stock` is empty and the ratio 0.
pub fn bench_source(
    workload: &SourceWorkload,
    partitions: u32,
    config: PipelineConfig,
    backend: Arc<dyn proofpipe_kernels::ProvingBackend>,
    warm_up: bool,
) -> Result<BenchReport, ProverError> {
    if warm_up {
        reserve_gpu_memory(backend.as_ref(), &config, workload.key.shape.constraints);
        run_source_pipeline(workload, 1, config.clone(), backend.clone())?;
    }
    let before = backend.kernel_stats();
    let pipeline = run_source_pipeline(workload, partitions, config, backend.clone())?;
    let m = measured(pipeline, &before, &backend);
    Ok(BenchReport {
        circuit: workload.name.clone(),
        constraints: workload.key.shape.constraints,
        partitions,
        cpu_cores: cpu_cores(),
        params: workload.key.kind,
        stock_prover: STOCK_PROVER,
        feed: FeedKind::Synthesis,
        gpu_options: None,
        stock: run_result(0.0, 0, 0, None),
        pipeline: m.pipeline,
        kernels: m.kernels,
        gpus: m.gpus,
        throughput_ratio: 0.0,
    })
}

/// What a timed pipeline run measured besides its own figures.
struct Measured {
    pipeline: PipelineRun,
    kernels: Vec<KernelRow>,
    gpus: Vec<(usize, u64)>,
}

/// The kernel times of the run `pipeline` (since `before`) and its steady state.
fn measured(
    mut pipeline: PipelineRun,
    before: &[(&'static str, proofpipe_kernels::KernelStat)],
    backend: &Arc<dyn proofpipe_kernels::ProvingBackend>,
) -> Measured {
    let kernels = kernel_rows(before, &backend.kernel_stats());
    let gpus: Vec<(usize, u64)> = backend
        .gpu_devices()
        .iter()
        .map(|g| (g.id, g.total_bytes))
        .collect();
    let device_seconds = (!gpus.is_empty()).then(|| {
        kernels
            .iter()
            .filter(|k| k.holds_device && k.kernel != "upload_bases")
            .map(|k| k.seconds)
            .sum()
    });
    pipeline.steady = steady_state(&pipeline.spans, device_seconds, gpus.len());
    Measured {
        pipeline,
        kernels,
        gpus,
    }
}

fn cpu_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Median, minimum and maximum of runs' figures (the median of an even count is the mean of
/// the middle two).
pub fn spread(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    let median = if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    };
    (median, xs[0], xs[n - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(worker: usize, start: f64, end: f64) -> BusySpan {
        BusySpan {
            stage: Stage::Gpu,
            worker,
            start,
            end,
        }
    }

    #[test]
    fn spread_is_median_min_max() {
        assert_eq!(spread(vec![3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
        assert_eq!(spread(vec![4.0, 1.0]), (2.5, 1.0, 4.0));
    }

    #[test]
    fn steady_state_excludes_the_ramp_and_merges_overlaps() {
        let spans = [
            BusySpan {
                stage: Stage::Synthesizing,
                worker: 0,
                start: 0.0,
                end: 2.0,
            },
            gpu(0, 2.0, 4.0),
            gpu(1, 3.0, 5.0),
            // A gap of one second with no partition on the GPU stage.
            gpu(0, 6.0, 8.0),
        ];
        let s = steady_state(&spans, Some(3.0), 1).unwrap();
        assert_eq!(s.window_seconds, 6.0);
        assert_eq!(s.seconds_per_proof, (8.0 - 4.0) / 2.0);
        assert_eq!(s.gpu_stage_busy, 5.0 / 6.0);
        assert_eq!(s.device_busy, Some(0.5));
        assert_eq!(steady_state(&spans, None, 0).unwrap().device_busy, None);
    }

    /// A source's partitions through the bench: every one proved, none claimed verified with
    /// timing-only parameters, no stock run, the workload's name and shape in the report.
    #[test]
    fn a_source_workload_is_benched_without_a_stock_run() {
        use proofpipe_pipeline::circuits::{CircuitKind, CircuitShape};
        use proofpipe_pipeline::groth16::Synthesized;

        struct MulChain;
        impl PartitionSource for MulChain {
            fn synthesize(
                &self,
                partition: u32,
                shape: CircuitShape,
                evaluations: &proofpipe_kernels::EvalAlloc,
            ) -> Result<Synthesized, ProverError> {
                let circuit = CircuitKind::MulChain.partition(1024, 1, partition)?;
                groth16::synthesize_into(circuit, shape, evaluations).map_err(|e| {
                    ProverError::Synthesis {
                        partition,
                        message: e.to_string(),
                    }
                })
            }
        }
        let params = CircuitParams::timing_only(CircuitKind::MulChain, 1024).unwrap();
        let workload = SourceWorkload {
            name: "a source".into(),
            source: Arc::new(MulChain),
            key: params.key.clone(),
        };
        let config = PipelineConfig {
            partition_workers: 2,
            channel_capacity: 1,
            gpu_workers: 1,
            finalize_workers: 1,
            finalize_queue: 1,
            partition_budget: Some(2),
            g2: groth16::G2Placement::GpuStage,
            bases: groth16::QueryPlacement::all_resident(),
            quotient_buffers: Default::default(),
            record_timeline: false,
            matrices: Default::default(),
        };
        let backend = Arc::new(proofpipe_kernels::CpuBackend::new());
        let report = bench_source(&workload, 3, config, backend, true).unwrap();
        assert_eq!(report.circuit, "a source");
        assert_eq!(report.constraints, params.shape.constraints);
        assert_eq!(report.params, ParamsKind::TimingOnly);
        assert_eq!(
            (
                report.pipeline.result.proofs,
                report.pipeline.result.verified
            ),
            (3, 0)
        );
        assert_eq!((report.stock.proofs, report.throughput_ratio), (0, 0.0));
        assert!(report.pipeline.steady.is_some());
    }

    #[test]
    fn one_partition_has_no_steady_state() {
        assert_eq!(steady_state(&[gpu(0, 1.0, 2.0)], Some(1.0), 1), None);
    }
}
