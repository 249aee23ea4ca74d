//! Sizing the pipeline from a memory limit: a pure function over a memory model of the
//! real data structures, so the pipeline stays under the limit by construction.
//!
//! At most `partition_workers + channel_capacity` synthesized partitions exist outside the GPU
//! stage (each worker holds one, the channel holds the rest), each GPU-stage worker holds one,
//! and the finalize stage holds a few much smaller ones. The peak is the sum of those plus
//! the parameters and the process's own base.

mod memory_limit;

use bytesize::ByteSize;
use serde::Serialize;

pub use memory_limit::{LimitSource, MemoryLimit, detect_memory_limit, parse_memory_size};

use crate::circuits::CircuitShape;
use crate::error::ProverError;
use crate::groth16::G2Placement;

const SCALAR: u64 = 32;

/// Bytes one partition holds in each stage, from the circuit's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PartitionBytes {
    /// After synthesis: a, b, c reserved to the FFT domain, the assignment, the densities.
    pub synthesized: u64,
    /// Peak inside the GPU stage: a, b, c during the FFTs, or the h exponents plus both forms
    /// of the assignment while it is converted for the MSMs.
    pub gpu_stage: u64,
    /// After the GPU stage: the assignment exponents (kept for the G2 MSM) and densities.
    pub finalize: u64,
}

impl PartitionBytes {
    pub fn for_shape(shape: CircuitShape) -> Self {
        let m = proofpipe_kernels::domain_size(shape.constraints) as u64;
        let (aux, inputs) = (shape.aux as u64, shape.inputs as u64);
        let densities = (2 * aux + inputs).div_ceil(8);
        let assignment = SCALAR * (aux + inputs);
        let fft_phase = 3 * SCALAR * m + assignment;
        let msm_phase = SCALAR * m + 2 * assignment;
        Self {
            synthesized: 3 * SCALAR * m + assignment + densities,
            gpu_stage: fft_phase.max(msm_phase) + densities,
            finalize: assignment + densities,
        }
    }
}

/// What the planner needs to know about the work and the machine.
#[derive(Clone, Debug, Serialize)]
pub struct SizingInput {
    /// What is proved, for messages: a circuit name, or a Filecoin proof.
    pub circuit: String,
    pub shape: CircuitShape,
    /// Memory the process may use.
    pub memory_limit: u64,
    /// Proving-key bytes held in memory (measured once loaded, else estimated).
    pub params_bytes: u64,
    /// R1CS matrices held for two-pass synthesis (0 for one-pass), once per process.
    pub matrices_bytes: u64,
    /// Fraction of the limit kept free for allocator slack and the unexpected.
    pub headroom: f64,
    /// CPU cores available: more synthesis workers than cores only add memory.
    pub cpu_cores: usize,
    /// GPU devices in use (0: the GPU stage runs on the CPU backend).
    pub gpu_devices: usize,
    /// Memory of the smallest GPU in use, if known: the proving key's bases stay resident
    /// on each device and every GPU-stage worker needs its own buffers there.
    pub gpu_memory_bytes: Option<u64>,
    /// The most partitions that can be in flight at once (a single job's size), if known.
    pub max_parallel_partitions: Option<usize>,
    pub overrides: Overrides,
}

/// Fixed values that replace the planner's choice ("auto" when `None`).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Overrides {
    pub partition_workers: Option<usize>,
    pub channel_capacity: Option<usize>,
    pub gpu_workers: Option<usize>,
}

/// The pipeline's shape and its predicted peak memory.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub partition_workers: usize,
    pub channel_capacity: usize,
    pub gpu_workers: usize,
    pub finalize_workers: usize,
    /// Partitions waiting between the GPU stage and finalize.
    pub finalize_queue: usize,
    pub g2: G2Placement,
    pub predicted_peak_bytes: u64,
    pub memory_limit: u64,
    pub breakdown: Breakdown,
    /// Device memory per GPU, when the GPU stage runs on GPUs of known size.
    pub gpu: Option<GpuPlan>,
}

/// Device memory of one GPU: resident bases, plus each of its workers' buffers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GpuPlan {
    pub devices: usize,
    pub workers_per_device: usize,
    pub device_memory_bytes: u64,
    /// The proving key's base points (a device copy of the host parameters) and the MSM
    /// buckets kept with them.
    pub resident_bytes: u64,
    /// One worker's device memory: its quotient workspace (a, b, c buffers, kept across
    /// partitions) plus the scalars and digits of the largest MSM.
    pub per_worker_bytes: u64,
    pub predicted_device_bytes: u64,
}

/// MSM buckets kept with the resident bases: sppark allocates ~2^(w-1) buckets per window,
/// ~16 windows, per resident query range (six of them, G2's twice G1's size); measured to
/// stay under this at 2^24.
pub const GPU_RESIDENT_OVERHEAD_BYTES: u64 = 2 << 30;

/// The CUDA context and sppark's NTT tables, per device.
pub const GPU_CONTEXT_BYTES: u64 = 1 << 30;

/// Device memory per circuit variable beyond the model's terms, for the G2 MSM's resident
/// range (its buckets and temporaries scale with the G2 point count). Measured on the H200:
/// nvidia-smi 3.5 GiB above the other terms at mul-chain 2^24 (2^24 G2 points), 0.5 GiB at
/// merkle-sha256 2^24 (4.45M G2 points); budgeted per variable (an upper bound on the G2
/// points) with room: 192 B.
pub const GPU_BYTES_PER_VARIABLE: u64 = 192;

/// GPU-stage workers per device when not overridden: one's copies overlap another's kernels.
pub const GPU_WORKERS_PER_DEVICE: usize = 2;

impl GpuPlan {
    fn for_shape(
        shape: CircuitShape,
        params_bytes: u64,
        devices: usize,
        memory: u64,
        per_device: usize,
    ) -> Self {
        let m = proofpipe_kernels::domain_size(shape.constraints) as u64;
        // Quotient workspace: a, b, c on the device, kept by the worker. MSM: scalars (32 B)
        // + signed digits (~16 windows x 4 B) + sort temporaries (8 B) per point of the
        // largest query (~m points), while the workspace is held.
        let per_worker = 3 * SCALAR * m + (SCALAR + 64 + 8) * m;
        let resident = resident_device_bytes(shape, params_bytes);
        Self {
            devices,
            workers_per_device: per_device,
            device_memory_bytes: memory,
            resident_bytes: resident,
            per_worker_bytes: per_worker,
            predicted_device_bytes: resident + per_device as u64 * per_worker,
        }
    }
}

/// Device memory a process keeps on each GPU whatever its worker count: the proving key's
/// bases with their buckets, the CUDA context, the G2 MSM's extra (see the constants).
pub fn resident_device_bytes(shape: CircuitShape, params_bytes: u64) -> u64 {
    let variables = (shape.inputs + shape.aux) as u64;
    params_bytes
        + GPU_RESIDENT_OVERHEAD_BYTES
        + GPU_CONTEXT_BYTES
        + GPU_BYTES_PER_VARIABLE * variables
}

/// Where the predicted peak goes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Breakdown {
    /// The process and its pipeline threads.
    pub base_bytes: u64,
    pub params_bytes: u64,
    pub matrices_bytes: u64,
    pub per_partition: PartitionBytes,
    pub synthesized_bytes: u64,
    pub gpu_stage_bytes: u64,
    pub finalize_bytes: u64,
    pub headroom_bytes: u64,
}

/// The process itself: code, runtime, the verifying key.
pub const BASE_BYTES: u64 = 32 << 20;

/// Per pipeline thread: its stack and the malloc arena it keeps (glibc gives each thread an
/// arena that holds freed gadget temporaries; measured ~20 MiB per worker for merkle-sha256).
pub const PER_THREAD_BYTES: u64 = 24 << 20;

impl Plan {
    /// The most synthesized partitions that may exist outside the GPU stage.
    pub fn max_synthesized_in_flight(&self) -> usize {
        self.partition_workers + self.channel_capacity
    }
}

/// Worker counts of one candidate sizing.
#[derive(Clone, Copy)]
struct Workers {
    pw: usize,
    cap: usize,
    gw: usize,
    finalize_workers: usize,
    finalize_queue: usize,
}

/// (peak, base incl. threads, synthesized, GPU stage, finalize) bytes; `resident`: what the
/// process holds once whatever the workers (parameters, R1CS matrices).
fn predicted_peak(resident: u64, per: PartitionBytes, w: Workers) -> (u64, u64, u64, u64, u64) {
    let base = BASE_BYTES + PER_THREAD_BYTES * (w.pw + w.gw + w.finalize_workers) as u64;
    let synthesized = (w.pw + w.cap) as u64 * per.synthesized;
    let gpu = w.gw as u64 * per.gpu_stage;
    let fin = (w.finalize_workers + w.finalize_queue) as u64 * per.finalize;
    (
        base + resident + synthesized + gpu + fin,
        base,
        synthesized,
        gpu,
        fin,
    )
}

/// A channel long enough to absorb several workers finishing at once, no longer: beyond
/// that it only adds memory.
pub fn default_capacity(partition_workers: usize) -> usize {
    partition_workers.div_ceil(2).max(1)
}

/// Sizes the pipeline. Picks the most synthesis workers that fit the memory left after the
/// parameters, the GPU stage and finalize (bounded by cores and by useful parallelism),
/// with a channel sized from them; fails with the minimum limit if not even one fits.
pub fn plan(input: &SizingInput) -> Result<Plan, ProverError> {
    if !(0.0..0.9).contains(&input.headroom) {
        return Err(ProverError::InvalidArgument {
            what: "headroom",
            reason: format!("{} is outside [0, 0.9)", input.headroom),
        });
    }
    let (gw, gpu_plan) = gpu_workers(input)?;
    let mut per = PartitionBytes::for_shape(input.shape);
    if gpu_plan.is_some() {
        // A CUDA GPU-stage worker keeps a page-locked staging buffer for MSM scalars: up to
        // m of them (32 B each), whichever partition it holds.
        per.gpu_stage += SCALAR * proofpipe_kernels::domain_size(input.shape.constraints) as u64;
    }
    let (finalize_workers, finalize_queue) = (1, 1);
    let workers = |pw, cap| Workers {
        pw,
        cap,
        gw,
        finalize_workers,
        finalize_queue,
    };
    let usable = (input.memory_limit as f64 * (1.0 - input.headroom)) as u64;
    let resident = input.params_bytes + input.matrices_bytes;
    let fits = |pw, cap| predicted_peak(resident, per, workers(pw, cap)).0 <= usable;

    let cpu_bound = input.cpu_cores.max(1);
    let useful = input.max_parallel_partitions.unwrap_or(usize::MAX).max(1);
    let (pw, cap) = match (
        input.overrides.partition_workers,
        input.overrides.channel_capacity,
    ) {
        (Some(pw), Some(cap)) => (pw, cap),
        (Some(pw), None) => (pw, default_capacity(pw)),
        (None, fixed_cap) => {
            let cap_for = |pw| fixed_cap.unwrap_or_else(|| default_capacity(pw));
            let most = cpu_bound.min(useful);
            let mut pw = most;
            while pw > 1 && !fits(pw, cap_for(pw)) {
                pw -= 1;
            }
            (pw, cap_for(pw))
        }
    };
    if pw == 0 || cap == 0 {
        return Err(ProverError::InvalidArgument {
            what: "pipeline overrides",
            reason: "partition workers and channel capacity must be at least 1".into(),
        });
    }
    if !fits(pw, cap) {
        let (min_peak, ..) = predicted_peak(resident, per, workers(1, 1));
        let (wanted, ..) = predicted_peak(resident, per, workers(pw, cap));
        let needed = if input.overrides.partition_workers.is_some() {
            wanted
        } else {
            min_peak
        };
        return Err(ProverError::MemoryLimitTooSmall {
            circuit: input.circuit.clone(),
            constraints: input.shape.constraints,
            limit: ByteSize(input.memory_limit),
            minimum: ByteSize((needed as f64 / (1.0 - input.headroom)).ceil() as u64),
            params: ByteSize(input.params_bytes),
        });
    }
    let (peak, base, synthesized, gpu, fin) = predicted_peak(resident, per, workers(pw, cap));
    Ok(Plan {
        partition_workers: pw,
        channel_capacity: cap,
        gpu_workers: gw,
        finalize_workers,
        finalize_queue,
        g2: G2Placement::GpuStage,
        gpu: gpu_plan,
        predicted_peak_bytes: peak,
        memory_limit: input.memory_limit,
        breakdown: Breakdown {
            base_bytes: base,
            params_bytes: input.params_bytes,
            matrices_bytes: input.matrices_bytes,
            per_partition: per,
            synthesized_bytes: synthesized,
            gpu_stage_bytes: gpu,
            finalize_bytes: fin,
            headroom_bytes: input.memory_limit - usable,
        },
    })
}

/// GPU-stage workers (all devices together) and, for GPUs of known size, their device
/// memory plan: as many workers per device as fit (at most [`GPU_WORKERS_PER_DEVICE`]),
/// refused if not even the resident bases and one worker fit.
fn gpu_workers(input: &SizingInput) -> Result<(usize, Option<GpuPlan>), ProverError> {
    let devices = input.gpu_devices;
    if devices == 0 {
        return Ok((input.overrides.gpu_workers.unwrap_or(1), None));
    }
    let wanted = input
        .overrides
        .gpu_workers
        .map_or(GPU_WORKERS_PER_DEVICE, |gw| gw.div_ceil(devices).max(1));
    let Some(memory) = input.gpu_memory_bytes else {
        return Ok((
            input.overrides.gpu_workers.unwrap_or(wanted * devices),
            None,
        ));
    };
    let fit = |k| {
        GpuPlan::for_shape(input.shape, input.params_bytes, devices, memory, k)
            .predicted_device_bytes
            <= memory
    };
    let mut per_device = wanted;
    while per_device > 1 && !fit(per_device) {
        per_device -= 1;
    }
    let gpu = GpuPlan::for_shape(input.shape, input.params_bytes, devices, memory, per_device);
    if !fit(per_device) {
        return Err(ProverError::InvalidArgument {
            what: "GPU memory",
            reason: format!(
                "{} per GPU cannot hold the resident parameters ({}) and one GPU-stage worker ({}) for {} constraints",
                ByteSize(memory),
                ByteSize(gpu.resident_bytes),
                ByteSize(gpu.per_worker_bytes),
                input.shape.constraints
            ),
        });
    }
    let gw = match input.overrides.gpu_workers {
        Some(gw) if per_device == wanted => gw,
        _ => per_device * devices,
    };
    Ok((gw, Some(gpu)))
}

#[cfg(test)]
mod tests;
