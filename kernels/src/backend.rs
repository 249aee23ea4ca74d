//! What a proving backend is: the [`ProvingBackend`] trait the pipeline's GPU stage calls, the
//! bases and densities its MSMs run over, and what a backend reports about its GPUs and
//! kernels.

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ec_gpu_gen::multiexp_cpu::DensityTracker;

use crate::error::KernelError;
use crate::host_memory::{EvalAlloc, Evaluations};

/// Which bases of a query take part in a multi-scalar multiplication.
#[derive(Clone, Debug)]
pub enum Density {
    /// Every base pairs with the exponent at the same position.
    Full,
    /// Only bases whose variable occurs in the query; exponents still cover every variable.
    Sparse(Arc<DensityTracker>),
}

/// Where a query's base points are while a GPU backend runs an MSM over them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// Uploaded to the device on first use and kept there; every later MSM reads them in
    /// place (device memory: the points, for as long as the host vector lives).
    #[default]
    Resident,
    /// Copied from page-locked host memory by each MSM, slice by slice
    /// ([`crate::stream_batches`]), overlapping the kernels: device memory is only the
    /// streaming engine and two slices, at the cost of a host-to-device copy of the points
    /// per MSM. The CPU backend sums the same slices, so the schedule is exercised there too.
    Streamed,
}

/// How many of a, b, c a GPU backend holds on the device at once while it computes the
/// quotient: its workspace is that many vectors of the evaluation domain's size. Fewer let a
/// smaller card prove a large circuit (2^27 elements: 12, 8 or 4 GiB), at the cost of copies
/// inside the device lock (two: c's upload; one: two more uploads and two downloads of the
/// domain). The CPU backend ignores it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QuotientBuffers {
    #[default]
    Three,
    Two,
    One,
}

impl QuotientBuffers {
    /// The buffers' count, 1 to 3.
    pub fn count(self) -> u32 {
        match self {
            Self::Three => 3,
            Self::Two => 2,
            Self::One => 1,
        }
    }

    /// The choice of `count` buffers (1 to 3).
    pub fn from_count(count: u32) -> Option<Self> {
        match count {
            3 => Some(Self::Three),
            2 => Some(Self::Two),
            1 => Some(Self::One),
            _ => None,
        }
    }
}

/// What a pipeline's GPU stage will hold at most, for a backend to set aside before the first
/// partition ([`ProvingBackend::reserve`]): page-locked blocks for a/b/c evaluations and the
/// workers' quotient workspaces. Made lazily instead, during the first proof, their
/// allocations (cudaHostAlloc pins gigabytes page by page) stall the transfers running beside
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// Bytes of one evaluation vector (the evaluation domain's size x 32 B).
    pub evaluation_bytes: usize,
    /// Evaluation vectors alive at once: a, b, c of every partition the budget lets through
    /// synthesis, the channel and the GPU stage together.
    pub evaluation_blocks: usize,
    /// log2 of the evaluation domain.
    pub domain_lg: u32,
    pub quotient_buffers: QuotientBuffers,
    /// Quotient workspaces each device needs: its GPU-stage workers.
    pub workers_per_device: usize,
}

/// Base points of one query: the slice `bases[skip..]` is used.
#[derive(Clone, Debug)]
pub struct Bases<G> {
    pub points: Arc<Vec<G>>,
    pub skip: usize,
    pub placement: Placement,
}

impl<G> Bases<G> {
    /// Resident bases.
    pub fn new(points: Arc<Vec<G>>, skip: usize) -> Self {
        Self::with_placement(points, skip, Placement::Resident)
    }

    /// Streamed bases.
    pub fn streamed(points: Arc<Vec<G>>, skip: usize) -> Self {
        Self::with_placement(points, skip, Placement::Streamed)
    }

    pub fn with_placement(points: Arc<Vec<G>>, skip: usize, placement: Placement) -> Self {
        Self {
            points,
            skip,
            placement,
        }
    }
}

/// The heavy arithmetic of a Groth16 prove: everything the GPU stage needs.
///
/// Implementations must be usable from several GPU-stage workers at once.
pub trait ProvingBackend: Send + Sync {
    /// A short name for logs and reports ("cpu", "cuda").
    fn name(&self) -> &'static str;

    /// The quotient polynomial h = (a*b - c) / z over the coset, in coefficient form, as the
    /// `m - 1` exponents of the h query (m = the evaluation domain size), as field elements
    /// (ready to be passed to [`ProvingBackend::msm_g1`] as they are).
    ///
    /// `a`, `b`, `c` are the constraint evaluations; they are consumed so that their memory is
    /// released as soon as the polynomial is computed (to the allocator they came from:
    /// [`ProvingBackend::evaluation_alloc`]'s, for evaluations synthesized for this backend).
    /// `buffers`: how many of them a GPU holds at once.
    fn quotient(
        &self,
        a: Evaluations,
        b: Evaluations,
        c: Evaluations,
        buffers: QuotientBuffers,
    ) -> Result<Vec<Fr>, KernelError>;

    /// Where synthesis should put the a/b/c evaluations this backend will consume: the heap
    /// by default; page-locked memory for a GPU backend (its upload is then a DMA).
    fn evaluation_alloc(&self) -> EvalAlloc {
        EvalAlloc::heap()
    }

    /// Sets aside what `r` describes, so that the first partitions find it made; a later
    /// request of the same shape finds it too. Nothing for a backend that allocates nothing
    /// of its own (the default).
    fn reserve(&self, r: &Reservation) -> Result<(), KernelError> {
        let _ = r;
        Ok(())
    }

    /// The H term of a proof: the quotient of `a`, `b`, `c` (as [`ProvingBackend::quotient`])
    /// multiplied out over the h query's `bases` (as [`ProvingBackend::msm_g1`]). A backend
    /// may keep h where it computed it (the CUDA backend keeps it on the device); this default
    /// goes through the two calls.
    fn h_msm(
        &self,
        a: Evaluations,
        b: Evaluations,
        c: Evaluations,
        bases: &Bases<G1Affine>,
        buffers: QuotientBuffers,
    ) -> Result<G1Projective, KernelError> {
        let h = Arc::new(self.quotient(a, b, c, buffers)?);
        self.msm_g1(bases, &Density::Full, &h)
    }

    /// Multi-scalar multiplication over G1.
    ///
    /// The exponents are field elements as blstrs stores them (Montgomery form), not canonical
    /// bytes: the CUDA backend hands them to the GPU as they are and converts them there, so
    /// the GPU stage does no per-element host work for a full query; the CPU backend converts
    /// them itself, in parallel, while gathering the ones a query uses.
    fn msm_g1(
        &self,
        bases: &Bases<G1Affine>,
        density: &Density,
        exponents: &Arc<Vec<Fr>>,
    ) -> Result<G1Projective, KernelError>;

    /// Multi-scalar multiplication over G2 (exponents as for [`ProvingBackend::msm_g1`]).
    fn msm_g2(
        &self,
        bases: &Bases<G2Affine>,
        density: &Density,
        exponents: &Arc<Vec<Fr>>,
    ) -> Result<G2Projective, KernelError>;

    /// The GPUs this backend runs on (none for the CPU backend).
    fn gpu_devices(&self) -> Vec<GpuDevice> {
        Vec::new()
    }

    /// Time spent per kernel since the backend was made (empty where not measured).
    fn kernel_stats(&self) -> Vec<(&'static str, KernelStat)> {
        Vec::new()
    }

    /// Device memory in use now on each GPU (total minus free, every process's), for
    /// measuring the memory model; empty for the CPU backend.
    fn device_memory_used(&self) -> Vec<u64> {
        Vec::new()
    }

    /// Device memory this backend's own allocations hold on each GPU, as its ledger counts
    /// them (against `PROOFPIPE_GPU_MEMORY` where set); empty for the CPU backend.
    fn device_memory_held(&self) -> Vec<u64> {
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

/// Calls, wall seconds (while holding the device, host-device copies made under the lock
/// included, waiting for the device not included) and elements of one kernel kind. Kinds
/// named `*_transfers` are copies made outside the device lock, `host_*` host work of the GPU
/// stage outside it (see [`holds_device`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KernelStat {
    pub calls: u64,
    pub seconds: f64,
    pub elements: u64,
}

/// Whether time in a kernel kind (from [`ProvingBackend::kernel_stats`]) holds the device:
/// false for transfers and host work made outside the device lock, which overlap other
/// workers' kernels, and for parts of another kind's time.
pub fn holds_device(kernel: &str) -> bool {
    !kernel.ends_with("_transfers") && !kernel.starts_with("host_") && !PARTS.contains(&kernel)
}

/// Kernels whose time is also counted in another's (the H MSMs in `msm_g1` or
/// `msm_g1_streamed`): left out of sums of device time.
const PARTS: [&str; 1] = ["msm_g1_h"];

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench's "device running kernels" counts only what holds the device.
    #[test]
    fn transfers_and_host_work_do_not_hold_the_device() {
        for kernel in ["msm_g1", "quotient", "upload_bases"] {
            assert!(holds_device(kernel), "{kernel}");
        }
        for kernel in [
            "quotient_transfers",
            "host_msm_gather",
            "host_device_lock_wait",
            "msm_g1_h",
        ] {
            assert!(!holds_device(kernel), "{kernel}");
        }
    }
}
