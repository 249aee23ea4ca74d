//! Checks a finished job's proofs independently of the daemon that reported them verified:
//! each proof is decoded from the job's status and verified against the parameters of the
//! job's circuit and size, with the public inputs the status lists, or, where it lists none
//! (a partition with more than a status entry holds), the ones derived from the job:
//! partition `i`'s witness comes from `(seed, i)`.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar as Fr};
use proofpipe_crds::ProofJob;
use proofpipe_pipeline::circuits::CircuitKind;
use proofpipe_pipeline::groth16;
use proofpipe_pipeline::params::ParamsStore;

/// Verifies every proof in `job`'s status with the parameters cached in `params_dir`.
pub fn verify_job_proofs(job: &ProofJob, params_dir: &Path) -> Result<(), String> {
    let circuit: CircuitKind = job
        .spec
        .circuit
        .as_deref()
        .unwrap_or_default()
        .parse()
        .map_err(|err| format!("circuit {:?}: {err}", job.spec.circuit))?;
    let constraints = job
        .spec
        .constraints
        .and_then(|c| usize::try_from(c).ok())
        .ok_or_else(|| format!("constraints {:?}", job.spec.constraints))?;
    let seed = u64::try_from(job.spec.seed).map_err(|_| format!("seed {}", job.spec.seed))?;
    let (params, _) = ParamsStore::new(params_dir)
        .get(circuit, constraints)
        .map_err(|err| format!("parameters of {circuit:?} x {constraints}: {err}"))?;
    let proofs = job
        .status
        .as_ref()
        .and_then(|s| s.proofs.as_deref())
        .unwrap_or_default();
    for entry in proofs {
        let partition = entry.partition;
        let bytes = BASE64
            .decode(&entry.proof)
            .map_err(|err| format!("partition {partition}: proof is not base64: {err}"))?;
        let proof = Proof::<Bls12>::read(bytes.as_slice())
            .map_err(|err| format!("partition {partition}: not a Groth16 proof: {err}"))?;
        let inputs = if entry.public_inputs.is_empty() {
            derived_public_inputs(circuit, constraints, seed, partition)?
        } else {
            entry
                .public_inputs
                .iter()
                .map(|hex| parse_field_element(hex))
                .collect::<Result<Vec<Fr>, String>>()
                .map_err(|err| format!("partition {partition}: {err}"))?
        };
        if !groth16::verify(&params.pvk, &proof, &inputs) {
            return Err(format!("partition {partition}: the proof does not verify"));
        }
    }
    Ok(())
}

/// Partition `partition`'s public inputs, from synthesizing its circuit as the prover does.
pub fn derived_public_inputs(
    circuit: CircuitKind,
    constraints: usize,
    seed: u64,
    partition: i32,
) -> Result<Vec<Fr>, String> {
    let index = u32::try_from(partition).map_err(|_| format!("partition {partition}"))?;
    let failed = |err: &dyn std::fmt::Display| format!("partition {partition}: {err}");
    let shape = circuit.shape(constraints).map_err(|e| failed(&e))?;
    let instance = circuit
        .partition(constraints, seed, index)
        .map_err(|e| failed(&e))?;
    let synthesized = groth16::synthesize(instance, shape).map_err(|e| failed(&e))?;
    Ok(synthesized.public_inputs().to_vec())
}

/// A field element from the status's big-endian hex (64 digits).
fn parse_field_element(hex: &str) -> Result<Fr, String> {
    let invalid = || format!("public input {hex:?} is not 64 hex digits of a field element");
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(invalid());
    }
    let mut little_endian = [0u8; 32];
    for (i, byte) in little_endian.iter_mut().rev().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| invalid())?;
    }
    Option::from(Fr::from_bytes_le(&little_endian)).ok_or_else(invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merkle_jobs_beyond_two_paths_have_more_inputs_than_a_status_entry_holds() {
        use proofpipe_crds::MAX_STATUS_PUBLIC_INPUTS;
        let merkle = CircuitKind::MerkleSha256;
        let inputs = |constraints| merkle.shape(constraints).unwrap().inputs - 1;
        // Two inputs per path of up to 16 levels (one SHA-256 compression each).
        assert_eq!(inputs(1 << 16), 2);
        assert_eq!(inputs(850_000), MAX_STATUS_PUBLIC_INPUTS);
        assert!(inputs(1 << 20) > MAX_STATUS_PUBLIC_INPUTS);
        let derived = derived_public_inputs(merkle, 1 << 16, 7, 0).unwrap();
        assert_eq!(derived.len(), inputs(1 << 16));
        // Each partition's witness is its own: so are its derived inputs.
        assert_ne!(
            derived,
            derived_public_inputs(merkle, 1 << 16, 7, 1).unwrap()
        );
        let mul_chain = derived_public_inputs(CircuitKind::MulChain, 1024, 7, 0).unwrap();
        assert_eq!(mul_chain.len(), 1);
    }

    #[test]
    fn big_endian_hex_is_read_most_significant_byte_first() {
        let one = format!("{:064x}", 1);
        assert_eq!(parse_field_element(&one), Ok(Fr::from(1u64)));
        let big = format!("{:064x}", 0x0102_0304u64);
        assert_eq!(parse_field_element(&big), Ok(Fr::from(0x0102_0304u64)));
    }

    #[test]
    fn malformed_or_out_of_field_inputs_are_rejected() {
        for bad in ["01", &"zz".repeat(32), &"ff".repeat(32)] {
            assert!(parse_field_element(bad).is_err(), "{bad}");
        }
    }
}
