//! `proofpipe-simulate`: a proof-arrival trace replayed against static and autoscaled pools
//! (docs/autoscaling.md).

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;
use proofpipe_simulate::command::{SimulateArgs, run};

/// Replays a proof-arrival trace against static and autoscaled ProverPools, with the
/// operator's own autoscaling policy: GPU-hours against time to proof.
#[derive(Parser, Debug)]
#[command(name = "proofpipe-simulate", version)]
struct Cli {
    #[command(flatten)]
    args: SimulateArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli.args) {
        Ok(report) => {
            let mut stdout = io::stdout().lock();
            match stdout
                .write_all(report.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => {
                    eprintln!("error: writing the report: {err}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(err) => {
            // The whole chain: the trace file, then the line and what is wrong with it.
            let mut message = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                message.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
