//! Filecoin's verdict on a PoSt proof, whole or one V1 partition alone.

use super::*;
use crate::partition_proofs::PARTITION_PROOF_BYTES;

/// Filecoin's own verdict on `proof` for this input's sectors and randomness:
/// `filecoin_proofs_api::post::verify_window_post` (a whole WindowPoSt, or one partition of the
/// current V1_2 proofs, whose public inputs do not depend on the partition's index) or
/// `verify_winning_post`, with the verifying key from filecoin-proofs' parameter directory.
/// A partition k > 0 of a V1 WindowPoSt is checked with storage-proofs-post's own public
/// inputs for partition k (see [`verify_v1_partition`]).
pub fn verify(input: &PostInput, proof: &[u8]) -> Result<bool, ProverError> {
    let sectors = sectors(input)?;
    verify_sectors(input, &sectors, proof)
}

/// [`verify`] against these sectors (what the chain knows of them).
pub fn verify_sectors(
    input: &PostInput,
    sectors: &[PostSector],
    proof: &[u8],
) -> Result<bool, ProverError> {
    let replicas: BTreeMap<SectorId, PublicReplicaInfo> = sectors
        .iter()
        .map(|s| {
            (
                SectorId::from(s.sector_number),
                PublicReplicaInfo::new(input.post_proof, s.comm_r),
            )
        })
        .collect();
    if replicas.len() != sectors.len() {
        return Err(bad("a sector is named twice"));
    }
    // Bytes that are not Groth16 proofs at all are a proof that does not verify, not an error.
    if let Some(k) = undecodable_partition(proof) {
        tracing::warn!(partition = k, "the proof's bytes are not a Groth16 proof");
        return Ok(false);
    }
    match (input.kind(), input.partition_index) {
        (PostKind::Winning, _) => filecoin_proofs_api::post::verify_winning_post(
            &input.randomness,
            proof,
            &replicas,
            input.prover_id,
        )
        .map_err(ProverError::filecoin("verify_winning_post")),
        (PostKind::Window, Some(k))
            if k > 0 && input.post_proof.version() != ApiVersion::V1_2_0 =>
        {
            verify_v1_partition(input, sectors, k, proof)
        }
        (PostKind::Window, _) => filecoin_proofs_api::post::verify_window_post(
            &input.randomness,
            &[(input.post_proof, proof)],
            &replicas,
            input.prover_id,
        )
        .map_err(ProverError::filecoin("verify_window_post")),
    }
}

/// The first 192-byte partition of `proof` that does not decode as a Groth16 proof.
fn undecodable_partition(proof: &[u8]) -> Option<usize> {
    proof
        .chunks(PARTITION_PROOF_BYTES)
        .position(|c| bellperson::groth16::Proof::<blstrs::Bls12>::read(c).is_err())
}

/// Partition k > 0 of a V1 WindowPoSt, alone: its challenges depend on its sectors' positions in
/// the whole sector set (V1_2 fixed that), so `verify_window_post` over its sectors alone
/// derives other challenges. storage-proofs-post's `generate_public_inputs` for partition k of a
/// sector set whose earlier partitions are placeholders (it reads only partition k's sectors)
/// gives the public inputs `verify_window_post` checks partition k of the whole proof against.
pub fn verify_v1_partition(
    input: &PostInput,
    sectors: &[PostSector],
    k: u32,
    proof: &[u8],
) -> Result<bool, ProverError> {
    let size = u64::from(input.post_proof.sector_size());
    with_shape!(size, verify_v1_partition_shape, input, sectors, k, proof)
}

fn verify_v1_partition_shape<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
    sectors: &[PostSector],
    k: u32,
    proof: &[u8],
) -> Result<bool, ProverError> {
    let config = input.post_proof.as_v1_config();
    let pp = public_params::<Tree>(&config)?;
    let domain = |bytes: &[u8; 32], what: &str| -> Result<Domain<Tree>, ProverError> {
        as_safe_commitment(bytes, what).map_err(|e| bad(format!("{what}: {e:#}")))
    };
    let placeholder = PublicSector {
        id: SectorId::from(0),
        comm_r: Domain::<Tree>::default(),
    };
    let mut all = vec![placeholder; k as usize * config.sector_count];
    for s in sectors {
        all.push(PublicSector {
            id: SectorId::from(s.sector_number),
            comm_r: domain(&s.comm_r, "comm_r")?,
        });
    }
    let public_inputs = fallback::PublicInputs {
        randomness: domain(&input.randomness, "randomness")?,
        prover_id: domain(&input.prover_id, "prover_id")?,
        sectors: all,
        k: None,
    };
    let inputs = <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::generate_public_inputs(&public_inputs, &pp, Some(k as usize))
    .map_err(ProverError::filecoin("the public inputs of the partition"))?;
    let vk = <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::verifying_key::<rand_chacha::ChaCha20Rng>(None, &pp)
    .map_err(ProverError::filecoin("reading the PoSt verifying key"))?;
    let pvk = bellperson::groth16::prepare_verifying_key(&vk);
    if proof.len() != PARTITION_PROOF_BYTES {
        return Ok(false);
    }
    let proof = match bellperson::groth16::Proof::<blstrs::Bls12>::read(proof) {
        Ok(p) => p,
        Err(_) => return Ok(false),
    };
    bellperson::groth16::verify_proof(&pvk, &proof, &inputs).map_err(|e| ProverError::Filecoin {
        action: "verifying the partition proof".into(),
        message: e.to_string(),
    })
}
