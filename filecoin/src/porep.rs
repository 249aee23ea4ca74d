//! PoRep C2 through the pipeline: partition k's `StackedCircuit`, built by filecoin-proofs the
//! way `seal_commit_phase2` builds it (`StackedCompound::circuit`, from the C1 output's vanilla
//! proofs, or from placeholder ones of the same shape for timing: `shape`),
//! synthesized by our workers (in one pass, or in two from the sector size's R1CS matrices),
//! proved by our GPU stage and finalized by us. The proofs are laid out as
//! `seal_commit_phase2` writes them: one 192-byte Groth16 proof per partition, in order, so
//! `verify_seal` (and the chain) accepts them.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use filecoin_proofs::{
    DefaultPieceDomain, DefaultPieceHasher, as_safe_commitment, parameters::public_params,
    with_shape,
};
use filecoin_proofs_api::{ApiFeature, MerkleTreeTrait};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

use bellperson::SynthesisError;
use proofpipe_kernels::EvalAlloc;

use super::c1::C1Input;
use super::matrices::{self, MatricesKey};
use super::{RegisteredSealProof, seal_proof_name};
use crate::witness::porep::PartitionWitness;
use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::matrices_file::MatricesOrigin;
use proofpipe_pipeline::groth16::{self, R1csMatrices, SynthesisMode};
use proofpipe_pipeline::pipeline::{PartitionSource, Synthesis};

/// A C1 output made ready for the pipeline.
pub struct PorepJob {
    pub seal_proof: RegisteredSealProof,
    pub partitions: u32,
    pub source: Arc<dyn PartitionSource>,
    /// The R1CS matrices the source synthesizes from with [`SynthesisMode::Matrices`] (shared
    /// by every job of the sector size in this process): their bytes belong in the sizing.
    pub matrices: Option<Arc<R1csMatrices>>,
}

impl PorepJob {
    /// Heap bytes of the matrices, 0 in one pass.
    pub fn matrices_bytes(&self) -> u64 {
        self.matrices.as_ref().map_or(0, |m| m.heap_bytes())
    }
}

/// Checks a C1 output as `seal_commit_phase2` does and prepares its partitions, synthesized
/// in one pass or from the sector size's R1CS matrices (recorded from partition 0 on first use
/// in the process: about one partition's synthesis).
pub fn prepare(input: &C1Input, synthesis: SynthesisMode) -> Result<PorepJob, ProverError> {
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
    with_shape!(size, prepare_shape, input, synthesis)
}

fn prepare_shape<Tree: 'static + MerkleTreeTrait>(
    input: &C1Input,
    synthesis: SynthesisMode,
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
    StackedPartitions {
        public_inputs,
        vanilla: Vanilla::Sealed(vanilla),
        public_params,
        matrices: None,
    }
    .into_job(proof, partitions as u32, synthesis)
}

pub(super) type TreeDomain<Tree> =
    <<Tree as MerkleTreeTrait>::Hasher as filecoin_proofs_api::Hasher>::Domain;

/// Makes placeholder vanilla proofs of partition `k` from the public parameters and a seed.
pub(super) type PlaceholderProofs<Tree> =
    fn(&stacked::PublicParams<Tree>, u64, usize) -> Vec<stacked::Proof<Tree, DefaultPieceHasher>>;

/// Where each partition's vanilla proofs come from.
pub(super) enum Vanilla<Tree: 'static + MerkleTreeTrait> {
    /// A C1 output's, one list per partition.
    Sealed(Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>),
    /// Made for each partition as it is built by `make` (from the public parameters, `seed`
    /// and the partition), of the sector size's exact shape, proving nothing (the placeholder
    /// partitions of timing-only benchmarks hand `make` in).
    Placeholder {
        seed: u64,
        make: PlaceholderProofs<Tree>,
    },
}

/// The partitions of one PoRep, each built on the synthesis worker that proves it.
pub(super) struct StackedPartitions<Tree: 'static + MerkleTreeTrait> {
    pub public_inputs: stacked::PublicInputs<TreeDomain<Tree>, DefaultPieceDomain>,
    pub vanilla: Vanilla<Tree>,
    pub public_params: stacked::PublicParams<Tree>,
    /// Two-pass synthesis from these, when set.
    pub matrices: Option<Arc<R1csMatrices>>,
}

impl<Tree: 'static + MerkleTreeTrait> StackedPartitions<Tree> {
    /// Partition `k`'s circuit, as `seal_commit_phase2` builds it.
    pub(super) fn circuit(
        &self,
        k: usize,
    ) -> Result<StackedCircuit<Tree, DefaultPieceHasher>, String> {
        self.circuit_of(&self.vanilla(k)?, k)
    }

    /// Partition `k`'s vanilla proofs, one per challenge.
    pub(super) fn vanilla(
        &self,
        k: usize,
    ) -> Result<Cow<'_, [stacked::Proof<Tree, DefaultPieceHasher>]>, String> {
        match &self.vanilla {
            Vanilla::Sealed(partitions) => partitions
                .get(k)
                .map(|v| Cow::Borrowed(v.as_slice()))
                .ok_or_else(|| format!("there are {} partitions", partitions.len())),
            Vanilla::Placeholder { seed, make } => {
                Ok(Cow::Owned(make(&self.public_params, *seed, k)))
            }
        }
    }

    /// Partition `k`'s circuit over `vanilla`, all of its challenges' proofs or some of them
    /// (a sub-circuit of the parallel synthesis: the common allocations, then these
    /// challenges').
    pub(super) fn circuit_of(
        &self,
        vanilla: &[stacked::Proof<Tree, DefaultPieceHasher>],
        k: usize,
    ) -> Result<StackedCircuit<Tree, DefaultPieceHasher>, String> {
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::circuit(
            &self.public_inputs,
            // StackedCircuit's component private inputs are `()`.
            (),
            &vanilla.to_vec(),
            &self.public_params,
            Some(k),
        )
        .map_err(|e| format!("building the StackedCircuit: {e:#}"))
    }

    /// The R1CS matrices of this circuit structure: read from their file in `dir` when it
    /// holds them, else recorded on every core and written there (ADR 0031).
    pub(super) fn read_or_record_matrices(
        &self,
        dir: Option<&Path>,
    ) -> Result<(R1csMatrices, MatricesOrigin), ProverError> {
        matrices::read_or_record(&self.matrices_key(), dir, || self.record_matrices())
    }

    /// Partition 0's challenges recorded as parts, on every core (ADR 0023).
    fn record_matrices(&self) -> Result<R1csMatrices, ProverError> {
        let fail = |message: String| ProverError::Synthesis {
            partition: 0,
            message: format!("recording the R1CS matrices: {message}"),
        };
        let vanilla = self.vanilla(0).map_err(fail)?;
        R1csMatrices::record_split(vanilla.len(), |challenges| {
            self.circuit_of(&vanilla[challenges], 0)
                .map_err(|e| SynthesisError::IoError(std::io::Error::other(e)))
        })
        .map_err(|e| fail(e.to_string()))
    }

    /// What fixes the circuit's structure (nodes, layers, challenges per partition), as the
    /// matrices' key.
    fn matrices_key(&self) -> MatricesKey {
        let nodes = self.public_params.graph.size();
        let layers = self.public_params.num_layers;
        let challenges = self.public_params.challenges.num_challenges_per_partition();
        MatricesKey {
            circuit: format!(
                "StackedDrg PoRep partition: {nodes} nodes, {layers} layers, {challenges} challenges"
            ),
            file_stem: format!("porep-{nodes}-nodes-{layers}-layers-{challenges}-challenges"),
        }
    }

    /// The job, its matrices recorded (or found) first for two-pass synthesis.
    pub(super) fn into_job(
        mut self,
        seal_proof: RegisteredSealProof,
        partitions: u32,
        synthesis: SynthesisMode,
    ) -> Result<PorepJob, ProverError> {
        if synthesis == SynthesisMode::Matrices {
            let (matrices, loaded) =
                matrices::resident(&self.matrices_key(), || self.record_matrices())?;
            if !loaded {
                tracing::info!(proof = %seal_proof_name(seal_proof), "PoRep R1CS matrices reused");
            }
            self.matrices = Some(matrices);
        }
        let matrices = self.matrices.clone();
        Ok(PorepJob {
            seal_proof,
            partitions,
            source: Arc::new(self),
            matrices,
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait> PartitionSource for StackedPartitions<Tree> {
    /// From the matrices, a partition's challenges are witnessed natively on every core; in
    /// one pass, one core.
    fn synthesis_threads(&self) -> usize {
        match self.matrices {
            Some(_) => self.public_params.challenges.num_challenges_per_partition(),
            None => 1,
        }
    }

    fn synthesize(&self, partition: u32, shape: CircuitShape, evals: &EvalAlloc) -> Synthesis {
        let fail = |message: String| ProverError::Synthesis { partition, message };
        let k = partition as usize;
        match &self.matrices {
            // Every core on the partition: its challenges are independent parts.
            Some(matrices) => {
                let vanilla = self.vanilla(k).map_err(fail)?;
                let witness = PartitionWitness::of(&self.public_inputs, &vanilla).map_err(fail)?;
                groth16::synthesize_native_from_matrices_into(&witness, matrices, evals)
            }
            None => {
                let circuit = self.circuit(k).map_err(fail)?;
                groth16::synthesize_into(circuit, shape, evals)
            }
        }
        .map_err(|e| fail(e.to_string()))
    }
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
