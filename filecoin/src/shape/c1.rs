//! A placeholder job as a C1 output (`SealCommitPhase1Output`): every partition's placeholder
//! vanilla proofs and the job's public inputs, in the form lotus and curio hand to C2, so a
//! prover that reads C1 outputs (cuzk, curio's GPU proving engine, for one) synthesizes the
//! very circuits `bench --porep-shape` times. Like the placeholder job, it proves nothing: no
//! proof made from it verifies.

use std::any::Any;

use filecoin_proofs::{DefaultPieceHasher, with_shape};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{Commitment, MerkleTreeTrait};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use storage_proofs_porep::stacked;

use super::{Placeholder, placeholder_partitions, refuse_non_interactive};
use proofpipe_pipeline::error::ProverError;

/// The C1 output of `placeholder`'s job: partition k's vanilla proofs are the ones its
/// placeholder partition k is built from, the public inputs (replica id, comm_d, comm_r, seed)
/// the job's; the ticket, which only a verifier reads, is pseudorandom from the seed too.
pub fn placeholder_c1_output(
    placeholder: Placeholder,
) -> Result<SealCommitPhase1Output, ProverError> {
    refuse_non_interactive(placeholder.seal_proof)?;
    if placeholder.challenges_per_partition.is_some() {
        return Err(ProverError::InvalidArgument {
            what: "placeholder challenges",
            reason: "a C1 output has the seal proof's own challenges per partition".into(),
        });
    }
    let size = u64::from(placeholder.seal_proof.sector_size());
    with_shape!(size, c1_of_shape, placeholder)
}

fn c1_of_shape<Tree: 'static + MerkleTreeTrait>(
    placeholder: Placeholder,
) -> Result<SealCommitPhase1Output, ProverError> {
    let proof = placeholder.seal_proof;
    let job = placeholder_partitions::<Tree>(placeholder)?;
    let partitions = usize::from(proof.as_v1_config().partitions);
    let vanilla_proofs = (0..partitions)
        .map(|k| {
            job.vanilla(k)
                .map(|v| v.into_owned())
                .map_err(|message| ProverError::Synthesis {
                    partition: k as u32,
                    message,
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let inputs = &job.public_inputs;
    let tau = inputs
        .tau
        .as_ref()
        .expect("a placeholder job's public inputs have tau");
    let mut rng = ChaCha20Rng::seed_from_u64(placeholder.seed);
    rng.set_stream(u64::MAX);
    let mut ticket = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    // Filecoin's tickets and seeds are 32 bytes whose last byte's two top bits are cleared
    // (a field element's); a verifier recomputes the replica id from the ticket.
    ticket[31] &= 0x3f;
    Ok(SealCommitPhase1Output {
        registered_proof: proof,
        vanilla_proofs: vanilla_seal_proof::<Tree>(vanilla_proofs),
        comm_r: commitment(tau.comm_r),
        comm_d: commitment(tau.comm_d),
        replica_id: {
            let replica_id: blstrs::Scalar = inputs.replica_id.into();
            replica_id.into()
        },
        seed: inputs
            .seed
            .expect("a placeholder job's public inputs have a seed"),
        ticket,
    })
}

fn commitment<D: AsRef<[u8]>>(domain: D) -> Commitment {
    domain
        .as_ref()
        .try_into()
        .expect("a commitment's domain is 32 bytes")
}

/// `proofs` as filecoin-proofs-api's enum of sector shapes (its own conversion is private).
fn vanilla_seal_proof<Tree: 'static + MerkleTreeTrait>(
    proofs: Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>,
) -> VanillaSealProof {
    let proofs: Box<dyn Any> = Box::new(proofs);
    let proofs = match proofs.downcast() {
        Ok(p) => return VanillaSealProof::StackedDrg2KiBV1(*p),
        Err(p) => p,
    };
    let proofs = match proofs.downcast() {
        Ok(p) => return VanillaSealProof::StackedDrg8MiBV1(*p),
        Err(p) => p,
    };
    let proofs = match proofs.downcast() {
        Ok(p) => return VanillaSealProof::StackedDrg512MiBV1(*p),
        Err(p) => p,
    };
    let proofs = match proofs.downcast() {
        Ok(p) => return VanillaSealProof::StackedDrg32GiBV1(*p),
        Err(p) => p,
    };
    match proofs.downcast() {
        Ok(p) => VanillaSealProof::StackedDrg64GiBV1(*p),
        Err(_) => unreachable!("with_shape! only hands in Filecoin's sector shapes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::c1;
    use filecoin_proofs::SectorShape2KiB;
    use filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1;

    /// Partition k of the C1 output is placeholder partition k, vanilla proofs and public inputs
    /// alike, through lotus-bench's (and curio's) commit-2 file and back.
    #[test]
    fn c1_output_holds_the_placeholder_partitions() {
        let placeholder = Placeholder::of(StackedDrg2KiBV1_1);
        let output = placeholder_c1_output(placeholder).unwrap();
        let file = c1::to_lotus_bench_json(&output, 7).unwrap();
        let read = c1::parse(&file, std::path::Path::new("c1.json"), Default::default()).unwrap();
        assert_eq!(read.seal_proof(), StackedDrg2KiBV1_1);
        assert_eq!(u64::from(read.sector_id), 7);
        let proofs: Vec<Vec<stacked::Proof<SectorShape2KiB, DefaultPieceHasher>>> =
            read.output.vanilla_proofs.clone().try_into().unwrap();
        assert_eq!(proofs.len(), 1);
        let (_, inputs, vanilla) =
            super::super::placeholder_circuit_and_proofs::<SectorShape2KiB>(placeholder, 0)
                .unwrap();
        assert_eq!(
            serde_json::to_string(&proofs[0]).unwrap(),
            serde_json::to_string(&vanilla).unwrap()
        );
        let tau = inputs.tau.unwrap();
        assert_eq!(read.output.comm_r, commitment(tau.comm_r));
        assert_eq!(read.output.comm_d, commitment(tau.comm_d));
        assert_eq!(read.output.seed, inputs.seed.unwrap());
        assert_eq!(
            blstrs::Scalar::from(read.output.replica_id),
            blstrs::Scalar::from(inputs.replica_id)
        );
        assert_ne!(read.output.ticket, [0; 32]);
    }
}
