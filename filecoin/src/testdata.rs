//! Test data no machine here can download: PoRep and SnapDeals parameters from a random setup
//! (bellperson's `generate_random_parameters`, which filecoin's own paramcache calls through
//! `CacheableParameters::get_groth_params`, computed bit for bit by the faster
//! [`proofpipe_pipeline::params::random_setup`]), a sector sealed on the spot with filecoin-proofs-api (pre-commit 1 and 2, commit 1),
//! giving a real C1 output, and a snap update of a sealed sector (`empty_sector_update_encode_into`
//! then `generate_partition_proofs`), giving the vanilla proofs curio sends for a SnapDeals proof.
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
use storage_proofs_core::parameter_cache::{
    CacheableParameters, ParameterSetMetadata, parameter_cache_params_path,
};
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use filecoin_proofs_api::update::{empty_sector_update_encode_into, generate_partition_proofs};
use filecoin_proofs_api::{PieceInfo, RegisteredUpdateProof};
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PublicParams,
};

use super::params::ParamFiles;
use super::snap::{SnapInput, update_proof_name};
use super::{PARAMETER_CACHE_ENV, RegisteredSealProof, seal_proof_name};
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::params::random_setup;

/// Writes `.params`, `.vk` and `.meta` for `proof`'s circuit into filecoin-proofs' parameter
/// directory (`FIL_PROOFS_PARAMETER_CACHE`, which must be `dir`), from a random setup seeded
/// with `seed`. Files already there are kept (filecoin-proofs reads them instead).
pub fn generate_params(
    proof: RegisteredSealProof,
    dir: &Path,
    seed: u64,
) -> Result<ParamFiles, ProverError> {
    check_parameter_dir(dir)?;
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

/// filecoin-proofs writes parameters only to its own directory: it must be `dir`.
pub(super) fn check_parameter_dir(dir: &Path) -> Result<(), ProverError> {
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
    std::fs::create_dir_all(dir).map_err(ProverError::io("creating", dir))
}

/// Writes `.params`, `.vk` and `.meta` of `proof`'s EmptySectorUpdate circuit into `dir` (which
/// must be `FIL_PROOFS_PARAMETER_CACHE`), from a random setup seeded with `seed`, as
/// [`generate_params`] does for PoRep. Files already there are kept.
pub fn generate_update_params(
    proof: RegisteredUpdateProof,
    dir: &Path,
    seed: u64,
) -> Result<ParamFiles, ProverError> {
    check_parameter_dir(dir)?;
    let size = u64::from(proof.sector_size());
    let started = std::time::Instant::now();
    with_shape!(size, generate_update_shape, proof, seed)?;
    tracing::info!(
        proof = %update_proof_name(proof),
        seconds = started.elapsed().as_secs_f64(),
        "SnapDeals parameters ready (random setup: NOT Filecoin's, for tests only)"
    );
    Ok(ParamFiles::of_update(proof, dir))
}

fn generate_update_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredUpdateProof,
    seed: u64,
) -> Result<(), ProverError> {
    type Compound<Tree> = EmptySectorUpdateCompound<Tree>;
    let pp = PublicParams::from_sector_size(u64::from(proof.sector_size()));
    let blank = || {
        <Compound<Tree> as CompoundProof<EmptySectorUpdate<Tree>, EmptySectorUpdateCircuit<Tree>>>::blank_circuit(&pp)
    };
    let action = || format!("generating {} parameters", update_proof_name(proof));
    cache_random_params::<Compound<Tree>, _, _>(&pp, blank, seed, action)
}

/// The V1_1 seal proof of the same sector size as `proof` (what the sector was sealed with).
pub fn seal_proof_of_update(proof: RegisteredUpdateProof) -> RegisteredSealProof {
    use RegisteredUpdateProof::*;
    match proof {
        StackedDrg2KiBV1 => RegisteredSealProof::StackedDrg2KiBV1_1,
        StackedDrg8MiBV1 => RegisteredSealProof::StackedDrg8MiBV1_1,
        StackedDrg512MiBV1 => RegisteredSealProof::StackedDrg512MiBV1_1,
        StackedDrg32GiBV1 => RegisteredSealProof::StackedDrg32GiBV1_1,
        StackedDrg64GiBV1 => RegisteredSealProof::StackedDrg64GiBV1_1,
    }
}

/// Snap-updates a sealed sector (its `sealed` replica and `cache` directory in `sector_dir`, as
/// [`seal_sector`] leaves them; `comm_r_old` its sealed commitment) with random data (seeded)
/// into `work_dir`, and returns what curio would send for its SnapDeals proof: the three
/// commitments and the bincode vanilla partition proofs of `generate_partition_proofs`.
pub fn snap_update(
    proof: RegisteredUpdateProof,
    sector_dir: &Path,
    comm_r_old: [u8; 32],
    work_dir: &Path,
    seed: u64,
) -> Result<SnapInput, ProverError> {
    let name = update_proof_name(proof);
    let step = |what: &str| format!("snap-updating a {name} test sector: {what}");
    let sector_key = sector_dir.join("sealed");
    let sector_key_cache = sector_dir.join("cache");
    for path in [&sector_key, &sector_key_cache] {
        if !path.exists() {
            return Err(ProverError::InvalidArgument {
                what: "sealed sector",
                reason: format!(
                    "{} is missing: give the directory porep-testdata sealed into (--work-dir)",
                    path.display()
                ),
            });
        }
    }
    let padded = PaddedBytesAmount(u64::from(proof.sector_size()));
    let unpadded = UnpaddedBytesAmount::from(padded);
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    ChaCha20Rng::seed_from_u64(seed ^ 0x005a_4a9d).fill_bytes(&mut data);

    let cache = work_dir.join("update-cache");
    let staged = work_dir.join("update-staged");
    let replica = work_dir.join("update");
    std::fs::create_dir_all(&cache).map_err(ProverError::io("creating", &cache))?;
    let staged_file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)
        .map_err(ProverError::io("creating", &staged))?;
    // encode_into maps the new replica for writing: it must exist at the sector's size.
    File::create(&replica)
        .and_then(|f| f.set_len(u64::from(padded)))
        .map_err(ProverError::io("creating", &replica))?;
    let (piece, _): (PieceInfo, _) = add_piece(
        seal_proof_of_update(proof),
        &data[..],
        staged_file,
        unpadded,
        &[],
    )
    .map_err(ProverError::filecoin(step("add_piece")))?;
    let encoded = empty_sector_update_encode_into(
        proof,
        &replica,
        &cache,
        &sector_key,
        &sector_key_cache,
        &staged,
        &[piece],
    )
    .map_err(ProverError::filecoin(step(
        "empty_sector_update_encode_into",
    )))?;
    let vanilla = generate_partition_proofs(
        proof,
        comm_r_old,
        encoded.comm_r_new,
        encoded.comm_d_new,
        &sector_key,
        &sector_key_cache,
        &replica,
        &cache,
    )
    .map_err(ProverError::filecoin(step("generate_partition_proofs")))?;
    Ok(SnapInput {
        update_proof: proof,
        comm_r_old,
        comm_r_new: encoded.comm_r_new,
        comm_d_new: encoded.comm_d_new,
        vanilla_proofs: vanilla.into_iter().map(|p| p.0).collect(),
    })
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
    let action = || format!("generating {} parameters", seal_proof_name(proof));
    cache_random_params::<Compound<Tree>, _, _>(&pp, blank, seed, action)
}

/// Writes the `.params` file of `CP`'s circuit for `pp` from a random setup seeded with `seed`
/// (unless it is there), then the `.meta` and `.vk` beside it through filecoin-proofs' own
/// cache code, which reads that file back. The file is what `get_groth_params` with the same
/// rng would write; `random_setup` makes it several times faster.
pub(super) fn cache_random_params<CP, C, P>(
    pp: &P,
    blank: impl Fn() -> C,
    seed: u64,
    action: impl Fn() -> String,
) -> Result<(), ProverError>
where
    CP: CacheableParameters<C, P>,
    C: bellperson::Circuit<blstrs::Scalar>,
    P: ParameterSetMetadata,
{
    CP::get_param_metadata(blank(), pp).map_err(ProverError::filecoin(action()))?;
    let path = parameter_cache_params_path(&CP::cache_identifier(pp));
    if !path.exists() {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let params = random_setup::random_parameters(blank(), &mut rng)
            .map_err(|e| ProverError::filecoin(action())(e.into()))?;
        // Written aside and renamed: a run cut short never leaves a partial file under the name
        // filecoin-proofs reads.
        let partial = path.with_extension("params.partial");
        let write = || -> std::io::Result<()> {
            let mut out = std::io::BufWriter::new(File::create(&partial)?);
            params.write(&mut out)?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            std::fs::rename(&partial, &path)
        };
        write().map_err(ProverError::io("writing random-setup parameters to", &path))?;
    }
    let no_rng: Option<&mut ChaCha20Rng> = None;
    CP::get_groth_params(no_rng, blank(), pp).map_err(ProverError::filecoin(action()))?;
    let no_rng: Option<&mut ChaCha20Rng> = None;
    CP::get_verifying_key(no_rng, blank(), pp).map_err(ProverError::filecoin(action()))?;
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
