//! Jobs as the pipeline sees them: what to prove, and the events it reports back.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use proofpipe_kernels::EvalAlloc;
use serde::Serialize;

use crate::circuits::{CircuitKind, CircuitShape};
use crate::error::ProverError;
use crate::groth16::{self, R1csMatrices, Synthesized};
use crate::params::ProvingKey;

/// A proof workload: `partitions` independent partitions of one circuit.
#[derive(Clone, Debug, Serialize)]
pub struct JobSpec {
    pub circuit: CircuitKind,
    pub constraints: usize,
    pub partitions: u32,
    pub seed: u64,
    /// Higher goes first.
    pub priority: i32,
    /// Partitions already proved elsewhere (e.g. before a crash): not proved again.
    pub skip: Vec<u32>,
}

impl JobSpec {
    pub fn new(circuit: CircuitKind, constraints: usize, partitions: u32) -> Self {
        Self {
            circuit,
            constraints,
            partitions,
            seed: 0,
            priority: 0,
            skip: Vec::new(),
        }
    }

    /// The partitions this job still has to prove, in order.
    pub fn todo(&self) -> Vec<u32> {
        (0..self.partitions)
            .filter(|p| !self.skip.contains(p))
            .collect()
    }
}

/// A partition synthesized, or why it could not be.
pub type Synthesis = Result<Synthesized, ProverError>;

/// Where a job's partitions come from: builds partition `k`'s circuit with its witness and
/// synthesizes it. Called on a synthesis worker's thread, never on an async runtime.
pub trait PartitionSource: Send + Sync {
    /// Partition `partition`, synthesized; `shape` is the proving key's (for reserving), and
    /// the a/b/c evaluations go into `evals` (the GPU stage backend's memory: pass it to
    /// [`groth16::synthesize_into`]).
    fn synthesize(&self, partition: u32, shape: CircuitShape, evals: &EvalAlloc) -> Synthesis;

    /// Threads one partition's synthesis keeps busy (its independent parts, when it runs
    /// them on every core): the planner sizes the workers and counts their arenas by it.
    fn synthesis_threads(&self) -> usize {
        1
    }

    /// Whether the partition's parts are synthesized into constraint sub-systems that all
    /// exist before they are copied into its evaluations (storage-proofs-post's
    /// `FallbackPoStCircuit::synthesize_extendable` collects every chunk of sectors first).
    /// Page-locked evaluations are resident from the start, so the planner counts a, b, c
    /// twice for such a partition on a GPU (docs/benchmarks.md, "PoSt at 32 GiB").
    fn synthesizes_in_subsystems(&self) -> bool {
        false
    }

    /// Both, for the planner.
    fn synthesis_profile(&self) -> crate::sizing::SynthesisProfile {
        crate::sizing::SynthesisProfile {
            threads: self.synthesis_threads(),
            in_subsystems: self.synthesizes_in_subsystems(),
        }
    }
}

/// The partitions of one of proofpipe's own circuits, witnesses from `(seed, partition)`.
pub struct SyntheticSource {
    pub circuit: CircuitKind,
    pub constraints: usize,
    pub seed: u64,
    /// Two-pass synthesis when the pipeline has matrices for this circuit and size.
    pub matrices: Option<Arc<R1csMatrices>>,
}

impl PartitionSource for SyntheticSource {
    fn synthesize(&self, partition: u32, shape: CircuitShape, evals: &EvalAlloc) -> Synthesis {
        let circuit = self
            .circuit
            .partition(self.constraints, self.seed, partition)?;
        match &self.matrices {
            Some(matrices) => groth16::synthesize_from_matrices_into(circuit, matrices, evals),
            None => groth16::synthesize_into(circuit, shape, evals),
        }
        .map_err(|e| ProverError::Synthesis {
            partition,
            message: e.to_string(),
        })
    }
}

/// Every partition a copy of one synthesized partition: measures the stages after synthesis
/// (the GPU stage above all) at the rate they can go, when synthesis on the host's cores could
/// not keep up (`bench --replay-synthesis`). Partition 0 of `inner` is synthesized once, by
/// the first worker to ask, and kept (on the heap); each partition is then a copy of it made
/// on the synthesis worker into the memory that worker's pipeline asks for, so one source can
/// feed several pipelines and backends. The kept copy is one partition of host memory beyond
/// the pipeline's own, which the caller's plan must leave room for. The proofs are all of
/// partition 0's statement: they verify like it.
pub struct ReplaySource {
    inner: Arc<dyn PartitionSource>,
    first: std::sync::OnceLock<Result<Synthesized, String>>,
}

impl ReplaySource {
    pub fn new(inner: Arc<dyn PartitionSource>) -> Self {
        Self {
            inner,
            first: std::sync::OnceLock::new(),
        }
    }
}

impl PartitionSource for ReplaySource {
    fn synthesis_threads(&self) -> usize {
        self.inner.synthesis_threads()
    }

    fn synthesizes_in_subsystems(&self) -> bool {
        self.inner.synthesizes_in_subsystems()
    }

    fn synthesize(&self, partition: u32, shape: CircuitShape, evals: &EvalAlloc) -> Synthesis {
        let first = self.first.get_or_init(|| {
            self.inner
                .synthesize(0, shape, &EvalAlloc::heap())
                .map_err(|e| e.to_string())
        });
        match first {
            Ok(s) => Ok(s.copy_in(evals)),
            Err(message) => Err(ProverError::Synthesis {
                partition,
                message: format!("synthesizing the partition to replay: {message}"),
            }),
        }
    }
}

/// Seconds one partition spent in each stage.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct StageTimings {
    pub synthesis: Duration,
    /// From synthesized to picked up by a GPU-stage worker.
    pub queue_wait: Duration,
    pub gpu: Duration,
    /// From the end of the GPU stage to a verified proof (waiting included).
    pub finalize: Duration,
}

/// One proved partition.
#[derive(Clone, Debug, Serialize)]
pub struct PartitionProof {
    pub partition: u32,
    /// bellperson's compressed proof bytes.
    pub proof: Vec<u8>,
    /// Public inputs, each as 32 little-endian bytes.
    pub public_inputs: Vec<[u8; 32]>,
    pub verified: bool,
    pub timings: StageTimings,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", content = "error", rename_all = "kebab-case")]
pub enum JobOutcome {
    Succeeded,
    Failed(String),
    Cancelled,
}

#[derive(Clone, Debug)]
pub enum JobEvent {
    PartitionProved(PartitionProof),
    /// The last event of every job.
    Finished(JobOutcome),
}

/// The pipeline's side of a job.
pub(crate) struct Job {
    pub id: u64,
    /// Submission order: older jobs first among equal priorities.
    pub seq: u64,
    /// Higher goes first.
    pub priority: i32,
    pub source: Arc<dyn PartitionSource>,
    pub params: Arc<ProvingKey>,
    remaining: AtomicUsize,
    finished: AtomicBool,
    /// The GPU whose loss failed the job ([`ProverError::GpuLost`]), when that is how it
    /// ended: set before the job's last event, so whoever receives that event sees it.
    lost_gpu: OnceLock<usize>,
    events: Sender<JobEvent>,
}

impl Job {
    pub fn new(
        id: u64,
        priority: i32,
        source: Arc<dyn PartitionSource>,
        params: Arc<ProvingKey>,
        todo: usize,
        events: Sender<JobEvent>,
    ) -> Self {
        Self {
            id,
            seq: id,
            priority,
            source,
            params,
            remaining: AtomicUsize::new(todo),
            finished: AtomicBool::new(false),
            lost_gpu: OnceLock::new(),
            events,
        }
    }

    /// Still wants its partitions worked on.
    pub fn is_live(&self) -> bool {
        !self.finished.load(Ordering::Acquire)
    }

    /// Ends the job with `outcome` unless it already ended; true if this call ended it.
    pub fn finish(&self, outcome: JobOutcome) -> bool {
        if self.finished.swap(true, Ordering::AcqRel) {
            return false;
        }
        // The receiver may be gone (the caller lost interest); the job still ends.
        let _ = self.events.send(JobEvent::Finished(outcome));
        true
    }

    /// Ends the job as failed by `err` unless it already ended; true if this call ended it.
    /// A job failed by a lost GPU says so ([`JobHandle::lost_gpu`]).
    pub fn fail(&self, err: &ProverError) -> bool {
        if self.finished.swap(true, Ordering::AcqRel) {
            return false;
        }
        if let Some(device) = err.lost_gpu() {
            let _ = self.lost_gpu.set(device);
        }
        let _ = self
            .events
            .send(JobEvent::Finished(JobOutcome::Failed(err.to_string())));
        true
    }

    /// Reports a proved partition; true if it was the job's last.
    pub fn partition_proved(&self, proof: PartitionProof) -> bool {
        let _ = self.events.send(JobEvent::PartitionProved(proof));
        self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 && self.finish(JobOutcome::Succeeded)
    }
}

/// The caller's side of a job: its events, and a way to cancel it.
pub struct JobHandle {
    pub(crate) job: Arc<Job>,
    pub(crate) on_cancel: Arc<dyn Fn() + Send + Sync>,
    pub events: Receiver<JobEvent>,
}

/// Everything a finished job produced.
#[derive(Clone, Debug, Serialize)]
pub struct JobReport {
    pub id: u64,
    pub outcome: JobOutcome,
    pub proofs: Vec<PartitionProof>,
}

impl JobHandle {
    pub fn id(&self) -> u64 {
        self.job.id
    }

    /// The GPU whose loss failed the job, once it failed that way (read it after the job's
    /// `Finished` event).
    pub fn lost_gpu(&self) -> Option<usize> {
        self.job.lost_gpu.get().copied()
    }

    /// Stops the job: its queued partitions are dropped, those in flight are discarded at
    /// their next stage boundary. A job that already finished is unaffected.
    pub fn cancel(&self) {
        if self.job.finish(JobOutcome::Cancelled) {
            (self.on_cancel)();
        }
    }

    /// Blocks until the job finishes; proofs sorted by partition.
    pub fn wait(self) -> JobReport {
        let mut proofs = Vec::new();
        let mut outcome = JobOutcome::Failed("the pipeline stopped before the job finished".into());
        for event in self.events.iter() {
            match event {
                JobEvent::PartitionProved(p) => proofs.push(p),
                JobEvent::Finished(o) => {
                    outcome = o;
                    break;
                }
            }
        }
        proofs.sort_by_key(|p| p.partition);
        JobReport {
            id: self.job.id,
            outcome,
            proofs,
        }
    }
}
