//! The partitions of one SnapDeals proof, from curio's vanilla proofs or placeholder ones:
//! each built on the synthesis worker that proves it, synthesized in one pass or from the
//! sector size's R1CS matrices and the native witness (ADR 0043).

use std::sync::Arc;

use filecoin_proofs_api::{MerkleTreeTrait, RegisteredUpdateProof};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams,
};

use proofpipe_kernels::EvalAlloc;

use super::names::update_proof_name;
use super::placeholder::placeholder_partition;
use crate::matrices::{self, MatricesKey};
use crate::witness::snap::SnapPartitionWitness;
use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::matrices_file::MatricesOrigin;
use proofpipe_pipeline::groth16::{self, R1csMatrices, SynthesisMode};
use proofpipe_pipeline::pipeline::{PartitionSource, Synthesis};

/// A SnapDeals input made ready for the pipeline.
pub struct SnapJob {
    pub update_proof: RegisteredUpdateProof,
    pub partitions: u32,
    pub source: Arc<dyn PartitionSource>,
    /// The R1CS matrices the source synthesizes from with [`SynthesisMode::Matrices`] (the
    /// process's resident ones of the sector size's partition).
    pub matrices: Option<Arc<R1csMatrices>>,
}

/// Partition proof bytes as filecoin-proofs-api writes them.
pub(crate) fn decode<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    bytes: &[u8],
) -> Result<PartitionProof<Tree>, bincode::Error> {
    crate::input_file::bincode_proof(bytes)
}

/// Where each partition's public inputs and vanilla proof come from.
pub(crate) enum Vanilla {
    /// curio's request: the proof's public inputs and one bincode `PartitionProof` per
    /// partition, decoded on the synthesis worker that proves it.
    Curio {
        public_inputs: PublicInputs,
        proofs: Vec<Vec<u8>>,
    },
    /// Placeholder partitions of the sector size's exact shape, pseudorandom from `seed` and
    /// the partition (timing only; `shape::placeholder_source`).
    Placeholder { seed: u64 },
}

/// The partitions of one SnapDeals proof.
pub(crate) struct SnapPartitions<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    pub public_params: PublicParams,
    pub vanilla: Vanilla,
    /// Two-pass synthesis from these and the native witness, when set.
    pub matrices: Option<Arc<R1csMatrices>>,
    pub _tree: std::marker::PhantomData<fn() -> Tree>,
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SnapPartitions<Tree> {
    /// Partition `partition`'s public inputs (its `k` set) and vanilla proof.
    fn partition(&self, partition: u32) -> Result<(PublicInputs, PartitionProof<Tree>), String> {
        match &self.vanilla {
            Vanilla::Curio {
                public_inputs,
                proofs,
            } => {
                let k = partition as usize;
                let bytes = proofs
                    .get(k)
                    .ok_or_else(|| format!("there are {} partitions", proofs.len()))?;
                let vanilla = decode::<Tree>(bytes)
                    .map_err(|e| format!("decoding the vanilla proof: {e}"))?;
                Ok((
                    PublicInputs {
                        k,
                        ..*public_inputs
                    },
                    vanilla,
                ))
            }
            Vanilla::Placeholder { seed } => {
                placeholder_partition(&self.public_params, *seed, partition)
                    .map_err(|e| format!("building the placeholder partition: {e}"))
            }
        }
    }

    /// What fixes the partition circuit's structure (the sector's nodes and the challenges),
    /// as the key of its R1CS matrices.
    fn matrices_key(&self) -> MatricesKey {
        let nodes = self.public_params.sector_nodes;
        let challenges = self.public_params.challenge_count;
        MatricesKey {
            circuit: format!(
                "EmptySectorUpdate (SnapDeals) partition: {nodes} nodes, {challenges} challenges"
            ),
            file_stem: format!("snap-{nodes}-nodes-{challenges}-challenges"),
        }
    }

    /// The circuit's R1CS matrices, recorded from a placeholder partition (the structure does
    /// not depend on the witness; the circuit checks its values, which the placeholder's pass)
    /// in one pass on one core: the circuit cannot be built from a part of its challenges.
    fn record_matrices(&self) -> Result<R1csMatrices, ProverError> {
        let fail = |message: String| ProverError::Synthesis {
            partition: 0,
            message: format!("recording the SnapDeals R1CS matrices: {message}"),
        };
        let (inputs, vanilla) =
            placeholder_partition::<Tree>(&self.public_params, 0, 0).map_err(fail)?;
        let circuit = circuit_of(&self.public_params, &inputs, &vanilla).map_err(fail)?;
        drop(vanilla);
        R1csMatrices::record_circuit(circuit).map_err(|e| fail(e.to_string()))
    }

    /// The R1CS matrices of this structure: read from their file in `dir` when it holds them,
    /// else recorded and written there (ADR 0031).
    pub(crate) fn read_or_record_matrices(
        &self,
        dir: Option<&std::path::Path>,
    ) -> Result<(R1csMatrices, MatricesOrigin), ProverError> {
        matrices::read_or_record(&self.matrices_key(), dir, || self.record_matrices())
    }

    /// The job, its matrices made resident first for two-pass synthesis.
    pub(crate) fn into_job(
        mut self,
        update_proof: RegisteredUpdateProof,
        synthesis: SynthesisMode,
    ) -> Result<SnapJob, ProverError> {
        if synthesis == SynthesisMode::Matrices {
            let (matrices, loaded) =
                matrices::resident(&self.matrices_key(), || self.record_matrices())?;
            if !loaded {
                tracing::info!(proof = %update_proof_name(update_proof), "SnapDeals R1CS matrices reused");
            }
            self.matrices = Some(matrices);
        }
        let partitions = self.public_params.partition_count as u32;
        let matrices = self.matrices.clone();
        Ok(SnapJob {
            update_proof,
            partitions,
            source: Arc::new(self),
            matrices,
        })
    }
}

/// Partition `inputs.k`'s circuit, as `generate_empty_sector_update_proof_with_vanilla` builds
/// it.
pub(crate) fn circuit_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    pp: &PublicParams,
    inputs: &PublicInputs,
    vanilla: &PartitionProof<Tree>,
) -> Result<EmptySectorUpdateCircuit<Tree>, String> {
    <EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::circuit(
        inputs,
        // EmptySectorUpdateCircuit's component private inputs are `()`.
        (),
        vanilla,
        pp,
        Some(inputs.k),
    )
    .map_err(|e| format!("building the EmptySectorUpdateCircuit: {e:#}"))
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> PartitionSource
    for SnapPartitions<Tree>
{
    /// From the matrices, a partition's apex hashes and challenges are witnessed on every
    /// core; in one pass, one core.
    fn synthesis_threads(&self) -> usize {
        match self.matrices {
            Some(_) => self.public_params.challenge_count,
            None => 1,
        }
    }

    fn synthesize(&self, partition: u32, shape: CircuitShape, evals: &EvalAlloc) -> Synthesis {
        let fail = |message: String| ProverError::Synthesis { partition, message };
        let (inputs, vanilla) = self.partition(partition).map_err(fail)?;
        match &self.matrices {
            Some(matrices) => {
                let witness = SnapPartitionWitness::of(&self.public_params, &inputs, &vanilla)
                    .map_err(fail)?;
                drop(vanilla);
                groth16::synthesize_native_from_matrices_into(&witness, matrices, evals)
            }
            None => {
                let circuit = circuit_of(&self.public_params, &inputs, &vanilla).map_err(fail)?;
                drop(vanilla);
                groth16::synthesize_into(circuit, shape, evals)
            }
        }
        .map_err(|e| fail(e.to_string()))
    }
}
