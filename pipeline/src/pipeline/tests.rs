use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use proofpipe_kernels::{
    Bases, CpuBackend, Density, Evaluations, KernelError, ProvingBackend, QuotientBuffers,
};

use super::*;
use crate::circuits::CircuitKind;
use crate::groth16::G2Placement;

const N: usize = 1 << 10;

fn params(n: usize) -> Arc<CircuitParams> {
    Arc::new(CircuitParams::generate(CircuitKind::MulChain, n).unwrap())
}

fn config(pw: usize, cap: usize) -> PipelineConfig {
    PipelineConfig {
        partition_workers: pw,
        channel_capacity: cap,
        gpu_workers: 1,
        finalize_workers: 1,
        finalize_queue: 1,
        partition_budget: None,
        g2: G2Placement::GpuStage,
        bases: crate::groth16::QueryPlacement::all_resident(),
        quotient_buffers: Default::default(),
        record_timeline: false,
        matrices: Default::default(),
    }
}

/// The CPU backend with a slow quotient: a GPU stage far slower than synthesis, the
/// situation in which the seed engine piled partitions up.
struct SlowGpu {
    inner: CpuBackend,
    delay: Duration,
    /// Fail (or panic) on evaluations of this length, to break one job and not another.
    fail_len: Option<(usize, bool)>,
    /// Fail every quotient with this CUDA error code, as the CUDA backend reports it.
    cuda_error: Option<i32>,
    calls: AtomicUsize,
}

impl SlowGpu {
    fn new(delay_ms: u64) -> Self {
        Self {
            inner: CpuBackend::new(),
            delay: Duration::from_millis(delay_ms),
            fail_len: None,
            cuda_error: None,
            calls: AtomicUsize::new(0),
        }
    }
}

impl ProvingBackend for SlowGpu {
    fn name(&self) -> &'static str {
        "slow-test"
    }
    fn quotient(
        &self,
        a: Evaluations,
        b: Evaluations,
        c: Evaluations,
        buffers: QuotientBuffers,
    ) -> Result<Vec<Fr>, KernelError> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        std::thread::sleep(self.delay);
        if let Some(code) = self.cuda_error {
            return Err(KernelError::cuda(
                "running the quotient",
                0,
                code,
                "injected".into(),
            ));
        }
        match self.fail_len {
            Some((len, false)) if a.len() == len => Err(KernelError::Msm {
                what: "test",
                message: "injected failure".into(),
            }),
            Some((len, true)) if a.len() == len => panic!("injected panic"),
            _ => self.inner.quotient(a, b, c, buffers),
        }
    }
    fn msm_g1(
        &self,
        b: &Bases<G1Affine>,
        d: &Density,
        e: &Arc<Vec<Fr>>,
    ) -> Result<G1Projective, KernelError> {
        self.inner.msm_g1(b, d, e)
    }
    fn msm_g2(
        &self,
        b: &Bases<G2Affine>,
        d: &Density,
        e: &Arc<Vec<Fr>>,
    ) -> Result<G2Projective, KernelError> {
        self.inner.msm_g2(b, d, e)
    }
}

#[test]
fn slow_gpu_never_lets_synthesized_partitions_exceed_workers_plus_capacity() {
    let (pw, cap) = (2, 1);
    let pipeline = Pipeline::start(config(pw, cap), Arc::new(SlowGpu::new(150))).unwrap();
    let p = params(N);
    let job = pipeline
        .submit(JobSpec::new(CircuitKind::MulChain, N, 8), p)
        .unwrap();
    let report = job.wait();
    assert_eq!(report.outcome, JobOutcome::Succeeded);
    assert_eq!(report.proofs.len(), 8);
    assert!(report.proofs.iter().all(|p| p.verified));
    let buffers = pipeline.buffers();
    assert!(
        buffers.max_synthesized_in_flight <= (pw + cap) as u64,
        "{} synthesized partitions were in flight with pw={pw} capacity={cap}",
        buffers.max_synthesized_in_flight
    );
    // Synthesis is ~100x faster than this GPU stage: the bound must actually have been reached,
    // or this test would not be testing the backpressure.
    assert_eq!(buffers.max_synthesized_in_flight, (pw + cap) as u64);
    assert_eq!(
        buffers.estimated_bytes(),
        0,
        "every buffer is released at the end: {buffers}"
    );
    let metrics = pipeline.metrics_text();
    assert!(
        metrics.contains("proofpipe_partitions_total{outcome=\"proved\"} 8"),
        "{metrics}"
    );
}

#[test]
fn a_partition_budget_bounds_partitions_through_the_gpu_stage() {
    // 4 workers and a 4-slot channel, but 3 permits: synthesizing + queued + in the GPU
    // stage never exceeds 3, and with a slow GPU stage the budget is reached.
    let (pw, cap, budget) = (4, 4, 3);
    let mut c = config(pw, cap);
    c.gpu_workers = 2;
    c.partition_budget = Some(budget);
    let pipeline = Pipeline::start(c, Arc::new(SlowGpu::new(100))).unwrap();
    let job = pipeline
        .submit(JobSpec::new(CircuitKind::MulChain, N, 8), params(N))
        .unwrap();
    let report = job.wait();
    assert_eq!(report.outcome, JobOutcome::Succeeded);
    assert!(report.proofs.iter().all(|p| p.verified));
    let buffers = pipeline.buffers();
    assert_eq!(buffers.max_held, budget as u64, "{buffers:?}");
    assert_eq!(buffers.estimated_bytes(), 0, "{buffers}");
}

#[test]
fn higher_priority_jobs_overtake_queued_work() {
    let pipeline = Pipeline::start(config(1, 1), Arc::new(SlowGpu::new(60))).unwrap();
    let p = params(N);
    let low = pipeline
        .submit(JobSpec::new(CircuitKind::MulChain, N, 8), p.clone())
        .unwrap();
    let mut urgent = JobSpec::new(CircuitKind::MulChain, N, 2);
    urgent.priority = 10;
    let high = pipeline.submit(urgent, p).unwrap();
    assert_eq!(high.wait().outcome, JobOutcome::Succeeded);
    let low_finished = low
        .events
        .try_iter()
        .any(|e| matches!(e, JobEvent::Finished(_)));
    assert!(
        !low_finished,
        "the low-priority job finished before the urgent one"
    );
    assert_eq!(low.wait().outcome, JobOutcome::Succeeded);
}

#[test]
fn cancelled_jobs_stop_and_the_pipeline_goes_on() {
    let pipeline = Pipeline::start(config(1, 1), Arc::new(SlowGpu::new(50))).unwrap();
    let p = params(N);
    let doomed = pipeline
        .submit(JobSpec::new(CircuitKind::MulChain, N, 20), p.clone())
        .unwrap();
    std::thread::sleep(Duration::from_millis(120));
    doomed.cancel();
    let report = doomed.wait();
    assert_eq!(report.outcome, JobOutcome::Cancelled);
    assert!(report.proofs.len() < 20);
    let next = pipeline
        .submit(JobSpec::new(CircuitKind::MulChain, N, 2), p)
        .unwrap()
        .wait();
    assert_eq!(next.outcome, JobOutcome::Succeeded);
    assert_eq!(pipeline.pending_partitions(), 0);
}

#[test]
fn a_failing_job_does_not_stop_the_others() {
    for panics in [false, true] {
        let small = 512;
        let mut backend = SlowGpu::new(0);
        backend.fail_len = Some((small, panics));
        let pipeline = Pipeline::start(config(2, 1), Arc::new(backend)).unwrap();
        let bad = pipeline
            .submit(JobSpec::new(CircuitKind::MulChain, small, 3), params(small))
            .unwrap();
        let good = pipeline
            .submit(JobSpec::new(CircuitKind::MulChain, N, 3), params(N))
            .unwrap();
        let bad = bad.wait();
        let JobOutcome::Failed(msg) = &bad.outcome else {
            panic!("{:?}", bad.outcome)
        };
        assert!(
            msg.contains(if panics {
                "panicked"
            } else {
                "injected failure"
            }),
            "{msg}"
        );
        let good = good.wait();
        assert_eq!(good.outcome, JobOutcome::Succeeded);
        assert_eq!(good.proofs.len(), 3);
        pipeline.shutdown();
        assert_eq!(pipeline.buffers().estimated_bytes(), 0);
    }
}

#[test]
fn shared_metrics_keep_counting_across_pipelines() {
    let registry = Registry::new();
    let metrics = PipelineMetrics::new(&registry).unwrap();
    let p = params(N);
    for _ in 0..2 {
        let pipeline =
            Pipeline::start_with_metrics(config(1, 1), Arc::new(SlowGpu::new(0)), metrics.clone())
                .unwrap();
        let report = pipeline
            .submit(JobSpec::new(CircuitKind::MulChain, N, 2), p.clone())
            .unwrap()
            .wait();
        assert_eq!(report.outcome, JobOutcome::Succeeded);
        // The pipeline's own registry keeps only its buffer gauges, so a daemon's
        // /metrics shows each counter once.
        let own = pipeline.metrics_text();
        assert!(own.contains("proofpipe_buffers{"), "{own}");
        assert!(!own.contains("proofpipe_jobs_total"), "{own}");
    }
    let text = crate::metrics::encode(&registry);
    for line in [
        r#"proofpipe_jobs_total{outcome="succeeded"} 2"#,
        r#"proofpipe_stage_seconds_count{stage="synthesis"} 4"#,
        r#"proofpipe_stage_seconds_count{stage="gpu"} 4"#,
        r#"proofpipe_stage_seconds_count{stage="finalize"} 4"#,
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn finished_partitions_are_not_proved_again() {
    let backend = Arc::new(SlowGpu::new(0));
    let pipeline = Pipeline::start(config(1, 1), backend.clone()).unwrap();
    let mut spec = JobSpec::new(CircuitKind::MulChain, N, 4);
    spec.skip = vec![0, 2];
    let report = pipeline.submit(spec, params(N)).unwrap().wait();
    assert_eq!(report.outcome, JobOutcome::Succeeded);
    assert_eq!(
        report
            .proofs
            .iter()
            .map(|p| p.partition)
            .collect::<Vec<_>>(),
        vec![1, 3]
    );
    assert_eq!(backend.calls.load(Ordering::Relaxed), 2);
}

#[test]
fn bad_submissions_are_refused() {
    let pipeline = Pipeline::start(config(1, 1), Arc::new(CpuBackend::new())).unwrap();
    let err = pipeline
        .submit(JobSpec::new(CircuitKind::MulChain, N, 0), params(N))
        .err()
        .unwrap();
    assert!(matches!(err, ProverError::ZeroPartitions));
    let err = pipeline
        .submit(JobSpec::new(CircuitKind::MulChain, 2 * N, 1), params(N))
        .err()
        .unwrap();
    assert!(err.to_string().contains("parameters are for"), "{err}");
    assert!(Pipeline::start(config(0, 1), Arc::new(CpuBackend::new())).is_err());
}

#[test]
fn g2_in_finalize_proves_too() {
    let mut c = config(1, 1);
    c.g2 = G2Placement::Finalize;
    let pipeline = Pipeline::start(c, Arc::new(CpuBackend::new())).unwrap();
    let report = pipeline
        .submit(JobSpec::new(CircuitKind::MulChain, N, 2), params(N))
        .unwrap()
        .wait();
    assert_eq!(report.outcome, JobOutcome::Succeeded);
}

/// Jobs of a size with matrices are synthesized from them (matrices registered under the
/// wrong size make exactly those jobs fail); other sizes are synthesized in one pass.
#[test]
fn synthesis_workers_use_the_matrices_of_the_job_size() {
    let record = |n: usize| {
        let kind = CircuitKind::MulChain;
        Arc::new(
            crate::groth16::R1csMatrices::record(
                kind.partition(n, 0, 0).unwrap(),
                kind.shape(n).unwrap(),
            )
            .unwrap(),
        )
    };
    let small = 512;
    let mut config = config(2, 1);
    config
        .matrices
        .insert((CircuitKind::MulChain, N), record(N));
    // Deliberately wrong: the matrices of N registered for `small`.
    config
        .matrices
        .insert((CircuitKind::MulChain, small), record(N));
    let pipeline = Pipeline::start(config, Arc::new(CpuBackend::new())).unwrap();
    let good = pipeline
        .submit(JobSpec::new(CircuitKind::MulChain, N, 2), params(N))
        .unwrap();
    let wrong = pipeline
        .submit(JobSpec::new(CircuitKind::MulChain, small, 2), params(small))
        .unwrap();
    let good = good.wait();
    assert_eq!(good.outcome, JobOutcome::Succeeded);
    assert!(good.proofs.iter().all(|p| p.verified));
    let JobOutcome::Failed(message) = &wrong.wait().outcome else {
        panic!("a job synthesized from the wrong matrices must fail")
    };
    assert!(
        message.contains("the R1CS matrices were recorded for"),
        "{message}"
    );
    pipeline.shutdown();
}

#[test]
fn a_job_failed_by_a_lost_gpu_says_so_and_one_failed_by_the_call_does_not() {
    // cudaErrorECCUncorrectable: the device is gone; cudaErrorInvalidValue: the call's own.
    for (code, lost) in [(214, Some(0)), (1, None)] {
        let mut backend = SlowGpu::new(0);
        backend.cuda_error = Some(code);
        let pipeline = Pipeline::start(config(1, 1), Arc::new(backend)).unwrap();
        let handle = pipeline
            .submit(JobSpec::new(CircuitKind::MulChain, N, 2), params(N))
            .unwrap();
        let outcome = handle
            .events
            .iter()
            .find_map(|event| match event {
                JobEvent::Finished(outcome) => Some(outcome),
                JobEvent::PartitionProved(_) => None,
            })
            .unwrap();
        let JobOutcome::Failed(message) = &outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(handle.lost_gpu(), lost, "{code}: {message}");
        assert_eq!(
            message.contains("GPU 0 is lost"),
            lost.is_some(),
            "{message}"
        );
        pipeline.shutdown();
    }
}

#[test]
fn the_reservation_covers_every_partition_the_budget_lets_through() {
    let mut c = config(3, 2);
    c.gpu_workers = 3;
    c.quotient_buffers = QuotientBuffers::Two;
    // No budget: every synthesis worker's, the channel's and every GPU worker's partition.
    let r = c.reservation(1000, 2);
    assert_eq!(r.evaluation_blocks, 3 * (3 + 2 + 3));
    assert_eq!(r.evaluation_bytes, 1024 * 32);
    assert_eq!(r.domain_lg, 10);
    assert_eq!(r.quotient_buffers, QuotientBuffers::Two);
    assert_eq!(r.workers_per_device, 2, "3 workers over 2 devices");
    // A budget bounds it.
    c.partition_budget = Some(4);
    assert_eq!(c.reservation(1 << 20, 1).evaluation_blocks, 12);
    assert_eq!(c.reservation(1 << 20, 1).workers_per_device, 3);
}
