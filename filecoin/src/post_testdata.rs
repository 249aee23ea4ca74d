//! PoSt test inputs no machine here can download: WindowPoSt and WinningPoSt parameters from a
//! random setup (filecoin's paramcache routine, as [`super::testdata`] does for PoRep; NOT
//! Filecoin's: tests only), and the vanilla proofs curio would send for sealed sectors
//! (filecoin-proofs-api's `generate_fallback_sector_challenges` and
//! `generate_single_vanilla_proof` over their replicas and caches).

use std::path::{Path, PathBuf};

use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::with_shape;
use filecoin_proofs_api::post::{
    generate_fallback_sector_challenges, generate_single_vanilla_proof,
};
use filecoin_proofs_api::{
    MerkleTreeTrait, PoStType, PrivateReplicaInfo, ProverId, RegisteredPoStProof, SectorId,
};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound};

use super::c1::{self, SectorIdentity};
use super::params::ParamFiles;
use super::post::{PostInput, post_proof_name};
use super::testdata::{cache_random_params, check_parameter_dir, seal_sector};
use super::{RegisteredSealProof, seal_proof_name};
use proofpipe_pipeline::error::ProverError;

/// Writes `.params`, `.vk` and `.meta` of `proof`'s FallbackPoSt circuit into `dir` (which must
/// be `FIL_PROOFS_PARAMETER_CACHE`), from a random setup seeded with `seed`. Files already there
/// are kept (WindowPoSt V1 and V1_2 share one set).
pub fn generate_post_params(
    proof: RegisteredPoStProof,
    dir: &Path,
    seed: u64,
) -> Result<ParamFiles, ProverError> {
    check_parameter_dir(dir)?;
    let size = u64::from(proof.sector_size());
    let started = std::time::Instant::now();
    with_shape!(size, generate_post_shape, proof, seed)?;
    tracing::info!(
        proof = %post_proof_name(proof),
        seconds = started.elapsed().as_secs_f64(),
        "PoSt parameters ready (random setup: NOT Filecoin's, for tests only)"
    );
    ParamFiles::of_post(proof, dir)
}

fn generate_post_shape<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredPoStProof,
    seed: u64,
) -> Result<(), ProverError> {
    type Compound<Tree> = FallbackPoStCompound<Tree>;
    let config = proof.as_v1_config();
    let action = || format!("generating {} parameters", post_proof_name(proof));
    let pp = match config.typ {
        PoStType::Window => window_post_public_params::<Tree>(&config),
        PoStType::Winning => winning_post_public_params::<Tree>(&config),
    }
    .map_err(ProverError::filecoin(action()))?;
    let blank = || {
        <Compound<Tree> as CompoundProof<FallbackPoSt<'_, Tree>, FallbackPoStCircuit<Tree>>>::blank_circuit(&pp)
    };
    cache_random_params::<Compound<Tree>, _, _>(&pp, blank, seed, action)
}

/// A sealed sector as PoSt reads it: its replica (`sealed`) and cache (`cache/`) in `dir`, as
/// `porep-testdata` leaves them.
#[derive(Clone, Debug)]
pub struct SealedSector {
    pub seal_proof: RegisteredSealProof,
    pub sector_number: u64,
    pub comm_r: [u8; 32],
    pub dir: PathBuf,
}

impl SealedSector {
    /// The sector sealed in `dir` whose C1 output (lotus-bench's commit-2 file, which names the
    /// sector) is `c1_path`.
    pub fn open(dir: &Path, c1_path: &Path) -> Result<Self, ProverError> {
        for path in [dir.join("sealed"), dir.join("cache")] {
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
        let c1 = c1::read(c1_path, SectorIdentity::parse(None, None, None)?)?;
        Ok(Self {
            seal_proof: c1.seal_proof(),
            sector_number: u64::from(c1.sector_id),
            comm_r: c1.output.comm_r,
            dir: dir.to_path_buf(),
        })
    }
}

/// Seals one sector of random data per number in `numbers` (seeded by `seed` and the number),
/// each into `work_dir/sector-<number>` with its C1 output beside it (`c1.json`, lotus-bench's
/// commit-2 file, so [`SealedSector::open`] reopens it).
pub fn seal_sectors(
    seal_proof: RegisteredSealProof,
    work_dir: &Path,
    prover_id: ProverId,
    numbers: &[u64],
    seed: u64,
) -> Result<Vec<SealedSector>, ProverError> {
    numbers
        .iter()
        .map(|&number| {
            let dir = work_dir.join(format!("sector-{number}"));
            let output = seal_sector(
                seal_proof,
                &dir,
                prover_id,
                number,
                seed.wrapping_mul(1_000_003).wrapping_add(number),
            )?;
            let c1_path = dir.join("c1.json");
            let bytes = c1::to_lotus_bench_json(&output, number)?;
            std::fs::write(&c1_path, bytes).map_err(ProverError::io("writing", &c1_path))?;
            Ok(SealedSector {
                seal_proof,
                sector_number: number,
                comm_r: output.comm_r,
                dir,
            })
        })
        .collect()
}

/// 32 random bytes from `seed` with the top two bits clear, as curio clears the chain's
/// randomness (`randomness[31] &= 0x3f`) so that it is a field element.
pub fn randomness_from_seed(seed: u64) -> [u8; 32] {
    let mut randomness = [0u8; 32];
    ChaCha20Rng::seed_from_u64(seed ^ 0x9057_0000).fill_bytes(&mut randomness);
    randomness[31] &= 0x3f;
    randomness
}

/// The input curio would send for a `proof` over `sectors` (sorted by number, as curio sorts
/// them): the challenges of every sector from the randomness (`generate_fallback_sector_challenges`)
/// and each sector's vanilla proof (`generate_single_vanilla_proof`), for a whole WindowPoSt or a
/// WinningPoSt (exactly one sector: the challenged one).
pub fn post_input(
    proof: RegisteredPoStProof,
    sectors: &[SealedSector],
    miner_id: u64,
    randomness: [u8; 32],
) -> Result<PostInput, ProverError> {
    let name = post_proof_name(proof);
    let refuse = |reason: String| ProverError::InvalidArgument {
        what: "PoSt test sectors",
        reason,
    };
    if sectors.is_empty() {
        return Err(refuse("there are no sectors to prove".into()));
    }
    if proof.typ() == PoStType::Winning && sectors.len() != 1 {
        return Err(refuse(format!(
            "a WinningPoSt proves one sector (the challenged one), not {}",
            sectors.len()
        )));
    }
    let mut sectors = sectors.to_vec();
    sectors.sort_by_key(|s| s.sector_number);
    if let Some(w) = sectors
        .windows(2)
        .find(|w| w[0].sector_number == w[1].sector_number)
    {
        return Err(refuse(format!(
            "sector {} is given twice",
            w[0].sector_number
        )));
    }
    if let Some(s) = sectors
        .iter()
        .find(|s| s.seal_proof.sector_size() != proof.sector_size())
    {
        return Err(refuse(format!(
            "sector {} is a {} sector, not of {name}'s size",
            s.sector_number,
            seal_proof_name(s.seal_proof)
        )));
    }
    let prover_id = c1::prover_id_of_miner(miner_id);
    let ids: Vec<SectorId> = sectors
        .iter()
        .map(|s| SectorId::from(s.sector_number))
        .collect();
    let step = |what: &str| format!("making {name} vanilla proofs: {what}");
    let challenges = generate_fallback_sector_challenges(proof, &randomness, &ids, prover_id)
        .map_err(ProverError::filecoin(step(
            "generate_fallback_sector_challenges",
        )))?;
    let vanilla_proofs = sectors
        .iter()
        .zip(&ids)
        .map(|(s, id)| {
            let replica =
                PrivateReplicaInfo::new(proof, s.comm_r, s.dir.join("cache"), s.dir.join("sealed"));
            generate_single_vanilla_proof(proof, *id, &replica, &challenges[id]).map_err(
                ProverError::filecoin(step(&format!(
                    "generate_single_vanilla_proof of sector {}",
                    s.sector_number
                ))),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PostInput {
        post_proof: proof,
        prover_id,
        miner_id: Some(miner_id),
        randomness,
        partition_index: None,
        vanilla_proofs: vanilla_proofs.into(),
    })
}
