//! A Window/Winning PoSt partition's witness (storage-proofs-post's `FallbackPoStCircuit`),
//! computed natively. The circuit has no common prefix; each sector is an independent part
//! (`Sector::synthesize`):
//!
//! 1. comm_r_last, comm_c and comm_r (comm_r also an input), and the Poseidon check
//!    comm_r = H(comm_c, comm_r_last);
//! 2. per challenge, the leaf (allocated by `PoRCircuit` from its value) and its tree_r_last
//!    path up to comm_r_last ([`super::merkle::por_path`]).
//!
//! Not wired into the prover yet: PoSt partitions synthesize in one pass, and a native witness
//! needs the R1CS matrices for a, b, c (two-pass synthesis, as PoRep has).

use blstrs::Scalar as Fr;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_post::fallback::{self, FallbackPoStCircuit};

use super::merkle::{PathLevel, TreeHasher, path_of, por_path, poseidon_hash_of};
use super::{NativeWitness, WitnessSink};

/// One challenge of a sector: the challenged leaf of tree_r_last and its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChallengeOpening {
    pub leaf: Fr,
    pub path: Vec<PathLevel>,
}

/// What one sector's part of the circuit reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectorInputs {
    pub comm_r: Fr,
    pub comm_c: Fr,
    pub comm_r_last: Fr,
    pub challenges: Vec<ChallengeOpening>,
}

/// One sector's witness.
pub fn sector<S: WitnessSink>(out: &mut S, inputs: &SectorInputs) {
    out.scalar(inputs.comm_r_last);
    out.scalar(inputs.comm_c);
    out.scalar(inputs.comm_r);
    out.input(inputs.comm_r);
    poseidon_hash_of(out, &[inputs.comm_c, inputs.comm_r_last]);
    for challenge in &inputs.challenges {
        out.scalar(challenge.leaf);
        por_path(out, TreeHasher::Poseidon, challenge.leaf, &challenge.path);
    }
}

/// A partition's witness, natively: its sectors' values.
#[derive(Clone, Debug)]
pub struct PostPartitionWitness {
    sectors: Vec<SectorInputs>,
}

impl PostPartitionWitness {
    pub fn new(sectors: Vec<SectorInputs>) -> Self {
        Self { sectors }
    }

    /// The witness of `circuit` (as `FallbackPoStCompound::circuit` built it from `vanilla`):
    /// the commitments and leaves from the circuit's sectors, the paths from the vanilla
    /// sector proofs they were made of (the circuit keeps its own crate-private).
    pub fn of<Tree: 'static + MerkleTreeTrait>(
        circuit: &FallbackPoStCircuit<Tree>,
        vanilla: &fallback::Proof<Tree::Proof>,
    ) -> Result<Self, String> {
        if circuit.sectors.len() != vanilla.sectors.len() {
            return Err(format!(
                "the circuit has {} sectors, the vanilla proof {}",
                circuit.sectors.len(),
                vanilla.sectors.len()
            ));
        }
        let missing = |what: &str| format!("a circuit sector without its {what}");
        circuit
            .sectors
            .iter()
            .zip(&vanilla.sectors)
            .map(|(sector, proof)| {
                if sector.leafs.len() != proof.inclusion_proofs.len() {
                    return Err(format!(
                        "a circuit sector of {} challenges from {} inclusion proofs",
                        sector.leafs.len(),
                        proof.inclusion_proofs.len()
                    ));
                }
                let challenges = sector
                    .leafs
                    .iter()
                    .zip(&proof.inclusion_proofs)
                    .map(|(leaf, inclusion)| {
                        Ok(ChallengeOpening {
                            leaf: leaf.ok_or_else(|| missing("leaf"))?,
                            path: path_of(inclusion),
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                Ok(SectorInputs {
                    comm_r: sector.comm_r.ok_or_else(|| missing("comm_r"))?,
                    comm_c: sector.comm_c.ok_or_else(|| missing("comm_c"))?,
                    comm_r_last: sector.comm_r_last.ok_or_else(|| missing("comm_r_last"))?,
                    challenges,
                })
            })
            .collect::<Result<Vec<_>, String>>()
            .map(Self::new)
    }
}

impl NativeWitness for PostPartitionWitness {
    fn parts(&self) -> usize {
        self.sectors.len()
    }

    fn prefix<S: WitnessSink>(&self, _: &mut S) {}

    fn part<S: WitnessSink>(&self, i: usize, out: &mut S) {
        sector(out, &self.sectors[i]);
    }
}
