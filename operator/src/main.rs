use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("rendering the CRDs as YAML: {0}")]
    Yaml(#[from] serde_yaml_ng::Error),
    #[error("writing to stdout: {0}")]
    Stdout(#[from] io::Error),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("proofpipe-operator: {err}");
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
    }
    Ok(())
}
