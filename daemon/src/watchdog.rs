//! The watchdog: a thread of its own, so that it sees a stall even when what is stuck is the
//! async runtime, checks each lane's job heartbeat every second. A stalled job is reported
//! back to the operator (transient: another prover retries it), `/healthz` fails, and the
//! process exits: a thread that never returns cannot be taken back, and a daemon that kept
//! going would hang on its next job the same way (ADR 0021).

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;

use crate::job_failure::JobFailure;
use crate::shared::Daemon;
use crate::state::LaneStall;
use crate::termination::write_termination_message;
use proofpipe_pipeline::error::FailureClass;

const TICK: Duration = Duration::from_secs(1);
/// How long the report of a stalled job may take before the daemon exits without it (the
/// operator then sees only the pod fail).
const REPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The exit code of a stalled prover, beside 1 (an error) and 2 (bad arguments).
pub const STALLED_EXIT_CODE: i32 = 3;

pub fn spawn(daemon: Arc<Daemon>, runtime: Handle) {
    std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || {
            loop {
                std::thread::sleep(TICK);
                if let Some(stall) = daemon.state.check(daemon.progress_deadline) {
                    stalled(&daemon, &runtime, &stall);
                }
            }
        })
        .expect("spawning the watchdog thread");
}

fn stalled(daemon: &Arc<Daemon>, runtime: &Handle, lane_stall: &LaneStall) -> ! {
    let stall = &lane_stall.stall;
    let message = format!("{stall}; the prover restarts and the job is retried");
    tracing::error!(pod = %daemon.identity.pod, "stalled: {message}");
    *daemon.stalled.lock() = Some(message.clone());
    // A cancelled job is no longer this prover's to report on.
    if !stall.after_cancel
        && let Some(job) = lane_stall.job.clone()
    {
        let (sent, reported) = std::sync::mpsc::channel();
        let writer = daemon.clone();
        let failure = JobFailure::new(FailureClass::Stalled, message.clone());
        runtime.spawn(async move {
            let result = writer
                .kube
                .report_failure(&job.name, job.attempt, &failure)
                .await;
            let _ = sent.send(result);
        });
        match reported.recv_timeout(REPORT_TIMEOUT) {
            Ok(Ok(())) => tracing::info!("reported the stalled job back to the operator"),
            Ok(Err(err)) => tracing::warn!("{err}"),
            Err(_) => tracing::warn!(
                "reporting the stalled job took over {} s; exiting without it",
                REPORT_TIMEOUT.as_secs()
            ),
        }
    }
    write_termination_message(&daemon.termination_log, &message);
    std::process::exit(STALLED_EXIT_CODE);
}
