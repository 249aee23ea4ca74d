//! `proofpipe-simulate`: the command line of the capacity simulation.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{DayShape, Model, Outcome, PoolPolicy, generate_day, parse, simulate};
use proofpipe_operator::pool::autoscale::Policy;

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// Proof-arrival trace: one job per line, `arrival_seconds,partitions[,deadline_seconds]`.
    /// Without it, a day with bursts is generated (--seed, --jobs-per-hour, --bursts, ...).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Seed of the generated day.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Jobs per hour outside bursts, in the generated day.
    #[arg(long, default_value_t = 6.0)]
    pub jobs_per_hour: f64,
    /// Bursts in the generated day, each arriving within ten minutes.
    #[arg(long, default_value_t = 3)]
    pub bursts: u32,
    /// Jobs per burst in the generated day.
    #[arg(long, default_value_t = 30)]
    pub burst_jobs: u32,
    /// Partitions per job in the generated day (a 32 GiB PoRep proof has 10).
    #[arg(long, default_value_t = 10)]
    pub partitions: u32,

    /// Seconds one prover spends per partition (modelled). Ignored with --bench-report.
    #[arg(long, default_value_t = 1.5)]
    pub seconds_per_partition: f64,
    /// A `proofpipe-prover bench --json` report: its measured seconds per partition proof
    /// replace --seconds-per-partition.
    #[arg(long)]
    pub bench_report: Option<PathBuf>,
    /// Seconds from asking for a prover to it taking work: node provisioning, image pull,
    /// loading parameters.
    #[arg(long, default_value_t = 300.0)]
    pub startup_seconds: f64,
    /// Deadline of jobs whose trace line gives none, in seconds after arrival.
    #[arg(long, default_value_t = 3600.0)]
    pub deadline_seconds: f64,

    /// The autoscaled pool's minReplicas.
    #[arg(long, default_value_t = 0)]
    pub min_replicas: u32,
    /// The autoscaled pool's maxReplicas.
    #[arg(long, default_value_t = 8)]
    pub max_replicas: u32,
    /// The autoscaled pool's targetQueuedPartitionsPerProver.
    #[arg(long, default_value_t = 10)]
    pub target_queued_partitions_per_prover: u32,
    /// The autoscaled pool's scaleDownDelaySeconds.
    #[arg(long, default_value_t = 600)]
    pub scale_down_delay_seconds: u64,
    /// Static pool sizes to compare against (default: a quarter, half and all of
    /// --max-replicas).
    #[arg(long, value_delimiter = ',')]
    pub static_pools: Vec<u32>,

    /// Seconds between two reconciles of the simulated operator.
    #[arg(long, default_value_t = 5.0)]
    pub step_seconds: f64,
    /// Write an SVG of provers and queue over time.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Print the results as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    #[error("reading {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("trace {path}")]
    Trace {
        path: PathBuf,
        #[source]
        source: super::TraceError,
    },
    #[error(
        "bench report {path}: {reason} (write one with `proofpipe-prover bench --json > report.json`)"
    )]
    BenchReport { path: PathBuf, reason: String },
    #[error("{0}")]
    InvalidArgument(String),
    #[error("drawing {path}: {reason}")]
    Plot { path: PathBuf, reason: String },
}

/// Runs the simulation for every pool and returns the report to print.
pub fn run(args: &SimulateArgs) -> Result<String, SimulateError> {
    if !(args.seconds_per_partition > 0.0 && args.step_seconds > 0.0) {
        return Err(SimulateError::InvalidArgument(
            "--seconds-per-partition and --step-seconds must be positive".into(),
        ));
    }
    if args.min_replicas > args.max_replicas || args.max_replicas == 0 {
        return Err(SimulateError::InvalidArgument(format!(
            "--min-replicas {} and --max-replicas {}: need 1 <= max and min <= max",
            args.min_replicas, args.max_replicas
        )));
    }
    let arrivals = match &args.trace {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|source| SimulateError::Read {
                path: path.clone(),
                source,
            })?;
            parse(&text).map_err(|source| SimulateError::Trace {
                path: path.clone(),
                source,
            })?
        }
        None => generate_day(
            DayShape {
                jobs_per_hour: args.jobs_per_hour,
                bursts: args.bursts,
                burst_jobs: args.burst_jobs,
                partitions: args.partitions,
            },
            args.seed,
        ),
    };
    let (seconds_per_partition, throughput_source) = match &args.bench_report {
        Some(path) => (
            measured_seconds_per_partition(path)?,
            format!("measured in {}", path.display()),
        ),
        None => (args.seconds_per_partition, "modelled".to_owned()),
    };
    let model = Model {
        seconds_per_partition,
        startup_seconds: args.startup_seconds,
        default_deadline_seconds: args.deadline_seconds,
        step_seconds: args.step_seconds,
    };
    let mut pools: Vec<PoolPolicy> = static_sizes(args)
        .into_iter()
        .map(PoolPolicy::Static)
        .collect();
    pools.push(PoolPolicy::Autoscaled(Policy {
        min_replicas: args.min_replicas,
        max_replicas: args.max_replicas,
        target_queued_partitions_per_prover: args.target_queued_partitions_per_prover.max(1),
        scale_down_delay: Duration::from_secs(args.scale_down_delay_seconds),
    }));
    let outcomes: Vec<Outcome> = pools
        .iter()
        .map(|&pool| simulate(&arrivals, &model, pool))
        .collect();
    if let Some(path) = &args.plot {
        super::plot::draw(path, &outcomes).map_err(|err| SimulateError::Plot {
            path: path.clone(),
            reason: err.to_string(),
        })?;
    }
    if args.json {
        return Ok(serde_json::to_string_pretty(&outcomes).expect("outcomes serialize") + "\n");
    }
    let partitions: u64 = arrivals.iter().map(|a| u64::from(a.partitions)).sum();
    let mut out = format!(
        "{} jobs, {partitions} partitions; {seconds_per_partition:.2} s per partition ({throughput_source}); \
         start-up {:.0} s; deadline {:.0} s unless the trace says\n\n",
        arrivals.len(),
        model.startup_seconds,
        model.default_deadline_seconds
    );
    out.push_str(&format!(
        "{:<44} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7}\n",
        "pool", "GPU-hours", "p50 s", "p99 s", "max s", "late", "provers"
    ));
    for o in &outcomes {
        out.push_str(&format!(
            "{:<44} {:>9.1} {:>8.0} {:>8.0} {:>8.0} {:>8} {:>7}\n",
            o.pool,
            o.gpu_hours,
            o.p50_seconds_to_proof,
            o.p99_seconds_to_proof,
            o.max_seconds_to_proof,
            o.jobs_past_deadline,
            o.most_provers
        ));
    }
    Ok(out)
}

fn static_sizes(args: &SimulateArgs) -> Vec<u32> {
    let mut sizes = if args.static_pools.is_empty() {
        let max = args.max_replicas;
        vec![(max / 4).max(1), (max / 2).max(1), max]
    } else {
        args.static_pools.clone()
    };
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// The pipeline's measured seconds per partition proof from a bench report.
fn measured_seconds_per_partition(path: &std::path::Path) -> Result<f64, SimulateError> {
    let fail = |reason: String| SimulateError::BenchReport {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|source| SimulateError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let report: serde_json::Value =
        serde_json::from_str(&text).map_err(|err| fail(format!("not JSON: {err}")))?;
    // A bench proof is one partition of the job (`pipeline.proofs` = `partitions`).
    report["pipeline"]["seconds_per_proof"]
        .as_f64()
        .filter(|s| *s > 0.0)
        .ok_or_else(|| fail("no positive pipeline.seconds_per_proof".into()))
}
