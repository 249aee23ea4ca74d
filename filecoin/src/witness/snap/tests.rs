//! A SnapDeals partition's native witness held value for value to `EmptySectorUpdateCircuit`'s
//! own synthesis, on placeholder vanilla proofs of real sector shapes (values the circuit's own
//! checks accept; the witness does not depend on them proving anything).

use bellperson::util_cs::witness_cs::WitnessCS;
use bellperson::{Circuit, ConstraintSystem};
use filecoin_proofs::{SectorShape2KiB, SectorShape8MiB};
use filecoin_proofs_api::RegisteredUpdateProof;

use super::*;
use crate::snap::placeholder::placeholder_partition;
use crate::snap::source::circuit_of;
use crate::witness::{Assignment, Counter, assert_same_assignment, write_whole};

fn held_to_the_circuit<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredUpdateProof,
    partition: u32,
    seed: u64,
) {
    let pp = PublicParams::from_sector_size(u64::from(proof.sector_size()));
    let (inputs, vanilla) = placeholder_partition::<Tree>(&pp, seed, partition).unwrap();
    let mut cs = WitnessCS::<Fr>::new();
    circuit_of(&pp, &inputs, &vanilla)
        .unwrap()
        .synthesize(&mut cs)
        .unwrap();

    let witness = SnapPartitionWitness::of(&pp, &inputs, &vanilla).unwrap();
    let mut native = Assignment::default();
    write_whole(&witness, &mut native);
    let mut prefix = Counter::default();
    witness.prefix(&mut prefix);
    let what = format!(
        "{proof:?} partition {partition} (a prefix of {} inputs and {} aux, {} parts)",
        prefix.inputs + 1,
        prefix.aux,
        witness.parts()
    );
    assert_same_assignment(&what, &native, &cs.scalar_inputs(), &cs.scalar_aux());
    // apex leaves - 1 hashes, the partition path with the digests, and the challenges.
    assert_eq!(
        witness.parts(),
        pp.apex_leaf_count - 1 + 1 + pp.challenge_count,
        "{what}"
    );
}

#[test]
fn a_2kib_snap_partition_is_witnessed_value_for_value_as_its_circuit_synthesizes_it() {
    held_to_the_circuit::<SectorShape2KiB>(RegisteredUpdateProof::StackedDrg2KiBV1, 0, 51);
}

/// 8 MiB has what 2 KiB lacks: partition bits (4 partitions), 128 apex leaves, h = 10 among
/// six choices.
#[test]
fn an_8mib_snap_partition_is_witnessed_value_for_value_as_its_circuit_synthesizes_it() {
    held_to_the_circuit::<SectorShape8MiB>(RegisteredUpdateProof::StackedDrg8MiBV1, 2, 52);
}

/// The challenges are the circuit's: derived from comm_r_new and the partition, not read from
/// the vanilla proof's paths (a vanilla proof of other challenges makes an unsatisfied witness,
/// as it does an unsatisfied circuit).
#[test]
fn challenges_are_derived_as_the_circuit_derives_them() {
    let proof = RegisteredUpdateProof::StackedDrg8MiBV1;
    let pp = PublicParams::from_sector_size(u64::from(proof.sector_size()));
    let (inputs, vanilla) = placeholder_partition::<SectorShape8MiB>(&pp, 7, 3).unwrap();
    let witness = SnapPartitionWitness::of(&pp, &inputs, &vanilla).unwrap();
    let expected: Vec<u64> = Challenges::new(pp.sector_nodes, inputs.comm_r_new, 3)
        .map(u64::from)
        .collect();
    let got: Vec<u64> = witness.challenges.iter().map(|c| c.challenge).collect();
    assert_eq!(got, expected);
    // Partition 3's bits sit above each challenge's own.
    let below_partition = pp.challenge_bit_len - pp.partition_bit_len;
    assert!(got.iter().all(|c| c >> below_partition == 3));
}

/// A partition proof of another shape is refused, named.
#[test]
fn a_partition_proof_of_another_shape_is_refused() {
    let proof = RegisteredUpdateProof::StackedDrg2KiBV1;
    let pp = PublicParams::from_sector_size(u64::from(proof.sector_size()));
    let (inputs, mut vanilla) = placeholder_partition::<SectorShape2KiB>(&pp, 0, 0).unwrap();
    vanilla.challenge_proofs.pop();
    let err = SnapPartitionWitness::of(&pp, &inputs, &vanilla).unwrap_err();
    assert!(
        err.contains("8 apex leaves and 9 challenges, where the circuit has 8 and 10"),
        "{err}"
    );
}
