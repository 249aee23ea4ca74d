//! The three stages' worker loops.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use ff::{Field, PrimeField};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use super::handoff::Handoff;
use super::job::{Job, PartitionProof, StageTimings};
use super::shared::{Permit, Permits, Shared};
use super::tracker::{Stage, TrackedBuffer};
use crate::error::ProverError;
use crate::groth16::{self, Started, Synthesized};

/// A synthesized partition on its way to the GPU stage.
struct ToGpu {
    job: Arc<Job>,
    partition: u32,
    data: Synthesized,
    buffer: TrackedBuffer,
    /// Given back once the partition is handed to finalize.
    permit: Permit,
    timings: StageTimings,
    synthesized_at: Instant,
}

/// A partition after the GPU stage, on its way to finalize.
struct ToFinalize {
    job: Arc<Job>,
    partition: u32,
    data: Started,
    buffer: TrackedBuffer,
    timings: StageTimings,
    gpu_done_at: Instant,
}

pub(super) fn spawn(shared: &Arc<Shared>) -> Vec<JoinHandle<()>> {
    let c = &shared.config;
    let to_gpu = Arc::new(Handoff::<ToGpu>::new(
        c.channel_capacity,
        c.partition_workers,
    ));
    let (to_fin, fin_rx) = crossbeam_channel::bounded::<ToFinalize>(c.finalize_queue);
    let mut threads = Vec::new();
    let mut spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
        threads.push(
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .expect("spawning a pipeline thread"),
        );
    };
    for i in 0..c.partition_workers {
        let (s, tx) = (shared.clone(), to_gpu.clone());
        spawn(
            format!("pp-synth-{i}"),
            Box::new(move || {
                synthesis_worker(&s, i, &tx);
                tx.close_sender();
            }),
        );
    }
    for i in 0..c.gpu_workers {
        let (s, rx, tx) = (shared.clone(), to_gpu.clone(), to_fin.clone());
        spawn(
            format!("pp-gpu-{i}"),
            Box::new(move || gpu_worker(&s, i, &rx, &tx)),
        );
    }
    for i in 0..c.finalize_workers {
        let (s, rx) = (shared.clone(), fin_rx.clone());
        spawn(
            format!("pp-finalize-{i}"),
            Box::new(move || finalize_worker(&s, i, &rx)),
        );
    }
    threads
}

fn panic_message(p: Box<dyn Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs stage work, turning a panic into an error so one bad job never kills a worker.
fn guarded<T>(
    f: impl FnOnce() -> Result<T, ProverError>,
    on_panic: impl FnOnce(String) -> ProverError,
) -> Result<T, ProverError> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|p| Err(on_panic(format!("panicked: {}", panic_message(p)))))
}

fn fail(shared: &Shared, job: &Job, err: &ProverError) {
    shared
        .metrics
        .partitions
        .with_label_values(&["failed"])
        .inc();
    if job.fail(err) {
        tracing::warn!(job = job.id, error = %err, "job failed");
        shared.metrics.jobs.with_label_values(&["failed"]).inc();
        shared.queue.purge_dead();
        shared
            .metrics
            .pending_partitions
            .set(shared.queue.len() as i64);
    }
}

fn discard(shared: &Shared) {
    shared
        .metrics
        .partitions
        .with_label_values(&["discarded"])
        .inc();
}

fn synthesis_worker(shared: &Shared, worker: usize, to_gpu: &Handoff<ToGpu>) {
    loop {
        // The permit first: a partition's buffers exist only with one (ADR 0016).
        let permit = Permits::acquire(&shared.permits);
        let Some(task) = shared.queue.pop() else {
            break;
        };
        shared
            .metrics
            .pending_partitions
            .set(shared.queue.len() as i64);
        let (job, partition) = (task.job, task.partition);
        let shape = job.params.shape;
        let mut buffer = shared.tracker.track(
            Stage::Synthesizing,
            crate::sizing::PartitionBytes::for_shape(shape).synthesized,
        );
        let start = Instant::now();
        let result = guarded(
            || job.source.synthesize(partition, shape, &shared.evaluations),
            |message| ProverError::Synthesis { partition, message },
        );
        let end = Instant::now();
        shared
            .clock
            .record(shared.started, Stage::Synthesizing, worker, start, end);
        shared
            .metrics
            .stage_seconds
            .with_label_values(&[Stage::Synthesizing.name()])
            .observe((end - start).as_secs_f64());
        let data = match result {
            Ok(d) => d,
            Err(e) => {
                fail(shared, &job, &e);
                continue;
            }
        };
        if !job.is_live() {
            discard(shared);
            continue;
        }
        // Counted as queued from here: this worker holds it until the channel takes it.
        buffer.move_to(Stage::Queued, data.heap_bytes());
        let timings = StageTimings {
            synthesis: end - start,
            ..StageTimings::default()
        };
        to_gpu.send(ToGpu {
            job,
            partition,
            data,
            buffer,
            permit,
            timings,
            synthesized_at: Instant::now(),
        });
    }
}

fn gpu_worker(
    shared: &Shared,
    worker: usize,
    from_synth: &Handoff<ToGpu>,
    to_fin: &Sender<ToFinalize>,
) {
    // The partition counts as on the GPU stage from the instant it leaves the queue.
    let take = |item: &mut ToGpu| {
        let bytes = crate::sizing::PartitionBytes::for_shape(item.job.params.shape).gpu_stage;
        item.buffer.move_to(Stage::Gpu, bytes);
    };
    while let Some(item) = from_synth.recv(take) {
        let ToGpu {
            job,
            partition,
            data,
            mut buffer,
            permit,
            mut timings,
            synthesized_at,
        } = item;
        if !job.is_live() {
            discard(shared);
            continue;
        }
        let start = Instant::now();
        timings.queue_wait = start - synthesized_at;
        shared
            .metrics
            .stage_seconds
            .with_label_values(&[Stage::Queued.name()])
            .observe(timings.queue_wait.as_secs_f64());
        let result = guarded(
            || {
                groth16::prove_start(
                    shared.backend.as_ref(),
                    &job.params.params,
                    data,
                    shared.config.g2,
                    shared.config.bases,
                    shared.config.quotient_buffers,
                )
                .map_err(|e| ProverError::kernel(partition, &e))
            },
            |message| ProverError::Proving { partition, message },
        );
        let end = Instant::now();
        shared
            .clock
            .record(shared.started, Stage::Gpu, worker, start, end);
        shared
            .metrics
            .stage_seconds
            .with_label_values(&[Stage::Gpu.name()])
            .observe((end - start).as_secs_f64());
        timings.gpu = end - start;
        match result {
            Ok(started) => {
                // The a/b/c vectors were freed inside prove_start.
                buffer.move_to(Stage::Finalizing, started.heap_bytes());
                let item = ToFinalize {
                    job,
                    partition,
                    data: started,
                    buffer,
                    timings,
                    gpu_done_at: end,
                };
                if to_fin.send(item).is_err() {
                    return;
                }
                // Handed to finalize (counted there): the next partition may start. Kept
                // while the send waits, so a worker blocked on a full finalize queue still
                // holds its permit.
                drop(permit);
            }
            Err(e) => {
                drop(permit);
                fail(shared, &job, &e);
            }
        }
    }
}

fn finalize_worker(shared: &Shared, worker: usize, from_gpu: &Receiver<ToFinalize>) {
    let mut rng = ChaCha20Rng::from_entropy();
    for item in from_gpu.iter() {
        let ToFinalize {
            job,
            partition,
            data,
            buffer,
            mut timings,
            gpu_done_at,
        } = item;
        if !job.is_live() {
            discard(shared);
            continue;
        }
        let (r, s) = (
            blstrs::Scalar::random(&mut rng),
            blstrs::Scalar::random(&mut rng),
        );
        let start = Instant::now();
        let result = guarded(
            || {
                let params = &job.params;
                let (proof, inputs) =
                    groth16::finalize(shared.backend.as_ref(), &params.params, data, r, s)
                        .map_err(|e| ProverError::kernel(partition, &e))?;
                // Timing-only parameters make proofs that cannot verify: not checked.
                let verified = params.kind.verifiable();
                if verified && !groth16::verify(&params.pvk, &proof, &inputs) {
                    return Err(ProverError::ProofInvalid { partition });
                }
                Ok((proof, inputs, verified))
            },
            |message| ProverError::Proving { partition, message },
        );
        drop(buffer);
        let end = Instant::now();
        shared
            .clock
            .record(shared.started, Stage::Finalizing, worker, start, end);
        shared
            .metrics
            .stage_seconds
            .with_label_values(&[Stage::Finalizing.name()])
            .observe((end - start).as_secs_f64());
        timings.finalize = end - gpu_done_at;
        match result {
            Ok((proof, inputs, verified)) => {
                if !job.is_live() {
                    discard(shared);
                    continue;
                }
                shared
                    .metrics
                    .partitions
                    .with_label_values(&["proved"])
                    .inc();
                let proved = PartitionProof {
                    partition,
                    proof: groth16::proof_bytes(&proof),
                    public_inputs: inputs.iter().map(|x| x.to_repr()).collect(),
                    verified,
                    timings,
                };
                if job.partition_proved(proved) {
                    shared.metrics.jobs.with_label_values(&["succeeded"]).inc();
                }
            }
            Err(e) => fail(shared, &job, &e),
        }
    }
}
