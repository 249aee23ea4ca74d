//! Proving backends for the pipeline's GPU stage.
//!
//! The pipeline never calls FFT or MSM code directly: it calls a [`ProvingBackend`], so the
//! same pipeline runs on the CPU (always available, [`CpuBackend`]) or on a GPU backend
//! (added behind the `cuda` feature). A backend is chosen once per process, at run time.

mod cpu;
mod error;

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
pub use ec_gpu_gen::multiexp_cpu::DensityTracker;
use ff::PrimeField;

pub use cpu::CpuBackend;
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
}

/// The smallest power of two at or above `n`: the FFT domain size for `n` constraints.
pub fn domain_size(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// The backend this process proves with, and why it was chosen (for the one log line that
/// says so). Builds without a GPU backend always use the CPU.
pub fn select_backend() -> (Arc<dyn ProvingBackend>, &'static str) {
    (
        Arc::new(CpuBackend::new()),
        "this build has no GPU backend; the GPU stage runs on the CPU",
    )
}
