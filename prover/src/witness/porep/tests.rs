//! A challenge's native witness held value for value to `StackedCircuit`'s own synthesis, on
//! placeholder vanilla proofs of real sector shapes (the witness does not depend on the values
//! proving anything).

use bellperson::util_cs::witness_cs::WitnessCS;
use bellperson::{Circuit, ConstraintSystem};
use filecoin_proofs::{SectorShape2KiB, SectorShape8MiB};
use filecoin_proofs_api::RegisteredSealProof;

use super::*;
use crate::filecoin::shape::{Placeholder, placeholder_circuit_and_proofs};
use crate::witness::{Assignment, Counter};

fn held_to_the_circuit<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof, seed: u64) {
    let placeholder = Placeholder {
        seed,
        challenges_per_partition: Some(1),
        ..Placeholder::of(proof)
    };
    let (circuit, public_inputs, vanilla) =
        placeholder_circuit_and_proofs::<Tree>(placeholder, 0).unwrap();
    let mut cs = WitnessCS::<Fr>::new();
    circuit.synthesize(&mut cs).unwrap();

    let witness = PartitionWitness::of(&public_inputs, &vanilla).unwrap();
    let mut native = Assignment::default();
    native.inputs.push(ff::Field::ONE);
    witness.prefix(&mut native);
    let prefix = (native.inputs.len(), native.aux.len());
    witness.part(0, &mut native);
    let what = format!("{proof:?}");
    let (inputs, aux) = (cs.scalar_inputs(), cs.scalar_aux());
    assert_eq!(
        (native.inputs.len(), native.aux.len()),
        (inputs.len(), aux.len()),
        "{what}: (inputs, aux) counts"
    );
    if let Some(i) = (0..aux.len()).find(|&i| native.aux[i] != aux[i]) {
        panic!("{what}: aux {i} differs (the prefix has {prefix:?})");
    }
    assert_eq!(native.inputs, inputs, "{what}: inputs");

    let mut counter = Counter::default();
    witness.part(0, &mut counter);
    assert_eq!(counter.aux, native.aux.len() - prefix.1);
}

#[test]
fn a_2kib_challenge_is_witnessed_value_for_value_as_stacked_circuit_synthesizes_it() {
    held_to_the_circuit::<SectorShape2KiB>(RegisteredSealProof::StackedDrg2KiBV1_1, 41);
}

#[test]
fn an_8mib_challenge_is_witnessed_value_for_value_as_stacked_circuit_synthesizes_it() {
    held_to_the_circuit::<SectorShape8MiB>(RegisteredSealProof::StackedDrg8MiBV1_1, 42);
}

#[test]
fn labels_repeat_their_parents_as_the_circuit_does() {
    let parents: Vec<[Word; 8]> = (0..14).map(|i| [Word::constant(i); 8]).collect();
    let later = expanded_parents(&parents, 2);
    assert_eq!(later[14], parents[0]);
    assert_eq!(later[36], parents[8]);
    let first = expanded_parents(&parents[..6], 1);
    assert_eq!(first[35], parents[5]);
    assert_eq!(first[36], parents[0]);
}
