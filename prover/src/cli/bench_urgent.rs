//! `bench --porep-shape P --urgent-post-shape Q`: a PoSt sent while a PoRep proves on the same
//! prover, planned as the daemon's urgent lane plans it (ADR 0026): the PoRep's plan is made
//! first (less `--urgent-reserve` and `--urgent-gpu-reserve`), the PoSt's pipeline takes only
//! what that plan leaves of host and GPU memory, and the two GPU stages take turns on the
//! device. When the PoSt does not fit beside the PoRep it is proved once the PoRep has ended,
//! as the daemon does. What it answers: how long the PoSt waits, and how much later the PoRep
//! ends because of it.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use proofpipe_benches::compare::{PipelineRun, SourceWorkload, run_source_pipeline};
use proofpipe_daemon::config::{URGENT_GPU_RESERVE_VAR, URGENT_RESERVE_VAR};
use proofpipe_daemon::urgent::{Footprint, room_beside};
use proofpipe_filecoin::{RegisteredPoStProof, RegisteredSealProof};
use proofpipe_pipeline::ProverError;
use proofpipe_pipeline::groth16::SynthesisMode;
use proofpipe_pipeline::pipeline::PipelineConfig;
use proofpipe_pipeline::sizing::{Plan, SizingError, SizingInput, parse_memory_size, plan};
use serde::Serialize;
use serde_json::json;

use super::bench::{
    BenchArgs, ShapeRun, porep_shape_input, post_shape_input, prepare_porep_shape,
    prepare_post_shape, refuse_no_runs, refuse_stock_run, shape_backend,
};
use proofpipe_benches::compare::spread;

/// The three plans of one prover serving a PoRep and an urgent PoSt.
#[derive(Debug, Serialize)]
struct Plans {
    /// The PoRep's, in the limit less the reserve.
    porep: Plan,
    /// The PoSt's when the prover is otherwise idle.
    post_alone: Plan,
    /// The PoSt's beside the running PoRep (`Ok`), or why it does not fit there (`Err`: it
    /// then waits for the PoRep to end).
    post_beside: Result<Plan, String>,
}

/// One run: the baselines (when this run makes them) and the PoRep with the PoSt beside it.
#[derive(Debug, Serialize)]
struct UrgentRun {
    run: usize,
    porep_alone_seconds: Option<f64>,
    post_alone_seconds: Option<f64>,
    /// The PoRep's wall time with the PoSt sent into it.
    porep_with_post_seconds: f64,
    /// From sending the PoSt to its proof, waiting included.
    post_latency_seconds: f64,
    /// Whether the PoSt ran beside the PoRep (false: it waited for the PoRep to end).
    post_beside: bool,
    /// Sampled every 20 ms over the PoRep run with the PoSt: the process's RSS and the
    /// device memory in use at their highest.
    peak_rss_bytes: u64,
    peak_device_bytes: u64,
    porep_run: PipelineRun,
    post_run: PipelineRun,
}

pub fn run(
    args: &BenchArgs,
    porep: RegisteredSealProof,
    post: RegisteredPoStProof,
) -> Result<ExitCode, ProverError> {
    refuse_no_runs(args)?;
    refuse_stock_run(args, "--porep-shape")?;
    if args.replay_synthesis {
        return Err(ProverError::InvalidArgument {
            what: "--replay-synthesis",
            reason: "--urgent-post-shape measures what a PoSt waits for, synthesis included; \
                     leave --replay-synthesis out"
                .into(),
        });
    }
    if !(args.urgent_after.is_finite() && args.urgent_after >= 0.0) {
        return Err(ProverError::InvalidArgument {
            what: "--urgent-after",
            reason: format!("{} is not a number of seconds", args.urgent_after),
        });
    }
    // The flags, else the pool's variables, as the daemon reads them.
    let size = |flag: Option<u64>, var: &str| -> Result<u64, ProverError> {
        match (flag, std::env::var(var)) {
            (Some(bytes), _) => Ok(bytes),
            (None, Ok(v)) if !v.trim().is_empty() => Ok(parse_memory_size(v.trim())?),
            _ => Ok(0),
        }
    };
    let reserve = Footprint {
        memory_bytes: size(args.urgent_reserve, URGENT_RESERVE_VAR)?,
        device_bytes: size(args.urgent_gpu_reserve, URGENT_GPU_RESERVE_VAR)?,
    };
    let baselines = args.urgent_baselines.unwrap_or(args.runs).min(args.runs);
    let backend = shape_backend();
    // Planned from the committed counts first: a PoSt that cannot be served beside the PoRep
    // is refused before minutes of parameters are made.
    let (porep_input, _) = porep_shape_input(args, porep, &backend)?;
    plans(
        &porep_input,
        &post_shape_input(args, post, 1, &backend)?,
        reserve,
    )?;
    let main = prepare_porep_shape(args, porep, backend.clone())?;
    // As the daemon's urgent lane: one pass (no matrices recorded beside the running job).
    let urgent = prepare_post_shape(args, post, 1, SynthesisMode::OnePass, backend.clone())?;
    let plans = plans(&main.input, &urgent.input, reserve)?;
    tracing::info!(
        porep_peak = %bytesize::ByteSize(plans.porep.predicted_peak_bytes),
        beside = plans.post_beside.is_ok(),
        refused = plans.post_beside.as_ref().err().map_or("", String::as_str),
        "plans made: the PoRep's first, the PoSt's into what it leaves"
    );
    let porep_config = PipelineConfig::from_plan(&plans.porep);
    let alone_config = PipelineConfig::from_plan(&plans.post_alone);
    let beside_config = plans
        .post_beside
        .as_ref()
        .ok()
        .map(PipelineConfig::from_plan);
    let porep_work = workload(&main);
    let post_work = workload(&urgent);
    if !args.no_warmup {
        // Pays each set's first base uploads and the CUDA context outside the timed runs.
        run_source_pipeline(&porep_work, 1, porep_config.clone(), backend.clone())?;
        run_source_pipeline(&post_work, 1, alone_config.clone(), backend.clone())?;
    }
    let after = Duration::from_secs_f64(args.urgent_after);
    let mut runs = Vec::new();
    for index in 0..args.runs {
        let baseline = index < baselines;
        let porep_alone = baseline
            .then(|| {
                run_source_pipeline(
                    &porep_work,
                    main.partitions,
                    porep_config.clone(),
                    backend.clone(),
                )
            })
            .transpose()?;
        let post_alone = baseline
            .then(|| run_source_pipeline(&post_work, 1, alone_config.clone(), backend.clone()))
            .transpose()?;
        let (porep_run, (post_run, latency, beside)) = std::thread::scope(|scope| {
            let porep_thread = scope.spawn(|| {
                run_source_pipeline(
                    &porep_work,
                    main.partitions,
                    porep_config.clone(),
                    backend.clone(),
                )
            });
            std::thread::sleep(after);
            let sent = Instant::now();
            let (post_run, beside) = match &beside_config {
                Some(config) => (
                    run_source_pipeline(&post_work, 1, config.clone(), backend.clone()),
                    true,
                ),
                None => {
                    // The daemon's urgent lane waits for the main job to end, then has the
                    // whole prover: so does this.
                    while !porep_thread.is_finished() {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    (
                        run_source_pipeline(&post_work, 1, alone_config.clone(), backend.clone()),
                        false,
                    )
                }
            };
            let latency = sent.elapsed().as_secs_f64();
            let porep_run = porep_thread.join().expect("the PoRep thread panicked");
            (porep_run, (post_run, latency, beside))
        });
        let (porep_run, post_run) = (porep_run?, post_run?);
        let run = UrgentRun {
            run: index + 1,
            porep_alone_seconds: porep_alone.map(|r| r.result.seconds),
            post_alone_seconds: post_alone.map(|r| r.result.seconds),
            porep_with_post_seconds: porep_run.result.seconds,
            post_latency_seconds: latency,
            post_beside: beside,
            peak_rss_bytes: porep_run.memory.at_peak_rss.rss_bytes,
            peak_device_bytes: porep_run.memory.at_peak_device.device_bytes,
            porep_run,
            post_run,
        };
        print_run(args, &main, &urgent, &plans, reserve, &run);
        runs.push(run);
    }
    print_summary(&main.name, &urgent.name, &runs);
    Ok(ExitCode::SUCCESS)
}

fn workload(run: &ShapeRun) -> SourceWorkload {
    SourceWorkload {
        name: format!("{} (placeholder)", run.name),
        source: run.source.clone(),
        key: run.key.clone(),
    }
}

/// The PoRep's plan in the limit and GPUs less `reserve`, with the PoSt's key resident beside
/// it (as a pool that preloads its PoSt parameters holds it); the PoSt's alone; and the PoSt's
/// in what the PoRep's plan leaves of the host's memory and of the GPU.
///
/// Refused when the PoRep cannot be planned with the PoSt's key beside it: the daemon's main
/// lane would then drop the PoSt's set for the PoRep, and the PoSt would wait for the PoRep to
/// end and load its parameters in the PoRep's place. This bench holds both keys in memory and
/// cannot measure that swap; it says so and what to do instead.
fn plans(
    main: &SizingInput,
    urgent: &SizingInput,
    reserve: Footprint,
) -> Result<Plans, ProverError> {
    let mut porep_input = main.clone();
    porep_input.memory_limit = porep_input
        .memory_limit
        .saturating_sub(reserve.memory_bytes);
    porep_input.gpu_memory_bytes = porep_input
        .gpu_memory_bytes
        .map(|bytes| bytes.saturating_sub(reserve.device_bytes));
    porep_input.params_bytes += urgent.params_bytes;
    let porep = plan(&porep_input).map_err(|e| match e {
        SizingError::MemoryLimitTooSmall { .. } | SizingError::GpuMemoryTooSmall { .. } => {
            ProverError::InvalidArgument {
                what: "--urgent-post-shape",
                reason: format!(
                    "{} cannot be planned with the {} parameters ({}) held beside its own ({}): \
                     {e}. A prover this size serves that PoSt only after the PoRep ends, \
                     loading its parameters in the PoRep's place; serve it from a pool of its \
                     own (the gateway's --pool KIND=POOL) or give the prover more memory",
                    main.circuit,
                    urgent.circuit,
                    bytesize::ByteSize(urgent.params_bytes),
                    bytesize::ByteSize(main.params_bytes),
                ),
            }
        }
        e => e.into(),
    })?;
    let post_alone = plan(urgent)?;
    let taken = Footprint {
        memory_bytes: porep.predicted_peak_bytes,
        device_bytes: porep.gpu.as_ref().map_or(0, |g| g.predicted_device_bytes),
    };
    let post_beside = match plan(&beside(urgent, main.memory_limit, taken)) {
        Ok(plan) => Ok(plan),
        Err(
            e @ (SizingError::MemoryLimitTooSmall { .. } | SizingError::GpuMemoryTooSmall { .. }),
        ) => Err(e.to_string()),
        Err(e) => return Err(e.into()),
    };
    Ok(Plans {
        porep,
        post_alone,
        post_beside,
    })
}

/// The urgent job's sizing input beside a main plan that takes `taken` of `limit`: the
/// daemon's (`urgent::room_beside`, each GPU less the main plan's device bytes).
fn beside(urgent: &SizingInput, limit: u64, taken: Footprint) -> SizingInput {
    let mut input = urgent.clone();
    input.memory_limit = room_beside(limit, taken);
    input.gpu_memory_bytes = input
        .gpu_memory_bytes
        .map(|bytes| bytes.saturating_sub(taken.device_bytes));
    input
}

fn print_run(
    args: &BenchArgs,
    main: &ShapeRun,
    urgent: &ShapeRun,
    plans: &Plans,
    reserve: Footprint,
    run: &UrgentRun,
) {
    let secs = |s: Option<f64>| s.map_or("-".into(), |s| format!("{s:.2}s"));
    println!(
        "run {}: {} alone {}, {} alone {}; {} sent {:.1}s into the PoRep: answered in {:.2}s ({}), PoRep {:.2}s; peak RSS {:.1} GiB, device {:.1} GiB",
        run.run,
        main.name,
        secs(run.porep_alone_seconds),
        urgent.name,
        secs(run.post_alone_seconds),
        urgent.name,
        args.urgent_after,
        run.post_latency_seconds,
        if run.post_beside {
            "beside the PoRep"
        } else {
            "after the PoRep: it does not fit beside"
        },
        run.porep_with_post_seconds,
        run.peak_rss_bytes as f64 / (1u64 << 30) as f64,
        run.peak_device_bytes as f64 / (1u64 << 30) as f64,
    );
    if args.json {
        let report = json!({
            "urgent_beside": {
                "porep": main.extra,
                "post": urgent.extra,
                "urgent_after_seconds": args.urgent_after,
                "urgent_reserve_bytes": reserve.memory_bytes,
                "urgent_gpu_reserve_bytes": reserve.device_bytes,
                "cpu_cores": main.input.cpu_cores,
                "gpus": main.backend.gpu_devices().iter().map(|g| g.total_bytes).collect::<Vec<_>>(),
                "plans": plans,
                "run": run,
            }
        });
        println!("{report}");
    }
}

/// Medians and spreads of the runs; the PoRep's delay against the median PoRep alone.
fn print_summary(porep: &str, post: &str, runs: &[UrgentRun]) {
    let collect =
        |f: &dyn Fn(&UrgentRun) -> Option<f64>| -> Vec<f64> { runs.iter().filter_map(f).collect() };
    let show = |xs: Vec<f64>| {
        if xs.is_empty() {
            return "-".to_string();
        }
        let (median, min, max) = spread(xs);
        format!("{median:.2}s ({min:.2}-{max:.2})")
    };
    let porep_alone = collect(&|r| r.porep_alone_seconds);
    let delay = (!porep_alone.is_empty()).then(|| spread(porep_alone.clone()).0);
    println!("summary over {} run(s): median (min-max)", runs.len());
    println!("  {porep} alone: {}", show(porep_alone));
    println!(
        "  {post} alone: {}",
        show(collect(&|r| r.post_alone_seconds))
    );
    println!(
        "  {post} latency sent into the PoRep: {}; beside it in {} of {} run(s)",
        show(collect(&|r| Some(r.post_latency_seconds))),
        runs.iter().filter(|r| r.post_beside).count(),
        runs.len()
    );
    println!(
        "  {porep} with the PoSt: {}",
        show(collect(&|r| Some(r.porep_with_post_seconds)))
    );
    if let Some(alone) = delay {
        println!(
            "  PoRep delay against its median alone: {}",
            show(collect(&|r| Some(r.porep_with_post_seconds - alone)))
        );
    }
}

#[cfg(test)]
mod tests {
    use proofpipe_filecoin::post;
    use proofpipe_filecoin::shape::counted;
    use proofpipe_pipeline::circuits::R1csCounts;
    use proofpipe_pipeline::sizing::Overrides;

    use super::*;

    const GIB: u64 = 1 << 30;

    /// A 16-core host of `limit` with one 80 GiB GPU, planning `counts`' partition.
    fn input(circuit: &str, counts: R1csCounts, limit: u64) -> SizingInput {
        let query = counts.query_counts();
        SizingInput {
            circuit: circuit.into(),
            shape: counts.shape(),
            memory_limit: limit,
            params_bytes: query.params_heap_bytes(),
            query_bytes: Some(query.query_bytes()),
            matrices_bytes: 0,
            headroom: 0.1,
            cpu_cores: 16,
            synthesis_threads: 1,
            evaluations_held_twice: false,
            gpu_devices: 1,
            gpu_memory_bytes: Some(80 * GIB),
            max_parallel_partitions: Some(10),
            overrides: Overrides::default(),
        }
    }

    #[test]
    fn a_post_whose_key_cannot_be_held_beside_the_porep_s_is_refused_with_the_way_out() {
        let porep = counted(RegisteredSealProof::StackedDrg32GiBV1_1).unwrap();
        let window = post::shape::counted(RegisteredPoStProof::StackedDrgWindow32GiBV1_2).unwrap();
        let winning = post::shape::counted(RegisteredPoStProof::StackedDrgWinning32GiBV1).unwrap();
        let main = input("PoRep", porep, 128 * GIB);
        let message = plans(
            &main,
            &input("WindowPoSt", window, 128 * GIB),
            Footprint::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            message.contains("WindowPoSt parameters")
                && message.contains("pool of its own")
                && !message.contains("  "),
            "{message}"
        );
        // A WinningPoSt's key fits, and its pipeline beside the PoRep's.
        let plans = plans(
            &main,
            &input("WinningPoSt", winning, 128 * GIB),
            Footprint::default(),
        )
        .unwrap();
        assert!(plans.post_beside.is_ok(), "{:?}", plans.post_beside);
    }
}
