//! `params`: generate, list and check cached Groth16 parameters; `params fetch`: Filecoin's.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use bytesize::ByteSize;
use clap::Args;
use proofpipe_filecoin::fetch::{self, Fetched, ParamKind};
use proofpipe_filecoin::{DEFAULT_PARAMETER_CACHE, MATRICES_DIR_ENV, PARAMETER_CACHE_ENV, shape};
use proofpipe_filecoin::{post, snap};
use proofpipe_pipeline::ProverError;
use proofpipe_pipeline::groth16::R1csMatrices;
use proofpipe_pipeline::groth16::matrices_file::MatricesOrigin;
use proofpipe_pipeline::params::ParamsStore;
use proofpipe_pipeline::sizing::parse_memory_size;
use serde_json::json;

use clap::Subcommand;
use proofpipe_pipeline::circuits::CircuitKind;

use super::args::{parse_circuit, store};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub(super) struct ParamsArgs {
    #[command(subcommand)]
    pub(super) action: Option<ParamsAction>,
    /// Circuit to generate or load parameters for; without it, list the cache.
    #[arg(long, value_parser = parse_circuit)]
    pub(super) circuit: Option<CircuitKind>,
    /// Constraints per partition.
    #[arg(long, default_value_t = 4096)]
    pub(super) constraints: usize,
    /// Generate anew even if a cached file exists (replaces a corrupt file).
    #[arg(long)]
    pub(super) regenerate: bool,
    /// Read every cached file whole and check its checksum.
    #[arg(long)]
    pub(super) check: bool,
    #[arg(long)]
    pub(super) params_dir: Option<PathBuf>,
    #[arg(long)]
    pub(super) json: bool,
}

#[derive(Subcommand, Debug)]
pub(super) enum ParamsAction {
    /// Download Filecoin's parameter files for the proof kinds and sector sizes a pool serves,
    /// resuming partial downloads and keeping only files whose blake2b digest matches
    /// parameters.json; writes proofpipe-params-ready.json last.
    Fetch(FetchArgs),
    /// Record a PoRep partition's R1CS matrices and write them beside the parameters (or read
    /// and check the file when it is there), so that no prover process records them: what
    /// two-pass synthesis needs first (32 GiB: 6.5 GiB, ~29 s of 16 cores to record).
    Matrices(MatricesArgs),
}

#[derive(Args, Debug)]
pub struct FetchArgs {
    /// Where the files are: `<base-url>/<file name>` (http(s)://, s3:// or file://), or with
    /// `{cid}` (or `{name}`) in it for a server that names files by CID, as an IPFS gateway
    /// does (https://gateway.example/ipfs/{cid}). Repeat it (or separate with commas) to name
    /// mirrors: each file comes from the first that serves it with its digest, the others
    /// tried in order. Default: https://filecoin-proof-parameters.chainsafe.dev, then
    /// https://proofs.filecoin.io/ipfs/{cid}.
    #[arg(long, value_delimiter = ',')]
    base_url: Vec<String>,
    /// The parameter directory. Default: FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Sector sizes (2KiB, 8MiB, 512MiB, 32GiB, 64GiB); repeat or separate with commas.
    #[arg(long = "sector-size", value_delimiter = ',', default_value = "32GiB", value_parser = parse_memory_size)]
    sector_sizes: Vec<u64>,
    /// Proof kinds; repeat or separate with commas. Default: all four.
    #[arg(long = "kind", value_delimiter = ',', value_enum)]
    kinds: Vec<ParamKind>,
    /// A parameters.json to take names and digests from, instead of filecoin-proofs' own
    /// (a mirror of parameters of your own, or the tests' random setups).
    #[arg(long, env = "PROOFPIPE_PARAMS_MANIFEST")]
    manifest: Option<PathBuf>,
    /// Then record each PoRep sector size's R1CS matrices into the directory too (`params
    /// matrices`), so that provers mounting it read-only never record them. Needs the memory
    /// and cores of a recording (32 GiB: ~29 s on 16 cores, 6.5 GiB kept; docs/filecoin.md).
    #[arg(long, conflicts_with = "verifying_keys_only")]
    porep_matrices: bool,
    /// The same for each WindowPoSt and WinningPoSt kind and sector size fetched (ADR 0040;
    /// 32 GiB WindowPoSt: 10.1 GiB kept, a recording's memory and cores).
    #[arg(long, conflicts_with = "verifying_keys_only")]
    post_matrices: bool,
    /// The same for each SnapDeals sector size fetched (32 GiB: ~4 GiB kept, recorded in one
    /// pass on one core, about a minute).
    #[arg(long, conflicts_with = "verifying_keys_only")]
    snap_matrices: bool,
    /// Only the verifying keys (`.vk`, megabytes): for a machine that verifies proofs and
    /// never proves them.
    #[arg(long)]
    verifying_keys_only: bool,
    #[arg(long)]
    json: bool,
}

fn fetch(args: FetchArgs) -> Result<ExitCode, ProverError> {
    let dir = args.dir.unwrap_or_else(|| {
        std::env::var_os(PARAMETER_CACHE_ENV)
            .map_or_else(|| PathBuf::from(DEFAULT_PARAMETER_CACHE), PathBuf::from)
    });
    let kinds = if args.kinds.is_empty() {
        ParamKind::ALL.to_vec()
    } else {
        args.kinds
    };
    let manifest = match &args.manifest {
        Some(path) => fetch::read_manifest(path)?,
        None => fetch::builtin_manifest(),
    };
    let mut files = fetch::wanted_files(&kinds, &args.sector_sizes, &manifest)?;
    if args.verifying_keys_only {
        files = fetch::verifying_keys_only(files);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ProverError::io("starting the async runtime", &dir))?;
    let mirrors = if args.base_url.is_empty() {
        fetch::PUBLIC_MIRRORS.map(String::from).to_vec()
    } else {
        args.base_url
    };
    let done = runtime.block_on(fetch::fetch_all(&mirrors, &dir, &files))?;
    let mut matrices_rows = Vec::new();
    let mut row = |name: String, written: (R1csMatrices, MatricesOrigin, f64)| {
        let (matrices, origin, seconds) = written;
        matrices_rows.push((name, origin, matrices.heap_bytes(), seconds));
    };
    if args.porep_matrices && kinds.contains(&ParamKind::Porep) {
        for &size in &args.sector_sizes {
            let proof = fetch::seal_proof_of_size(size)?;
            let written = written_matrices(&dir, || shape::matrices_in(proof, &dir))?;
            row(proofpipe_filecoin::seal_proof_name(proof), written);
        }
    }
    if args.post_matrices {
        for &kind in &kinds {
            for &size in &args.sector_sizes {
                if let Some(proof) = fetch::post_proof_of_size(kind, size)? {
                    let written = written_matrices(&dir, || post::shape::matrices_in(proof, &dir))?;
                    row(post::post_proof_name(proof), written);
                }
            }
        }
    }
    if args.snap_matrices && kinds.contains(&ParamKind::Snap) {
        for &size in &args.sector_sizes {
            let proof = fetch::update_proof_of_size(size)?;
            let written = written_matrices(&dir, || snap::shape::matrices_in(proof, &dir))?;
            row(snap::update_proof_name(proof), written);
        }
    }
    if args.json {
        let rows: Vec<_> = done
            .iter()
            .map(|(name, outcome)| json!({"file": name, "result": outcome}))
            .collect();
        let matrices: Vec<_> = matrices_rows
            .iter()
            .map(|(proof, origin, bytes, seconds)| {
                json!({"proof": proof, "origin": origin, "heap_bytes": bytes, "seconds": seconds})
            })
            .collect();
        println!(
            "{}",
            json!({"dir": dir, "files": rows, "matrices": matrices})
        );
    } else {
        for (name, outcome) in &done {
            let what = match outcome {
                Fetched::Present => "present, digest checked".to_owned(),
                Fetched::Downloaded { bytes } => {
                    format!("downloaded {}, digest checked", ByteSize(*bytes))
                }
                Fetched::Resumed { from, bytes } => format!(
                    "resumed at {}, {} more, digest checked",
                    ByteSize(*from),
                    ByteSize(*bytes)
                ),
            };
            println!("{name}: {what}");
        }
        for (proof, origin, bytes, seconds) in &matrices_rows {
            println!(
                "{proof} R1CS matrices: {}, {} in {seconds:.1} s",
                origin_words(*origin),
                ByteSize(*bytes)
            );
        }
        println!(
            "{} files ready in {} ({})",
            done.len(),
            dir.display(),
            fetch::READY_FILE
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("proof").required(true).args(["seal_proof", "post_proof", "update_proof"])))]
pub struct MatricesArgs {
    /// The seal proof whose PoRep partition circuit to record (a registered proof's name, or a
    /// sector size such as 32GiB).
    #[arg(long, value_parser = super::porep::parse_seal_proof)]
    seal_proof: Option<filecoin_proofs_api::RegisteredSealProof>,
    /// The PoSt proof whose partition circuit to record (a registered proof's name such as
    /// StackedDrgWindow32GiBV1_2, or curio's number).
    #[arg(long, value_parser = post::parse_post_proof)]
    post_proof: Option<filecoin_proofs_api::RegisteredPoStProof>,
    /// The SnapDeals update proof whose partition circuit to record (StackedDrg32GiBV1, a sector
    /// size such as 32GiB, or curio's number).
    #[arg(long, value_parser = snap::parse_update_proof)]
    update_proof: Option<filecoin_proofs_api::RegisteredUpdateProof>,
    /// The directory of the matrices files. Default: PROOFPIPE_MATRICES_DIR, else
    /// FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters.
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

fn matrices(args: MatricesArgs) -> Result<ExitCode, ProverError> {
    let Some(dir) = args.dir.or_else(proofpipe_filecoin::matrices_dir) else {
        return Err(ProverError::InvalidArgument {
            what: "matrices directory",
            reason: format!(
                "{MATRICES_DIR_ENV}=off keeps no matrices files; pass --dir or unset it"
            ),
        });
    };
    let (name, (matrices, origin, seconds)) =
        match (args.seal_proof, args.post_proof, args.update_proof) {
            (Some(proof), _, _) => (
                proofpipe_filecoin::seal_proof_name(proof),
                written_matrices(&dir, || shape::matrices_in(proof, &dir))?,
            ),
            (None, Some(proof), _) => (
                post::post_proof_name(proof),
                written_matrices(&dir, || post::shape::matrices_in(proof, &dir))?,
            ),
            (None, None, Some(proof)) => (
                snap::update_proof_name(proof),
                written_matrices(&dir, || snap::shape::matrices_in(proof, &dir))?,
            ),
            (None, None, None) => {
                unreachable!("clap requires one of --seal-proof, --post-proof and --update-proof")
            }
        };
    if args.json {
        println!(
            "{}",
            json!({"proof": name, "seal_proof": args.seal_proof.map(|_| &name), "dir": dir, "origin": origin, "seconds": seconds,
                   "heap_bytes": matrices.heap_bytes(), "nonzeros": matrices.nonzeros(),
                   "shape": matrices.shape()})
        );
    } else {
        println!(
            "{name}: R1CS matrices {} in {seconds:.1} s ({}, {} nonzeros) in {}",
            origin_words(origin),
            ByteSize(matrices.heap_bytes()),
            matrices.nonzeros(),
            dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn origin_words(origin: MatricesOrigin) -> &'static str {
    match origin {
        MatricesOrigin::Read => "read and checked",
        MatricesOrigin::RecordedAndWritten => "recorded and written",
        MatricesOrigin::Recorded => "recorded, not written",
    }
}

/// Recorded but not written: the warning logged says why; the command did not do its job.
/// The matrices `load` reads from or writes into their file in `dir`, how, and in how many
/// seconds; refused when the file could not be written (a prover mounting `dir` would record
/// them again).
fn written_matrices(
    dir: &std::path::Path,
    load: impl FnOnce() -> Result<(R1csMatrices, MatricesOrigin), ProverError>,
) -> Result<(R1csMatrices, MatricesOrigin, f64), ProverError> {
    let started = Instant::now();
    let (matrices, origin) = load()?;
    if origin == MatricesOrigin::Recorded {
        return Err(unwritable(dir));
    }
    Ok((matrices, origin, started.elapsed().as_secs_f64()))
}

fn unwritable(dir: &std::path::Path) -> ProverError {
    ProverError::InvalidArgument {
        what: "matrices directory",
        reason: format!(
            "{}: the R1CS matrices could not be written there (see the warning above)",
            dir.display()
        ),
    }
}

pub fn run(args: ParamsArgs) -> Result<ExitCode, ProverError> {
    match args.action {
        Some(ParamsAction::Fetch(fetch_args)) => return fetch(fetch_args),
        Some(ParamsAction::Matrices(matrices_args)) => return matrices(matrices_args),
        None => {}
    }
    let store = store(args.params_dir.clone());
    if let Some(circuit) = args.circuit {
        circuit.shape(args.constraints)?;
        let path = store.path_for(circuit, args.constraints);
        let origin = if args.regenerate {
            store.regenerate(circuit, args.constraints)?;
            "generated".to_string()
        } else {
            let (_, origin) = store.get(circuit, args.constraints)?;
            format!("{origin:?}").to_lowercase()
        };
        let (params, _) = store.get(circuit, args.constraints)?;
        if args.json {
            println!(
                "{}",
                json!({"path": path, "origin": origin, "circuit": circuit, "constraints": args.constraints, "shape": params.shape, "heap_bytes": params.heap_bytes()})
            );
        } else {
            println!(
                "{} ({origin}): {circuit} at {} constraints, {} in memory",
                path.display(),
                args.constraints,
                ByteSize(params.heap_bytes())
            );
        }
        return Ok(ExitCode::SUCCESS);
    }

    let files = store.list()?;
    let mut bad = 0;
    let mut rows = Vec::new();
    for file in files {
        let (path, header, len) = (file.path, file.header, file.bytes);
        let header = match (header, args.check) {
            (Ok(h), true) => ParamsStore::check_file(&path).map(|_| h),
            (h, _) => h,
        };
        match header {
            Ok(h) => rows.push(json!({"path": path, "ok": true, "circuit": h.circuit, "constraints": h.constraints, "bytes": len})),
            Err(e) => {
                bad += 1;
                rows.push(json!({"path": path, "ok": false, "error": e.to_string(), "bytes": len}));
            }
        }
    }
    if args.json {
        println!("{}", json!({"dir": store.dir(), "files": rows}));
    } else {
        println!(
            "parameters in {} ({}):",
            store.dir().display(),
            if args.check {
                "checksums verified"
            } else {
                "headers read; --check verifies checksums"
            }
        );
        if rows.is_empty() {
            println!(
                "  none yet: `proofpipe-prover params --circuit mul-chain --constraints 4096` makes some"
            );
        }
        for r in &rows {
            let path = r["path"].as_str().unwrap_or_default();
            if r["ok"] == true {
                println!(
                    "  ok   {path}: {} at {} constraints, {}",
                    r["circuit"].as_str().unwrap_or_default(),
                    r["constraints"],
                    ByteSize(r["bytes"].as_u64().unwrap_or(0))
                );
            } else {
                println!("  BAD  {path}: {}", r["error"].as_str().unwrap_or_default());
            }
        }
    }
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
