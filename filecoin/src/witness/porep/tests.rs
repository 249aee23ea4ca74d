//! A challenge's native witness held value for value to `StackedCircuit`'s own synthesis, on
//! placeholder vanilla proofs of real sector shapes (the witness does not depend on the values
//! proving anything).

use bellperson::util_cs::witness_cs::WitnessCS;
use bellperson::{Circuit, ConstraintSystem};
use filecoin_proofs::{SectorShape2KiB, SectorShape8MiB};
use filecoin_proofs_api::RegisteredSealProof;

use super::*;
use crate::shape::{Placeholder, placeholder_circuit_and_proofs};
use crate::witness::{Assignment, Counter, assert_same_assignment, write_whole};

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
    let mut prefix = Assignment::default();
    witness.prefix(&mut prefix);
    let mut native = Assignment::default();
    write_whole(&witness, &mut native);
    let what = format!(
        "{proof:?} (a prefix of {} inputs and {} aux)",
        prefix.inputs.len(),
        prefix.aux.len()
    );
    assert_same_assignment(&what, &native, &cs.scalar_inputs(), &cs.scalar_aux());

    let mut counter = Counter::default();
    witness.part(0, &mut counter);
    assert_eq!(counter.aux, native.aux.len() - prefix.aux.len());
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
