//! Command-line interface: argument parsing and the commands, over the library.

mod args;
mod bench;
mod bench_summary;
mod bench_urgent;
mod cuzk_inputs;
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
mod testdata;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use proofpipe_model::kinds::FilecoinProofKind;
use proofpipe_pipeline::ProverError;

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
    Prove(prove::ProveArgs),
    /// Show how the pipeline would be sized for a circuit under a memory limit.
    Plan(plan::PlanArgs),
    /// Generate, list and check cached Groth16 parameters.
    Params(params::ParamsArgs),
    /// Compare the pipeline's throughput with bellperson's stock batch prover.
    Bench(bench::BenchArgs),
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
    /// Write what cuzk, curio's GPU proving engine, reads for a PoRep C2, from `bench
    /// --porep-shape`'s inputs: its timing-only parameters as Filecoin's `.params` and `.vk`
    /// files, its placeholder partitions as curio's commit-2 JSON. Timing only: nothing verifies.
    CuzkInputs(cuzk_inputs::CuzkInputsArgs),
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
        Command::Bench(args) => match (args.porep_shape, args.urgent_post_shape) {
            (Some(porep), Some(post)) => bench_urgent::run(&args, porep, post),
            _ => bench::run(args),
        },
        Command::Daemon(args) => daemon::run(args),
        Command::CuzkInputs(args) => cuzk_inputs::run(args),
    }
}
