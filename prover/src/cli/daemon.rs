//! `daemon`: the prover of a ProverPool's pod, driven by the ProofJobs assigned to it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use proofpipe_daemon::DaemonOptions;
use proofpipe_daemon::config::{choose_memory_limit, from_env};
use proofpipe_daemon::fault::Fault;
use proofpipe_pipeline::ProverError;
use proofpipe_pipeline::params::ParamsStore;
use proofpipe_pipeline::sizing::detect_memory_limit;

#[derive(Args, Debug)]
pub struct DaemonArgs {
    /// Directory of cached parameters, shared by every job the daemon proves.
    #[arg(long, env = "PROOFPIPE_PARAMS_DIR")]
    params_dir: Option<PathBuf>,
    /// Address of the /metrics, /healthz and /readyz endpoints.
    #[arg(long, env = "PROOFPIPE_LISTEN", default_value = "0.0.0.0:9100")]
    listen: SocketAddr,
    /// Where to write why the daemon failed, for the kubelet to put in the pod's status and
    /// the operator to copy into the job's `status.lastFailure` (the container's
    /// terminationMessagePath). Skipped when the file cannot be written (outside a pod).
    #[arg(long, default_value = "/dev/termination-log")]
    termination_log: PathBuf,
    /// Test fault hook: hang a stage the way a deadlock would, or lose the GPU mid-job
    /// (tests only).
    #[arg(long, value_enum, default_value = "none", hide = true)]
    test_fault: Fault,
    /// Only the daemon of this pod gets `--test-fault` (a pool's pods share one template).
    #[arg(long, hide = true)]
    test_fault_pod: Option<String>,
}

/// I/O and control threads only: proving has the pipeline's own threads.
const RUNTIME_THREADS: usize = 2;

pub fn run(args: DaemonArgs) -> Result<ExitCode, ProverError> {
    let settings = from_env(|name| std::env::var(name).ok())?;
    let limit = choose_memory_limit(detect_memory_limit(None)?, settings.memory_limit.as_deref())?;
    tracing::info!(bytes = limit.bytes, limit = %bytesize::ByteSize(limit.bytes), source = %limit.origin, "memory limit");
    let options = DaemonOptions {
        params_dir: args
            .params_dir
            .clone()
            .unwrap_or_else(ParamsStore::default_dir),
        listen: args.listen,
        fault: args
            .test_fault
            .for_pod(args.test_fault_pod.as_deref(), &settings.identity.pod),
        termination_log: args.termination_log.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(RUNTIME_THREADS)
        .thread_name("daemon-io")
        .enable_all()
        .build()
        .map_err(ProverError::Runtime)?;
    let result = runtime.block_on(proofpipe_daemon::run(settings, limit, options));
    // Don't wait for a cancelled job's pipeline to drain: its proofs are written, and the
    // process is about to exit.
    runtime.shutdown_timeout(Duration::from_secs(1));
    if let Err(error) = &result {
        let mut message = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        proofpipe_daemon::write_termination_message(&args.termination_log, &message);
    }
    result.map(|()| ExitCode::SUCCESS)
}
