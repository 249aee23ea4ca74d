//! Filecoin's Groth16 parameter files, as distributed: found by filecoin-proofs' own naming
//! (`v28-<circuit identifier>.params`, `.vk`, `.meta`) in one directory, read once per process,
//! optionally checked against the blake2b digest parameters.json records.
//!
//! The file is streamed into one in-memory proving key (the hash, when asked for, is computed
//! over the same read), so a 32 GiB PoRep set (~45 GB) is held once, never twice.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::Parameters;
use blstrs::Bls12;
use storage_proofs_core::parameter_cache::{
    get_parameter_data, get_verifying_key_data, metadata_id, parameter_id, verifying_key_id,
};

use filecoin_proofs::with_shape;
use filecoin_proofs_api::{MerkleTreeTrait, RegisteredPoStProof, RegisteredUpdateProof};
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicParams};

use super::RegisteredSealProof;
use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::params::{LoadOnce, ParamsKind, ProvingKey};

/// The files of one circuit's parameter set, by filecoin-proofs' naming.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamFiles {
    /// filecoin-proofs' circuit identifier, e.g.
    /// `stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-<hash>`.
    pub identifier: String,
    pub params: PathBuf,
    pub verifying_key: PathBuf,
    pub metadata: PathBuf,
    /// parameters.json's digest of the `.params` file, where it lists it.
    pub params_digest: Option<String>,
    pub verifying_key_digest: Option<String>,
}

impl ParamFiles {
    /// The parameter files of `proof`'s circuit in `dir`.
    pub fn of(proof: RegisteredSealProof, dir: &Path) -> Result<Self, ProverError> {
        let identifier = proof
            .circuit_identifier()
            .map_err(ProverError::filecoin("naming the PoRep parameters"))?;
        Ok(Self::named(identifier, dir))
    }

    /// The parameter files of `proof`'s SnapDeals circuit in `dir`
    /// (`v28-empty-sector-update-merkletree-poseidon_hasher-…`).
    ///
    /// Named from `EmptySectorUpdateCompound`'s own cache identifier, as filecoin-proofs'
    /// `get_empty_sector_update_params` finds them: `RegisteredUpdateProof::circuit_identifier`
    /// in filecoin-proofs-api 19.1 answers with the PoRep circuit's identifier instead.
    pub fn of_update(proof: RegisteredUpdateProof, dir: &Path) -> Self {
        Self::named(update_identifier(proof), dir)
    }

    /// The parameter files of `proof`'s FallbackPoSt circuit in `dir`
    /// (`v28-proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-…`; WindowPoSt V1 and
    /// V1_2 share them, as their circuits are the same).
    pub fn of_post(proof: RegisteredPoStProof, dir: &Path) -> Result<Self, ProverError> {
        let identifier = proof
            .circuit_identifier()
            .map_err(ProverError::filecoin("naming the PoSt parameters"))?;
        Ok(Self::named(identifier, dir))
    }

    fn named(identifier: String, dir: &Path) -> Self {
        Self {
            params: dir.join(parameter_id(&identifier)),
            verifying_key: dir.join(verifying_key_id(&identifier)),
            metadata: dir.join(metadata_id(&identifier)),
            params_digest: get_parameter_data(&identifier).map(|d| d.digest.clone()),
            verifying_key_digest: get_verifying_key_data(&identifier).map(|d| d.digest.clone()),
            identifier,
        }
    }

    fn expected_digest(&self) -> String {
        self.params_digest
            .clone()
            .unwrap_or_else(|| "(not listed in filecoin-proofs' parameters.json)".into())
    }
}

/// Whether the `.params` file is hashed and compared with parameters.json while it is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestCheck {
    /// Refuse a file whose blake2b digest differs from parameters.json's (production files).
    /// Costs one pass of hashing over the read (~1 GB/s per core).
    Verify,
    /// Read without hashing: files generated locally (tests) have the production names but
    /// not their digests. filecoin-proofs itself skips the check unless
    /// `FIL_PROOFS_VERIFY_PRODUCTION_PARAMS` is set.
    Skip,
}

/// Reads the proving key of `proof` from `dir`.
pub fn load(
    proof: RegisteredSealProof,
    dir: &Path,
    check: DigestCheck,
) -> Result<ProvingKey, ProverError> {
    load_files(&ParamFiles::of(proof, dir)?, dir, check)
}

/// Reads the SnapDeals proving key of `proof` from `dir`.
pub fn load_update(
    proof: RegisteredUpdateProof,
    dir: &Path,
    check: DigestCheck,
) -> Result<ProvingKey, ProverError> {
    load_files(&ParamFiles::of_update(proof, dir), dir, check)
}

/// Reads the WindowPoSt or WinningPoSt proving key of `proof` from `dir`.
pub fn load_post(
    proof: RegisteredPoStProof,
    dir: &Path,
    check: DigestCheck,
) -> Result<ProvingKey, ProverError> {
    load_files(&ParamFiles::of_post(proof, dir)?, dir, check)
}

/// filecoin-proofs' circuit identifier of `proof`'s EmptySectorUpdate circuit.
pub fn update_identifier(proof: RegisteredUpdateProof) -> String {
    let size = u64::from(proof.sector_size());
    with_shape!(size, update_identifier_shape, size)
}

fn update_identifier_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    size: u64,
) -> String {
    <EmptySectorUpdateCompound<Tree> as CacheableParameters<EmptySectorUpdateCircuit<Tree>, _>>::cache_identifier(
        &PublicParams::from_sector_size(size),
    )
}

/// Reads the proving key from `files` (in `dir`).
fn load_files(
    files: &ParamFiles,
    dir: &Path,
    check: DigestCheck,
) -> Result<ProvingKey, ProverError> {
    let file = File::open(&files.params).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            ProverError::MissingFilecoinParams {
                path: files.params.clone(),
                dir: dir.to_path_buf(),
                digest: files.expected_digest(),
            }
        } else {
            ProverError::io("opening Filecoin parameters", &files.params)(e)
        }
    })?;
    // verify_seal reads the verifying key from the same directory: refuse now, not after
    // proving every partition.
    if !files.verifying_key.exists() {
        return Err(ProverError::MissingFilecoinParams {
            path: files.verifying_key.clone(),
            dir: dir.to_path_buf(),
            digest: files
                .verifying_key_digest
                .clone()
                .unwrap_or_else(|| "(the verifying key is not listed in parameters.json)".into()),
        });
    }
    let mismatch = |reason: String| ProverError::FilecoinParamsMismatch {
        path: files.params.clone(),
        reason,
        digest: files.expected_digest(),
    };
    let started = Instant::now();
    let mut reader = HashingReader {
        inner: BufReader::with_capacity(1 << 22, file),
        hasher: (check == DigestCheck::Verify).then(|| blake2b_simd::Params::new().to_state()),
    };
    // Unchecked point decoding, as filecoin-proofs reads them: the digest (or the proof's
    // verification) is what vouches for the file.
    let params = Parameters::<Bls12>::read(&mut reader, false)
        .map_err(|e| mismatch(format!("it cannot be read as Groth16 parameters: {e}")))?;
    if let Some(hasher) = reader.hasher.take() {
        // The rest of the file, if any, counts toward the digest too.
        let mut rest = Vec::new();
        reader
            .inner
            .read_to_end(&mut rest)
            .map_err(ProverError::io(
                "reading Filecoin parameters",
                &files.params,
            ))?;
        let mut hasher = hasher;
        hasher.update(&rest);
        let digest = hasher.finalize().to_hex();
        let digest = &digest[..32];
        match &files.params_digest {
            Some(expected) if expected == digest => {}
            Some(_) => return Err(mismatch(format!("its blake2b digest is {digest}"))),
            None => {
                return Err(mismatch(format!(
                    "{} is not a production parameter set, so there is no digest to check it \
                     against; read it without --verify-params-digest",
                    files.identifier
                )));
            }
        }
    }
    let shape = CircuitShape {
        // The FFT domain: bellperson's H query has one point fewer than the domain.
        constraints: params.h.len() + 1,
        aux: params.l.len(),
        inputs: params.vk.ic.len(),
    };
    tracing::info!(
        path = %files.params.display(),
        seconds = started.elapsed().as_secs_f64(),
        ?shape,
        digest_checked = check == DigestCheck::Verify,
        "Filecoin parameters loaded"
    );
    Ok(ProvingKey::new(shape, params, ParamsKind::Setup))
}

/// A reader that feeds what it reads into a hash, when there is one.
struct HashingReader<R> {
    inner: R,
    hasher: Option<blake2b_simd::State>,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..n]);
        }
        Ok(n)
    }
}

/// Proving keys loaded once per process and shared by every job that needs them.
pub struct FilecoinParamsCache {
    dir: PathBuf,
    check: DigestCheck,
    /// By circuit identifier.
    loaded: LoadOnce<String, Arc<ProvingKey>>,
}

impl FilecoinParamsCache {
    pub fn new(dir: impl Into<PathBuf>, check: DigestCheck) -> Self {
        Self {
            dir: dir.into(),
            check,
            loaded: LoadOnce::new(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The proving key of `proof`, read on first use; concurrent callers wait for one read.
    pub fn get(&self, proof: RegisteredSealProof) -> Result<Arc<ProvingKey>, ProverError> {
        let files = ParamFiles::of(proof, &self.dir)?;
        let (key, _) = self.loaded.get_or_load(files.identifier.clone(), || {
            load_files(&files, &self.dir, self.check).map(Arc::new)
        })?;
        Ok(key)
    }

    /// The SnapDeals proving key of `proof`, read on first use.
    pub fn get_update(&self, proof: RegisteredUpdateProof) -> Result<Arc<ProvingKey>, ProverError> {
        let files = ParamFiles::of_update(proof, &self.dir);
        let (key, _) = self.loaded.get_or_load(files.identifier.clone(), || {
            load_files(&files, &self.dir, self.check).map(Arc::new)
        })?;
        Ok(key)
    }
}

impl FilecoinParamsCache {
    /// The WindowPoSt or WinningPoSt proving key of `proof`, read on first use.
    pub fn get_post(&self, proof: RegisteredPoStProof) -> Result<Arc<ProvingKey>, ProverError> {
        let files = ParamFiles::of_post(proof, &self.dir)?;
        let (key, _) = self.loaded.get_or_load(files.identifier.clone(), || {
            load_files(&files, &self.dir, self.check).map(Arc::new)
        })?;
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn post_parameters_have_the_names_and_digests_of_parameters_json() {
        use RegisteredPoStProof::*;
        for proof in [
            StackedDrgWinning2KiBV1,
            StackedDrgWinning8MiBV1,
            StackedDrgWinning512MiBV1,
            StackedDrgWinning32GiBV1,
            StackedDrgWinning64GiBV1,
            StackedDrgWindow2KiBV1,
            StackedDrgWindow8MiBV1,
            StackedDrgWindow512MiBV1,
            StackedDrgWindow32GiBV1,
            StackedDrgWindow64GiBV1,
            StackedDrgWindow2KiBV1_2,
            StackedDrgWindow8MiBV1_2,
            StackedDrgWindow512MiBV1_2,
            StackedDrgWindow32GiBV1_2,
            StackedDrgWindow64GiBV1_2,
        ] {
            let files = ParamFiles::of_post(proof, Path::new("/p")).unwrap();
            assert!(
                files
                    .identifier
                    .starts_with("proof-of-spacetime-fallback-merkletree-poseidon_hasher-8-"),
                "{files:?}"
            );
            assert!(files.params_digest.is_some(), "{proof:?}: {files:?}");
            assert!(files.verifying_key_digest.is_some(), "{proof:?}");
        }
        // V1 and V1_2 WindowPoSt prove the same circuit: one parameter set.
        assert_eq!(
            ParamFiles::of_post(StackedDrgWindow32GiBV1, Path::new("/p")).unwrap(),
            ParamFiles::of_post(StackedDrgWindow32GiBV1_2, Path::new("/p")).unwrap()
        );
        assert_ne!(
            ParamFiles::of_post(StackedDrgWinning32GiBV1, Path::new("/p")).unwrap(),
            ParamFiles::of_post(StackedDrgWindow32GiBV1_2, Path::new("/p")).unwrap()
        );
    }

    #[test]
    fn update_parameters_have_the_names_and_digests_of_parameters_json() {
        use RegisteredUpdateProof::*;
        for proof in [
            StackedDrg2KiBV1,
            StackedDrg8MiBV1,
            StackedDrg512MiBV1,
            StackedDrg32GiBV1,
            StackedDrg64GiBV1,
        ] {
            let files = ParamFiles::of_update(proof, Path::new("/p"));
            assert!(
                files
                    .identifier
                    .starts_with("empty-sector-update-merkletree-poseidon_hasher-8-"),
                "{files:?}"
            );
            assert!(files.params_digest.is_some(), "{proof:?}: {files:?}");
            assert!(files.verifying_key_digest.is_some(), "{proof:?}");
        }
        assert_eq!(
            ParamFiles::of_update(StackedDrg32GiBV1, Path::new("/p")).params,
            Path::new(
                "/p/v28-empty-sector-update-merkletree-poseidon_hasher-8-8-0-3b7f44a9362e3985369454947bc94022e118211e49fd672d52bec1cbfd599d18.params"
            )
        );
    }
}
