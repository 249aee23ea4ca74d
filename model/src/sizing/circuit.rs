//! What the memory model counts in: a partition's R1CS dimensions, its FFT domain, and the
//! bytes of a scalar and of the curve points its proving key holds.

use serde::{Deserialize, Serialize};

/// Bytes of a BLS12-381 scalar.
pub(super) const SCALAR: u64 = 32;

/// Bytes of an affine G1 point (blstrs' `G1Affine`) and G2 point (`G2Affine`); the prover
/// holds these to the real types in a test.
pub const G1_AFFINE_BYTES: u64 = 96;
pub const G2_AFFINE_BYTES: u64 = 192;

/// R1CS dimensions of one partition. `constraints` counts every constraint the prover
/// evaluates, including the one Groth16 adds per public input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CircuitShape {
    pub constraints: usize,
    /// Private (auxiliary) variables.
    pub aux: usize,
    /// Public inputs, including the constant ONE.
    pub inputs: usize,
}

/// The FFT domain of a circuit of `constraints` constraints: the next power of two.
pub fn domain_size(constraints: usize) -> usize {
    constraints.max(1).next_power_of_two()
}
