//! What several commands take: the job, the sizing and the synthesis, and the parsers and
//! defaults they share.

use std::path::PathBuf;

use clap::Args;
use proofpipe_pipeline::ProverError;
use proofpipe_pipeline::circuits::CircuitKind;
use proofpipe_pipeline::params::ParamsStore;
use proofpipe_pipeline::sizing::{Overrides, parse_memory_size};

/// What to prove.
#[derive(Args, Debug, Clone)]
pub(super) struct JobArgs {
    /// Circuit: mul-chain (dense arithmetic) or merkle-sha256 (boolean-heavy).
    #[arg(long, default_value = "mul-chain", value_parser = parse_circuit)]
    pub(super) circuit: CircuitKind,
    /// Constraints per partition.
    #[arg(long, default_value_t = 4096)]
    pub(super) constraints: usize,
    /// Independent partitions in the job [default: 4; with --porep-shape, the seal proof's
    /// own: 10 for 32 GiB and 64 GiB, 1 below].
    #[arg(long)]
    pub(super) partitions: Option<u32>,
}

/// Partitions in a job of proofpipe's own circuits when `--partitions` is not given.
pub(super) const DEFAULT_PARTITIONS: u32 = 4;

impl JobArgs {
    /// `--partitions`, else the default for proofpipe's own circuits.
    pub(super) fn partitions(&self) -> u32 {
        self.partitions.unwrap_or(DEFAULT_PARTITIONS)
    }
}

/// How the pipeline is sized.
#[derive(Args, Debug, Clone)]
pub(super) struct SizingArgs {
    /// Memory the prover may use (e.g. 64GiB). Default: the cgroup limit, else MemTotal.
    #[arg(long, value_parser = parse_size)]
    pub(super) memory_limit: Option<u64>,
    /// Fraction of the limit kept free.
    #[arg(long, default_value_t = 0.1)]
    pub(super) headroom: f64,
    /// Fixed number of synthesis workers instead of the planner's choice.
    #[arg(long)]
    pub(super) partition_workers: Option<usize>,
    /// Fixed channel capacity instead of the planner's choice.
    #[arg(long)]
    pub(super) channel_capacity: Option<usize>,
    /// Fixed number of GPU-stage workers instead of the planner's choice.
    #[arg(long)]
    pub(super) gpu_workers: Option<usize>,
    /// Stream every query's bases from page-locked host memory, whatever the GPU could hold:
    /// runs the streamed path on any card (the planner streams only what does not fit).
    #[arg(long)]
    pub(super) stream_bases: bool,
}

impl SizingArgs {
    pub(super) fn overrides(&self) -> Overrides {
        Overrides {
            partition_workers: self.partition_workers,
            channel_capacity: self.channel_capacity,
            gpu_workers: self.gpu_workers,
            stream_bases: self.stream_bases,
        }
    }
}

/// How partitions are synthesized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum Synthesis {
    /// Each constraint evaluated as the gadgets enforce it.
    #[default]
    OnePass,
    /// The gadgets for the witness only, then a, b, c from the circuit's R1CS matrices,
    /// recorded once at start (faster synthesis; the matrices, ~18 B per nonzero, are
    /// counted in the sizing). ADR 0010.
    Matrices,
}

impl From<Synthesis> for proofpipe_pipeline::groth16::SynthesisMode {
    fn from(s: Synthesis) -> Self {
        match s {
            Synthesis::OnePass => Self::OnePass,
            Synthesis::Matrices => Self::Matrices,
        }
    }
}

#[derive(Args, Debug)]
pub(super) struct SynthesisArgs {
    /// How partitions are synthesized.
    #[arg(long, value_enum, default_value_t = Synthesis::OnePass)]
    pub(super) synthesis: Synthesis,
}

pub(super) fn parse_circuit(s: &str) -> Result<CircuitKind, String> {
    s.parse().map_err(|e: ProverError| e.to_string())
}

pub(super) fn parse_size(s: &str) -> Result<u64, String> {
    parse_memory_size(s).map_err(|e| e.to_string())
}

pub(super) fn store(dir: Option<PathBuf>) -> ParamsStore {
    ParamsStore::new(dir.unwrap_or_else(ParamsStore::default_dir))
}

pub(super) fn cpu_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
