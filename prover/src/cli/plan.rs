//! `plan`: the sizing for a circuit under a memory limit, as a table or JSON. Pure: no
//! parameters are loaded (their size is estimated from the circuit's shape, or, for a
//! `--porep-shape`, `--post-shape` or `--snap-shape`, exact from its committed counts).

use std::process::ExitCode;

use bytesize::ByteSize;
use proofpipe_filecoin::post::{self, post_proof_name, shape::PostShape};
use proofpipe_filecoin::seal_proof_name;
use proofpipe_filecoin::shape::{self, PartitionShape};
use proofpipe_filecoin::snap::{self, shape::SnapShape, update_proof_name};
use proofpipe_pipeline::ProverError;
use proofpipe_pipeline::groth16::R1csMatrices;
use proofpipe_pipeline::params::{QueryCounts, estimated_params_bytes};
use proofpipe_pipeline::sizing::{BasesPlacement, QueryBytes};
use proofpipe_pipeline::sizing::{SizingInput, SynthesisProfile, detect_memory_limit, plan};
use serde_json::json;

use clap::Args;

use super::args::{JobArgs, SizingArgs, Synthesis, cpu_cores, parse_size};

#[derive(Args, Debug)]
pub(super) struct PlanArgs {
    #[command(flatten)]
    pub(super) job: JobArgs,
    #[command(flatten)]
    pub(super) sizing: SizingArgs,
    /// Plan for the Filecoin PoRep partition of this seal proof (a sector size, 32GiB, or a
    /// registered proof's name) instead of a synthetic circuit, from its committed R1CS counts
    /// (filecoin/src/shape.rs): exact parameter bytes, and the R1CS matrices' bytes with
    /// --synthesis matrices.
    #[arg(long, value_name = "SEAL_PROOF", value_parser = super::porep::parse_seal_proof,
          conflicts_with_all = ["circuit", "constraints"])]
    pub(super) porep_shape: Option<proofpipe_filecoin::RegisteredSealProof>,
    /// Plan for the Filecoin PoSt partition of this registered PoSt proof (its name, e.g.
    /// StackedDrgWindow32GiBV1_2, or curio's number), from its committed R1CS counts
    /// (filecoin/src/post/shape.rs); one partition unless --partitions.
    #[arg(long, value_name = "POST_PROOF", value_parser = super::post::parse_post_proof,
          conflicts_with_all = ["circuit", "constraints", "porep_shape"])]
    pub(super) post_shape: Option<proofpipe_filecoin::RegisteredPoStProof>,
    /// Plan for the Filecoin SnapDeals (EmptySectorUpdate) proof of this registered update
    /// proof (a sector size, 32GiB, or its name, StackedDrg32GiBV1), from its committed R1CS
    /// counts (filecoin/src/snap/shape.rs); all its partitions (16 at 32 GiB) unless
    /// --partitions.
    #[arg(long, value_name = "UPDATE_PROOF", value_parser = super::snap::parse_update_proof,
          conflicts_with_all = ["circuit", "constraints", "porep_shape", "post_shape"])]
    pub(super) snap_shape: Option<proofpipe_filecoin::RegisteredUpdateProof>,
    /// How partitions would be synthesized (matrices: only with --porep-shape, whose matrices'
    /// size is known before recording them).
    #[arg(long, value_enum, default_value_t = Synthesis::OnePass)]
    pub(super) synthesis: Synthesis,
    /// CPU cores to plan for (default: this machine's).
    #[arg(long)]
    pub(super) cores: Option<usize>,
    /// GPUs to plan for (0: the GPU stage on the CPU).
    #[arg(long, default_value_t = 0)]
    pub(super) gpus: usize,
    /// Memory of each GPU (e.g. 141GB): plans the resident bases and workers per device.
    #[arg(long, value_parser = parse_size)]
    pub(super) gpu_memory: Option<u64>,
    #[arg(long)]
    pub(super) json: bool,
}

pub fn run(args: PlanArgs) -> Result<ExitCode, ProverError> {
    let limit = detect_memory_limit(args.sizing.memory_limit)?;

    let (
        circuit,
        shape,
        (params_bytes, query_bytes),
        matrices_bytes,
        partitions,
        synthesis_threads,
        subsystems,
    ) = match (args.porep_shape, args.post_shape, args.snap_shape) {
        (Some(proof), _, _) => {
            // Exact, from the committed counts: the real parameters have these point counts.
            let counts = shape::counted(proof)?;
            let partition_shape = PartitionShape::of(proof)?;
            // From the matrices a partition's challenges run on every core (ADR 0023).
            let (matrices, threads) = match args.synthesis {
                Synthesis::OnePass => (0, 1),
                Synthesis::Matrices => (
                    R1csMatrices::predicted_heap_bytes(&counts),
                    partition_shape.challenges_per_partition,
                ),
            };
            let partitions = args.job.partitions.unwrap_or(partition_shape.partitions);
            (
                format!("{} partition", seal_proof_name(proof)),
                counts.shape(),
                with_queries(counts.query_counts()),
                matrices,
                partitions,
                threads,
                false,
            )
        }
        (None, None, Some(proof)) => {
            // Exact, from the committed counts. From the matrices, a partition's apex hashes
            // and challenges are witnessed on every core; in one pass, one core.
            let counts = snap::shape::counted(proof)?;
            let snap_shape = SnapShape::of(proof);
            let (matrices, threads) = match args.synthesis {
                Synthesis::OnePass => (0, 1),
                Synthesis::Matrices => (
                    R1csMatrices::predicted_heap_bytes(&counts),
                    snap_shape.challenges_per_partition,
                ),
            };
            (
                format!("{} SnapDeals partition", update_proof_name(proof)),
                counts.shape(),
                with_queries(counts.query_counts()),
                matrices,
                // curio sends every partition of the update in one request.
                args.job.partitions.unwrap_or(snap_shape.partitions as u32),
                threads,
                false,
            )
        }
        (None, Some(proof), _) => {
            // Exact, from the committed counts; the sectors synthesize on every core.
            let counts = post::shape::counted(proof)?;
            let post_shape = PostShape::of(proof)?;
            // In one pass FallbackPoSt collects its sectors' sub-systems before extending;
            // from the matrices the native witness goes straight into the assignment.
            let (matrices, subsystems) = match args.synthesis {
                Synthesis::OnePass => (0, true),
                Synthesis::Matrices => (R1csMatrices::predicted_heap_bytes(&counts), false),
            };
            (
                format!("{} partition", post_proof_name(proof)),
                counts.shape(),
                with_queries(counts.query_counts()),
                matrices,
                // curio sends one WindowPoSt partition per request.
                args.job.partitions.unwrap_or(1),
                post_shape.sectors_per_partition,
                subsystems,
            )
        }
        (None, None, None) => {
            if args.synthesis == Synthesis::Matrices {
                return Err(ProverError::InvalidArgument {
                    what: "--synthesis",
                    reason: "plan knows the R1CS matrices' size only for --porep-shape, \
                             --post-shape and --snap-shape (from their committed counts); for a \
                             synthetic circuit, \
                             prove or bench it with --synthesis matrices, which log their size"
                        .into(),
                });
            }
            let shape = args.job.circuit.shape(args.job.constraints)?;
            (
                args.job.circuit.to_string(),
                shape,
                (estimated_params_bytes(shape), None),
                0,
                args.job.partitions(),
                1,
                false,
            )
        }
    };
    // On a GPU the CUDA backend's evaluations are page-locked unless switched off.
    let page_locked = args.gpus > 0 && proofpipe_kernels::GpuOptions::from_env().pinned_evaluations;
    let synthesis = SynthesisProfile {
        threads: synthesis_threads,
        in_subsystems: subsystems,
    };
    let input = SizingInput::new(circuit.clone(), shape, limit.bytes)
        .with_params(params_bytes, query_bytes)
        .with_matrices(matrices_bytes)
        .with_headroom(args.sizing.headroom)
        .with_cores(args.cores.unwrap_or_else(cpu_cores))
        .with_synthesis(synthesis, page_locked)
        .with_gpus(args.gpus, args.gpu_memory)
        .with_partitions(partitions as usize)
        .with_overrides(args.sizing.overrides());
    let plan = plan(&input)?;
    if args.json {
        let value = json!({
            "circuit": circuit,
            "shape": shape,
            "memory_limit_source": limit.source.to_string(),
            "partition_workers": plan.partition_workers,
            "channel_capacity": plan.channel_capacity,
            "gpu_workers": plan.gpu_workers,
            "partition_budget": plan.partition_budget,
            "max_synthesized_in_flight": plan.max_synthesized_in_flight(),
            "predicted_peak_bytes": plan.predicted_peak_bytes,
            "memory_limit_bytes": plan.memory_limit,
            "plan": plan,
        });
        println!("{value}");
        return Ok(ExitCode::SUCCESS);
    }
    let b = &plan.breakdown;
    let per = &b.per_partition;
    let rows = [
        (
            "circuit",
            format!(
                "{circuit} ({} constraints, {} aux, {} inputs), {partitions} partitions",
                shape.constraints, shape.aux, shape.inputs
            ),
        ),
        (
            "memory limit",
            format!("{} (from {})", ByteSize(plan.memory_limit), limit.source),
        ),
        ("partition_workers", plan.partition_workers.to_string()),
        ("channel_capacity", plan.channel_capacity.to_string()),
        ("gpu_workers", plan.gpu_workers.to_string()),
        (
            "partition budget",
            format!(
                "{} (partitions from synthesis through the GPU stage at once)",
                plan.partition_budget
            ),
        ),
        (
            "max synthesized in flight",
            plan.max_synthesized_in_flight().to_string(),
        ),
        (
            "per partition",
            format!(
                "synthesized {} / GPU stage {} / finalize {}",
                ByteSize(per.synthesized),
                ByteSize(per.gpu_stage),
                ByteSize(per.finalize)
            ),
        ),
        (
            "base + parameters",
            format!("{} + {}", ByteSize(b.base_bytes), ByteSize(b.params_bytes)),
        ),
        (
            "R1CS matrices",
            if b.matrices_bytes == 0 {
                "none (one-pass synthesis)".to_string()
            } else {
                format!("{} (two-pass synthesis)", ByteSize(b.matrices_bytes))
            },
        ),
        ("partitions held", ByteSize(b.synthesized_bytes).to_string()),
        (
            "GPU staging (pinned)",
            ByteSize(b.gpu_stage_bytes).to_string(),
        ),
        (
            "GPU memory per device",
            plan.gpu
                .as_ref()
                .map_or("not planned (no --gpu-memory)".into(), |g| {
                    format!(
                        "{} of {}: resident {} + {} worker(s) x {}{}",
                        ByteSize(g.predicted_device_bytes),
                        ByteSize(g.device_memory_bytes),
                        ByteSize(g.resident_bytes),
                        g.workers_per_device,
                        ByteSize(g.per_worker_bytes),
                        fewer_quotient_buffers(g.quotient_buffers)
                    )
                }),
        ),
        (
            "GPU bases",
            plan.gpu
                .as_ref()
                .map_or("not planned (no --gpu-memory)".into(), gpu_bases),
        ),
        ("finalize", ByteSize(b.finalize_bytes).to_string()),
        (
            "predicted peak",
            format!(
                "{} of {} ({} headroom kept)",
                ByteSize(plan.predicted_peak_bytes),
                ByteSize(plan.memory_limit),
                ByteSize(b.headroom_bytes)
            ),
        ),
    ];
    for (k, v) in rows {
        println!("{k:<27} {v}");
    }
    Ok(ExitCode::SUCCESS)
}

/// A proving key's bytes from its query counts, and each query's (for the GPU placement).
fn with_queries(counts: QueryCounts) -> (u64, Option<QueryBytes>) {
    (counts.params_heap_bytes(), Some(counts.query_bytes()))
}

/// Which queries' bases stay on the card and which stream from page-locked host memory.
fn gpu_bases(gpu: &proofpipe_pipeline::sizing::GpuPlan) -> String {
    let p = gpu.placement;
    if !p.any_streamed() {
        return "all resident".into();
    }
    let resident = p.queries(BasesPlacement::Resident);
    format!(
        "streamed from host memory: {} ({} page-locked, {} of stream buffers on the card); resident: {}",
        p.queries(BasesPlacement::Streamed).join(", "),
        ByteSize(gpu.streamed_bytes),
        ByteSize(gpu.stream_buffer_bytes),
        if resident.is_empty() {
            "none".into()
        } else {
            resident.join(", ")
        }
    )
}

/// What a workspace of fewer than three quotient buffers says after its size (nothing for
/// three, the usual case).
pub(crate) fn fewer_quotient_buffers(buffers: u32) -> String {
    match buffers {
        3 => String::new(),
        1 => " (one quotient buffer: copies through the host inside the device lock)".into(),
        n => format!(" ({n} quotient buffers: c uploaded inside the device lock)"),
    }
}
