//! `/metrics`, `/healthz` and `/readyz`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::shared::{Daemon, raised};

/// Serves until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    daemon: Arc<Daemon>,
    mut shutdown: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(daemon);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { raised(&mut shutdown).await })
        .await
}

/// The current (or last) pipeline's metrics, then the daemon's counters.
async fn metrics(State(daemon): State<Arc<Daemon>>) -> impl IntoResponse {
    let text = daemon.state.pipeline_metrics() + &daemon.metrics.text();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

/// Alive unless the watchdog found the current job stalled: then the probe fails with why,
/// and the kubelet restarts the prover should the daemon not exit by itself.
async fn healthz(State(daemon): State<Arc<Daemon>>) -> (StatusCode, String) {
    let stalled = daemon.stalled.lock().clone();
    match stalled {
        None => (StatusCode::OK, "ok\n".into()),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, format!("stalled: {why}\n")),
    }
}

/// Ready once the watch of assigned ProofJobs has listed them; not ready while it is
/// broken, so the operator assigns no job this daemon would not see; nor once the GPU is
/// lost: the prover takes no more work.
async fn readyz(State(daemon): State<Arc<Daemon>>) -> (StatusCode, String) {
    if let Some(loss) = daemon.gpu_loss() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("GPU {} lost: {}\n", loss.device, loss.message),
        )
    } else if daemon.watch_ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ready\n".into())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "waiting for the watch of assigned ProofJobs\n".into(),
        )
    }
}
