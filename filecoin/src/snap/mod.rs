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

mod names;
pub(crate) mod placeholder;
pub mod shape;
pub(crate) mod source;

pub use names::{parse_update_proof, update_proof_name};
pub use source::SnapJob;
use source::{SnapPartitions, Vanilla, decode};

use base64::Engine;
use filecoin_proofs::{as_safe_commitment, with_shape};
use filecoin_proofs_api::{MerkleTreeTrait, RegisteredUpdateProof};
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain, TreeRHasher, h_default};
use storage_proofs_update::{EmptySectorUpdate, PublicInputs, PublicParams};

use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::SynthesisMode;

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

/// Checks a SnapDeals input (the vanilla proofs decode as partition proofs of its sector size,
/// one per partition, of the right shape, and verify) and prepares its partitions, synthesized
/// in one pass or, with [`SynthesisMode::Matrices`], from the sector size's R1CS matrices and
/// the native witness (the matrices read from their file, or recorded on the size's first use
/// in this process: about one partition's one-pass synthesis).
pub fn prepare(input: &SnapInput, synthesis: SynthesisMode) -> Result<SnapJob, ProverError> {
    let size = u64::from(input.update_proof.sector_size());
    with_shape!(size, prepare_shape, input, synthesis)
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
        let mut v: serde_json::Value = serde_json::from_slice(&input.to_json()).unwrap();
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
