//! Test data no machine here can download: PoRep parameters from a random setup (the routine
//! filecoin's own paramcache uses, `CacheableParameters::get_groth_params` with an rng), and a
//! sector sealed on the spot with filecoin-proofs-api (pre-commit 1 and 2, commit 1), giving a
//! real C1 output.
//!
//! Parameters from a random setup are NOT Filecoin's: anyone who knows the rng's seed can forge
//! proofs against them. They carry the production file names (filecoin-proofs names a file by
//! its circuit), so keep them in a directory of their own: a real parameter directory already
//! holding the file is left as it is (filecoin-proofs reads an existing file instead).

use std::fs::{File, OpenOptions};
use std::path::Path;

use filecoin_proofs::{DefaultPieceHasher, parameters::public_params, with_shape};
use filecoin_proofs_api::seal::{
    SealCommitPhase1Output, add_piece, seal_commit_phase1, seal_pre_commit_phase1,
    seal_pre_commit_phase2,
};
use filecoin_proofs_api::{
    MerkleTreeTrait, PaddedBytesAmount, ProverId, SectorId, UnpaddedBytesAmount,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use super::params::ParamFiles;
use super::{PARAMETER_CACHE_ENV, RegisteredSealProof, seal_proof_name};
use crate::error::ProverError;

/// Writes `.params`, `.vk` and `.meta` for `proof`'s circuit into filecoin-proofs' parameter
/// directory (`FIL_PROOFS_PARAMETER_CACHE`, which must be `dir`), from a random setup seeded
/// with `seed`. Files already there are kept (filecoin-proofs reads them instead).
pub fn generate_params(
    proof: RegisteredSealProof,
    dir: &Path,
    seed: u64,
) -> Result<ParamFiles, ProverError> {
    let configured = std::env::var_os(PARAMETER_CACHE_ENV);
    let same_dir = configured.as_ref().is_some_and(|c| {
        let c = Path::new(c);
        c == dir || c.canonicalize().ok() == dir.canonicalize().ok()
    });
    if !same_dir {
        return Err(ProverError::InvalidArgument {
            what: "parameter directory",
            reason: format!(
                "filecoin-proofs writes parameters to {PARAMETER_CACHE_ENV} ({configured:?}), \
                 not to {}; set it to that directory",
                dir.display()
            ),
        });
    }
    std::fs::create_dir_all(dir).map_err(ProverError::io("creating", dir))?;
    let size = u64::from(proof.sector_size());
    let started = std::time::Instant::now();
    with_shape!(size, generate_shape, proof, seed)?;
    tracing::info!(
        proof = %seal_proof_name(proof),
        seconds = started.elapsed().as_secs_f64(),
        "PoRep parameters ready (random setup: NOT Filecoin's, for tests only)"
    );
    ParamFiles::of(proof, dir)
}

fn generate_shape<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    seed: u64,
) -> Result<(), ProverError> {
    type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
    let config = proof.as_v1_config();
    let pp = public_params::<Tree>(&config).map_err(ProverError::filecoin(
        "setting up the PoRep public parameters",
    ))?;
    let blank = || {
        <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::blank_circuit(&pp)
    };
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let action = || format!("generating {} parameters", seal_proof_name(proof));
    <Compound<Tree> as CacheableParameters<_, _>>::get_param_metadata(blank(), &pp)
        .map_err(ProverError::filecoin(action()))?;
    <Compound<Tree> as CacheableParameters<_, _>>::get_groth_params(Some(&mut rng), blank(), &pp)
        .map_err(ProverError::filecoin(action()))?;
    <Compound<Tree> as CacheableParameters<_, _>>::get_verifying_key(Some(&mut rng), blank(), &pp)
        .map_err(ProverError::filecoin(action()))?;
    Ok(())
}

/// Seals a sector of random data (seeded) in `work_dir` and returns its C1 output: what lotus
/// or curio would hand to C2 for it.
pub fn seal_sector(
    proof: RegisteredSealProof,
    work_dir: &Path,
    prover_id: ProverId,
    sector_number: u64,
    seed: u64,
) -> Result<SealCommitPhase1Output, ProverError> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut draw32 = || {
        let mut b = [0u8; 32];
        rng.fill_bytes(&mut b);
        // Keep the top bits clear so either can be read as a field element.
        b[31] &= 0x3f;
        b
    };
    let (ticket, challenge_seed) = (draw32(), draw32());
    let sector_id = SectorId::from(sector_number);
    let padded = PaddedBytesAmount(u64::from(proof.sector_size()));
    let unpadded = UnpaddedBytesAmount::from(padded);
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    ChaCha20Rng::seed_from_u64(seed ^ 0x5eed).fill_bytes(&mut data);

    let cache = work_dir.join("cache");
    let staged = work_dir.join("staged");
    let sealed = work_dir.join("sealed");
    std::fs::create_dir_all(&cache).map_err(ProverError::io("creating", &cache))?;
    let staged_file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)
        .map_err(ProverError::io("creating", &staged))?;
    File::create(&sealed).map_err(ProverError::io("creating", &sealed))?;

    let name = seal_proof_name(proof);
    let step = |what: &str| format!("sealing a {name} test sector: {what}");
    let (piece, _) = add_piece(proof, &data[..], staged_file, unpadded, &[])
        .map_err(ProverError::filecoin(step("add_piece")))?;
    let pieces = [piece];
    let p1 = seal_pre_commit_phase1(
        proof, &cache, &staged, &sealed, prover_id, sector_id, ticket, &pieces,
    )
    .map_err(ProverError::filecoin(step("pre-commit phase 1")))?;
    let p2 = seal_pre_commit_phase2(p1, &cache, &sealed)
        .map_err(ProverError::filecoin(step("pre-commit phase 2")))?;
    seal_commit_phase1(
        &cache,
        &sealed,
        prover_id,
        sector_id,
        ticket,
        challenge_seed,
        p2,
        &pieces,
    )
    .map_err(ProverError::filecoin(step("commit phase 1")))
}
