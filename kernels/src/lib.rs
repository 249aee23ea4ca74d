//! Proving backends for the pipeline's GPU stage.
//!
//! The pipeline never calls FFT or MSM code directly: it calls a [`ProvingBackend`], so the
//! same pipeline runs on the CPU (always available, [`CpuBackend`]) or on a GPU backend
//! (added behind the `cuda` feature). A backend is chosen once per process, at run time.

mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod error;
mod gather;
mod host_memory;
mod ledger;
mod stream;

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
pub use ec_gpu_gen::multiexp_cpu::DensityTracker;

pub use cpu::CpuBackend;
#[cfg(feature = "cuda")]
pub use cuda::CudaBackend;
pub use error::{DEVICE_LOST_ERRORS, KernelError, device_lost};
pub(crate) use gather::used_exponents_map;
pub use host_memory::{
    EvalAlloc, Evaluations, HostPool, evaluations, heap_evaluations, into_std_vec,
};
pub use ledger::DeviceLedger;
pub use stream::{
    DEFAULT_STREAM_ENGINE_POINTS, GPU_CONTEXT_BYTES, GPU_MEMORY_ENV, GpuMemoryConfig, MAX_SM_COUNT,
    STREAM_ENGINE_POINTS_ENV, gpu_memory_cap_from_env, msm_engine_device_bytes,
    msm_temp_device_bytes, msm_window_bits, parse_gpu_memory, stream_batches,
    stream_engine_points_from_env, stream_schedule_fits, streamed_msm_device_bytes,
};

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
    /// Copied from page-locked host memory by each MSM, slice by slice ([`stream_batches`]),
    /// overlapping the kernels: device memory is only the streaming engine and two slices,
    /// at the cost of a host-to-device copy of the points per MSM. The CPU backend sums the
    /// same slices, so the schedule is exercised there too.
    Streamed,
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
    fn quotient(
        &self,
        a: Evaluations,
        b: Evaluations,
        c: Evaluations,
    ) -> Result<Vec<Fr>, KernelError>;

    /// Where synthesis should put the a/b/c evaluations this backend will consume: the heap
    /// by default; page-locked memory for a GPU backend (its upload is then a DMA).
    fn evaluation_alloc(&self) -> EvalAlloc {
        EvalAlloc::heap()
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
    ) -> Result<G1Projective, KernelError> {
        let h = Arc::new(self.quotient(a, b, c)?);
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
/// workers' kernels.
pub fn holds_device(kernel: &str) -> bool {
    !kernel.ends_with("_transfers") && !kernel.starts_with("host_")
}

/// The smallest power of two at or above `n`: the FFT domain size for `n` constraints.
pub fn domain_size(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// Which of a GPU backend's optimisations are on. All default to on; each can be turned off
/// (`PROOFPIPE_CUDA_SPLIT_MSM=0`, `PROOFPIPE_CUDA_H_ON_DEVICE=0`,
/// `PROOFPIPE_CUDA_PINNED_EVALUATIONS=0`, or `bench --gpu-variants`) so that a benchmark
/// measures what each one does, in the same run, on the same machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuOptions {
    /// MSMs over assignment scalars (all but H) sum their 0/1 scalars' bases with a bitmap
    /// batch addition and run Pippenger only over the rest, when most scalars are 0 or 1.
    pub split_msm: bool,
    /// The quotient's h stays on the device and feeds the H MSM there (no download of h, no
    /// upload of it as MSM scalars).
    pub h_on_device: bool,
    /// Synthesis writes a/b/c straight into page-locked buffers from a pool of the backend's
    /// ([`ProvingBackend::evaluation_alloc`]), so their upload is a DMA.
    pub pinned_evaluations: bool,
}

impl Default for GpuOptions {
    fn default() -> Self {
        Self::ALL
    }
}

impl GpuOptions {
    pub const SPLIT_MSM_ENV: &'static str = "PROOFPIPE_CUDA_SPLIT_MSM";
    pub const H_ON_DEVICE_ENV: &'static str = "PROOFPIPE_CUDA_H_ON_DEVICE";
    pub const PINNED_EVALUATIONS_ENV: &'static str = "PROOFPIPE_CUDA_PINNED_EVALUATIONS";
    pub const ALL: Self = Self {
        split_msm: true,
        h_on_device: true,
        pinned_evaluations: true,
    };
    pub const NONE: Self = Self {
        split_msm: false,
        h_on_device: false,
        pinned_evaluations: false,
    };

    /// The defaults, with any switched off by its variable set to `0`.
    pub fn from_env() -> Self {
        let on = |var: &str| std::env::var(var).map_or(true, |v| v.trim() != "0");
        Self {
            split_msm: on(Self::SPLIT_MSM_ENV),
            h_on_device: on(Self::H_ON_DEVICE_ENV),
            pinned_evaluations: on(Self::PINNED_EVALUATIONS_ENV),
        }
    }

    /// A variant by name: `all`, `none`, or the ones on joined by `+` (`split`, `h`,
    /// `pinned`), e.g. `split+h`.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name.trim() {
            "all" => return Ok(Self::ALL),
            "none" => return Ok(Self::NONE),
            _ => {}
        }
        let mut o = Self::NONE;
        for part in name.split('+').map(str::trim) {
            match part {
                "split" => o.split_msm = true,
                "h" => o.h_on_device = true,
                "pinned" => o.pinned_evaluations = true,
                other => {
                    return Err(format!(
                        "unknown GPU option {other:?} in {name:?}: use all, none, or split, h, pinned joined by +"
                    ));
                }
            }
        }
        Ok(o)
    }

    /// The variant's name as [`GpuOptions::parse`] reads it.
    pub fn name(&self) -> String {
        match *self {
            Self::ALL => "all".into(),
            Self::NONE => "none".into(),
            o => [
                (o.split_msm, "split"),
                (o.h_on_device, "h"),
                (o.pinned_evaluations, "pinned"),
            ]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join("+"),
        }
    }
}

/// Set to `cpu` to keep the GPU stage on the CPU even where a GPU is present.
pub const BACKEND_ENV: &str = "PROOFPIPE_BACKEND";

/// The backend this process proves with, and why it was chosen (for the one log line that
/// says so): CUDA when this build has it and a GPU is usable, else the CPU; a GPU backend's
/// options from the environment ([`GpuOptions::from_env`]).
pub fn select_backend() -> (Arc<dyn ProvingBackend>, String) {
    select_backend_with(GpuOptions::from_env())
}

/// [`select_backend`] with these GPU options.
pub fn select_backend_with(options: GpuOptions) -> (Arc<dyn ProvingBackend>, String) {
    select_backend_with_memory(options, None)
}

/// [`select_backend`] with these GPU options and, when given, these memory settings instead
/// of the environment's (a benchmark that compares caps in one process).
pub fn select_backend_with_memory(
    options: GpuOptions,
    memory: Option<GpuMemoryConfig>,
) -> (Arc<dyn ProvingBackend>, String) {
    if std::env::var(BACKEND_ENV).is_ok_and(|v| v == "cpu") {
        return (
            Arc::new(CpuBackend::new()),
            format!("{BACKEND_ENV}=cpu; the GPU stage runs on the CPU"),
        );
    }
    select_gpu_backend(options, memory)
}

#[cfg(feature = "cuda")]
fn select_gpu_backend(
    options: GpuOptions,
    memory: Option<GpuMemoryConfig>,
) -> (Arc<dyn ProvingBackend>, String) {
    let made = match memory {
        Some(memory) => CudaBackend::with_memory(options, memory),
        None => CudaBackend::with_options(options),
    };
    match made {
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
            let cap = match b.memory_config().cap {
                Some(cap) => format!(" (capped by {GPU_MEMORY_ENV}={})", bytesize::ByteSize(cap)),
                None => String::new(),
            };
            (
                Arc::new(b),
                format!(
                    "CUDA on {} GPU(s): {list}{cap}; GPU options {}",
                    devices.len(),
                    options.name()
                ),
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
fn select_gpu_backend(
    _: GpuOptions,
    _: Option<GpuMemoryConfig>,
) -> (Arc<dyn ProvingBackend>, String) {
    (
        Arc::new(CpuBackend::new()),
        "this build has no GPU backend (built without the `cuda` feature); the GPU stage runs on the CPU".into(),
    )
}

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
        ] {
            assert!(!holds_device(kernel), "{kernel}");
        }
    }

    #[test]
    fn gpu_option_variants_parse_and_name_round_trip() {
        for name in ["all", "none", "split", "h", "pinned", "split+h", "h+pinned"] {
            let o = GpuOptions::parse(name).unwrap();
            assert_eq!(GpuOptions::parse(&o.name()).unwrap(), o, "{name}");
        }
        assert_eq!(
            GpuOptions::parse("split+h+pinned").unwrap(),
            GpuOptions::ALL
        );
        assert_eq!(GpuOptions::parse("split+h").unwrap().name(), "split+h");
        assert!(!GpuOptions::parse("h").unwrap().split_msm);
        let err = GpuOptions::parse("split+fast").unwrap_err();
        assert!(err.contains("\"fast\""), "{err}");
    }
}
