//! `proofpipe-gateway`: serves `cuzk.v1.ProvingEngine` (the seed engine's API, what curio
//! calls) on top of ProofJobs in one namespace. See docs/gateway.md.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use proofpipe_gateway::GatewayError;
use proofpipe_gateway::auth::{Auth, Token};
use proofpipe_gateway::job_spec::JobDefaults;
use proofpipe_gateway::routes::PoolRoutes;
use proofpipe_gateway::server::{self, Config};
use proofpipe_gateway::service::Limits;

#[derive(Parser, Debug)]
#[command(name = "proofpipe-gateway", version, about)]
struct Args {
    /// gRPC address (curio's `Cuzk.Address` points here; the seed engine's default port).
    #[arg(long, env = "PROOFPIPE_GATEWAY_LISTEN", default_value = "0.0.0.0:9820")]
    listen: SocketAddr,

    /// HTTP address of `/metrics` and `/healthz`.
    #[arg(
        long,
        env = "PROOFPIPE_GATEWAY_METRICS_LISTEN",
        default_value = "0.0.0.0:9821"
    )]
    metrics_listen: SocketAddr,

    /// Namespace of the ProofJobs the gateway creates and of the pool that proves them
    /// (default: the pod's namespace, else the kubeconfig's).
    #[arg(long, env = "POD_NAMESPACE")]
    namespace: Option<String>,

    /// The ProverPools that prove the submitted proofs: `NAME` proves every kind not routed
    /// elsewhere, `KIND=NAME` one kind (porep-c2, snap-update, window-post, winning-post);
    /// repeat the flag, or separate values with commas. E.g. `--pool gpu-big --pool
    /// winning-post=gpu-warm --pool window-post=gpu-warm`: PoSt to a warm pool, the rest to
    /// one that scales from zero.
    #[arg(
        long,
        env = "PROOFPIPE_GATEWAY_POOL",
        value_delimiter = ',',
        required = true
    )]
    pool: Vec<String>,

    /// Where submitted inputs (C1 outputs, SnapDeals inputs) are stored for the provers:
    /// `s3://bucket/prefix` (with the gateway's and the provers' `AWS_*` environment) or
    /// `file:///dir` on a volume mounted at the same path in the gateway and in the prover
    /// pods.
    #[arg(long, env = "PROOFPIPE_GATEWAY_ARTIFACTS")]
    artifacts: String,

    /// File holding the bearer token every call must send (`authorization: Bearer <token>`);
    /// re-read every 30 s.
    #[arg(
        long,
        env = "PROOFPIPE_GATEWAY_TOKEN_FILE",
        conflicts_with = "allow_unauthenticated"
    )]
    token_file: Option<PathBuf>,

    /// Accept calls without a token: anyone who reaches the port may submit. Curio sends no
    /// credentials today; use this only behind a NetworkPolicy (docs/gateway.md).
    #[arg(long, env = "PROOFPIPE_GATEWAY_ALLOW_UNAUTHENTICATED")]
    allow_unauthenticated: bool,

    /// The largest request or response in bytes. Curio's client allows 256 MiB; a 32 GiB
    /// sector's C1 output is ~50 MB.
    #[arg(long, env = "PROOFPIPE_GATEWAY_MAX_MESSAGE_BYTES", default_value_t = 256 << 20)]
    max_message_bytes: usize,

    /// `spec.ttlSecondsAfterFinished` of the jobs created: finished jobs and their inputs are
    /// removed this long after they finish (0 keeps them).
    #[arg(
        long,
        env = "PROOFPIPE_GATEWAY_JOB_TTL_SECONDS",
        default_value_t = 3600
    )]
    job_ttl_seconds: i32,

    /// Refuse new proofs (RESOURCE_EXHAUSTED) while this many of the pool's jobs wait for a
    /// prover; 0: no cap. A resubmission of a job that exists is always answered. curio
    /// ignores the code and retries its task later; other clients can back off on it.
    #[arg(long, env = "PROOFPIPE_GATEWAY_MAX_QUEUED", default_value_t = 0)]
    max_queued: usize,

    /// Seconds between HTTP/2 keepalive pings on each connection, so a `Prove` that waits
    /// many minutes for its proof survives idle-timeout proxies and load balancers; 0: none.
    #[arg(
        long,
        env = "PROOFPIPE_GATEWAY_KEEPALIVE_SECONDS",
        default_value_t = 30
    )]
    keepalive_seconds: u64,

    /// `spec.backoffLimit` of the jobs created.
    #[arg(long, env = "PROOFPIPE_GATEWAY_BACKOFF_LIMIT", default_value_t = 3)]
    backoff_limit: i32,

    /// PEM certificate chain to serve TLS with (with --tls-key).
    #[arg(long, env = "PROOFPIPE_GATEWAY_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,

    /// PEM private key of --tls-cert.
    #[arg(long, env = "PROOFPIPE_GATEWAY_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,

    /// Log filter (tracing's env-filter syntax).
    #[arg(long, env = "PROOFPIPE_LOG", default_value = "info")]
    log: String,

    #[arg(long, env = "PROOFPIPE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let logs = tracing_subscriber::fmt().with_env_filter(
        tracing_subscriber::EnvFilter::try_new(&args.log)
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
    );
    match args.log_format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().flatten_event(true).init(),
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "proofpipe-gateway stopped");
            eprintln!("proofpipe-gateway: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), GatewayError> {
    let pools = PoolRoutes::parse(&args.pool)?;
    tracing::info!(pools = %pools.describe(), "routing proofs by kind");
    let auth = match (&args.token_file, args.allow_unauthenticated) {
        (Some(path), _) => Auth::Token(Token::watch(path)?),
        (None, true) => {
            tracing::warn!("serving without authentication (--allow-unauthenticated)");
            Auth::Anyone
        }
        (None, false) => {
            return Err(GatewayError::invalid(
                "no --token-file: give the file of the bearer token callers must send, or \
                 --allow-unauthenticated to accept anyone who reaches the port",
            ));
        }
    };
    let client = kube::Client::try_default()
        .await
        .map_err(GatewayError::KubeConfig)?;
    let namespace = args
        .namespace
        .unwrap_or_else(|| client.default_namespace().to_owned());
    let config = Config {
        namespace,
        defaults: JobDefaults {
            pools,
            backoff_limit: args.backoff_limit,
            ttl_seconds_after_finished: (args.job_ttl_seconds > 0).then_some(args.job_ttl_seconds),
        },
        artifacts_url: args.artifacts,
        auth,
        max_message_bytes: args.max_message_bytes,
        tls: args.tls_cert.zip(args.tls_key),
        limits: Limits {
            max_queued: (args.max_queued > 0).then_some(args.max_queued),
        },
        keepalive: (args.keepalive_seconds > 0)
            .then(|| Duration::from_secs(args.keepalive_seconds)),
    };
    server::serve(
        client,
        config,
        args.listen,
        args.metrics_listen,
        shutdown_signal(),
        |_| {},
    )
    .await
}

/// SIGTERM (a pod being stopped) or Ctrl-C: stop accepting calls, finish the ones in flight.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
    tracing::info!("shutting down: no new calls, finishing those in flight");
}
