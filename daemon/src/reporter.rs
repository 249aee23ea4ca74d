//! Writes this prover's entry of the pool status when the throttle says so.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;

use crate::payload::{ProverReport, pool_status_body};
use crate::shared::{Daemon, raised};
use crate::throttle::{HEARTBEAT, MIN_INTERVAL, ReportThrottle};
use proofpipe_pipeline::error::ProverError;

/// How often the report is compared with the last one written.
const TICK: Duration = Duration::from_secs(1);

/// Reports until `shutdown` turns true.
pub async fn report_until(daemon: Arc<Daemon>, mut shutdown: watch::Receiver<bool>) {
    let mut throttle = ReportThrottle::new(MIN_INTERVAL, HEARTBEAT);
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = raised(&mut shutdown) => return,
        }
        let report = report(&daemon);
        let now = Instant::now();
        if !throttle.is_due(now, &report) {
            continue;
        }
        match write(&daemon, &report).await {
            Ok(()) => throttle.written(now, report),
            Err(err) => {
                tracing::warn!("{err}; retrying in {}s", MIN_INTERVAL.as_secs());
                throttle.failed(now);
            }
        }
    }
}

/// Writes the entry now, whatever the throttle says: for news the operator must have before
/// the daemon's next write elsewhere (a lost GPU, before the job is handed back).
pub async fn write_now(daemon: &Daemon) -> Result<(), ProverError> {
    write(daemon, &report(daemon)).await
}

/// What the daemon would report now.
fn report(daemon: &Daemon) -> ProverReport {
    let mut report = daemon.state.report();
    report.gpu = Some(daemon.gpu.clone());
    report.gpu_lost = daemon.gpu_loss();
    report.resident_parameters = daemon.filecoin_params.resident();
    report
}

async fn write(daemon: &Daemon, report: &ProverReport) -> Result<(), ProverError> {
    let entry = report.status(&daemon.identity.pod, Time(Timestamp::now()));
    let body = pool_status_body(&daemon.identity.pool, &entry);
    daemon.kube.apply_pool_status(&body, &daemon.metrics).await
}
