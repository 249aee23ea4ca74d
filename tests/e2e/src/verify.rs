//! Checks a finished job's proofs independently of the daemon that reported them verified:
//! each proof is decoded from the job's status and verified against the parameters of the
//! job's circuit and size, with the public inputs the status lists.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bellperson::groth16::Proof;
use blstrs::{Bls12, Scalar as Fr};
use proofpipe_crds::ProofJob;
use proofpipe_prover::circuits::CircuitKind;
use proofpipe_prover::groth16;
use proofpipe_prover::params::ParamsStore;

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
        let inputs = entry
            .public_inputs
            .iter()
            .map(|hex| parse_field_element(hex))
            .collect::<Result<Vec<Fr>, String>>()
            .map_err(|err| format!("partition {partition}: {err}"))?;
        if !groth16::verify(&params.pvk, &proof, &inputs) {
            return Err(format!("partition {partition}: the proof does not verify"));
        }
    }
    Ok(())
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
