//! Test fault hooks (`daemon --test-fault`): a stage made to hang the way a deadlock hangs it
//! (a thread that never returns and ignores cancellation), so that tests show the watchdog
//! tells it apart from slow work; PoRep made slow, so that tests see urgent work overtake a
//! long job; or the GPU lost mid-job, as the CUDA backend reports it, so that tests without a
//! GPU see the prover hand the job back and leave the rotation. Off unless the flag is given
//! (and, with `--test-fault-pod`, only in the pod it names); nothing sets it in production.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use proofpipe_crds::FilecoinProofKind;
use proofpipe_kernels::{
    Bases, Density, EvalAlloc, Evaluations, GpuDevice, KernelError, KernelStat, ProvingBackend,
    QuotientBuffers,
};

use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::Synthesized;
use proofpipe_pipeline::pipeline::{PartitionSource, Synthesis};

/// Where the daemon hangs, if anywhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Fault {
    #[default]
    None,
    /// The parameter load of every job never returns.
    StallParameters,
    /// Every partition's synthesis never returns.
    StallSynthesis,
    /// Every PoRep partition's synthesis starts [`SLOW_POREP`] late: a long job for urgent
    /// work to overtake in a test.
    SlowPorep,
    /// The GPU is lost in the GPU stage of the first partition that reaches it: the backend
    /// fails it with `cudaErrorECCUncorrectable`, classified as the CUDA backend classifies
    /// it, and every backend call after it fails the same way, as a lost device's do.
    GpuLost,
}

/// The CUDA error [`Fault::GpuLost`] raises: an uncorrectable ECC error (`cudaError_t` 214).
pub const LOST_GPU_ERROR: i32 = 214;

/// How late a PoRep partition's synthesis starts under [`Fault::SlowPorep`].
pub const SLOW_POREP: Duration = Duration::from_secs(40);

impl Fault {
    /// The fault of the daemon of `pod`: this one, unless `only` names another pod (a
    /// pool's pods share one template, so its args name the one pod that gets the fault).
    pub fn for_pod(self, only: Option<&str>, pod: &str) -> Self {
        match only {
            Some(only) if only != pod => Self::None,
            _ => self,
        }
    }

    /// `backend`, or one whose GPU is lost when the fault says so.
    pub fn wrap_backend(self, backend: Arc<dyn ProvingBackend>) -> Arc<dyn ProvingBackend> {
        match self {
            Self::GpuLost => Arc::new(LostGpu {
                inner: backend,
                lost: AtomicBool::new(false),
            }),
            _ => backend,
        }
    }

    /// Hangs here when the fault is a stalled parameter load.
    pub fn at_parameter_load(self) {
        if self == Self::StallParameters {
            hang("loading parameters");
        }
    }

    /// `source`, or one whose synthesis hangs when the fault says so.
    pub fn wrap_source(self, source: Arc<dyn PartitionSource>) -> Arc<dyn PartitionSource> {
        match self {
            Self::StallSynthesis => Arc::new(HangingSource),
            _ => source,
        }
    }

    /// [`Fault::wrap_source`] for a Filecoin job of `kind`; PoRep slowed when the fault says so.
    pub fn wrap_filecoin_source(
        self,
        source: Arc<dyn PartitionSource>,
        kind: FilecoinProofKind,
    ) -> Arc<dyn PartitionSource> {
        match self {
            Self::SlowPorep if kind == FilecoinProofKind::PoRepC2 => Arc::new(SlowSource(source)),
            _ => self.wrap_source(source),
        }
    }
}

fn hang(stage: &str) -> ! {
    tracing::warn!("test fault: {stage} hangs for good");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

struct SlowSource(Arc<dyn PartitionSource>);

impl PartitionSource for SlowSource {
    fn synthesize(&self, partition: u32, shape: CircuitShape, evals: &EvalAlloc) -> Synthesis {
        tracing::warn!(
            partition,
            "test fault: PoRep synthesis starts {} s late",
            SLOW_POREP.as_secs()
        );
        std::thread::sleep(SLOW_POREP);
        self.0.synthesize(partition, shape, evals)
    }

    fn synthesis_threads(&self) -> usize {
        self.0.synthesis_threads()
    }

    fn synthesizes_in_subsystems(&self) -> bool {
        self.0.synthesizes_in_subsystems()
    }
}

struct HangingSource;

impl PartitionSource for HangingSource {
    fn synthesize(
        &self,
        _partition: u32,
        _shape: CircuitShape,
        _evaluations: &EvalAlloc,
    ) -> Result<Synthesized, ProverError> {
        hang("synthesis")
    }
}

/// A backend whose GPU 0 is lost from its first GPU-stage call on ([`Fault::GpuLost`]).
struct LostGpu {
    inner: Arc<dyn ProvingBackend>,
    /// Whether the loss was logged already.
    lost: AtomicBool,
}

impl LostGpu {
    fn lost(&self, what: &'static str) -> KernelError {
        if !self.lost.swap(true, Ordering::Relaxed) {
            tracing::warn!("test fault: GPU 0 is lost during {what}");
        }
        KernelError::cuda(
            what,
            0,
            LOST_GPU_ERROR,
            "uncorrectable ECC error encountered (test fault)".into(),
        )
    }
}

impl ProvingBackend for LostGpu {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn quotient(
        &self,
        _a: Evaluations,
        _b: Evaluations,
        _c: Evaluations,
        _buffers: QuotientBuffers,
    ) -> Result<Vec<Fr>, KernelError> {
        Err(self.lost("running the quotient"))
    }

    fn evaluation_alloc(&self) -> EvalAlloc {
        self.inner.evaluation_alloc()
    }

    fn h_msm(
        &self,
        _a: Evaluations,
        _b: Evaluations,
        _c: Evaluations,
        _bases: &Bases<G1Affine>,
        _buffers: QuotientBuffers,
    ) -> Result<G1Projective, KernelError> {
        Err(self.lost("running the quotient"))
    }

    fn msm_g1(
        &self,
        _bases: &Bases<G1Affine>,
        _density: &Density,
        _exponents: &Arc<Vec<Fr>>,
    ) -> Result<G1Projective, KernelError> {
        Err(self.lost("running the G1 MSM"))
    }

    fn msm_g2(
        &self,
        _bases: &Bases<G2Affine>,
        _density: &Density,
        _exponents: &Arc<Vec<Fr>>,
    ) -> Result<G2Projective, KernelError> {
        Err(self.lost("running the G2 MSM"))
    }

    fn gpu_devices(&self) -> Vec<GpuDevice> {
        self.inner.gpu_devices()
    }

    fn kernel_stats(&self) -> Vec<(&'static str, KernelStat)> {
        self.inner.kernel_stats()
    }

    fn device_memory_used(&self) -> Vec<u64> {
        self.inner.device_memory_used()
    }
}

#[cfg(test)]
mod tests {
    use proofpipe_kernels::CpuBackend;

    use super::*;

    #[test]
    fn the_fault_goes_to_the_pod_it_names_or_to_every_pod() {
        let fault = Fault::GpuLost;
        assert_eq!(fault.for_pod(None, "gl-prover-1"), Fault::GpuLost);
        assert_eq!(
            fault.for_pod(Some("gl-prover-0"), "gl-prover-0"),
            Fault::GpuLost
        );
        assert_eq!(
            fault.for_pod(Some("gl-prover-0"), "gl-prover-1"),
            Fault::None
        );
    }

    #[test]
    fn a_lost_gpu_fails_every_call_as_the_cuda_backend_would() {
        let backend = Fault::GpuLost.wrap_backend(Arc::new(CpuBackend::new()));
        assert_eq!(backend.name(), "cpu");
        let bases = Bases::new(Arc::new(vec![G1Affine::default(); 4]), 0);
        let exponents = Arc::new(vec![Fr::from(1u64); 4]);
        for _ in 0..2 {
            let err = backend
                .msm_g1(&bases, &Density::Full, &exponents)
                .unwrap_err();
            assert_eq!(err.lost_gpu(), Some(0), "{err}");
            assert!(
                err.to_string().contains("cudaErrorECCUncorrectable"),
                "{err}"
            );
        }
        // Other faults leave the backend alone.
        let cpu = Fault::StallSynthesis.wrap_backend(Arc::new(CpuBackend::new()));
        assert!(cpu.msm_g1(&bases, &Density::Full, &exponents).is_ok());
    }
}
