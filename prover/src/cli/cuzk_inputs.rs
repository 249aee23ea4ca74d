//! `cuzk-inputs`: what cuzk, curio's GPU proving engine (filecoin-project/curio, extern/cuzk),
//! reads to prove a PoRep C2, made from `bench --porep-shape`'s own inputs, so both provers can
//! be timed on the same circuit and points:
//!
//! - the timing-only parameters of the seal proof's exact query counts (the very points of the
//!   bench's key), written as Filecoin's parameter files: the `.params` file in bellperson's
//!   layout (`Parameters::write`, which filecoin-proofs' mapped reader and supraseal's SRS
//!   loader read) and the `.vk`, under filecoin-proofs' names for the circuit;
//! - the placeholder job as a C1 output, in curio's (and lotus-bench's) commit-2 JSON.
//!
//! Timing only: the parameters come from no trusted setup and the vanilla proofs prove
//! nothing, so no proof made from them verifies. Never write them into a real parameter
//! directory: they carry the production names (an existing file is refused, never replaced).

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use bellperson::groth16::VerifyingKey;
use blstrs::Bls12;
use clap::Args;
use group::UncompressedEncoding;
use proofpipe_filecoin::params::ParamFiles;
use proofpipe_filecoin::shape::{self, Placeholder};
use proofpipe_filecoin::{RegisteredSealProof, c1, seal_proof_name};
use proofpipe_pipeline::ProverError;
use proofpipe_pipeline::params::{ProvingKey, QueryCounts};
use rayon::prelude::*;
use serde_json::json;

use super::porep::parse_seal_proof;

#[derive(Args, Debug)]
pub struct CuzkInputsArgs {
    /// The seal proof: a sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB: their V1_1 proof) or a
    /// registered proof's name. cuzk proves 32 GiB PoRep only.
    #[arg(long, value_parser = parse_seal_proof)]
    porep_shape: RegisteredSealProof,
    /// Write the timing-only `.params` and `.vk` into this directory, under filecoin-proofs'
    /// names for the seal proof's circuit (cuzk's `[srs] param_cache`). A 32 GiB set is ~47 GB.
    #[arg(long, value_name = "DIR")]
    params_dir: Option<PathBuf>,
    /// Write the placeholder job's C1 output to this file, as curio's commit-2 JSON
    /// (`{"SectorNum", "Phase1Out", "SectorSize"}`: what `cuzk-bench --c1` reads).
    #[arg(long, value_name = "FILE")]
    c1: Option<PathBuf>,
    /// The sector number the commit-2 file names.
    #[arg(long, default_value_t = 1)]
    sector_number: u64,
    /// Print one JSON line of what was written instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: CuzkInputsArgs) -> Result<ExitCode, ProverError> {
    if args.params_dir.is_none() && args.c1.is_none() {
        return Err(ProverError::InvalidArgument {
            what: "cuzk-inputs",
            reason: "nothing to write: give --params-dir, --c1 or both".into(),
        });
    }
    let proof = args.porep_shape;
    let mut summary = json!({ "seal_proof": seal_proof_name(proof) });
    if let Some(path) = &args.c1 {
        let started = Instant::now();
        let bytes = c1_file(proof, args.sector_number)?;
        write_whole(path, &bytes, "writing the C1 output to")?;
        summary["c1"] = json!({
            "path": path,
            "bytes": bytes.len(),
            "sector_number": args.sector_number,
            "seconds": started.elapsed().as_secs_f64(),
        });
        if !args.json {
            println!(
                "C1 output of placeholder {} partitions (sector {}): {} ({} bytes, {:.1} s)",
                seal_proof_name(proof),
                args.sector_number,
                path.display(),
                bytes.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    if let Some(dir) = &args.params_dir {
        let started = Instant::now();
        let (files, counts) = write_params(proof, dir)?;
        let bytes = std::fs::metadata(&files.params).map_or(0, |m| m.len());
        summary["params"] = json!({
            "path": files.params,
            "verifying_key": files.verifying_key,
            "bytes": bytes,
            "query_counts": counts,
            "seconds": started.elapsed().as_secs_f64(),
        });
        if !args.json {
            println!(
                "TIMING-ONLY parameters of {} ({counts:?}): {} ({bytes} bytes) and {} ({:.1} s); \
                 no proof made with them verifies",
                seal_proof_name(proof),
                files.params.display(),
                files.verifying_key.display(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&summary).expect("summary serializes")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The placeholder job of `proof` as curio's commit-2 JSON.
fn c1_file(proof: RegisteredSealProof, sector_number: u64) -> Result<Vec<u8>, ProverError> {
    let output = shape::placeholder_c1_output(Placeholder::of(proof))?;
    c1::to_lotus_bench_json(&output, sector_number)
}

/// Writes the timing-only `.params` and `.vk` of `proof`'s partition into `dir`. The
/// parameters are those `bench --porep-shape` makes (`ProvingKey::timing_only` of the
/// committed counts), made and written one query at a time: a 32 GiB partition's whole key is
/// ~45 GiB in memory, its largest query ~13 GiB. The bytes are `Parameters::write`'s.
fn write_params(
    proof: RegisteredSealProof,
    dir: &Path,
) -> Result<(ParamFiles, QueryCounts), ProverError> {
    let files = ParamFiles::of(proof, dir)?;
    for path in [&files.params, &files.verifying_key] {
        if path.exists() {
            return Err(ProverError::InvalidArgument {
                what: "--params-dir",
                reason: format!(
                    "{} exists: timing-only parameters never replace a parameter file (they \
                     carry the production name); remove it or give another directory",
                    path.display()
                ),
            });
        }
    }
    std::fs::create_dir_all(dir).map_err(ProverError::io("creating", dir))?;
    let counted = shape::counted(proof)?;
    let counts = counted.query_counts();
    let name = seal_proof_name(proof);
    let query = |what: &str, counts: QueryCounts| {
        ProvingKey::timing_only(
            &format!("{name} partition, {what}"),
            counted.shape(),
            counts,
        )
        .params
    };
    let none = QueryCounts {
        inputs: 0,
        h: 0,
        l: 0,
        a: 0,
        b: 0,
    };
    let partial = files.params.with_extension("params.partial");
    let fail = ProverError::io("writing timing-only parameters to", &partial);
    let write = || -> io::Result<VerifyingKey<Bls12>> {
        let mut out = BufWriter::with_capacity(1 << 24, File::create(&partial)?);
        // The verifying key (its IC has the inputs' points) and H.
        let p = query(
            "verifying key and H",
            QueryCounts {
                inputs: counts.inputs,
                h: counts.h,
                ..none
            },
        );
        p.vk.write(&mut out)?;
        write_points(&mut out, &p.h)?;
        let vk = p.vk.clone();
        drop(p);
        let p = query(
            "L",
            QueryCounts {
                l: counts.l,
                ..none
            },
        );
        write_points(&mut out, &p.l)?;
        drop(p);
        let p = query(
            "A",
            QueryCounts {
                a: counts.a,
                ..none
            },
        );
        write_points(&mut out, &p.a)?;
        drop(p);
        let p = query(
            "B",
            QueryCounts {
                b: counts.b,
                ..none
            },
        );
        write_points(&mut out, &p.b_g1)?;
        write_points(&mut out, &p.b_g2)?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok(vk)
    };
    let vk = match write() {
        Ok(vk) => vk,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(fail(e));
        }
    };
    let mut vk_bytes = Vec::new();
    vk.write(&mut vk_bytes)
        .expect("writing into a Vec does not fail");
    write_whole(
        &files.verifying_key,
        &vk_bytes,
        "writing the timing-only verifying key to",
    )?;
    std::fs::rename(&partial, &files.params).map_err(ProverError::io(
        "writing timing-only parameters to",
        &files.params,
    ))?;
    Ok((files, counts))
}

/// One query as bellperson writes it: the count (u32, big-endian), then each point
/// uncompressed, encoded in parallel a batch at a time.
fn write_points<P: UncompressedEncoding + Sync>(
    out: &mut impl Write,
    points: &[P],
) -> io::Result<()> {
    let count = u32::try_from(points.len()).map_err(|_| {
        io::Error::other(format!("{} points: more than a u32 counts", points.len()))
    })?;
    out.write_all(&count.to_be_bytes())?;
    let size = P::Uncompressed::default().as_ref().len();
    let mut buf = Vec::new();
    for batch in points.chunks(1 << 20) {
        buf.resize(batch.len() * size, 0);
        buf.par_chunks_mut(size)
            .zip(batch.par_iter())
            .for_each(|(dst, p)| dst.copy_from_slice(p.to_uncompressed().as_ref()));
        out.write_all(&buf)?;
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file beside it.
fn write_whole(path: &Path, bytes: &[u8], action: &'static str) -> Result<(), ProverError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(ProverError::io(action, path))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(ProverError::io(action, path))?;
    tmp.write_all(bytes)
        .map_err(ProverError::io(action, path))?;
    tmp.persist(path)
        .map_err(|e| ProverError::io(action, path)(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use bellperson::groth16::Parameters;
    use filecoin_proofs_api::RegisteredSealProof::{StackedDrg2KiBV1_1, StackedDrg32GiBV1_1};
    use filecoin_proofs_api::seal::SealCommitPhase1Output;
    use proofpipe_filecoin::params::{self, DigestCheck};

    /// The key `write_params` writes, whole in memory.
    fn whole_key(proof: RegisteredSealProof) -> Parameters<Bls12> {
        let counted = shape::counted(proof).unwrap();
        ProvingKey::timing_only("test", counted.shape(), counted.query_counts()).params
    }

    /// The file is byte for byte what bellperson's `Parameters::write` makes of the bench's
    /// key, and reads back (bellperson's reader, its mapped reader, the loader of Filecoin's
    /// files) to that key, under filecoin-proofs' name, with its `.vk` beside it.
    #[test]
    fn params_file_is_the_bench_key_in_bellpersons_layout() {
        let dir = tempfile::tempdir().unwrap();
        let (files, counts) = write_params(StackedDrg2KiBV1_1, dir.path()).unwrap();
        let key = whole_key(StackedDrg2KiBV1_1);
        assert_eq!(counts, QueryCounts::of(&key));
        let mut expected = Vec::new();
        key.write(&mut expected).unwrap();
        let written = std::fs::read(&files.params).unwrap();
        assert_eq!(written.len(), expected.len());
        assert!(
            written == expected,
            "the .params bytes differ from Parameters::write's"
        );
        drop((written, expected));

        let read = Parameters::<Bls12>::read(File::open(&files.params).unwrap(), false).unwrap();
        assert_eq!(QueryCounts::of(&read), counts);
        assert!(read.vk == key.vk);
        let mapped =
            Parameters::<Bls12>::build_mapped_parameters(files.params.clone(), false).unwrap();
        assert!(mapped.vk == key.vk);
        assert_eq!(mapped.h.len(), counts.h);
        let vk = VerifyingKey::<Bls12>::read(File::open(&files.verifying_key).unwrap()).unwrap();
        assert!(vk == key.vk);
        let loaded = params::load(StackedDrg2KiBV1_1, dir.path(), DigestCheck::Skip).unwrap();
        assert_eq!(QueryCounts::of(&loaded.params), counts);
        assert!(loaded.params.vk == key.vk);

        // Never over a parameter file.
        let again = write_params(StackedDrg2KiBV1_1, dir.path()).unwrap_err();
        assert!(again.to_string().contains("exists"), "{again}");
    }

    /// The C1 file is curio's commit-2 JSON as cuzk parses it: an outer object whose
    /// Phase1Out is base64 of the SealCommitPhase1Output's JSON.
    #[test]
    fn c1_file_is_curios_commit2_json() {
        let bytes = c1_file(StackedDrg2KiBV1_1, 3).unwrap();
        let outer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(outer["SectorNum"], 3);
        assert_eq!(outer["SectorSize"], 2048);
        let inner = base64::engine::general_purpose::STANDARD
            .decode(outer["Phase1Out"].as_str().unwrap())
            .unwrap();
        let output: SealCommitPhase1Output = serde_json::from_slice(&inner).unwrap();
        assert_eq!(output.registered_proof, StackedDrg2KiBV1_1);
        assert_ne!(output.comm_r, [0; 32]);
        assert_ne!(output.comm_d, [0; 32]);
        assert_ne!(output.seed, [0; 32]);
    }

    /// cuzk looks the 32 GiB PoRep set up by its production name: the one written here.
    #[test]
    fn the_32gib_names_are_the_production_ones() {
        let files = ParamFiles::of(StackedDrg32GiBV1_1, Path::new("/p")).unwrap();
        let stem = "/p/v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-8-0-\
                    sha256_hasher-82a357d2f2ca81dc61bb45f4a762807aedee1b0a53fd6c4e77b46a01bfef7820";
        assert_eq!(files.params, Path::new(&format!("{stem}.params")));
        assert_eq!(files.verifying_key, Path::new(&format!("{stem}.vk")));
    }
}
