//! PoRep C2 through the pipeline: partition k's `StackedCircuit`, built by filecoin-proofs the
//! way `seal_commit_phase2` builds it (`StackedCompound::circuit`, from the C1 output's vanilla
//! proofs), synthesized by our workers, proved by our GPU stage and finalized by us. The proofs
//! are laid out as `seal_commit_phase2` writes them: one 192-byte Groth16 proof per partition,
//! in order, so `verify_seal` (and the chain) accepts them.

use std::sync::Arc;

use filecoin_proofs::{
    DefaultPieceDomain, DefaultPieceHasher, as_safe_commitment, parameters::public_params,
    with_shape,
};
use filecoin_proofs_api::{ApiFeature, MerkleTreeTrait};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::{self, StackedCompound, StackedDrg};

use proofpipe_kernels::EvalAlloc;

use super::c1::C1Input;
use super::{RegisteredSealProof, seal_proof_name};
use crate::circuits::CircuitShape;
use crate::error::ProverError;
use crate::groth16::{self, Synthesized};
use crate::pipeline::{PartitionProof, PartitionSource};

/// Bytes of one partition's proof (bellperson's compressed Groth16 proof).
pub const PARTITION_PROOF_BYTES: usize = 192;

/// A C1 output made ready for the pipeline.
pub struct PorepJob {
    pub seal_proof: RegisteredSealProof,
    pub partitions: u32,
    pub source: Arc<dyn PartitionSource>,
}

/// Checks a C1 output as `seal_commit_phase2` does and prepares its partitions.
pub fn prepare(input: &C1Input) -> Result<PorepJob, ProverError> {
    let proof = input.seal_proof();
    let name = seal_proof_name(proof);
    if proof.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(ProverError::InvalidArgument {
            what: "seal proof",
            reason: format!(
                "{name}: non-interactive PoRep aggregates its partition proofs, which proofpipe \
                 does not do yet; prove it with filecoin-proofs' seal_commit_phase2"
            ),
        });
    }
    let out = &input.output;
    let zero = |what: &str| ProverError::InvalidArgument {
        what: "C1 output",
        reason: format!("its {what} is all zeros: the C1 output is not of a sealed sector"),
    };
    if out.comm_d == [0; 32] {
        return Err(zero("comm_d"));
    }
    if out.comm_r == [0; 32] {
        return Err(zero("comm_r"));
    }
    if out.seed == [0; 32] {
        return Err(zero("challenge seed"));
    }
    let size = u64::from(proof.sector_size());
    with_shape!(size, prepare_shape, input)
}

fn prepare_shape<Tree: 'static + MerkleTreeTrait>(
    input: &C1Input,
) -> Result<PorepJob, ProverError> {
    let proof = input.seal_proof();
    let config = proof.as_v1_config();
    let out = &input.output;
    let vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>> = out
        .vanilla_proofs
        .clone()
        .try_into()
        .map_err(|e: anyhow::Error| ProverError::InvalidArgument {
            what: "C1 output",
            reason: format!(
                "its vanilla proofs are not of {} sectors: {e:#}",
                seal_proof_name(proof)
            ),
        })?;
    let partitions = usize::from(config.partitions);
    if vanilla.len() != partitions || vanilla.iter().any(Vec::is_empty) {
        return Err(ProverError::InvalidArgument {
            what: "C1 output",
            reason: format!(
                "it has vanilla proofs for {} partitions ({} empty) where {} has {partitions}",
                vanilla.len(),
                vanilla.iter().filter(|v| v.is_empty()).count(),
                seal_proof_name(proof)
            ),
        });
    }
    let comm_r = as_safe_commitment(&out.comm_r, "comm_r")
        .map_err(ProverError::filecoin("reading comm_r"))?;
    let comm_d: DefaultPieceDomain = as_safe_commitment(&out.comm_d, "comm_d")
        .map_err(ProverError::filecoin("reading comm_d"))?;
    let replica_id: blstrs::Scalar = out.replica_id.into();
    let public_inputs = stacked::PublicInputs {
        replica_id: replica_id.into(),
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
        seed: Some(out.seed),
    };
    let public_params = public_params::<Tree>(&config).map_err(ProverError::filecoin(
        "setting up the PoRep public parameters",
    ))?;
    Ok(PorepJob {
        seal_proof: proof,
        partitions: partitions as u32,
        source: Arc::new(StackedPartitions::<Tree> {
            public_inputs,
            vanilla,
            public_params,
        }),
    })
}

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as filecoin_proofs_api::Hasher>::Domain;

/// The partitions of one PoRep, each built on the synthesis worker that proves it.
struct StackedPartitions<Tree: 'static + MerkleTreeTrait> {
    public_inputs: stacked::PublicInputs<TreeDomain<Tree>, DefaultPieceDomain>,
    vanilla: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
    public_params: stacked::PublicParams<Tree>,
}

impl<Tree: 'static + MerkleTreeTrait> PartitionSource for StackedPartitions<Tree> {
    fn synthesize(
        &self,
        partition: u32,
        shape: CircuitShape,
        evaluations: &EvalAlloc,
    ) -> Result<Synthesized, ProverError> {
        let k = partition as usize;
        let fail = |message: String| ProverError::Synthesis { partition, message };
        let vanilla = self
            .vanilla
            .get(k)
            .ok_or_else(|| fail(format!("there are {} partitions", self.vanilla.len())))?;
        let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::circuit(
            &self.public_inputs,
            // StackedCircuit's component private inputs are `()`.
            (),
            vanilla,
            &self.public_params,
            Some(k),
        )
        .map_err(|e| fail(format!("building the StackedCircuit: {e:#}")))?;
        groth16::synthesize_into(circuit, shape, evaluations).map_err(|e| fail(e.to_string()))
    }
}

/// The proof bytes `seal_commit_phase2` would write: every partition's proof, in order.
pub fn assemble(proofs: &[PartitionProof], partitions: u32) -> Result<Vec<u8>, ProverError> {
    let mut sorted: Vec<&PartitionProof> = proofs.iter().collect();
    sorted.sort_by_key(|p| p.partition);
    let have: Vec<u32> = sorted.iter().map(|p| p.partition).collect();
    if have != (0..partitions).collect::<Vec<_>>() {
        return Err(ProverError::InvalidArgument {
            what: "partition proofs",
            reason: format!("have partitions {have:?}, need 0..{partitions} once each"),
        });
    }
    let mut out = Vec::with_capacity(PARTITION_PROOF_BYTES * partitions as usize);
    for p in sorted {
        if p.proof.len() != PARTITION_PROOF_BYTES {
            return Err(ProverError::InvalidArgument {
                what: "partition proofs",
                reason: format!(
                    "partition {} has {} bytes, not {PARTITION_PROOF_BYTES}",
                    p.partition,
                    p.proof.len()
                ),
            });
        }
        out.extend_from_slice(&p.proof);
    }
    Ok(out)
}

/// Filecoin's own verdict on `proof` for this C1 output (`filecoin_proofs_api::seal::verify_seal`,
/// with the verifying key from filecoin-proofs' parameter directory).
pub fn verify(input: &C1Input, proof: &[u8]) -> Result<bool, ProverError> {
    let out = &input.output;
    filecoin_proofs_api::seal::verify_seal(
        out.registered_proof,
        out.comm_r,
        out.comm_d,
        input.prover_id,
        input.sector_id,
        out.ticket,
        out.seed,
        proof,
    )
    .map_err(ProverError::filecoin("verify_seal"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::StageTimings;

    fn proof(partition: u32, byte: u8) -> PartitionProof {
        PartitionProof {
            partition,
            proof: vec![byte; PARTITION_PROOF_BYTES],
            public_inputs: Vec::new(),
            verified: true,
            timings: StageTimings::default(),
        }
    }

    #[test]
    fn proofs_are_laid_out_in_partition_order() {
        let out = assemble(&[proof(1, 0xbb), proof(0, 0xaa)], 2).unwrap();
        assert_eq!(out.len(), 2 * PARTITION_PROOF_BYTES);
        assert!(out[..PARTITION_PROOF_BYTES].iter().all(|&b| b == 0xaa));
        assert!(out[PARTITION_PROOF_BYTES..].iter().all(|&b| b == 0xbb));
    }

    #[test]
    fn a_missing_or_repeated_partition_is_refused() {
        assert!(assemble(&[proof(0, 1)], 2).is_err());
        assert!(assemble(&[proof(0, 1), proof(0, 1)], 2).is_err());
        let mut short = proof(0, 1);
        short.proof.pop();
        assert!(assemble(&[short], 1).is_err());
    }
}
