//! What every stage's threads share: the pipeline's configuration, the partition budget's
//! permits and the stages' busy clock.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use blstrs::Scalar as Fr;
use parking_lot::Mutex;
use proofpipe_kernels::{EvalAlloc, ProvingBackend, QuotientBuffers, Reservation, domain_size};
use serde::Serialize;

use super::queue::WorkQueue;
use super::tracker::{BufferTracker, Stage};
use crate::circuits::CircuitKind;
use crate::groth16::{G2Placement, QueryPlacement, R1csMatrices};
use crate::metrics::PipelineMetrics;
use crate::sizing::Plan;

/// How many workers each stage has and how long the channels are.
#[derive(Clone, Debug, Serialize)]
pub struct PipelineConfig {
    pub partition_workers: usize,
    pub channel_capacity: usize,
    pub gpu_workers: usize,
    pub finalize_workers: usize,
    pub finalize_queue: usize,
    /// At most this many partitions hold their large buffers at once (synthesizing, queued
    /// or in the GPU stage): permits taken before synthesis, given back when the partition
    /// leaves the GPU stage. `None`: bounded by the workers and the channel alone.
    pub partition_budget: Option<usize>,
    pub g2: G2Placement,
    /// Which queries' bases stay on the GPU and which stream from host memory.
    pub bases: QueryPlacement,
    /// How many of a, b, c a GPU holds at once in the quotient (the plan's choice for the
    /// card; three without one).
    #[serde(serialize_with = "buffer_count")]
    pub quotient_buffers: QuotientBuffers,
    /// Keep every buffer transition and busy span for plots (bench).
    pub record_timeline: bool,
    /// R1CS matrices for two-pass synthesis, by circuit and constraints
    /// ([`crate::groth16::synthesize_from_matrices`]); a job of any other circuit size is
    /// synthesized in one pass. Whoever supplies them counts their bytes in the sizing.
    #[serde(skip)]
    pub matrices: BTreeMap<(CircuitKind, usize), Arc<R1csMatrices>>,
}

impl PipelineConfig {
    /// What this pipeline's GPU stage holds at most for partitions of `constraints`, on
    /// `devices` GPUs: a, b, c of every partition the budget lets through at once (without a
    /// budget: every synthesis worker's, the channel's and every GPU worker's), and one
    /// quotient workspace per GPU-stage worker.
    pub fn reservation(&self, constraints: usize, devices: usize) -> Reservation {
        let m = domain_size(constraints);
        let partitions = self
            .partition_budget
            .unwrap_or(self.partition_workers + self.channel_capacity + self.gpu_workers);
        Reservation {
            evaluation_bytes: m * size_of::<Fr>(),
            evaluation_blocks: 3 * partitions,
            domain_lg: m.trailing_zeros(),
            quotient_buffers: self.quotient_buffers,
            workers_per_device: self.gpu_workers.div_ceil(devices.max(1)),
        }
    }

    pub fn from_plan(plan: &Plan) -> Self {
        Self {
            partition_workers: plan.partition_workers,
            channel_capacity: plan.channel_capacity,
            gpu_workers: plan.gpu_workers,
            finalize_workers: plan.finalize_workers,
            finalize_queue: plan.finalize_queue,
            partition_budget: Some(plan.partition_budget),
            g2: plan.g2,
            bases: plan
                .gpu
                .as_ref()
                .map_or_else(QueryPlacement::all_resident, |gpu| gpu.placement),
            quotient_buffers: plan
                .gpu
                .as_ref()
                .and_then(|gpu| QuotientBuffers::from_count(gpu.quotient_buffers))
                .unwrap_or_default(),
            record_timeline: false,
            matrices: BTreeMap::new(),
        }
    }
}

fn buffer_count<S: serde::Serializer>(b: &QuotientBuffers, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u32(b.count())
}

/// A stage's worker was busy from `start` to `end` (seconds since the pipeline started).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct BusySpan {
    pub stage: Stage,
    pub worker: usize,
    pub start: f64,
    pub end: f64,
}

/// Busy time per stage, for utilisation figures.
#[derive(Default)]
pub(crate) struct StageClock {
    pub(super) busy_nanos: [AtomicU64; 4],
    pub(super) spans: Option<Mutex<Vec<BusySpan>>>,
}

impl StageClock {
    pub(super) fn record(
        &self,
        origin: Instant,
        stage: Stage,
        worker: usize,
        start: Instant,
        end: Instant,
    ) {
        self.busy_nanos[stage as usize]
            .fetch_add((end - start).as_nanos() as u64, Ordering::Relaxed);
        if let Some(spans) = &self.spans {
            spans.lock().push(BusySpan {
                stage,
                worker,
                start: (start - origin).as_secs_f64(),
                end: (end - origin).as_secs_f64(),
            });
        }
    }
}

/// The partition budget's permits (see [`PipelineConfig::partition_budget`]).
pub(crate) struct Permits {
    free: parking_lot::Mutex<usize>,
    returned: parking_lot::Condvar,
}

/// One partition's permit: given back when dropped, on every path (errors and panics too).
pub(crate) struct Permit(Option<Arc<Permits>>);

impl Permits {
    pub(super) fn new(n: usize) -> Arc<Self> {
        Arc::new(Self {
            free: parking_lot::Mutex::new(n),
            returned: parking_lot::Condvar::new(),
        })
    }

    /// Blocks until a permit is free. `None` permits: no budget, never blocks.
    pub(crate) fn acquire(permits: &Option<Arc<Self>>) -> Permit {
        let Some(p) = permits else {
            return Permit(None);
        };
        let mut free = p.free.lock();
        while *free == 0 {
            p.returned.wait(&mut free);
        }
        *free -= 1;
        Permit(Some(p.clone()))
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            *p.free.lock() += 1;
            p.returned.notify_one();
        }
    }
}

pub(crate) struct Shared {
    pub config: PipelineConfig,
    pub permits: Option<Arc<Permits>>,
    pub backend: Arc<dyn ProvingBackend>,
    /// Where synthesis puts a/b/c: the backend's choice (page-locked for a GPU).
    pub evaluations: EvalAlloc,
    pub queue: WorkQueue,
    pub tracker: Arc<BufferTracker>,
    pub metrics: PipelineMetrics,
    pub clock: StageClock,
    pub started: Instant,
}
