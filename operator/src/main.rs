use std::io::{self, Write};
use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use proofpipe_operator::Config;

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
    },
    /// Replay a proof-arrival trace (a file, or a generated day with bursts) against static
    /// and autoscaled pools: GPU-hours, time to proof, jobs past their deadline.
    Simulate(proofpipe_operator::simulate::command::SimulateArgs),
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
    #[error(transparent)]
    Simulate(#[from] proofpipe_operator::simulate::command::SimulateError),
}

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
        } => {
            tracing_subscriber::fmt()
                .with_env_filter(
                    tracing_subscriber::EnvFilter::try_from_default_env()
                        .unwrap_or_else(|_| "info".into()),
                )
                .init();
            let runtime = tokio::runtime::Runtime::new().map_err(Error::Runtime)?;
            let config = Config {
                retry_delay: std::time::Duration::from_secs(retry_delay),
                ..Config::from_env(Some(listen), namespace)
            };
            runtime.block_on(operate(config))?;
        }
        Command::Simulate(args) => {
            let report = proofpipe_operator::simulate::command::run(&args)?;
            let mut stdout = io::stdout().lock();
            stdout.write_all(report.as_bytes())?;
            stdout.flush()?;
        }
    }
    Ok(())
}

/// Runs the operator until it fails (exit 1: the Deployment restarts it) or a SIGTERM or
/// Ctrl-C asks it to stop (exit 0).
async fn operate(config: Config) -> Result<(), Error> {
    let client = kube::Client::try_default().await?;
    tracing::info!(identity = %config.identity, lease_namespace = %config.lease_namespace, "starting");
    tokio::select! {
        result = proofpipe_operator::run(client, config) => Ok(result?),
        () = shutdown_signal() => {
            tracing::info!("shutting down");
            Ok(())
        }
    }
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
