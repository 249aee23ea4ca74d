//! Filecoin proofs through the pipeline: a PoRep C2 from the C1 output lotus and curio produce.
//!
//! - [`kind`]: every kind behind one trait ([`kind::FilecoinInput`]): its input read and
//!   checked, its partitions' source, its parameter set, Filecoin's verdict and stock prover;
//!   [`partition_proofs`]: the proof bytes, laid out as Filecoin's prover lays them out;
//! - [`c1`]: the C1 output as a user has it (lotus-bench's commit-2 file, or the raw
//!   `SealCommitPhase1Output` JSON), parsed and checked;
//! - [`fetch`]: `params fetch`, the parameter files a pool needs, downloaded, resumed and
//!   checked against parameters.json's digests;
//! - [`params`]: Filecoin's Groth16 parameter files (`v28-stacked-proof-of-replication-…`), found
//!   by filecoin-proofs' own naming, read once, checked against parameters.json's digests;
//! - [`porep`]: partition k's `StackedCircuit`, built by filecoin-proofs exactly as
//!   `seal_commit_phase2` builds it, synthesized by our workers and proved by our GPU stage;
//!   the proofs written in `seal_commit_phase2`'s format and checked with `verify_seal`;
//! - [`shape`]: placeholder partitions of any sector size's exact circuit, and their committed
//!   R1CS counts, for timing-only benchmarks of the 32 GiB partition (no sector, no
//!   parameters);
//! - [`snap`]: SnapDeals (EmptySectorUpdate): partition k's `EmptySectorUpdateCircuit` from
//!   curio's vanilla partition proofs, the same way, checked with
//!   `verify_empty_sector_update_proof`;
//! - [`post`]: WindowPoSt and WinningPoSt: partition k's `FallbackPoStCircuit` from curio's
//!   vanilla sector proofs, the same way, checked with `verify_window_post` /
//!   `verify_winning_post`; [`post_testdata`] makes their test inputs from sealed sectors;
//! - [`testdata`]: parameters from a random setup and a sector sealed on the spot, for tests
//!   and trying it out (no machine here can download the real parameters);
//! - [`witness`]: each kind's witness computed natively, value for value as its gadgets
//!   allocate it (the two-pass synthesis writes them);
//! - [`artifacts`]: inputs, outputs and parameter files by URL (S3, HTTP(S), local files).

pub mod artifacts;
pub mod c1;
pub mod counted;
pub mod fetch;
pub mod input_file;
pub mod kind;
pub mod matrices;
pub mod param_set;
pub mod params;
pub mod partition_proofs;
pub mod porep;
pub mod post;
pub mod post_testdata;
pub mod shape;
pub mod snap;
pub mod testdata;
pub mod witness;

#[cfg(test)]
mod measured_plans;

pub use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use proofpipe_pipeline::error::ProverError;

/// The seal proofs by sector size, as `--seal-proof` accepts them: a registered proof's own name
/// (`StackedDrg32GiBV1_1`) or a sector size (`32GiB`, meaning its V1_1 proof, what lotus and curio
/// seal with today).
pub fn parse_seal_proof(s: &str) -> Result<RegisteredSealProof, ProverError> {
    use RegisteredSealProof::*;
    let by_size = match s.to_ascii_lowercase().as_str() {
        "2kib" => Some(StackedDrg2KiBV1_1),
        "8mib" => Some(StackedDrg8MiBV1_1),
        "512mib" => Some(StackedDrg512MiBV1_1),
        "32gib" => Some(StackedDrg32GiBV1_1),
        "64gib" => Some(StackedDrg64GiBV1_1),
        _ => None,
    };
    if let Some(proof) = by_size {
        return Ok(proof);
    }
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
        ProverError::InvalidArgument {
            what: "seal proof",
            reason: format!(
                "{s:?} is neither a sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB) nor a registered \
                 seal proof name such as StackedDrg32GiBV1_1 or StackedDrg32GiBV1_1_Feat_SyntheticPoRep"
            ),
        }
    })
}

/// A registered proof's name as filecoin-proofs-api spells it.
pub fn seal_proof_name(proof: RegisteredSealProof) -> String {
    serde_json::to_value(proof)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{proof:?}"))
}

/// Where Filecoin's parameter files live unless told otherwise (filecoin-proofs' default).
pub const DEFAULT_PARAMETER_CACHE: &str = "/var/tmp/filecoin-proof-parameters";

/// The environment variable filecoin-proofs reads its parameter directory from.
pub const PARAMETER_CACHE_ENV: &str = "FIL_PROOFS_PARAMETER_CACHE";

/// Where recorded R1CS matrices are kept, when not beside the parameters; `off` keeps none.
pub const MATRICES_DIR_ENV: &str = "PROOFPIPE_MATRICES_DIR";

/// The directory of the R1CS matrices files (ADR 0031): `PROOFPIPE_MATRICES_DIR`, else
/// Filecoin's parameter directory; `None` when `PROOFPIPE_MATRICES_DIR=off`.
pub fn matrices_dir() -> Option<std::path::PathBuf> {
    match std::env::var_os(MATRICES_DIR_ENV) {
        Some(dir) if dir == "off" => None,
        Some(dir) if !dir.is_empty() => Some(dir.into()),
        _ => Some(
            std::env::var_os(PARAMETER_CACHE_ENV)
                .map_or_else(|| DEFAULT_PARAMETER_CACHE.into(), Into::into),
        ),
    }
}

/// Points filecoin-proofs at `dir` for the verifying keys `verify_seal` reads.
///
/// filecoin-proofs reads its settings from the environment once, on first use, so this must run
/// before any other call into it, while the process is still single-threaded (the CLI's `main`).
///
/// # Safety
/// No other thread may be reading or writing the environment.
pub unsafe fn use_parameter_dir(dir: &std::path::Path) {
    // SAFETY: the caller guarantees the process is single-threaded here.
    unsafe { std::env::set_var(PARAMETER_CACHE_ENV, dir) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_table_of_seal_proofs_matches_filecoin_proofs() {
        for &(name, partitions) in proofpipe_model::kinds::SEAL_PROOFS {
            let proof = parse_seal_proof(name).unwrap();
            assert_eq!(seal_proof_name(proof), name);
            assert_eq!(i32::from(proof.partitions()), partitions, "{name}");
        }
    }

    #[test]
    fn seal_proofs_parse_by_size_and_by_name() {
        assert_eq!(
            parse_seal_proof("32GiB").unwrap(),
            RegisteredSealProof::StackedDrg32GiBV1_1
        );
        assert_eq!(
            parse_seal_proof("StackedDrg2KiBV1_1_Feat_SyntheticPoRep").unwrap(),
            RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep
        );
        let err = parse_seal_proof("16GiB").unwrap_err().to_string();
        assert!(err.contains("16GiB") && err.contains("32GiB"), "{err}");
        assert_eq!(
            seal_proof_name(RegisteredSealProof::StackedDrg8MiBV1_1),
            "StackedDrg8MiBV1_1"
        );
    }
}
