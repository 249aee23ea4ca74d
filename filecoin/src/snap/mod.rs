//! SnapDeals (EmptySectorUpdate) proofs through the pipeline: partition k's
//! `EmptySectorUpdateCircuit`, built by storage-proofs-update the way
//! `generate_empty_sector_update_proof_with_vanilla` builds it (`EmptySectorUpdateCompound::circuit`
//! from partition k's vanilla `PartitionProof`), synthesized by our workers, proved by our GPU
//! stage and finalized by us. The proof is laid out as filecoin-proofs-api returns it (one
//! 192-byte Groth16 proof per partition, in order), so `verify_empty_sector_update_proof`
//! (and the chain) accepts it.
//!
//! The input is what curio sends the seed engine for a SnapDeals proof: the registered update
//! proof, `comm_r_old`, `comm_r_new`, `comm_d_new` (32 bytes each) and one bincode-serialized
//! `PartitionProof` per partition (filecoin-proofs-api's `generate_partition_proofs`), here in a
//! JSON file:
//!
//! ```json
//! {"registered_proof": "StackedDrg32GiBV1",
//!  "comm_r_old": "<base64>", "comm_r_new": "<base64>", "comm_d_new": "<base64>",
//!  "vanilla_proofs": ["<base64 of bincode(PartitionProof)>", ...]}
//! ```

pub(crate) mod placeholder;
pub mod shape;

use std::sync::Arc;

use base64::Engine;
use bincode::Options;
use filecoin_proofs::{as_safe_commitment, with_shape};
use filecoin_proofs_api::{MerkleTreeTrait, RegisteredUpdateProof};
use serde_json::Value;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain, TreeRHasher, h_default};
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams,
};

use proofpipe_kernels::EvalAlloc;

use crate::matrices::{self, MatricesKey};
use crate::witness::snap::SnapPartitionWitness;
use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::matrices_file::MatricesOrigin;
use proofpipe_pipeline::groth16::{self, R1csMatrices, SynthesisMode};
use proofpipe_pipeline::pipeline::{PartitionSource, Synthesis};

/// The update proofs by sector size, as `--update-proof` accepts them: a registered update
/// proof's own name (`StackedDrg32GiBV1`), a sector size (`32GiB`), or the number curio sends
/// (go-state-types' `abi.RegisteredUpdateProof`: 0 for 2 KiB … 4 for 64 GiB).
pub fn parse_update_proof(s: &str) -> Result<RegisteredUpdateProof, ProverError> {
    use RegisteredUpdateProof::*;
    let proof = match s.to_ascii_lowercase().as_str() {
        "2kib" | "0" => Some(StackedDrg2KiBV1),
        "8mib" | "1" => Some(StackedDrg8MiBV1),
        "512mib" | "2" => Some(StackedDrg512MiBV1),
        "32gib" | "3" => Some(StackedDrg32GiBV1),
        "64gib" | "4" => Some(StackedDrg64GiBV1),
        _ => None,
    };
    proof
        .or_else(|| serde_json::from_value(Value::String(s.to_string())).ok())
        .ok_or_else(|| ProverError::InvalidArgument {
            what: "update proof",
            reason: format!(
                "{s:?} is neither a sector size (2KiB, 8MiB, 512MiB, 32GiB, 64GiB), a registered \
                 update proof name such as StackedDrg32GiBV1, nor its number 0-4"
            ),
        })
}

/// A registered update proof's name as filecoin-proofs-api spells it.
pub fn update_proof_name(proof: RegisteredUpdateProof) -> String {
    serde_json::to_value(proof)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{proof:?}"))
}

/// The SnapDeals partitions of `proof` (storage-proofs-update's own count: 16 from 32 GiB up).
pub fn partitions(proof: RegisteredUpdateProof) -> u32 {
    PublicParams::from_sector_size(u64::from(proof.sector_size())).partition_count as u32
}

/// What a SnapDeals proof is made from: curio's request to the seed engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SnapInput {
    pub update_proof: RegisteredUpdateProof,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
    /// One bincode-serialized `PartitionProof` per partition, in partition order.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

fn bad(reason: impl Into<String>) -> ProverError {
    ProverError::InvalidArgument {
        what: "SnapDeals input",
        reason: reason.into(),
    }
}

impl SnapInput {
    pub fn parse(bytes: &[u8]) -> Result<Self, ProverError> {
        let obj = &crate::input_file::json_object(
            bytes,
            "SnapDeals input",
            "{\"registered_proof\", \"comm_r_old\", \"comm_r_new\", \"comm_d_new\", \
             \"vanilla_proofs\"}",
        )?;
        let field = |name: &str| {
            obj.get(name)
                .ok_or_else(|| bad(format!("the field {name:?} is missing")))
        };
        let update_proof = crate::input_file::registered_proof(
            field("registered_proof")?,
            "SnapDeals input",
            parse_update_proof,
        )?;
        let comm = |name: &str| crate::input_file::bytes32(field(name)?, name, "SnapDeals input");
        let (comm_r_old, comm_r_new, comm_d_new) = (
            comm("comm_r_old")?,
            comm("comm_r_new")?,
            comm("comm_d_new")?,
        );
        let vanilla_proofs = crate::input_file::base64_list(
            field("vanilla_proofs")?,
            "vanilla_proofs",
            "SnapDeals input",
        )?;
        Ok(Self {
            update_proof,
            comm_r_old,
            comm_r_new,
            comm_d_new,
            vanilla_proofs,
        })
    }

    pub fn to_json(&self) -> Vec<u8> {
        let v = serde_json::json!({
            "registered_proof": update_proof_name(self.update_proof),
            "comm_r_old": crate::input_file::b64().encode(self.comm_r_old),
            "comm_r_new": crate::input_file::b64().encode(self.comm_r_new),
            "comm_d_new": crate::input_file::b64().encode(self.comm_d_new),
            "vanilla_proofs": self.vanilla_proofs.iter().map(|p| crate::input_file::b64().encode(p)).collect::<Vec<_>>(),
        });
        serde_json::to_vec_pretty(&v).expect("JSON serializes")
    }
}

/// A SnapDeals input made ready for the pipeline.
pub struct SnapJob {
    pub update_proof: RegisteredUpdateProof,
    pub partitions: u32,
    pub source: Arc<dyn PartitionSource>,
    /// The R1CS matrices the source synthesizes from with [`SynthesisMode::Matrices`] (the
    /// process's resident ones of the sector size's partition).
    pub matrices: Option<Arc<R1csMatrices>>,
}

/// Checks a SnapDeals input (the vanilla proofs decode as partition proofs of its sector size,
/// one per partition, of the right shape, and verify) and prepares its partitions, synthesized
/// in one pass or, with [`SynthesisMode::Matrices`], from the sector size's R1CS matrices and
/// the native witness (the matrices read from their file, or recorded on the size's first use
/// in this process: about one partition's one-pass synthesis).
pub fn prepare(input: &SnapInput, synthesis: SynthesisMode) -> Result<SnapJob, ProverError> {
    let size = u64::from(input.update_proof.sector_size());
    with_shape!(size, prepare_shape, input, synthesis)
}

/// bincode as filecoin-proofs-api writes it, but refusing bytes left over.
fn decode<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    bytes: &[u8],
) -> Result<PartitionProof<Tree>, bincode::Error> {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .deserialize(bytes)
}

fn prepare_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &SnapInput,
    synthesis: SynthesisMode,
) -> Result<SnapJob, ProverError> {
    let proof = input.update_proof;
    let name = update_proof_name(proof);
    let pp = PublicParams::from_sector_size(u64::from(proof.sector_size()));
    let nodes = pp.sector_nodes;
    if input.vanilla_proofs.len() != pp.partition_count {
        return Err(bad(format!(
            "it has {} vanilla proofs where {name} has {} partitions",
            input.vanilla_proofs.len(),
            pp.partition_count
        )));
    }
    let commitment = |bytes: &[u8; 32], what: &str| -> Result<TreeRDomain, ProverError> {
        as_safe_commitment(bytes, what)
            .map_err(|e| bad(format!("{what} is not a field element: {e:#}")))
    };
    let comm_r_old = commitment(&input.comm_r_old, "comm_r_old")?;
    let comm_r_new = commitment(&input.comm_r_new, "comm_r_new")?;
    let comm_d_new: TreeDDomain = as_safe_commitment(&input.comm_d_new, "comm_d_new")
        .map_err(|e| bad(format!("comm_d_new is not a field element: {e:#}")))?;
    for (c, what) in [
        (&input.comm_r_old, "comm_r_old"),
        (&input.comm_r_new, "comm_r_new"),
        (&input.comm_d_new, "comm_d_new"),
    ] {
        if *c == [0; 32] {
            return Err(bad(format!("{what} is all zeros")));
        }
    }
    let public_inputs = PublicInputs {
        k: pp.partition_count,
        comm_r_old,
        comm_d_new,
        comm_r_new,
        h: h_default(nodes),
    };
    for (k, bytes) in input.vanilla_proofs.iter().enumerate() {
        let vanilla = decode::<Tree>(bytes).map_err(|e| {
            bad(format!(
                "vanilla_proofs[{k}] is not a bincode PartitionProof of a {name} sector: {e}"
            ))
        })?;
        let shape_ok = vanilla.apex_leafs.len() == pp.apex_leaf_count
            && vanilla.challenge_proofs.len() == pp.challenge_count
            && vanilla.challenge_proofs.iter().all(|c| {
                c.proof_r_old.path().len() == c.proof_r_old.expected_len(nodes)
                    && c.proof_r_new.path().len() == c.proof_r_new.expected_len(nodes)
                    && c.proof_d_new.path().len() == c.proof_d_new.expected_len(nodes)
            });
        if !shape_ok {
            return Err(bad(format!(
                "vanilla_proofs[{k}] is not of a {name} sector: {} apex leaves and {} challenges \
                 (a {name} partition has {} and {}), or Merkle paths of another tree height",
                vanilla.apex_leafs.len(),
                vanilla.challenge_proofs.len(),
                pp.apex_leaf_count,
                pp.challenge_count
            )));
        }
        // storage-proofs-update's own vanilla verifier: vanilla proofs of another sector or
        // update make a circuit that is not satisfied (its synthesis stops on an assertion),
        // so refuse them here, by name, before anything is proved.
        let k_inputs = PublicInputs { k, ..public_inputs };
        let valid = EmptySectorUpdate::<Tree>::verify(&pp, &k_inputs, &vanilla)
            .map_err(|e| bad(format!("vanilla_proofs[{k}] cannot be checked: {e:#}")))?;
        if !valid {
            return Err(bad(format!(
                "vanilla_proofs[{k}] does not verify against comm_r_old, comm_r_new and comm_d_new \
                 (storage-proofs-update's vanilla verifier): the vanilla proofs are of another \
                 sector or update than the commitments"
            )));
        }
    }
    SnapPartitions::<Tree> {
        public_params: pp,
        vanilla: Vanilla::Curio {
            public_inputs,
            proofs: input.vanilla_proofs.clone(),
        },
        matrices: None,
        _tree: std::marker::PhantomData,
    }
    .into_job(proof, synthesis)
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
                placeholder::placeholder_partition(&self.public_params, *seed, partition)
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
            placeholder::placeholder_partition::<Tree>(&self.public_params, 0, 0).map_err(fail)?;
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

/// Filecoin's own verdict on `proof` for this input
/// (`filecoin_proofs_api::update::verify_empty_sector_update_proof`, with the verifying key from
/// filecoin-proofs' parameter directory).
pub fn verify(input: &SnapInput, proof: &[u8]) -> Result<bool, ProverError> {
    filecoin_proofs_api::update::verify_empty_sector_update_proof(
        input.update_proof,
        proof,
        input.comm_r_old,
        input.comm_r_new,
        input.comm_d_new,
    )
    .map_err(ProverError::filecoin("verify_empty_sector_update_proof"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_proofs_parse_by_size_name_and_number() {
        use RegisteredUpdateProof::*;
        assert_eq!(parse_update_proof("32GiB").unwrap(), StackedDrg32GiBV1);
        assert_eq!(
            parse_update_proof("StackedDrg2KiBV1").unwrap(),
            StackedDrg2KiBV1
        );
        assert_eq!(parse_update_proof("4").unwrap(), StackedDrg64GiBV1);
        assert!(parse_update_proof("16GiB").is_err());
        assert_eq!(update_proof_name(StackedDrg8MiBV1), "StackedDrg8MiBV1");
        // storage-proofs-update's own partition counts.
        assert_eq!(partitions(StackedDrg2KiBV1), 1);
        assert_eq!(partitions(StackedDrg512MiBV1), 16);
        assert_eq!(partitions(StackedDrg32GiBV1), 16);
    }

    #[test]
    fn inputs_round_trip_and_bad_ones_are_named() {
        let input = SnapInput {
            update_proof: RegisteredUpdateProof::StackedDrg2KiBV1,
            comm_r_old: [1; 32],
            comm_r_new: [2; 32],
            comm_d_new: [3; 32],
            vanilla_proofs: vec![vec![1, 2, 3]],
        };
        assert_eq!(SnapInput::parse(&input.to_json()).unwrap(), input);
        let err = |bytes: &[u8]| SnapInput::parse(bytes).unwrap_err().to_string();
        assert!(err(b"{\"registered_proof\"").contains("not JSON"));
        assert!(err(b"{}").contains("\"registered_proof\" is missing"));
        let mut v: Value = serde_json::from_slice(&input.to_json()).unwrap();
        v["comm_r_new"] = "AAAA".into();
        assert!(err(&serde_json::to_vec(&v).unwrap()).contains("comm_r_new has 3 bytes"));
        // Not partition proofs at all.
        let e = prepare(&input, SynthesisMode::OnePass)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("vanilla_proofs[0] is not a bincode PartitionProof"),
            "{e}"
        );
        let e = prepare(
            &SnapInput {
                vanilla_proofs: vec![],
                ..input
            },
            SynthesisMode::OnePass,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            e.contains("0 vanilla proofs where StackedDrg2KiBV1 has 1"),
            "{e}"
        );
    }
}
