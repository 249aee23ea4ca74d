//! Sizing the pipeline from a memory limit: a pure function over a memory model of the
//! real data structures, so the pipeline stays under the limit by construction.
//!
//! A partition takes one of `partition_workers` permits before its synthesis starts and gives
//! it back when it leaves the GPU stage (ADR 0016), so at most `partition_workers` partitions
//! hold their large buffers at once, wherever they are (synthesizing, queued, in the GPU
//! stage); the channel (`channel_capacity`) bounds the queue within that. Each GPU-stage
//! worker keeps a page-locked staging buffer, and the finalize stage holds a few much smaller
//! partitions. The peak is the sum of those plus the parameters and the process's own base.
//! The terms are fitted to peaks measured on the H200 (the prover's
//! `sizing/measurements.rs`, whose test holds the model to them).
//!
//! It lives in the model, not the prover, so that the operator can tell, before any prover
//! tries, whether a job can fit its pool at all (ADR 0030).

mod circuit;
mod device;
mod fit;
mod shapes;
mod streamed;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use circuit::SCALAR;

pub use circuit::{CircuitShape, G1_AFFINE_BYTES, G2_AFFINE_BYTES, domain_size};
pub use device::{GPU_CONTEXT_BYTES, GPU_MSM_BYTES_PER_POINT};
pub use fit::{Fit, TooLarge, fit};
pub use shapes::{PARTITION_SHAPES, PartitionShapeRow, partition_shape};
pub use streamed::{
    BasesPlacement, MSM_SCALAR_BITS, MSM_SM_COUNT, MsmGroup, MsmWindows, PlacedBytes, QueryBytes,
    QueryPlacement, STREAMED_MSM_ENGINE_POINTS, msm_engine_device_bytes, place_queries,
    placed_bytes, streamed_msm_batches, streamed_msm_call_device_bytes, streamed_msm_device_bytes,
};

/// An upper bound on the heap bytes of a proving key for `shape` (every variable dense in A
/// and B), before it is loaded: what a plan counts when it has neither measured nor counted
/// one.
pub fn estimated_params_bytes(shape: CircuitShape) -> u64 {
    let m = domain_size(shape.constraints) as u64;
    let vars = (shape.inputs + shape.aux) as u64;
    let g1 = (m - 1) + shape.aux as u64 + 2 * vars;
    g1 * G1_AFFINE_BYTES + vars * G2_AFFINE_BYTES
}

/// Where the G2 MSM (the B query over G2) runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum G2Placement {
    /// In the GPU stage, with the G1 MSMs.
    #[default]
    GpuStage,
    /// In the CPU finalize stage, overlapping the next partition's GPU work.
    Finalize,
}

/// Why no plan fits.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SizingError {
    #[error("invalid {what}: {reason}")]
    InvalidArgument { what: &'static str, reason: String },
    #[error(
        "memory limit {limit} is too small: {circuit} at {constraints} constraints needs at least \
         {minimum} (parameters {params}, one partition from synthesis through the GPU stage, the \
         finalize stage, and headroom); raise the limit or use a smaller circuit"
    )]
    MemoryLimitTooSmall {
        circuit: String,
        constraints: usize,
        limit: ByteSize,
        minimum: ByteSize,
        params: ByteSize,
    },
    /// The GPU cannot hold what must stay on it and one GPU-stage worker: a smaller GPU plan
    /// may fit once what else is on the card has left (a job beside this one, another
    /// resident set).
    #[error(
        "{memory} per GPU cannot hold one GPU-stage worker, whose quotient workspace alone \
         needs {per_worker} (with a single buffer of the domain), beside the {resident} that stays on the card (the bases not \
         streamed from host memory, the CUDA context, MSM buffers) for {constraints} \
         constraints; use a GPU with more memory"
    )]
    GpuMemoryTooSmall {
        memory: ByteSize,
        /// The least that stays on the device: with query sizes known, every query streamed.
        resident: ByteSize,
        /// One worker's quotient workspace.
        per_worker: ByteSize,
        constraints: usize,
    },
}

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
    /// What one permit covers: the partition at its largest, in synthesis, the queue or the
    /// GPU stage.
    pub fn held(&self) -> u64 {
        self.synthesized.max(self.gpu_stage)
    }

    pub fn for_shape(shape: CircuitShape) -> Self {
        let m = domain_size(shape.constraints) as u64;
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

/// How one partition's synthesis uses the machine, as its source says
/// (`PartitionSource::synthesis_threads` and `synthesizes_in_subsystems`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SynthesisProfile {
    pub threads: usize,
    pub in_subsystems: bool,
}

impl SynthesisProfile {
    /// A partition on one core, synthesized straight into its evaluations.
    pub const ONE_CORE: Self = Self {
        threads: 1,
        in_subsystems: false,
    };
}

/// The share of the memory limit a prover keeps free (its daemon's headroom).
pub const PROVER_HEADROOM: f64 = 0.1;

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
    /// Each query's share of the proving key, if known: a GPU too small for every base then
    /// streams some queries' bases from host memory ([`place_queries`]). `None`: every base
    /// is resident on the device, `params_bytes` of them.
    pub query_bytes: Option<QueryBytes>,
    /// R1CS matrices held for two-pass synthesis (0 for one-pass), once per process.
    pub matrices_bytes: u64,
    /// Fraction of the limit kept free for allocator slack and the unexpected.
    pub headroom: f64,
    /// CPU cores available: more synthesis workers than cores only add memory.
    pub cpu_cores: usize,
    /// Threads one partition's synthesis keeps busy: 1 when each partition runs on a core of
    /// its own, more when its independent parts run on every core (ADR 0023).
    pub synthesis_threads: usize,
    /// a, b, c are held twice during synthesis: the partition's parts are synthesized into
    /// sub-systems collected before they are copied into its evaluations (PoSt), and those
    /// are resident from the start (page-locked, the CUDA backend's pool). With evaluations
    /// on the heap they fill only as the sub-systems drain, so they are not held twice.
    pub evaluations_held_twice: bool,
    /// GPU devices in use (0: the GPU stage runs on the CPU backend).
    pub gpu_devices: usize,
    /// Memory of the smallest GPU in use, if known: the proving key's bases stay resident
    /// on each device (those that fit, with `query_bytes`) and every GPU-stage worker needs
    /// its own buffers there.
    pub gpu_memory_bytes: Option<u64>,
    /// The most partitions that can be in flight at once (a single job's size), if known.
    pub max_parallel_partitions: Option<usize>,
    pub overrides: Overrides,
}

/// The one way a sizing input is built: [`SizingInput::new`] with the work and the limit, then
/// the facts the caller knows (everything else keeps the defaults `new` names).
impl SizingInput {
    /// The input for `circuit` of `shape` under `memory_limit`: no parameters or matrices
    /// counted, the prover's headroom ([`PROVER_HEADROOM`]), one core, a partition synthesized
    /// on one thread straight into its evaluations, no GPU, no bound on the partitions in
    /// flight, nothing overridden.
    pub fn new(circuit: impl Into<String>, shape: CircuitShape, memory_limit: u64) -> Self {
        Self {
            circuit: circuit.into(),
            shape,
            memory_limit,
            params_bytes: 0,
            query_bytes: None,
            matrices_bytes: 0,
            headroom: PROVER_HEADROOM,
            cpu_cores: 1,
            synthesis_threads: 1,
            evaluations_held_twice: false,
            gpu_devices: 0,
            gpu_memory_bytes: None,
            max_parallel_partitions: None,
            overrides: Overrides::default(),
        }
    }

    /// The proving key's bytes in memory, and each query's share of them if known.
    pub fn with_params(mut self, params_bytes: u64, query_bytes: Option<QueryBytes>) -> Self {
        self.params_bytes = params_bytes;
        self.query_bytes = query_bytes;
        self
    }

    /// R1CS matrices held for two-pass synthesis.
    pub fn with_matrices(mut self, matrices_bytes: u64) -> Self {
        self.matrices_bytes = matrices_bytes;
        self
    }

    pub fn with_headroom(mut self, headroom: f64) -> Self {
        self.headroom = headroom;
        self
    }

    pub fn with_cores(mut self, cpu_cores: usize) -> Self {
        self.cpu_cores = cpu_cores;
        self
    }

    /// How one partition is synthesized; a, b, c are held twice when it is synthesized in
    /// sub-systems into page-locked evaluations.
    pub fn with_synthesis(mut self, synthesis: SynthesisProfile, page_locked: bool) -> Self {
        self.synthesis_threads = synthesis.threads;
        self.evaluations_held_twice = synthesis.in_subsystems && page_locked;
        self
    }

    /// GPU devices in use and the memory of the smallest, if known.
    pub fn with_gpus(mut self, devices: usize, smallest_bytes: Option<u64>) -> Self {
        self.gpu_devices = devices;
        self.gpu_memory_bytes = smallest_bytes;
        self
    }

    /// The most partitions that can be in flight at once (what is left of one job).
    pub fn with_partitions(mut self, partitions: usize) -> Self {
        self.max_parallel_partitions = Some(partitions);
        self
    }

    pub fn with_overrides(mut self, overrides: Overrides) -> Self {
        self.overrides = overrides;
        self
    }
}

/// Fixed values that replace the planner's choice ("auto" when `None`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Overrides {
    pub partition_workers: Option<usize>,
    pub channel_capacity: Option<usize>,
    pub gpu_workers: Option<usize>,
    /// Stream every query's bases from host memory whatever the GPU could hold: to run and
    /// measure the streamed path on any card (the planner streams only what does not fit).
    pub stream_bases: bool,
}

/// The pipeline's shape and its predicted peak memory.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    pub partition_workers: usize,
    /// Partitions that may hold their large buffers at once (synthesizing, queued, in the
    /// GPU stage): the permits, one per synthesis worker.
    pub partition_budget: usize,
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
    /// Which queries keep their bases on the device and which stream them from host memory
    /// (all resident without [`SizingInput::query_bytes`]).
    pub placement: QueryPlacement,
    /// Host bytes of the streamed queries' bases (page-locked; 0 when all are resident).
    /// The host plan counts them within `params_bytes`: the backend is expected to pin the
    /// loaded bases where they lie, not to copy them.
    pub streamed_bytes: u64,
    /// Device bytes of the streamed MSMs: the streamed engines' buckets and the largest
    /// streamed call's buffers (one MSM runs at a time per device); 0 when none streams.
    /// Part of `resident_bytes`.
    pub stream_buffer_bytes: u64,
    /// What a device holds whatever its worker count: the resident queries' base points (a
    /// device copy of the host parameters), the CUDA context and NTT tables, the
    /// temporaries of the largest resident MSM (one MSM runs at a time), and the stream
    /// buffers.
    pub resident_bytes: u64,
    /// How many of a, b, c each worker's quotient workspace holds at once (3, 2 or 1): 3
    /// when that fits, fewer on a card that cannot hold one worker with three.
    pub quotient_buffers: u32,
    /// One worker's device memory: its quotient workspace (`quotient_buffers` vectors of the
    /// domain's size, kept across partitions).
    pub per_worker_bytes: u64,
    pub predicted_device_bytes: u64,
}

/// GPU-stage workers per device when not overridden: one's copies overlap another's kernels.
pub const GPU_WORKERS_PER_DEVICE: usize = 2;

impl GpuPlan {
    /// Every base resident: `params_bytes` of them.
    fn for_shape(
        shape: CircuitShape,
        params_bytes: u64,
        devices: usize,
        memory: u64,
        per_device: usize,
        quotient_buffers: u32,
    ) -> Self {
        let placed = PlacedBytes {
            resident_bases: params_bytes,
            resident_msm: resident_device_bytes(shape, params_bytes)
                - params_bytes
                - GPU_CONTEXT_BYTES,
            stream_buffers: 0,
            streamed: 0,
        };
        Self::placed(
            shape,
            QueryPlacement::all_resident(),
            placed,
            devices,
            memory,
            per_device,
            quotient_buffers,
        )
    }

    fn placed(
        shape: CircuitShape,
        placement: QueryPlacement,
        placed: PlacedBytes,
        devices: usize,
        memory: u64,
        per_device: usize,
        quotient_buffers: u32,
    ) -> Self {
        let per_worker = quotient_workspace_bytes(shape, quotient_buffers);
        let resident = GPU_CONTEXT_BYTES + placed.device();
        Self {
            devices,
            workers_per_device: per_device,
            device_memory_bytes: memory,
            placement,
            streamed_bytes: placed.streamed,
            stream_buffer_bytes: placed.stream_buffers,
            resident_bytes: resident,
            quotient_buffers,
            per_worker_bytes: per_worker,
            predicted_device_bytes: resident + per_device as u64 * per_worker,
        }
    }
}

/// A GPU-stage worker's device memory: its quotient workspace of `buffers` (3, 2 or 1) vectors
/// over the domain, kept by the worker across partitions; with one, also the staging slice
/// its results are combined through ([`QUOTIENT_STAGE_ELEMENTS`]).
pub fn quotient_workspace_bytes(shape: CircuitShape, buffers: u32) -> u64 {
    let m = domain_size(shape.constraints) as u64;
    let stage = if buffers == 1 {
        (m / 4).clamp(1, QUOTIENT_STAGE_ELEMENTS)
    } else {
        0
    };
    SCALAR * (u64::from(buffers) * m + stage)
}

/// The quotient workspace's buffer counts, most first: the plan takes the first that fits.
pub const QUOTIENT_BUFFER_CHOICES: [u32; 3] = [3, 2, 1];

/// Elements of a one-buffer workspace's staging slice at most (the CUDA backend's
/// `QUOTIENT_STAGE`; a quarter of the domain below 2^24).
pub const QUOTIENT_STAGE_ELEMENTS: u64 = 1 << 22;

/// Device memory a process keeps on each GPU whatever its worker count, every base resident:
/// the proving key's bases, the CUDA context, the running MSM's temporaries (see the
/// constants). [`placed_bytes`] counts a placement that streams some.
pub fn resident_device_bytes(shape: CircuitShape, params_bytes: u64) -> u64 {
    let m = domain_size(shape.constraints) as u64;
    let points = m.max((shape.inputs + shape.aux) as u64);
    params_bytes + GPU_CONTEXT_BYTES + GPU_MSM_BYTES_PER_POINT * points
}

/// Where the predicted peak goes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Breakdown {
    /// The process and its pipeline threads (and the CUDA runtime's host memory).
    pub base_bytes: u64,
    pub params_bytes: u64,
    pub matrices_bytes: u64,
    pub per_partition: PartitionBytes,
    /// `partition_budget` partitions at their largest (synthesized, queued or in the GPU
    /// stage).
    pub synthesized_bytes: u64,
    /// The GPU-stage workers' page-locked staging buffers (CUDA only).
    pub gpu_stage_bytes: u64,
    pub finalize_bytes: u64,
    pub headroom_bytes: u64,
}

/// The process itself: code, runtime, the verifying key.
pub const BASE_BYTES: u64 = 32 << 20;

/// Per pipeline thread: its stack and the malloc arena it keeps (glibc gives each thread an
/// arena that holds freed gadget temporaries; measured ~20 MiB per worker for merkle-sha256).
pub const PER_THREAD_BYTES: u64 = 24 << 20;

/// Host memory of the CUDA runtime and driver once a device is in use (context, module,
/// driver threads and their buffers), beyond the staging buffers counted per worker. On the
/// H200 the process held 0.19 GiB besides its parameters once the context existed (base and
/// context together); the rest covers the kernels' module and streams, not measured apart.
pub const CUDA_HOST_BYTES: u64 = 512 << 20;

impl Plan {
    /// The most synthesized partitions that may exist outside the GPU stage.
    pub fn max_synthesized_in_flight(&self) -> usize {
        (self.partition_workers + self.channel_capacity).min(self.partition_budget)
    }
}

/// Worker counts of one candidate sizing.
#[derive(Clone, Copy)]
struct Workers {
    pw: usize,
    /// rayon's threads, each with its malloc arena, when a partition's synthesis runs on them.
    parallel_threads: usize,
    gw: usize,
    finalize_workers: usize,
    finalize_queue: usize,
}

/// Host bytes that do not depend on the partition count: per GPU-stage worker (its
/// page-locked staging buffer) and per process (the CUDA runtime), 0 without a GPU plan.
#[derive(Clone, Copy)]
struct GpuHost {
    staging_per_worker: u64,
    runtime: u64,
}

/// (peak, base incl. threads, partitions held, GPU staging, finalize) bytes; `resident`: what
/// the process holds once whatever the workers (parameters, R1CS matrices). At most `pw`
/// partitions hold their large buffers at once (the permits).
fn predicted_peak(
    resident: u64,
    per: PartitionBytes,
    gpu_host: GpuHost,
    w: Workers,
) -> (u64, u64, u64, u64, u64) {
    let base = BASE_BYTES
        + PER_THREAD_BYTES * (w.pw + w.gw + w.finalize_workers + w.parallel_threads) as u64
        + gpu_host.runtime;
    let synthesized = w.pw as u64 * per.held();
    let gpu = w.gw as u64 * gpu_host.staging_per_worker;
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

/// The bytes of `limit` a plan may fill: all but its `headroom` share, kept free for allocator
/// slack and the unexpected. The one place the budget is computed (the plan, and what a
/// prover lets parameter sets take).
pub fn usable_bytes(limit: u64, headroom: f64) -> u64 {
    (limit as f64 * (1.0 - headroom)) as u64
}

/// Sizes the pipeline. Picks the most synthesis workers that fit the memory left after the
/// parameters, the GPU stage and finalize (bounded by cores and by useful parallelism),
/// with a channel sized from them; fails with the minimum limit if not even one fits.
pub fn plan(input: &SizingInput) -> Result<Plan, SizingError> {
    let first = plan_for(input, None)?;
    // A permit is held through the GPU stage, so when memory bounds the workers to no more
    // than the GPU workers, every permit can sit in the GPU stage with no partition
    // synthesizing. Fewer GPU workers then keep one synthesizing: measured on the H200 at
    // 32 GiB (pw = 2 at 128 GiB), 105 s per proof with one GPU worker, 122 s with two.
    let free_to_choose =
        input.overrides.gpu_workers.is_none() && input.overrides.partition_workers.is_none();
    if free_to_choose && first.gpu_workers > 1 && first.partition_workers <= first.gpu_workers {
        let devices = input.gpu_devices.max(1);
        let per_device = (first.partition_workers - 1).div_ceil(devices).max(1);
        if let Ok(fewer) = plan_for(input, Some(per_device))
            && fewer.gpu_workers < first.gpu_workers
        {
            return Ok(fewer);
        }
    }
    Ok(first)
}

/// [`plan`] with at most `max_gpu_workers_per_device` GPU workers per device (when set).
fn plan_for(
    input: &SizingInput,
    max_gpu_workers_per_device: Option<usize>,
) -> Result<Plan, SizingError> {
    if !(0.0..0.9).contains(&input.headroom) {
        return Err(SizingError::InvalidArgument {
            what: "headroom",
            reason: format!("{} is outside [0, 0.9)", input.headroom),
        });
    }
    let (gw, gpu_plan) = gpu_workers(input, max_gpu_workers_per_device)?;
    let mut per = PartitionBytes::for_shape(input.shape);
    if input.evaluations_held_twice {
        // The sub-systems' a, b, c (one row per constraint each) beside the page-locked ones.
        per.synthesized += 3 * SCALAR * input.shape.constraints as u64;
    }
    let gpu_host = if gpu_plan.is_some() || input.gpu_devices > 0 {
        GpuHost {
            staging_per_worker: staging_bytes(input.shape),
            runtime: CUDA_HOST_BYTES,
        }
    } else {
        GpuHost {
            staging_per_worker: 0,
            runtime: 0,
        }
    };
    let (finalize_workers, finalize_queue) = (1, 1);
    let parallel_threads = if input.synthesis_threads > 1 {
        input.cpu_cores.max(1)
    } else {
        0
    };
    let workers = |pw| Workers {
        pw,
        parallel_threads,
        gw,
        finalize_workers,
        finalize_queue,
    };
    let usable = usable_bytes(input.memory_limit, input.headroom);
    let resident = input.params_bytes + input.matrices_bytes;
    let peak = |pw| predicted_peak(resident, per, gpu_host, workers(pw));
    let fits = |pw: usize, _cap: usize| peak(pw).0 <= usable;

    // Up to `gw` permits sit with partitions in the GPU stage, so that many workers beyond
    // the cores keep every core synthesizing. A partition synthesized on many threads
    // fills the cores with fewer workers; one more covers its last parts, which leave
    // cores idle.
    let cores = input.cpu_cores.max(1);
    let threads = input.synthesis_threads.clamp(1, cores);
    let cpu_bound = cores.div_ceil(threads) + usize::from(threads > 1) + gw;
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
        return Err(SizingError::InvalidArgument {
            what: "pipeline overrides",
            reason: "partition workers and channel capacity must be at least 1".into(),
        });
    }
    if !fits(pw, cap) {
        let (min_peak, ..) = peak(1);
        let (wanted, ..) = peak(pw);
        let needed = if input.overrides.partition_workers.is_some() {
            wanted
        } else {
            min_peak
        };
        return Err(SizingError::MemoryLimitTooSmall {
            circuit: input.circuit.clone(),
            constraints: input.shape.constraints,
            limit: ByteSize(input.memory_limit),
            minimum: ByteSize((needed as f64 / (1.0 - input.headroom)).ceil() as u64),
            params: ByteSize(input.params_bytes),
        });
    }
    let (peak, base, synthesized, gpu, fin) = peak(pw);
    Ok(Plan {
        partition_workers: pw,
        partition_budget: pw,
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

/// A CUDA GPU-stage worker's page-locked staging buffer for MSM scalars: the largest MSM's
/// scalars (32 B each: at most max(m, variables)), rounded up to a power of two as the
/// backend allocates it.
pub fn staging_bytes(shape: CircuitShape) -> u64 {
    let m = domain_size(shape.constraints) as u64;
    let vars = (shape.inputs + shape.aux) as u64;
    (SCALAR * m.max(vars)).next_power_of_two()
}

/// GPU-stage workers (all devices together) and, for GPUs of known size, their device
/// memory plan: as many workers per device as fit (at most [`GPU_WORKERS_PER_DEVICE`]),
/// refused if not even the resident bases and one worker fit. With the query sizes known,
/// the placement is chosen first, for one worker (keeping as much resident as fits beside
/// it); a second worker comes only if it fits beside that placement.
fn gpu_workers(
    input: &SizingInput,
    max_per_device: Option<usize>,
) -> Result<(usize, Option<GpuPlan>), SizingError> {
    let devices = input.gpu_devices;
    if devices == 0 {
        return Ok((input.overrides.gpu_workers.unwrap_or(1), None));
    }
    let wanted = input
        .overrides
        .gpu_workers
        .map_or(GPU_WORKERS_PER_DEVICE, |gw| gw.div_ceil(devices).max(1))
        .min(max_per_device.unwrap_or(usize::MAX));
    let Some(memory) = input.gpu_memory_bytes else {
        return Ok((
            input.overrides.gpu_workers.unwrap_or(wanted * devices),
            None,
        ));
    };
    let gpu_plan = |k, buffers| match &input.query_bytes {
        None => GpuPlan::for_shape(input.shape, input.params_bytes, devices, memory, k, buffers),
        Some(queries) => {
            let room = memory
                .saturating_sub(GPU_CONTEXT_BYTES + quotient_workspace_bytes(input.shape, buffers));
            // Streaming everything when nothing fits: the least that stays, for the refusal.
            let placement = match input.overrides.stream_bases {
                true => QueryPlacement::all_streamed(),
                false => place_queries(queries, input.shape, room)
                    .unwrap_or_else(QueryPlacement::all_streamed),
            };
            let placed = placed_bytes(queries, input.shape, placement);
            GpuPlan::placed(input.shape, placement, placed, devices, memory, k, buffers)
        }
    };
    let fit = |k, buffers| gpu_plan(k, buffers).predicted_device_bytes <= memory;
    // The most buffers one worker fits with (three when it fits at all: fewer only move
    // copies into the device lock); the last choice stands for the refusal.
    let buffers = QUOTIENT_BUFFER_CHOICES
        .into_iter()
        .find(|&b| fit(1, b))
        .unwrap_or(QUOTIENT_BUFFER_CHOICES[QUOTIENT_BUFFER_CHOICES.len() - 1]);
    let mut per_device = wanted;
    while per_device > 1 && !fit(per_device, buffers) {
        per_device -= 1;
    }
    let gpu = gpu_plan(per_device, buffers);
    if !fit(per_device, buffers) {
        return Err(SizingError::GpuMemoryTooSmall {
            memory: ByteSize(memory),
            resident: ByteSize(gpu.resident_bytes),
            per_worker: ByteSize(gpu.per_worker_bytes),
            constraints: input.shape.constraints,
        });
    }
    let gw = match input.overrides.gpu_workers {
        Some(gw) if per_device == wanted => gw,
        _ => per_device * devices,
    };
    Ok((gw, Some(gpu)))
}
