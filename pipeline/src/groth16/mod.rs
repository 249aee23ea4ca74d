//! Groth16 split into the pipeline's stages, over bellperson's public pieces.
//!
//! bellperson proves a batch in one call; a pipeline needs the phases apart:
//! [`synthesize`] (CPU) -> [`prove_start`] (the GPU stage: quotient polynomial and MSMs; the
//! a/b/c evaluations are freed inside it) -> [`finalize`] (CPU: the G2 MSM when it is not on
//! the GPU stage, and proof assembly) -> [`verify`].

mod assignment;
mod matrices;
mod native;
mod prove;

pub use assignment::{Synthesized, synthesize, synthesize_into};
pub use matrices::{
    PREDICTED_TABLE_ENTRIES, R1csMatrices, file as matrices_file, synthesize_from_matrices,
    synthesize_from_matrices_into,
};
pub use native::synthesize_native_from_matrices_into;
pub use prove::{BasesPlacement, G2Placement, QueryPlacement, Started, finalize, prove_start};

use bellperson::groth16::{PreparedVerifyingKey, Proof, verify_proof};
use blstrs::{Bls12, Scalar as Fr};
use serde::Serialize;

/// How a partition is synthesized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SynthesisMode {
    /// Each constraint evaluated as the gadgets enforce it ([`synthesize`]).
    #[default]
    OnePass,
    /// The gadgets for the witness only, then a, b, c from the circuit's R1CS matrices,
    /// recorded once per circuit size ([`synthesize_from_matrices`], ADR 0010).
    Matrices,
}

/// Checks a proof with bellperson's verifier.
pub fn verify(
    pvk: &PreparedVerifyingKey<Bls12>,
    proof: &Proof<Bls12>,
    public_inputs: &[Fr],
) -> bool {
    verify_proof(pvk, proof, public_inputs).unwrap_or(false)
}

/// A proof in bellperson's compressed wire form (192 bytes).
pub fn proof_bytes(proof: &Proof<Bls12>) -> Vec<u8> {
    let mut out = Vec::with_capacity(192);
    proof.write(&mut out).expect("writing to a Vec cannot fail");
    out
}

/// The first bytes of a proof in hex, enough to tell proofs apart in logs.
pub fn short_hex(bytes: &[u8]) -> String {
    let head: String = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{head}…")
}

#[cfg(test)]
mod tests;
