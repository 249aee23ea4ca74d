//! `/metrics`, `/healthz` and `/readyz` over HTTP.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use tokio::net::TcpListener;

use crate::error::Error;
use crate::runtime::metrics::Metrics;

/// What the endpoints report.
#[derive(Clone)]
pub struct Health {
    pub metrics: Metrics,
    /// Set once the CRDs are known to be installed: the process can do its job (as leader or
    /// as a standby ready to take over).
    pub ready: Arc<AtomicBool>,
}

/// Binds `addr` now (so a bad address fails at start-up) and returns the server to run.
pub async fn serve(
    addr: SocketAddr,
    health: Health,
) -> Result<impl Future<Output = Result<(), Error>>, Error> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Serve { addr, source })?;
    let bound = listener.local_addr().unwrap_or(addr);
    tracing::info!(addr = %bound, "serving /metrics, /healthz and /readyz");
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(health);
    Ok(async move {
        axum::serve(listener, app)
            .await
            .map_err(|source| Error::Serve {
                addr: bound,
                source,
            })
    })
}

async fn metrics(State(health): State<Health>) -> ([(&'static str, &'static str); 1], String) {
    (
        [("content-type", "text/plain; version=0.0.4")],
        health.metrics.render(),
    )
}

async fn readyz(State(health): State<Health>) -> (StatusCode, &'static str) {
    if health.ready.load(Ordering::Relaxed) {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "checking the CRDs")
    }
}
