use std::io::{self, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use proofpipe_operator::Config;
use proofpipe_operator::runtime::lease::Timing;

/// The proofpipe Kubernetes operator.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the ProofJob and ProverPool CustomResourceDefinitions as YAML, for `kubectl apply -f -`.
    Crds,
    /// Run the controller against the cluster named by KUBECONFIG (or the in-cluster config).
    Run {
        /// Address of the /metrics, /healthz and /readyz endpoints.
        #[arg(long, default_value = "0.0.0.0:8080")]
        listen: SocketAddr,
        /// Watch only this namespace (default: all namespaces).
        #[arg(long)]
        namespace: Option<String>,
        /// Seconds before retrying a job whose attempt failed; doubled with each further
        /// failure, at most 360 (batch/v1 Job's pod failure backoff).
        #[arg(long, env = "PROOFPIPE_RETRY_DELAY", default_value_t = 10)]
        retry_delay: u64,
        /// Log lines as text, or as one JSON object per line for log collectors.
        #[arg(long, env = "PROOFPIPE_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
        log_format: LogFormat,
        #[command(flatten)]
        leader_election: LeaderElectionArgs,
    },
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Leader election, with client-go's names and defaults (docs/operator.md). Durations are
/// `15s`, `500ms` or plain seconds.
#[derive(clap::Args)]
struct LeaderElectionArgs {
    /// How long standbys wait after the Lease last changed before taking it over.
    #[arg(long, env = "LEADER_ELECT_LEASE_DURATION", default_value = "15s", value_parser = parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps reconciling without a successful renewal; below the lease
    /// duration.
    #[arg(long, env = "LEADER_ELECT_RENEW_DEADLINE", default_value = "10s", value_parser = parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How often standbys try to take the Lease and the leader renews it; below the renew
    /// deadline.
    #[arg(long, env = "LEADER_ELECT_RETRY_PERIOD", default_value = "2s", value_parser = parse_duration)]
    leader_elect_retry_period: Duration,
    /// On SIGTERM, how long the leader lets reconciles in flight finish before releasing
    /// the Lease.
    #[arg(long, env = "GRACEFUL_SHUTDOWN_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    graceful_shutdown_timeout: Duration,
}

impl LeaderElectionArgs {
    /// The timing, or clap's usage error (exit 2) saying which rule it breaks.
    fn timing(&self) -> Timing {
        Timing::new(
            self.leader_elect_lease_duration,
            self.leader_elect_renew_deadline,
            self.leader_elect_retry_period,
        )
        .unwrap_or_else(|reason| {
            Cli::command()
                .error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!("invalid leader-election timing: {reason}"),
                )
                .exit()
        })
    }
}

/// `500ms`, `2s`, `1.5s` or `15` (seconds).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, scale) = if let Some(millis) = text.strip_suffix("ms") {
        (millis, 1e-3)
    } else if let Some(seconds) = text.strip_suffix('s') {
        (seconds, 1.0)
    } else {
        (text, 1.0)
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .and_then(|value| Duration::try_from_secs_f64(value * scale).ok())
        .ok_or_else(|| format!("{text:?} is not a duration such as 15s or 500ms"))
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("rendering the CRDs as YAML")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("writing to stdout")]
    Stdout(#[from] io::Error),
    #[error("connecting to the Kubernetes API (is KUBECONFIG set?)")]
    Client(#[from] kube::Error),
    #[error("starting the async runtime")]
    Runtime(#[source] io::Error),
    #[error(transparent)]
    Operator(#[from] proofpipe_operator::Error),
}

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let mut message = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                message.push_str(": ");
                message.push_str(&cause.to_string());
                source = cause.source();
            }
            eprintln!("proofpipe-operator: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<(), Error> {
    match command {
        Command::Crds => {
            let yaml = proofpipe_operator::crds_yaml()?;
            let mut stdout = io::stdout().lock();
            stdout.write_all(yaml.as_bytes())?;
            stdout.flush()?;
        }
        Command::Run {
            listen,
            namespace,
            retry_delay,
            log_format,
            leader_election,
        } => {
            let config = Config {
                retry_delay: std::time::Duration::from_secs(retry_delay),
                leader_election: leader_election.timing(),
                drain_timeout: leader_election.graceful_shutdown_timeout,
                ..Config::from_env(Some(listen), namespace)
            };
            let logs = tracing_subscriber::fmt().with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| "info".into()),
            );
            match log_format {
                LogFormat::Text => logs.init(),
                // An event's fields at the top level, as log collectors index them.
                LogFormat::Json => logs.json().flatten_event(true).init(),
            }
            let runtime = tokio::runtime::Runtime::new().map_err(Error::Runtime)?;
            runtime.block_on(operate(config))?;
        }
    }
    Ok(())
}

/// Runs the operator until it fails (exit 1: the Deployment restarts it) or a SIGTERM or
/// Ctrl-C asks it to stop (exit 0).
async fn operate(config: Config) -> Result<(), Error> {
    let client = kube::Client::try_default().await?;
    tracing::info!(identity = %config.identity, lease_namespace = %config.lease_namespace, "starting");
    proofpipe_operator::run_until(client, config, shutdown_signal()).await?;
    tracing::info!("stopped");
    Ok(())
}

async fn shutdown_signal() {
    let mut terminate =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM; stopping on Ctrl-C only");
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
    tokio::select! {
        _ = terminate.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
