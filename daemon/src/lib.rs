//! `proofpipe-prover daemon`: the prover of one pod of a ProverPool (ADR 0003).
//!
//! It watches the ProofJobs the operator assigned to its pod, proves one at a time through
//! a pipeline sized for that job from the pod's memory limit, applies every verified proof
//! to the job's status as it arrives, and reports its own entry of the pool's status.
//!
//! The decisions are pure and tested without a cluster: [`config`] (the environment),
//! [`resume`] (what is left to prove), [`decision`] (start, continue or cancel),
//! [`payload`] (the apply bodies), [`throttle`] (when to report), [`progress`] (a job's
//! stage and heartbeat: stalled or not), [`sizing`]; `resident` holds the Filecoin parameter
//! sets kept between jobs, counted in each job's plan. The rest is I/O: the supervisor loop
//! here ([`run`]), the job runner (`runner`, with `filecoin` for Filecoin work), the status
//! reporter (`reporter`), the watchdog (`watchdog`), the HTTP endpoints (`http`) and the API
//! writes (`kube_api`). Tokio only moves events and bytes; proving runs on the pipeline's
//! threads and anything blocking on blocking threads.
//!
//! Beneath the supervisor and those parts, so that none of them imports it: `shared` holds
//! the [`Daemon`] every part shares (and the flag its tasks stop on), `job_failure` why a job
//! could not be proved, `state` what the prover is doing in each lane, `main_lane` what the
//! main lane's plan takes, and `termination` the pod's termination message
//! ([`write_termination_message`]).
//!
//! Urgent work (PoSt) assigned while a long job runs is proved beside it, in the urgent lane
//! ([`urgent`], ADR 0026).
//!
//! A job's failure never ends the daemon (ADR 0021): it reports the failure into the job's
//! status (`status.proverFailure`, permanent or not) and takes the next job. Only a stall ends
//! it, since a thread that never returns cannot be taken back: the watchdog reports the job
//! back and exits, and the pod is replaced. A GPU lost mid-job (ADR 0032) is not the job's
//! failure: the daemon hands the job back (`GpuLost`, not charged to its `backoffLimit`),
//! says so in its pool entry, takes no more work, and with `PROOFPIPE_REQUIRE_GPU` exits.

pub mod config;
pub mod decision;
pub mod fault;
mod filecoin;
mod http;
mod job_failure;
mod kube_api;
mod main_lane;
pub mod metrics;
pub mod payload;
pub mod progress;
mod reporter;
mod resident;
pub mod resume;
mod runner;
mod shared;
pub mod sizing;
mod state;
mod termination;
pub mod throttle;
pub mod urgent;
mod watchdog;

#[cfg(test)]
mod api_vocabulary;

pub use shared::Daemon;
pub use termination::write_termination_message;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use proofpipe_crds::{ASSIGNED_POD_LABEL, GpuDeviceReport, GpuLoss, GpuReport, ProofJob};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use proofpipe_kernels::ProvingBackend;

use config::{ChosenLimit, EnvSettings};
use decision::{Attempt, Decision, Decisions, Running, decide, decide_without_gpu};
use fault::Fault;
use job_failure::JobFailure;
use kube_api::KubeWriter;
use main_lane::{Footprint, MainLane};
use metrics::DaemonMetrics;
use proofpipe_filecoin::params::DigestCheck;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::params::ParamsStore;
use resident::ResidentKeys;
use runner::{JobRun, RunOutcome};
use state::{CurrentJob, Lane, ProverState};

/// How long a SIGTERM waits for the current job to stop and write its last proofs; within
/// Kubernetes' default grace period of 30 s.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(20);

/// The settings that come from flags rather than the pod's contract env.
#[derive(Clone, Debug)]
pub struct DaemonOptions {
    pub params_dir: PathBuf,
    pub listen: SocketAddr,
    /// A test fault hook; [`Fault::None`] outside tests.
    pub fault: Fault,
    /// The container's terminationMessagePath: why the daemon ended, for the pod's status.
    pub termination_log: PathBuf,
}

/// Runs until SIGTERM or ctrl-c (then `Ok`); a job's failure is reported and the daemon goes
/// on. Errors are the daemon's own (no API server, the watch gone); a stall exits the
/// process from the watchdog.
pub async fn run(
    settings: EnvSettings,
    limit: ChosenLimit,
    options: DaemonOptions,
) -> Result<(), ProverError> {
    let client = Client::try_default()
        .await
        .map_err(kube_api::api_error("connecting to the API server"))?;
    let listener =
        TcpListener::bind(options.listen)
            .await
            .map_err(|source| ProverError::Listen {
                addr: options.listen,
                source,
            })?;
    let metrics = DaemonMetrics::new(limit.bytes).map_err(|err| ProverError::InvalidArgument {
        what: "metrics",
        reason: err.to_string(),
    })?;
    let identity = settings.identity;
    tracing::info!(
        pod = %identity.pod,
        namespace = %identity.namespace,
        pool = %identity.pool,
        listen = %listener.local_addr().unwrap_or(options.listen),
        params_dir = %options.params_dir.display(),
        "prover daemon started"
    );
    let (backend, why) = proofpipe_kernels::select_backend();
    let backend = options.fault.wrap_backend(backend);
    tracing::info!(backend = backend.name(), "GPU stage backend: {why}");
    let gpu = gpu_report(backend.as_ref(), &why);
    let gpu_missing = settings.gpu_expected && gpu.on_cpu();
    metrics.gpu(gpu.devices.len(), gpu_missing);
    if gpu.on_cpu() && settings.require_gpu {
        return Err(ProverError::NoGpu { message: why });
    }
    if gpu_missing {
        tracing::warn!(
            "the pod requests a GPU but none is usable: proving on the CPU, far slower ({why}); \
             set {}=true in the pool's template to exit instead",
            config::REQUIRE_GPU_VAR
        );
    }
    let daemon = Arc::new(Daemon {
        backend,
        gpu,
        main_lane: watch::channel(MainLane::Idle).0,
        urgent_reserve: Footprint {
            memory_bytes: settings.urgent_reserve,
            device_bytes: settings.urgent_gpu_reserve,
        },
        kube: KubeWriter::new(client, identity.clone()),
        identity,
        overrides: settings.overrides,
        memory_limit: limit.bytes,
        cpu_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        params: Arc::new(ParamsStore::new(options.params_dir)),
        filecoin_params: Arc::new(filecoin_params_cache()),
        state: ProverState::default(),
        metrics,
        watch_ready: AtomicBool::new(false),
        progress_deadline: settings.progress_deadline,
        porep_synthesis: settings.porep_synthesis,
        post_synthesis: settings.post_synthesis,
        snap_synthesis: settings.snap_synthesis,
        stalled: parking_lot::Mutex::new(None),
        gpu_lost: parking_lot::Mutex::new(None),
        require_gpu: settings.require_gpu,
        fault: options.fault,
        termination_log: options.termination_log.clone(),
    });
    if options.fault != Fault::None {
        tracing::warn!(fault = ?options.fault, "a test fault hook is set: this prover will fail on purpose");
    }
    watchdog::spawn(daemon.clone(), tokio::runtime::Handle::current());

    let (stop, stopped) = watch::channel(false);
    let http = tokio::spawn(http::serve(listener, daemon.clone(), stopped.clone()));
    let reporter = tokio::spawn(reporter::report_until(daemon.clone(), stopped));
    // Not ready (no watch, so no job assigned) until the preloaded sets are resident.
    let result = match preload(&daemon, settings.preload).await {
        Ok(()) => supervise(&daemon).await,
        Err(err) => Err(err),
    };
    stop.send_replace(true);
    let _ = reporter.await;
    if let Ok(Err(err)) = http.await {
        tracing::warn!("the HTTP server stopped with an error: {err}");
    }
    result
}

/// Loads the `PROOFPIPE_PRELOAD_PARAMS` sets, one after another, within the main lane's
/// memory; refused when they do not all stay resident together.
async fn preload(
    daemon: &Arc<Daemon>,
    sets: Vec<proofpipe_filecoin::param_set::ParamSet>,
) -> Result<(), ProverError> {
    if sets.is_empty() {
        return Ok(());
    }
    let daemon = daemon.clone();
    tokio::task::spawn_blocking(move || {
        let budget = daemon.main_limit();
        let mut loaded = Vec::with_capacity(sets.len());
        for set in &sets {
            let started = std::time::Instant::now();
            let key = daemon.filecoin_params.get(*set, budget)?;
            tracing::info!(
                proof = %set.name(),
                bytes = key.key.heap_bytes(),
                seconds = started.elapsed().as_secs_f64(),
                "Filecoin parameters preloaded"
            );
            loaded.push((set.name(), key.identifier));
        }
        let dropped: Vec<String> = loaded
            .into_iter()
            .filter(|(_, identifier)| !daemon.filecoin_params.is_resident(identifier))
            .map(|(name, _)| name)
            .collect();
        if dropped.is_empty() {
            Ok(())
        } else {
            Err(ProverError::InvalidArgument {
                what: config::PRELOAD_PARAMS_VAR,
                reason: format!(
                    "{} did not stay resident beside the other preloaded sets within the {} \
                     main jobs plan into (the memory limit less the urgent reserve): preload \
                     fewer sets, or raise the pool's memory limit",
                    dropped.join(", "),
                    bytesize::ByteSize(budget)
                ),
            })
        }
    })
    .await
    .map_err(|e| ProverError::Filecoin {
        action: "preloading the Filecoin parameters".into(),
        message: e.to_string(),
    })?
}

/// Filecoin's parameter directory as filecoin-proofs finds it (`FIL_PROOFS_PARAMETER_CACHE`,
/// else its default), digests checked when `FIL_PROOFS_VERIFY_PRODUCTION_PARAMS` says so.
fn filecoin_params_cache() -> ResidentKeys {
    let dir = std::env::var_os(proofpipe_filecoin::PARAMETER_CACHE_ENV).map_or_else(
        || PathBuf::from(proofpipe_filecoin::DEFAULT_PARAMETER_CACHE),
        PathBuf::from,
    );
    let verify = std::env::var("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS")
        .is_ok_and(|v| matches!(v.as_str(), "1" | "true" | "yes"));
    tracing::info!(dir = %dir.display(), digests_checked = verify, "Filecoin parameter directory");
    ResidentKeys::new(
        dir,
        if verify {
            DigestCheck::Verify
        } else {
            DigestCheck::Skip
        },
    )
}

/// A job being proved in a lane, and how to stop it.
struct ActiveJob {
    job: Arc<ProofJob>,
    uid: String,
    attempt: i32,
    cancel: watch::Sender<bool>,
    task: JoinHandle<JobRun>,
    /// When this prover started it: the start of its time in `proofpipe_daemon_job_seconds`.
    started: std::time::Instant,
}

/// The job running in each lane.
#[derive(Default)]
struct Lanes {
    main: Option<ActiveJob>,
    urgent: Option<ActiveJob>,
}

impl Lanes {
    fn slot(&mut self, lane: Lane) -> &mut Option<ActiveJob> {
        match lane {
            Lane::Main => &mut self.main,
            Lane::Urgent => &mut self.urgent,
        }
    }
}

/// Follows the watch of this pod's ProofJobs and starts, cancels and ends job runs.
async fn supervise(daemon: &Arc<Daemon>) -> Result<(), ProverError> {
    let selector = format!("{ASSIGNED_POD_LABEL}={}", daemon.identity.pod);
    let (store, writer) = reflector::store();
    let events = watcher(
        daemon.kube.jobs(),
        watcher::Config::default().labels(&selector),
    )
    .default_backoff()
    .reflect(writer);
    let mut events = pin!(events);
    let mut terminate = pin!(shutdown_signal());
    let mut lanes = Lanes::default();
    // Attempts this process ended: proved and written completely (the watch may still show
    // them with partitions unproved for a moment) or reported failed (until the operator takes
    // them off this pod); they must not be started again.
    let mut ended = HashSet::new();
    // Uids of the running jobs being stopped to be handed back: the GPU is lost.
    let mut handing_back = HashSet::new();
    loop {
        let done = tokio::select! {
            () = &mut terminate => {
                tracing::info!("shutting down");
                stop_for_shutdown(daemon, lanes).await;
                return Ok(());
            }
            event = events.next() => match event {
                Some(Ok(watcher::Event::InitDone)) => {
                    if !daemon.watch_ready.swap(true, Ordering::Relaxed) {
                        tracing::info!(%selector, "watching the ProofJobs assigned to this pod");
                    }
                    None
                }
                Some(Ok(_)) => None,
                Some(Err(err)) => {
                    daemon.watch_ready.store(false, Ordering::Relaxed);
                    tracing::warn!("watching ProofJobs with {selector}: {err}; retrying");
                    continue;
                }
                None => return Err(ProverError::WatchEnded),
            },
            run = finished(&mut lanes.main) => Some((Lane::Main, run)),
            run = finished(&mut lanes.urgent) => Some((Lane::Urgent, run)),
        };
        if let Some((lane, run)) = done {
            let job = lanes
                .slot(lane)
                .take()
                .expect("only an active job finishes");
            let run = match daemon.gpu_loss() {
                Some(loss) if handing_back.remove(&job.uid) => {
                    run.handed_back(&JobFailure::gpu_lost(gpu_ordinal(&loss), loss.message))
                }
                _ => run,
            };
            let proofs_written = run.proofs_written;
            let outcome = end_job(daemon, lane, &job.job, job.attempt, run).await;
            daemon.metrics.job_took(
                &job_kind(&job.job),
                &outcome.as_job_outcome(),
                job.started.elapsed(),
            );
            let over = match outcome {
                RunOutcome::Succeeded => proofs_written,
                RunOutcome::Failed(_) => true,
                RunOutcome::Cancelled => false,
            };
            if over {
                ended.insert(Attempt {
                    uid: job.uid,
                    attempt: job.attempt,
                });
            }
        }
        // Until the first list is complete, the store may miss the running job.
        if daemon.watch_ready.load(Ordering::Relaxed) {
            let waiting = act(
                daemon,
                &store.state(),
                &mut lanes,
                &mut ended,
                &mut handing_back,
            );
            for job in waiting {
                hand_back(daemon, &job, &mut ended).await;
            }
        }
        // Without its GPU, a prover that must have one leaves once it holds no job, so that
        // its pod is replaced.
        let holds_a_job = lanes.main.is_some() || lanes.urgent.is_some();
        let loss = daemon.gpu_loss();
        if decision::exit_for_lost_gpu(daemon.require_gpu, loss.is_some(), holds_a_job)
            && let Some(loss) = loss
        {
            return Err(ProverError::RequiredGpuLost {
                message: loss.message,
            });
        }
    }
}

/// The ordinal of the device a loss names.
fn gpu_ordinal(loss: &GpuLoss) -> usize {
    usize::try_from(loss.device).unwrap_or(0)
}

/// Hands back a job assigned to this prover after it lost its GPU, without starting it: the
/// operator requeues it, not charged to its `backoffLimit`.
async fn hand_back(daemon: &Daemon, job: &ProofJob, ended: &mut HashSet<Attempt>) {
    let (Some(loss), Some(attempt)) = (daemon.gpu_loss(), Attempt::of(job)) else {
        return;
    };
    let name = job.name_any();
    tracing::warn!(job = %name, "handing the job back: this prover lost its GPU");
    let failure = JobFailure::gpu_lost(
        gpu_ordinal(&loss),
        format!("{}; the job was not started here", loss.message),
    );
    daemon.metrics.job_failed(failure.class.reason());
    if let Err(err) = daemon
        .kube
        .report_failure(&name, attempt.attempt, &failure)
        .await
    {
        tracing::warn!("{err}");
    }
    if let Err(err) = daemon.kube.proving_failed(job, &failure).await {
        tracing::warn!("{err}");
    }
    ended.insert(attempt);
}

/// Carries out the decisions for the jobs now assigned; forgets ended attempts of jobs no
/// longer assigned. Returns the jobs waiting for this prover that it must hand back without
/// starting them: it lost its GPU.
fn act(
    daemon: &Arc<Daemon>,
    assigned: &[Arc<ProofJob>],
    lanes: &mut Lanes,
    ended: &mut HashSet<Attempt>,
    handing_back: &mut HashSet<String>,
) -> Vec<Arc<ProofJob>> {
    ended.retain(|done| {
        assigned
            .iter()
            .any(|job| job.uid().as_ref() == Some(&done.uid))
    });
    let pod = daemon.identity.pod.as_str();
    let running = Running {
        main: lanes.main.as_ref().map(|a| a.uid.as_str()),
        urgent: lanes.urgent.as_ref().map(|a| a.uid.as_str()),
    };
    let (Decisions { main, urgent }, waiting) = if daemon.gpu_loss().is_some() {
        decide_without_gpu(running, pod, assigned, ended)
    } else {
        (decide(running, pod, assigned, ended), Vec::new())
    };
    // The main lane first: a main job it starts is `Planning` before any urgent job looks.
    for (lane, decision) in [(Lane::Main, main), (Lane::Urgent, urgent)] {
        let slot = lanes.slot(lane);
        if decision == Decision::HandBack
            && let Some(active) = slot.as_ref()
        {
            handing_back.insert(active.uid.clone());
        }
        carry_out(daemon, lane, decision, slot);
    }
    waiting
}

fn carry_out(daemon: &Arc<Daemon>, lane: Lane, decision: Decision, slot: &mut Option<ActiveJob>) {
    match decision {
        Decision::Continue | Decision::Idle => {}
        Decision::HandBack => {
            if let Some(active) = slot.as_ref().filter(|active| !*active.cancel.borrow()) {
                tracing::warn!(
                    job = %active.job.name_any(),
                    lane = lane.as_str(),
                    "stopping the job to hand it back: this prover lost its GPU"
                );
                active.cancel.send_replace(true);
            }
        }
        Decision::Cancel => {
            if let Some(active) = slot.as_ref().filter(|active| !*active.cancel.borrow()) {
                tracing::info!(
                    job = %active.job.name_any(),
                    lane = lane.as_str(),
                    "the job lost this pod's label, was finished by the operator or is being deleted"
                );
                active.cancel.send_replace(true);
            }
        }
        Decision::Start(job) => {
            let (cancel, cancelled) = watch::channel(false);
            let Attempt { uid, attempt } =
                Attempt::of(&job).expect("decide starts only jobs with a uid");
            daemon.state.job_started(
                lane,
                CurrentJob {
                    name: job.name_any(),
                    attempt,
                },
            );
            if lane == Lane::Main {
                daemon.main_lane.send_replace(MainLane::Planning);
            }
            daemon.metrics.job_started();
            let task = tokio::spawn(runner::run_job(
                daemon.clone(),
                job.clone(),
                cancelled,
                lane,
            ));
            *slot = Some(ActiveJob {
                job,
                uid,
                attempt,
                cancel,
                task,
                started: std::time::Instant::now(),
            });
        }
    }
}

/// The proof kind of `job` as the metrics label it: the Filecoin kind, else `synthetic`.
fn job_kind(job: &ProofJob) -> String {
    job.spec
        .filecoin
        .as_ref()
        .map_or("synthetic", |work| work.kind.as_str())
        .to_owned()
}

/// The run of a lane's job once it ends; never, when nothing runs there.
async fn finished(active: &mut Option<ActiveJob>) -> JobRun {
    let Some(active) = active else {
        return std::future::pending().await;
    };
    (&mut active.task).await.unwrap_or_else(|err| JobRun {
        outcome: RunOutcome::Failed(JobFailure::proving(format!(
            "the job runner stopped: {err}"
        ))),
        pipeline: None,
        proofs_written: false,
    })
}

/// Stops the job's pipeline (so its memory is free before another job starts) and tells
/// how the job ended. A failure is reported into the job's status for the operator, with an
/// Event for its owner; the daemon goes on to the next job.
async fn end_job(
    daemon: &Daemon,
    lane: Lane,
    job: &ProofJob,
    attempt: i32,
    run: JobRun,
) -> RunOutcome {
    daemon.state.enter(lane, progress::Stage::Stopping);
    if let Some(pipeline) = run.pipeline {
        pipeline.stop().await;
    }
    if lane == Lane::Main {
        // Its memory is free: an urgent job waiting for room may plan.
        daemon.main_lane.send_replace(MainLane::Idle);
    }
    daemon.state.job_ended(lane);
    daemon.metrics.job_finished(&run.outcome.as_job_outcome());
    let name = job.name_any();
    match &run.outcome {
        RunOutcome::Succeeded => {
            tracing::info!(job = %name, lane = lane.as_str(), "every partition of the job is proved")
        }
        RunOutcome::Cancelled => tracing::info!(job = %name, "stopped proving the job"),
        RunOutcome::Failed(failure) => {
            let reason = failure.class.reason();
            tracing::error!(job = %name, reason, permanent = failure.class.is_permanent(), "proving failed: {}", failure.message);
            daemon.metrics.job_failed(reason);
            // Out of rotation before the job is handed back, so that the operator requeueing
            // it already sees this prover take no work.
            if let Some(device) = failure.lost_gpu {
                lose_gpu(daemon, device, &failure.message).await;
            }
            if let Err(err) = daemon.kube.report_failure(&name, attempt, failure).await {
                tracing::warn!("{err}");
            }
            if let Err(err) = daemon.kube.proving_failed(job, failure).await {
                tracing::warn!("{err}");
            }
        }
    }
    run.outcome
}

/// The prover lost GPU `device` (`message` says how; ADR 0032): from now on it starts no job
/// and hands back those assigned to it; its pool entry (`gpuLost`, written now rather than at
/// the reporter's next turn), `/readyz`, `proofpipe_prover_gpu_missing` and a Warning Event
/// on its pool say so. Once per process: a lost GPU stays lost.
async fn lose_gpu(daemon: &Daemon, device: usize, message: &str) {
    let loss = {
        let mut lost = daemon.gpu_lost.lock();
        if lost.is_some() {
            return;
        }
        let loss = GpuLoss {
            device: i32::try_from(device).unwrap_or(i32::MAX),
            message: message.to_owned(),
            time: Time(Timestamp::now()),
        };
        *lost = Some(loss.clone());
        loss
    };
    tracing::error!(
        device,
        require_gpu = daemon.require_gpu,
        "GPU lost: this prover takes no more work and hands its jobs back ({message})"
    );
    daemon.metrics.gpu_lost();
    if let Err(err) = reporter::write_now(daemon).await {
        tracing::warn!("{err}; the pool entry will say it at the next report");
    }
    if let Err(err) = daemon.kube.gpu_lost_event(&loss, daemon.require_gpu).await {
        tracing::warn!("{err}");
    }
}

/// Cancels the running jobs and waits a while for their last proofs to be written. Their
/// pipelines are left to stop on their own: the process exits.
async fn stop_for_shutdown(daemon: &Daemon, lanes: Lanes) {
    let active: Vec<ActiveJob> = [lanes.main, lanes.urgent].into_iter().flatten().collect();
    for job in &active {
        job.cancel.send_replace(true);
    }
    let deadline = tokio::time::Instant::now() + SHUTDOWN_GRACE;
    for mut job in active {
        match tokio::time::timeout_at(deadline, &mut job.task).await {
            Ok(Ok(run)) => daemon.metrics.job_finished(&run.outcome.as_job_outcome()),
            Ok(Err(err)) => tracing::warn!("the job runner stopped: {err}"),
            Err(_) => {
                tracing::warn!(job = %job.job.name_any(), "the job did not stop in time; its unwritten proofs are lost");
                job.task.abort();
            }
        }
    }
}

/// SIGTERM (what the kubelet sends) or ctrl-c.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let terminate = async {
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                terminate.recv().await;
            }
            Err(err) => {
                tracing::warn!("cannot listen for SIGTERM: {err}");
                std::future::pending::<()>().await;
            }
        }
    };
    let interrupt = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot listen for ctrl-c: {err}");
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = terminate => {}
        () = interrupt => {}
    }
}

/// What the pool status says of `backend`: `cpu` with no devices when the GPU stage runs on
/// the CPU, else the backend's name and its GPUs.
fn gpu_report(backend: &dyn ProvingBackend, why: &str) -> GpuReport {
    let devices = backend.gpu_devices();
    let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    GpuReport {
        backend: if devices.is_empty() {
            GpuReport::CPU.into()
        } else {
            backend.name().into()
        },
        message: why.to_owned(),
        devices: devices
            .iter()
            .map(|d| GpuDeviceReport {
                id: i32::try_from(d.id).unwrap_or(i32::MAX),
                memory_bytes: clamp(d.total_bytes),
                free_bytes: clamp(d.free_bytes),
                compute_capability: format!(
                    "{}.{}",
                    d.compute_capability.0, d.compute_capability.1
                ),
            })
            .collect(),
    }
}
