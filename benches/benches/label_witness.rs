//! One PoRep label's witness (~79% of a 32 GiB challenge's witness is 11 of them): the
//! circuit's own gadget (storage-proofs-porep's `create_label_circuit` on bellperson's
//! witness-only constraint system, as synthesis computes it today) against
//! `witness::sha256::create_label` (native, the same values in the same order), on one
//! thread, in one run. The two witnesses are checked equal first.
//!
//! `cargo bench -p proofpipe-benches --bench label_witness` (PROOFPIPE_BENCH_LABELS, 100;
//! PROOFPIPE_BENCH_RUNS, 3).

use std::time::{Duration, Instant};

use bellperson::ConstraintSystem;
use bellperson::gadgets::boolean::Boolean;
use bellperson::gadgets::uint32::UInt32;
use bellperson::util_cs::witness_cs::WitnessCS;
use blstrs::Scalar as Fr;
use proofpipe_benches::{env_count, print_median_ratio};
use proofpipe_filecoin::witness::sha256::{
    LABEL_PARENTS, Word, allocate_gadget_element, create_label, padded_element,
};
use proofpipe_pipeline::witness::Assignment;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_porep::stacked::create_label_circuit;

struct Label {
    replica_id: [Word; 8],
    parents: [[Word; 8]; LABEL_PARENTS],
    node: u64,
}

/// The gadget's witness of a label past its inputs, and the time of the label alone.
fn gadget(label: &Label) -> (Vec<Fr>, Duration) {
    let mut cs = WitnessCS::<Fr>::new();
    let replica = allocate_gadget_element(&mut cs, &label.replica_id).unwrap();
    let parents: Vec<Vec<Boolean>> = label
        .parents
        .iter()
        .map(|p| allocate_gadget_element(&mut cs, p).unwrap())
        .collect();
    let node = UInt64::alloc(cs.namespace(|| "node"), Some(label.node)).unwrap();
    let inputs = cs.scalar_aux().len();
    let started = Instant::now();
    create_label_circuit(
        cs.namespace(|| "label"),
        &replica,
        parents,
        UInt32::constant(5),
        node,
    )
    .unwrap();
    let took = started.elapsed();
    (cs.scalar_aux().split_off(inputs), took)
}

fn native(out: &mut Assignment, label: &Label) -> Fr {
    create_label(
        out,
        &label.replica_id,
        Word::constant(5),
        [
            Word::allocated((label.node >> 32) as u32),
            Word::allocated(label.node as u32),
        ],
        &label.parents,
    )
}

fn main() {
    let labels = env_count("PROOFPIPE_BENCH_LABELS", 100);
    let runs = env_count("PROOFPIPE_BENCH_RUNS", 3);
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let inputs: Vec<Label> = (0..labels)
        .map(|_| Label {
            replica_id: padded_element(std::array::from_fn(|_| rng.next_u32())),
            parents: std::array::from_fn(|_| {
                padded_element(std::array::from_fn(|_| rng.next_u32()))
            }),
            node: u64::from(rng.next_u32()),
        })
        .collect();
    let mut out = Assignment::default();
    for label in inputs.iter().take(3) {
        out.aux.clear();
        native(&mut out, label);
        assert!(
            gadget(label).0 == out.aux,
            "the native witness must equal the gadget's"
        );
    }
    let mut ratios = Vec::new();
    for run in 0..runs {
        let gadget_time: Duration = inputs.iter().map(|l| gadget(l).1).sum();
        let started = Instant::now();
        for label in &inputs {
            out.aux.clear();
            std::hint::black_box(native(&mut out, label));
        }
        let native_time = started.elapsed();
        let per = |d: Duration| d.as_secs_f64() * 1e3 / labels as f64;
        let ratio = gadget_time.as_secs_f64() / native_time.as_secs_f64();
        println!(
            "label witness, {labels} labels of {} aux, one thread, run {run}: gadget {:.2} ms/label | native {:.3} ms/label | gadget / native = {ratio:.1}",
            out.aux.len(),
            per(gadget_time),
            per(native_time),
        );
        ratios.push(ratio);
    }
    print_median_ratio(ratios);
}
