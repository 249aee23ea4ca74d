//! The benchmark circuits a job can prove, each sized per partition by a constraint count
//! and given a deterministic witness from `(seed, partition)`.
//!
//! The R1CS *structure* of a circuit depends only on its kind and size, so one set of Groth16
//! parameters serves every seed and partition; only the witness changes.

mod counting;
mod merkle;
mod mul_chain;
mod rng;

use std::fmt;
use std::str::FromStr;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use serde::{Deserialize, Serialize};

pub use counting::{
    QueryCounts, R1csCounts, count_r1cs, count_r1cs_structure, enforce_input_independence,
};
pub use merkle::MerkleSha256;
pub use mul_chain::MulChain;

use crate::error::ProverError;

/// The circuits proofpipe knows how to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CircuitKind {
    /// Dense arithmetic: a chain of multiplications over random field elements.
    MulChain,
    /// Boolean-heavy: SHA-256 Merkle inclusion proofs, like Filecoin PoRep.
    MerkleSha256,
}

impl CircuitKind {
    pub const ALL: [CircuitKind; 2] = [CircuitKind::MulChain, CircuitKind::MerkleSha256];

    pub fn name(self) -> &'static str {
        match self {
            CircuitKind::MulChain => "mul-chain",
            CircuitKind::MerkleSha256 => "merkle-sha256",
        }
    }

    /// The fewest constraints per partition this circuit can be built with.
    pub fn min_constraints(self) -> usize {
        match self {
            CircuitKind::MulChain => MulChain::MIN_CONSTRAINTS,
            CircuitKind::MerkleSha256 => MerkleSha256::min_constraints(),
        }
    }

    /// The exact R1CS dimensions of one partition with `constraints` constraints.
    pub fn shape(self, constraints: usize) -> Result<CircuitShape, ProverError> {
        self.check_size(constraints)?;
        Ok(match self {
            CircuitKind::MulChain => MulChain::shape(constraints),
            CircuitKind::MerkleSha256 => MerkleSha256::layout(constraints).shape(),
        })
    }

    /// The circuit for one partition of a job, its witness derived from `(seed, partition)`.
    pub fn partition(
        self,
        constraints: usize,
        seed: u64,
        partition: u32,
    ) -> Result<PartitionCircuit, ProverError> {
        self.check_size(constraints)?;
        let rng = rng::witness_rng(seed, partition);
        Ok(match self {
            CircuitKind::MulChain => PartitionCircuit::MulChain(MulChain::new(constraints, rng)),
            CircuitKind::MerkleSha256 => {
                PartitionCircuit::MerkleSha256(Box::new(MerkleSha256::new(constraints, rng)))
            }
        })
    }

    fn check_size(self, constraints: usize) -> Result<(), ProverError> {
        let min = self.min_constraints();
        if constraints < min {
            return Err(ProverError::CircuitTooSmall {
                circuit: self.name(),
                constraints,
                min,
            });
        }
        if constraints > MAX_CONSTRAINTS {
            return Err(ProverError::CircuitTooLarge {
                circuit: self.name(),
                constraints,
                max: MAX_CONSTRAINTS,
            });
        }
        Ok(())
    }
}

/// 2^27 constraints per partition: the largest domain we allow (a 32 GiB PoRep partition is
/// ~2^27; beyond it one partition needs more memory than any prover host has).
pub const MAX_CONSTRAINTS: usize = 1 << 27;

impl fmt::Display for CircuitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CircuitKind {
    type Err = ProverError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CircuitKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| ProverError::UnknownCircuit(s.to_string()))
    }
}

/// R1CS dimensions of one partition: the model's, which the operator sizes jobs with.
pub use proofpipe_model::sizing::CircuitShape;

/// One partition's circuit, with its witness.
pub enum PartitionCircuit {
    MulChain(MulChain),
    // Boxed: it carries its witness generator, much larger than MulChain.
    MerkleSha256(Box<MerkleSha256>),
}

impl Circuit<Fr> for PartitionCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            PartitionCircuit::MulChain(c) => c.synthesize(cs),
            PartitionCircuit::MerkleSha256(c) => c.synthesize(cs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use counting::CountingCs;

    #[test]
    fn unknown_circuit_names_the_known_ones() {
        let err = "sha-tree".parse::<CircuitKind>().unwrap_err().to_string();
        assert!(
            err.contains("sha-tree") && err.contains("mul-chain") && err.contains("merkle-sha256"),
            "{err}"
        );
    }

    #[test]
    fn names_round_trip() {
        for kind in CircuitKind::ALL {
            assert_eq!(kind.name().parse::<CircuitKind>().unwrap(), kind);
        }
    }

    #[test]
    fn synthesized_shape_matches_declared_shape() {
        for (kind, n) in [
            (CircuitKind::MulChain, 1 << 10),
            (CircuitKind::MulChain, 1000),
            (CircuitKind::MerkleSha256, 1 << 15),
            (CircuitKind::MerkleSha256, 70_001),
        ] {
            let mut cs = CountingCs::new();
            kind.partition(n, 3, 1)
                .unwrap()
                .synthesize(&mut cs)
                .unwrap();
            let declared = kind.shape(n).unwrap();
            assert_eq!(cs.shape(), declared, "{kind} at {n}");
            assert_eq!(declared.constraints, n, "{kind} at {n}");
            assert!(
                cs.is_satisfied(),
                "{kind} at {n}: witness does not satisfy the circuit"
            );
        }
    }

    #[test]
    fn too_small_is_a_clear_error() {
        let err = CircuitKind::MerkleSha256
            .shape(1024)
            .unwrap_err()
            .to_string();
        assert!(err.contains("at least"), "{err}");
    }

    #[test]
    fn witnesses_differ_per_partition_and_repeat_per_seed() {
        let inputs = |seed, p| {
            let mut cs = CountingCs::new();
            CircuitKind::MulChain
                .partition(64, seed, p)
                .unwrap()
                .synthesize(&mut cs)
                .unwrap();
            cs.public_inputs()
        };
        assert_eq!(inputs(1, 0), inputs(1, 0));
        assert_ne!(inputs(1, 0), inputs(1, 1));
        assert_ne!(inputs(1, 0), inputs(2, 0));
    }
}
