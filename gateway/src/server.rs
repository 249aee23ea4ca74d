//! The gateway process: the gRPC server (authentication, message limits, optional TLS), the
//! HTTP side (`/metrics`, `/healthz`) and the input sweep.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use kube::api::Api;
use kube::{Client, ResourceExt};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::Status;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tower::util::MapResponseLayer;

use crate::artifacts::ArtifactStore;
use crate::auth::Auth;
use crate::cache::Caches;
use crate::error::GatewayError;
use crate::job_spec::JobDefaults;
use crate::metrics::Metrics;
use crate::proto::proving_engine_server::ProvingEngineServer;
use crate::service::{Gateway, Limits};

/// How often inputs whose jobs are gone are removed.
const SWEEP_EVERY: Duration = Duration::from_secs(5 * 60);

/// Everything the process is started with.
pub struct Config {
    pub namespace: String,
    pub defaults: JobDefaults,
    pub artifacts_url: String,
    pub auth: Auth,
    /// The largest request or response, in bytes (a 32 GiB C1 output is ~50 MB).
    pub max_message_bytes: usize,
    /// PEM certificate chain and key; unset serves plaintext (what curio dials today).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// What the gateway admits (`--max-queued`).
    pub limits: Limits,
    /// How often an idle connection is pinged (HTTP/2 PING), so a `Prove` waiting many
    /// minutes for its proof is not cut by a proxy's or load balancer's idle timeout; `None`:
    /// never.
    pub keepalive: Option<Duration>,
}

/// How long a keepalive ping may go unanswered before the connection is closed.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// A started gateway: its service and the bound addresses.
pub struct Running {
    pub gateway: Gateway,
    pub grpc_addr: SocketAddr,
    pub http_addr: SocketAddr,
}

/// Binds both listeners, starts the caches and serves until `shutdown` resolves.
pub async fn serve(
    client: Client,
    config: Config,
    grpc: SocketAddr,
    http: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
    started: impl FnOnce(&Running),
) -> Result<(), GatewayError> {
    let artifacts = ArtifactStore::open(&config.artifacts_url)?;
    let metrics = Metrics::new().expect("the gateway's metrics are well-formed");
    let grpc_listener = TcpListener::bind(grpc)
        .await
        .map_err(|source| GatewayError::Serve { addr: grpc, source })?;
    let http_listener = TcpListener::bind(http)
        .await
        .map_err(|source| GatewayError::Serve { addr: http, source })?;
    let grpc_addr = grpc_listener.local_addr().unwrap_or(grpc);
    let http_addr = http_listener.local_addr().unwrap_or(http);

    let finished_metrics = metrics.clone();
    let caches = Caches::start(client.clone(), &config.namespace, move |job| {
        if let Some(finished) = crate::observe::finished_job(job) {
            finished_metrics.job_finished(&finished);
        }
    })
    .await;
    let (stop, stopping) = watch::channel(false);
    let gateway = Gateway::new(
        Api::namespaced(client, &config.namespace),
        caches,
        artifacts,
        config.defaults,
        config.limits,
        metrics,
        stopping,
    );
    started(&Running {
        gateway: gateway.clone(),
        grpc_addr,
        http_addr,
    });
    tracing::info!(%grpc_addr, %http_addr, namespace = %config.namespace, "serving cuzk.v1.ProvingEngine");

    let scraped = gateway.clone();
    let app = Router::new()
        .route(
            "/metrics",
            get(move || {
                let text = scraped.render_metrics();
                async move { ([("content-type", "text/plain; version=0.0.4")], text) }
            }),
        )
        .route("/healthz", get(|| async { "ok" }));
    tokio::spawn(async move {
        if let Err(error) = axum::serve(http_listener, app).await {
            tracing::error!(%error, "the HTTP server stopped");
        }
    });
    tokio::spawn(sweep_forever(gateway.clone()));

    let limit = config.max_message_bytes;
    let service = ProvingEngineServer::new(gateway)
        .max_decoding_message_size(limit)
        .max_encoding_message_size(limit);
    let auth = config.auth;
    let service = tonic::service::interceptor::InterceptedService::new(service, move |request| {
        auth.intercept(request)
    });
    let mut builder = Server::builder()
        .http2_keepalive_interval(config.keepalive)
        .http2_keepalive_timeout(config.keepalive.map(|_| KEEPALIVE_TIMEOUT));
    if let Some((cert, key)) = &config.tls {
        let read = |path: &PathBuf| {
            std::fs::read(path).map_err(|e| GatewayError::Tls(format!("{}: {e}", path.display())))
        };
        let identity = Identity::from_pem(read(cert)?, read(key)?);
        builder = builder
            .tls_config(ServerTlsConfig::new().identity(identity))
            .map_err(|e| GatewayError::Tls(e.to_string()))?;
    }
    builder
        .layer(MapResponseLayer::new(oversize_is_resource_exhausted))
        .add_service(service)
        .serve_with_incoming_shutdown(TcpIncoming::from(grpc_listener), async move {
            shutdown.await;
            // Waiting callers return now, so the server's drain does not wait for proofs.
            let _ = stop.send(true);
        })
        .await
        .map_err(|source| GatewayError::Grpc {
            addr: grpc_addr,
            source,
        })
}

/// tonic refuses a message over the limit with OUT_OF_RANGE; gRPC's convention (and grpc-go,
/// which curio uses) is RESOURCE_EXHAUSTED, and the caller should learn which limit to raise.
fn oversize_is_resource_exhausted<B: Default>(response: http::Response<B>) -> http::Response<B> {
    let oversize = Status::from_header_map(response.headers()).filter(|status| {
        status.code() == tonic::Code::OutOfRange
            && status.message().contains("message length too large")
    });
    match oversize {
        None => response,
        Some(status) => Status::resource_exhausted(format!(
            "{}: the message is over the gateway's limit; raise --max-message-bytes (the chart's \
             gateway.maxMessageBytes) and the client's own limit",
            status.message()
        ))
        .into_http(),
    }
}

/// Removes inputs whose jobs are gone, every [`SWEEP_EVERY`].
async fn sweep_forever(gateway: Gateway) {
    loop {
        tokio::time::sleep(SWEEP_EVERY).await;
        let live: HashSet<String> = gateway
            .caches()
            .jobs()
            .iter()
            .map(|job| job.name_any())
            .collect();
        match gateway.artifacts().sweep(&live).await {
            Ok(0) => {}
            Ok(removed) => {
                gateway.metrics().inputs_swept.inc_by(removed as u64);
                tracing::info!(removed, "removed inputs of jobs that are gone");
            }
            Err(error) => tracing::warn!(%error, "sweeping stored inputs failed"),
        }
    }
}
