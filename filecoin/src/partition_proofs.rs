//! A proof as Filecoin lays it out, whatever its kind: its partitions' Groth16 proofs, 192 bytes
//! each, in partition order.

use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::pipeline::PartitionProof;

/// Bytes of one partition's proof (bellperson's compressed Groth16 proof).
pub const PARTITION_PROOF_BYTES: usize = 192;

/// The proof bytes Filecoin's prover returns for every kind: each partition's proof, in
/// partition order (what seal_commit_phase2, generate_empty_sector_update_proof_with_vanilla and
/// merge_window_post_partition_proofs make of partition proofs).
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

#[cfg(test)]
mod tests {
    use super::*;
    use proofpipe_pipeline::pipeline::StageTimings;

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
