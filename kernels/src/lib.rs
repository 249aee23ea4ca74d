//! Proving backends for the pipeline's GPU stage.
//!
//! The pipeline never calls FFT or MSM code directly: it calls a [`ProvingBackend`], so the
//! same pipeline runs on the CPU (always available, [`CpuBackend`]) or on a GPU backend
//! (added behind the `cuda` feature). A backend is chosen once per process, at run time.

mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod error;

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
pub use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::PrimeField;

pub use cpu::CpuBackend;
#[cfg(feature = "cuda")]
pub use cuda::CudaBackend;
pub use error::KernelError;

/// A scalar in the little-endian byte form the MSM kernels consume.
pub type FrRepr = <Fr as PrimeField>::Repr;

/// Which bases of a query take part in a multi-scalar multiplication.
#[derive(Clone, Debug)]
pub enum Density {
    /// Every base pairs with the exponent at the same position.
    Full,
    /// Only bases whose variable occurs in the query; exponents still cover every variable.
    Sparse(Arc<DensityTracker>),
}

/// Base points of one query: the slice `bases[skip..]` is used.
#[derive(Clone, Debug)]
pub struct Bases<G> {
    pub points: Arc<Vec<G>>,
    pub skip: usize,
}

impl<G> Bases<G> {
    pub fn new(points: Arc<Vec<G>>, skip: usize) -> Self {
        Self { points, skip }
    }
}

/// The heavy arithmetic of a Groth16 prove: everything the GPU stage needs.
///
/// Implementations must be usable from several GPU-stage workers at once.
pub trait ProvingBackend: Send + Sync {
    /// A short name for logs and reports ("cpu", "cuda").
    fn name(&self) -> &'static str;

    /// The quotient polynomial h = (a*b - c) / z over the coset, in coefficient form, as the
    /// `m - 1` exponents of the h query (m = the evaluation domain size).
    ///
    /// `a`, `b`, `c` are the constraint evaluations; they are consumed so that their memory is
    /// released as soon as the polynomial is computed.
    fn quotient(&self, a: Vec<Fr>, b: Vec<Fr>, c: Vec<Fr>) -> Result<Vec<FrRepr>, KernelError>;

    /// Multi-scalar multiplication over G1.
    fn msm_g1(
        &self,
        bases: &Bases<G1Affine>,
        density: &Density,
        exponents: &Arc<Vec<FrRepr>>,
    ) -> Result<G1Projective, KernelError>;

    /// Multi-scalar multiplication over G2.
    fn msm_g2(
        &self,
        bases: &Bases<G2Affine>,
        density: &Density,
        exponents: &Arc<Vec<FrRepr>>,
    ) -> Result<G2Projective, KernelError>;

    /// The GPUs this backend runs on (none for the CPU backend).
    fn gpu_devices(&self) -> Vec<GpuDevice> {
        Vec::new()
    }

    /// Time spent per kernel since the backend was made (empty where not measured).
    fn kernel_stats(&self) -> Vec<(&'static str, KernelStat)> {
        Vec::new()
    }
}

/// One GPU a backend uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuDevice {
    pub id: usize,
    pub total_bytes: u64,
    /// Free when the backend was made.
    pub free_bytes: u64,
    pub compute_capability: (u32, u32),
    pub sm_count: u32,
}

/// Calls, wall seconds (while holding the device, host-device copies included, waiting for
/// the device not included) and elements of one kernel kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KernelStat {
    pub calls: u64,
    pub seconds: f64,
    pub elements: u64,
}

/// The exponents of the variables a query uses (all of them for a full query, the ones its
/// density marks for a sparse one), after checking that the bases cover them. Every
/// backend gathers the same way.
pub(crate) fn used_exponents<'a, G>(
    bases: &Bases<G>,
    density: &Density,
    exponents: &'a [FrRepr],
) -> Result<std::borrow::Cow<'a, [FrRepr]>, KernelError> {
    let exps: std::borrow::Cow<'a, [FrRepr]> = match density {
        Density::Full => exponents.into(),
        Density::Sparse(d) => exponents
            .iter()
            .zip(d.bv.iter())
            .filter_map(|(e, used)| used.then_some(*e))
            .collect::<Vec<_>>()
            .into(),
    };
    let available = bases.points.len().saturating_sub(bases.skip);
    if available < exps.len() {
        return Err(KernelError::BasesTooShort {
            bases: bases.points.len(),
            skip: bases.skip,
            exponents: exps.len(),
        });
    }
    Ok(exps)
}

/// The smallest power of two at or above `n`: the FFT domain size for `n` constraints.
pub fn domain_size(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// Set to `cpu` to keep the GPU stage on the CPU even where a GPU is present.
pub const BACKEND_ENV: &str = "PROOFPIPE_BACKEND";

/// The backend this process proves with, and why it was chosen (for the one log line that
/// says so): CUDA when this build has it and a GPU is usable, else the CPU.
pub fn select_backend() -> (Arc<dyn ProvingBackend>, String) {
    if std::env::var(BACKEND_ENV).is_ok_and(|v| v == "cpu") {
        return (
            Arc::new(CpuBackend::new()),
            format!("{BACKEND_ENV}=cpu; the GPU stage runs on the CPU"),
        );
    }
    select_gpu_backend()
}

#[cfg(feature = "cuda")]
fn select_gpu_backend() -> (Arc<dyn ProvingBackend>, String) {
    match CudaBackend::new() {
        Ok(b) => {
            let devices = b.gpu_devices();
            let list = devices
                .iter()
                .map(|d| {
                    format!(
                        "#{} sm_{}{} {} SMs {:.0} GiB",
                        d.id,
                        d.compute_capability.0,
                        d.compute_capability.1,
                        d.sm_count,
                        d.total_bytes as f64 / (1u64 << 30) as f64
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            (
                Arc::new(b),
                format!("CUDA on {} GPU(s): {list}", devices.len()),
            )
        }
        Err(e) => (
            Arc::new(CpuBackend::new()),
            format!(
                "this build has CUDA but it cannot be used ({e}); the GPU stage runs on the CPU"
            ),
        ),
    }
}

#[cfg(not(feature = "cuda"))]
fn select_gpu_backend() -> (Arc<dyn ProvingBackend>, String) {
    (
        Arc::new(CpuBackend::new()),
        "this build has no GPU backend (built without the `cuda` feature); the GPU stage runs on the CPU".into(),
    )
}
