//! A placeholder partition's witness both ways: by `StackedCircuit`'s own synthesis (the
//! gadgets on a witness-only constraint system) and natively ([`crate::witness::porep`]), for
//! the tests that hold one to the other and the benchmark that times them.

use bellperson::util_cs::witness_cs::WitnessCS;
use bellperson::{Circuit, ConstraintSystem};
use blstrs::Scalar as Fr;
use filecoin_proofs::{DefaultPieceHasher, with_shape};
use filecoin_proofs_api::MerkleTreeTrait;
use storage_proofs_porep::stacked::{self, StackedCircuit};

use super::super::porep::TreeDomain;
use super::{Placeholder, placeholder_partitions, refuse_non_interactive};
use crate::witness::porep::PartitionWitness;
use crate::witness::{Assignment, write_whole};
use proofpipe_pipeline::error::ProverError;

/// Partition `partition` of a placeholder job: its circuit, public inputs and vanilla proofs.
#[allow(clippy::type_complexity)]
pub fn placeholder_circuit_and_proofs<Tree: 'static + MerkleTreeTrait>(
    placeholder: Placeholder,
    partition: usize,
) -> Result<
    (
        StackedCircuit<Tree, DefaultPieceHasher>,
        stacked::PublicInputs<TreeDomain<Tree>, filecoin_proofs::DefaultPieceDomain>,
        Vec<stacked::Proof<Tree, DefaultPieceHasher>>,
    ),
    ProverError,
> {
    let fail = |message: String| ProverError::Synthesis {
        partition: partition as u32,
        message,
    };
    let partitions = placeholder_partitions::<Tree>(placeholder)?;
    let vanilla = partitions.vanilla(partition).map_err(fail)?.into_owned();
    let circuit = partitions.circuit_of(&vanilla, partition).map_err(fail)?;
    Ok((circuit, partitions.public_inputs.clone(), vanilla))
}

/// One placeholder partition (of as many challenges as the placeholder says), ready to be
/// witnessed either way, as often as asked.
pub struct PlaceholderWitness {
    gadget: Box<dyn Fn() -> Result<Assignment, ProverError> + Send + Sync>,
    native: PartitionWitness,
}

impl PlaceholderWitness {
    pub fn new(placeholder: Placeholder) -> Result<Self, ProverError> {
        refuse_non_interactive(placeholder.seal_proof)?;
        let size = u64::from(placeholder.seal_proof.sector_size());
        with_shape!(size, placeholder_witness, placeholder)
    }
}

fn placeholder_witness<Tree: 'static + MerkleTreeTrait>(
    placeholder: Placeholder,
) -> Result<PlaceholderWitness, ProverError> {
    let (circuit, public_inputs, vanilla) = placeholder_circuit_and_proofs::<Tree>(placeholder, 0)?;
    let native = PartitionWitness::of(&public_inputs, &vanilla).map_err(|message| {
        ProverError::Synthesis {
            partition: 0,
            message,
        }
    })?;
    let gadget = move || {
        let mut cs = WitnessCS::<Fr>::new();
        circuit
            .clone()
            .synthesize(&mut cs)
            .map_err(|e| ProverError::Synthesis {
                partition: 0,
                message: e.to_string(),
            })?;
        Ok(Assignment {
            inputs: cs.scalar_inputs(),
            aux: cs.scalar_aux(),
        })
    };
    Ok(PlaceholderWitness {
        gadget: Box::new(gadget),
        native,
    })
}

impl PlaceholderWitness {
    /// The circuit's own synthesis, on this thread.
    pub fn by_gadgets(&self) -> Result<Assignment, ProverError> {
        (self.gadget)()
    }

    /// The native witness, on this thread, into `out` (cleared first; its capacity is kept).
    pub fn natively_into(&self, out: &mut Assignment) {
        write_whole(&self.native, out);
    }
}
