//! Command-line interface: argument parsing and the commands, over the library.

mod bench;
mod bench_urgent;
mod daemon;
mod filecoin;
mod output;
mod params;
mod plan;
mod porep;
mod post;
mod prove;
mod setup;
mod snap;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use proofpipe_model::kinds::FilecoinProofKind;
use proofpipe_pipeline::ProverError;
use proofpipe_pipeline::circuits::CircuitKind;
use proofpipe_pipeline::params::ParamsStore;
use proofpipe_pipeline::sizing::{Overrides, parse_memory_size};

#[derive(Parser, Debug)]
#[command(
    name = "proofpipe-prover",
    version,
    about = "Groth16 proving through a memory-bounded pipeline"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log filter (tracing's EnvFilter syntax), e.g. `info`, `proofpipe=debug`.
    #[arg(long, global = true, env = "PROOFPIPE_LOG", default_value = "info")]
    log: String,
    /// Log lines as text, or as one JSON object per line for log collectors.
    #[arg(long, global = true, env = "PROOFPIPE_LOG_FORMAT", value_enum, default_value_t = output::LogFormat::Text)]
    log_format: output::LogFormat,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Prove a job locally: synthesize, prove and verify every partition.
    Prove(ProveArgs),
    /// Show how the pipeline would be sized for a circuit under a memory limit.
    Plan(PlanArgs),
    /// Generate, list and check cached Groth16 parameters.
    Params(ParamsArgs),
    /// Compare the pipeline's throughput with bellperson's stock batch prover.
    Bench(BenchArgs),
    /// Run as the prover of a ProverPool's pod: prove the ProofJobs assigned to it.
    Daemon(daemon::DaemonArgs),
    /// Make Filecoin PoRep test data: parameters from a random setup (NOT Filecoin's; tests
    /// only) and a sector sealed here, written as lotus-bench's commit-2 input file.
    PorepTestdata(porep::TestdataArgs),
    /// Check a PoRep proof file with Filecoin's own verifier (filecoin-proofs-api's
    /// verify_seal): exit 0 if it is valid for the C1 output's sector, 1 if not.
    PorepVerify(filecoin::VerifyArgs),
    /// Make Filecoin SnapDeals test data: EmptySectorUpdate parameters from a random setup (NOT
    /// Filecoin's; tests only) and a sealed sector snap-updated here, written as the vanilla
    /// partition proofs and commitments `prove --snap-vanilla` reads.
    SnapTestdata(snap::TestdataArgs),
    /// Check a SnapDeals proof file with Filecoin's own verifier (filecoin-proofs-api's
    /// verify_empty_sector_update_proof): exit 0 if it is valid for the input's commitments, 1 if
    /// not.
    SnapVerify(filecoin::VerifyArgs),
    /// Make Filecoin PoSt test data: WindowPoSt or WinningPoSt parameters from a random setup
    /// (NOT Filecoin's; tests only) and the vanilla sector proofs of sealed sectors, written as
    /// the input `prove --window-post-vanilla` / `--winning-post-vanilla` reads.
    PostTestdata(post::TestdataArgs),
    /// Check a WindowPoSt proof file with Filecoin's own verifier (filecoin-proofs-api's
    /// verify_window_post): exit 0 if it is valid for the input's sectors and randomness, 1 if
    /// not.
    WindowPostVerify(filecoin::VerifyArgs),
    /// Check a WinningPoSt proof file with Filecoin's own verifier (filecoin-proofs-api's
    /// verify_winning_post): exit 0 if it is valid for the input's sector and randomness, 1 if
    /// not.
    WinningPostVerify(filecoin::VerifyArgs),
}

/// What to prove.
#[derive(Args, Debug, Clone)]
struct JobArgs {
    /// Circuit: mul-chain (dense arithmetic) or merkle-sha256 (boolean-heavy).
    #[arg(long, default_value = "mul-chain", value_parser = parse_circuit)]
    circuit: CircuitKind,
    /// Constraints per partition.
    #[arg(long, default_value_t = 4096)]
    constraints: usize,
    /// Independent partitions in the job [default: 4; with --porep-shape, the seal proof's
    /// own: 10 for 32 GiB and 64 GiB, 1 below].
    #[arg(long)]
    partitions: Option<u32>,
}

/// Partitions in a job of proofpipe's own circuits when `--partitions` is not given.
const DEFAULT_PARTITIONS: u32 = 4;

impl JobArgs {
    /// `--partitions`, else the default for proofpipe's own circuits.
    fn partitions(&self) -> u32 {
        self.partitions.unwrap_or(DEFAULT_PARTITIONS)
    }
}

/// How the pipeline is sized.
#[derive(Args, Debug, Clone)]
struct SizingArgs {
    /// Memory the prover may use (e.g. 64GiB). Default: the cgroup limit, else MemTotal.
    #[arg(long, value_parser = parse_size)]
    memory_limit: Option<u64>,
    /// Fraction of the limit kept free.
    #[arg(long, default_value_t = 0.1)]
    headroom: f64,
    /// Fixed number of synthesis workers instead of the planner's choice.
    #[arg(long)]
    partition_workers: Option<usize>,
    /// Fixed channel capacity instead of the planner's choice.
    #[arg(long)]
    channel_capacity: Option<usize>,
    /// Fixed number of GPU-stage workers instead of the planner's choice.
    #[arg(long)]
    gpu_workers: Option<usize>,
    /// Stream every query's bases from page-locked host memory, whatever the GPU could hold:
    /// runs the streamed path on any card (the planner streams only what does not fit).
    #[arg(long)]
    stream_bases: bool,
}

impl SizingArgs {
    fn overrides(&self) -> Overrides {
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
enum Synthesis {
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
struct SynthesisArgs {
    /// How partitions are synthesized.
    #[arg(long, value_enum, default_value_t = Synthesis::OnePass)]
    synthesis: Synthesis,
}

#[derive(Args, Debug)]
struct ProveArgs {
    #[command(flatten)]
    job: JobArgs,
    #[command(flatten)]
    sizing: SizingArgs,
    #[command(flatten)]
    synthesis: SynthesisArgs,
    #[command(flatten)]
    filecoin: filecoin::FilecoinArgs,
    /// Witness seed: the same seed gives the same statements.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Directory of cached parameters (with --porep-c1, --snap-vanilla or a PoSt input:
    /// Filecoin's parameter directory).
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// End with one JSON object on the last line of stdout.
    #[arg(long)]
    json: bool,
    /// Write the pipeline's Prometheus metrics (text format) to this file at the end.
    #[arg(long)]
    metrics_file: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct PlanArgs {
    #[command(flatten)]
    job: JobArgs,
    #[command(flatten)]
    sizing: SizingArgs,
    /// Plan for the Filecoin PoRep partition of this seal proof (a sector size, 32GiB, or a
    /// registered proof's name) instead of a synthetic circuit, from its committed R1CS counts
    /// (prover/src/filecoin/shape.rs): exact parameter bytes, and the R1CS matrices' bytes with
    /// --synthesis matrices.
    #[arg(long, value_name = "SEAL_PROOF", value_parser = porep::parse_seal_proof,
          conflicts_with_all = ["circuit", "constraints"])]
    porep_shape: Option<proofpipe_filecoin::RegisteredSealProof>,
    /// Plan for the Filecoin PoSt partition of this registered PoSt proof (its name, e.g.
    /// StackedDrgWindow32GiBV1_2, or curio's number), from its committed R1CS counts
    /// (prover/src/filecoin/post/shape.rs); one partition unless --partitions.
    #[arg(long, value_name = "POST_PROOF", value_parser = post::parse_post_proof,
          conflicts_with_all = ["circuit", "constraints", "porep_shape"])]
    post_shape: Option<proofpipe_filecoin::RegisteredPoStProof>,
    /// Plan for the Filecoin SnapDeals (EmptySectorUpdate) proof of this registered update
    /// proof (a sector size, 32GiB, or its name, StackedDrg32GiBV1), from its committed R1CS
    /// counts (prover/src/filecoin/snap/shape.rs); all its partitions (16 at 32 GiB) unless
    /// --partitions.
    #[arg(long, value_name = "UPDATE_PROOF", value_parser = snap::parse_update_proof,
          conflicts_with_all = ["circuit", "constraints", "porep_shape", "post_shape"])]
    snap_shape: Option<proofpipe_filecoin::RegisteredUpdateProof>,
    /// How partitions would be synthesized (matrices: only with --porep-shape, whose matrices'
    /// size is known before recording them).
    #[arg(long, value_enum, default_value_t = Synthesis::OnePass)]
    synthesis: Synthesis,
    /// CPU cores to plan for (default: this machine's).
    #[arg(long)]
    cores: Option<usize>,
    /// GPUs to plan for (0: the GPU stage on the CPU).
    #[arg(long, default_value_t = 0)]
    gpus: usize,
    /// Memory of each GPU (e.g. 141GB): plans the resident bases and workers per device.
    #[arg(long, value_parser = parse_size)]
    gpu_memory: Option<u64>,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
struct ParamsArgs {
    #[command(subcommand)]
    action: Option<ParamsAction>,
    /// Circuit to generate or load parameters for; without it, list the cache.
    #[arg(long, value_parser = parse_circuit)]
    circuit: Option<CircuitKind>,
    /// Constraints per partition.
    #[arg(long, default_value_t = 4096)]
    constraints: usize,
    /// Generate anew even if a cached file exists (replaces a corrupt file).
    #[arg(long)]
    regenerate: bool,
    /// Read every cached file whole and check its checksum.
    #[arg(long)]
    check: bool,
    #[arg(long)]
    params_dir: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum ParamsAction {
    /// Download Filecoin's parameter files for the proof kinds and sector sizes a pool serves,
    /// resuming partial downloads and keeping only files whose blake2b digest matches
    /// parameters.json; writes proofpipe-params-ready.json last.
    Fetch(params::FetchArgs),
    /// Record a PoRep partition's R1CS matrices and write them beside the parameters (or read
    /// and check the file when it is there), so that no prover process records them: what
    /// two-pass synthesis needs first (32 GiB: 6.5 GiB, ~29 s of 16 cores to record).
    Matrices(params::MatricesArgs),
}

#[derive(Args, Debug)]
struct BenchArgs {
    #[command(flatten)]
    job: JobArgs,
    #[command(flatten)]
    sizing: SizingArgs,
    #[command(flatten)]
    synthesis: SynthesisArgs,
    #[arg(long)]
    params_dir: Option<PathBuf>,
    /// Draw the pipeline's stage occupancy and buffer counts into this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Partitions for bellperson's stock prover (default: --partitions); fewer keep a
    /// CPU-only stock run short at large sizes, 0 skips it. Throughput is compared per proof.
    #[arg(long)]
    stock_partitions: Option<u32>,
    /// Benchmark with timing-only parameters: the right point counts for the circuit, made in
    /// seconds instead of a trusted setup (~20 min at 2^24 on 16 cores). Timings are real;
    /// no proof verifies and the report says so. Never written to the parameter cache.
    #[arg(long)]
    timing_only_params: bool,
    /// Skip the one-partition warm-up run before the timed runs (saves a partition's
    /// synthesis at large sizes; the timed run then pays the first base uploads).
    #[arg(long)]
    no_warmup: bool,
    /// GPU backend variants to run one after another, each with a fresh backend, comma
    /// separated: `all`, `none`, or options joined by `+` (`split`, `h`, `pinned`), e.g.
    /// `none,split,split+h,all`: what each optimisation does, in one run. A variant named
    /// again runs again (`none,all,all,all`: `all` three times, one warm-up). Default: the
    /// environment's (all on unless PROOFPIPE_CUDA_*=0).
    #[arg(long)]
    gpu_variants: Option<String>,
    /// Timed pipeline runs per variant (the warm-up and the stock prover run once): with 3,
    /// the summary gives the median and the spread.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Feed the pipeline copies of one synthesized partition instead of synthesizing each:
    /// measures the GPU stage (and finalize) at the rate they can go where the host's cores
    /// cannot synthesize fast enough. The kept partition costs one partition budget permit.
    #[arg(long)]
    replay_synthesis: bool,
    /// Before the pipeline runs of a shape benchmark, synthesize its first partition alone
    /// this many times (nothing else running, every core the source uses) and report each
    /// one's wall and CPU seconds: one partition's synthesis cost, apart from the pipeline.
    #[arg(long, default_value_t = 0, value_name = "RUNS")]
    synthesis_alone: usize,
    /// Benchmark the Filecoin PoRep partition of this seal proof (a sector size, 32GiB, or a
    /// registered proof's name) instead of a synthetic circuit: placeholder vanilla proofs of
    /// its exact shape (no sector needed) and timing-only parameters of its exact query counts
    /// (no parameter files), made from the committed counts. No proof verifies; no stock run.
    #[arg(long, value_name = "SEAL_PROOF", value_parser = porep::parse_seal_proof,
          conflicts_with_all = ["circuit", "constraints", "params_dir"])]
    porep_shape: Option<proofpipe_filecoin::RegisteredSealProof>,
    /// Benchmark the Filecoin PoSt partition of this registered PoSt proof (its name, e.g.
    /// StackedDrgWinning32GiBV1 or StackedDrgWindow32GiBV1_2, or curio's number) instead of a
    /// synthetic circuit: placeholder vanilla proofs of its exact shape and timing-only
    /// parameters of its committed counts. One partition unless --partitions. No proof
    /// verifies; no stock run.
    #[arg(long, value_name = "POST_PROOF", value_parser = post::parse_post_proof,
          conflicts_with_all = ["circuit", "constraints", "params_dir", "porep_shape"])]
    post_shape: Option<proofpipe_filecoin::RegisteredPoStProof>,
    /// Benchmark the Filecoin SnapDeals (EmptySectorUpdate) proof of this registered update
    /// proof (a sector size, 32GiB, or its name, StackedDrg32GiBV1) instead of a synthetic
    /// circuit: placeholder vanilla proofs of its exact shape and timing-only parameters of its
    /// committed counts. All its partitions (16 at 32 GiB) unless --partitions. No proof
    /// verifies; no stock run.
    #[arg(long, value_name = "UPDATE_PROOF", value_parser = snap::parse_update_proof,
          conflicts_with_all = ["circuit", "constraints", "params_dir", "porep_shape", "post_shape"])]
    snap_shape: Option<proofpipe_filecoin::RegisteredUpdateProof>,
    /// With --porep-shape, --post-shape or --snap-shape: run the timed runs once per GPU memory
    /// cap, each with a fresh backend held to that cap (as PROOFPIPE_GPU_MEMORY holds a prover)
    /// and a plan for it, comma separated: sizes such as 24GiB, or `none` for the whole card. A
    /// plan for a cap too small for every base streams some from host memory.
    #[arg(long, value_name = "CAPS")]
    gpu_memory_caps: Option<String>,
    /// With --porep-shape: urgent work beside the PoRep, as one prover serves it (ADR 0026).
    /// Each run proves the PoRep alone, this PoSt partition alone, then the PoRep again with
    /// the PoSt sent --urgent-after seconds into it, proved in a pipeline of its own planned
    /// into what the PoRep's plan leaves (or, when it does not fit there, after the PoRep).
    /// Reports the PoSt's latency and the PoRep's delay against the runs alone.
    #[arg(long, value_name = "POST_PROOF", value_parser = post::parse_post_proof,
          requires = "porep_shape")]
    urgent_post_shape: Option<proofpipe_filecoin::RegisteredPoStProof>,
    /// Seconds into the PoRep at which the urgent PoSt is sent.
    #[arg(long, default_value_t = 20.0, requires = "urgent_post_shape")]
    urgent_after: f64,
    /// Memory kept out of the PoRep's plan for urgent work, as PROOFPIPE_URGENT_RESERVE does
    /// in a pool (default: that variable, else none).
    #[arg(long, value_parser = parse_size, requires = "urgent_post_shape")]
    urgent_reserve: Option<u64>,
    /// GPU memory (each GPU) kept out of the PoRep's plan for urgent work, as
    /// PROOFPIPE_URGENT_GPU_RESERVE does in a pool (default: that variable, else none).
    #[arg(long, value_parser = parse_size, requires = "urgent_post_shape")]
    urgent_gpu_reserve: Option<u64>,
    /// Runs (of --runs) that also prove the PoRep and the PoSt alone: the baselines. Fewer
    /// keep a long PoSt's call short; the delay is then taken against the median baseline.
    #[arg(long, requires = "urgent_post_shape")]
    urgent_baselines: Option<usize>,
    #[arg(long)]
    json: bool,
}

fn parse_circuit(s: &str) -> Result<CircuitKind, String> {
    s.parse().map_err(|e: ProverError| e.to_string())
}

fn parse_size(s: &str) -> Result<u64, String> {
    parse_memory_size(s).map_err(|e| e.to_string())
}

fn store(dir: Option<PathBuf>) -> ParamsStore {
    ParamsStore::new(dir.unwrap_or_else(ParamsStore::default_dir))
}

fn cpu_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub fn run(cli: Cli) -> Result<ExitCode, ProverError> {
    // filecoin-proofs reads its parameter directory from the environment once, on first use:
    // set it now, while this process has one thread.
    let filecoin_dir = match &cli.command {
        Command::Prove(args) if args.filecoin.input().is_some() => Some(args.params_dir.as_deref()),
        Command::PorepTestdata(args) => Some(args.params_dir()),
        Command::SnapTestdata(args) => Some(args.params_dir()),
        Command::PostTestdata(args) => Some(args.params_dir()),
        Command::PorepVerify(args)
        | Command::SnapVerify(args)
        | Command::WindowPostVerify(args)
        | Command::WinningPostVerify(args) => Some(args.params_dir()),
        _ => None,
    };
    if let Some(flag) = filecoin_dir {
        // SAFETY: no thread has been started yet.
        unsafe { proofpipe_filecoin::use_parameter_dir(&filecoin::parameter_dir(flag)) };
    }
    let progress = output::init(&cli.log, cli.log_format);
    match cli.command {
        Command::Prove(args) => match args.filecoin.input() {
            Some((kind, input)) => filecoin::prove(
                &args.filecoin,
                kind,
                input,
                &args.sizing,
                args.synthesis.synthesis.into(),
                args.params_dir.as_deref(),
                args.json,
            ),
            None => prove::run(args, &progress),
        },
        Command::PostTestdata(args) => post::testdata(args),
        Command::SnapTestdata(args) => snap::testdata(args),
        Command::PorepTestdata(args) => porep::testdata(args),
        Command::PorepVerify(args) => filecoin::verify(args, FilecoinProofKind::PoRepC2),
        Command::SnapVerify(args) => filecoin::verify(args, FilecoinProofKind::SnapDealsUpdate),
        Command::WindowPostVerify(args) => {
            filecoin::verify(args, FilecoinProofKind::WindowPoStPartition)
        }
        Command::WinningPostVerify(args) => filecoin::verify(args, FilecoinProofKind::WinningPoSt),
        Command::Plan(args) => plan::run(args),
        Command::Params(args) => params::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Daemon(args) => daemon::run(args),
    }
}
