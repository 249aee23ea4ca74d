//! The placeholder PoRep partition (`filecoin::shape`) is the real circuit: held to a sealed
//! 2 KiB sector's partition and to the parameters of a real (random) setup of it.
//!
//! Needs the Filecoin test data (`PROOFPIPE_FILECOIN_TESTDATA`, made by
//! `scripts/filecoin-testdata.sh`, as `tests/filecoin.rs`); without it the test says so and
//! passes, except under CI.

use std::sync::Arc;

use proofpipe_filecoin::c1::{self, SectorIdentity};
use proofpipe_filecoin::params::{self, DigestCheck};
use proofpipe_filecoin::porep;
use proofpipe_filecoin::shape::{self, Placeholder};
use proofpipe_kernels::EvalAlloc;
use proofpipe_pipeline::groth16::SynthesisMode;
use proofpipe_pipeline::params::QueryCounts;

mod support;
use support::{filecoin_testdata, same_structure};

#[test]
fn the_placeholder_partition_has_the_real_partitions_r1cs() {
    let Some(dir) = filecoin_testdata("PoRep") else {
        return;
    };
    let input = c1::read(
        &dir.join("c1-2KiB.json"),
        SectorIdentity::parse(None, None, None).unwrap(),
    )
    .unwrap();
    let proof = input.seal_proof();
    let key = params::load(proof, &dir.join("params"), DigestCheck::Skip).unwrap();
    let counts = shape::counted(proof).unwrap();

    // The committed counts are those of the real setup's proving key and of its shape.
    assert_eq!(QueryCounts::of(&key.params), counts.query_counts());
    // A loaded key's shape counts the FFT domain (H has one point fewer), the counts the
    // constraints themselves.
    let mut padded = counts.shape();
    padded.constraints = proofpipe_kernels::domain_size(counts.constraints);
    assert_eq!(key.shape, padded);

    // One pass: the sealed sector's partition and the placeholder's use the same variables in
    // every query, and have different witnesses.
    let sealed = porep::prepare(&input, SynthesisMode::OnePass).unwrap();
    let real = sealed
        .source
        .synthesize(0, key.shape, &EvalAlloc::heap())
        .unwrap();
    let placeholder = shape::placeholder_job(Placeholder::of(proof), SynthesisMode::OnePass)
        .unwrap()
        .source
        .synthesize(0, key.shape, &EvalAlloc::heap())
        .unwrap();
    assert!(same_structure(&real, &placeholder), "densities differ");
    assert_ne!(real.aux, placeholder.aux);
    assert_eq!(real.a_aux_density.get_total_density(), counts.a_aux_density);
    assert_eq!(real.b_aux_density.get_total_density(), counts.b_aux_density);

    // Two passes: matrices recorded from the placeholder (first in this process, so the
    // sealed sector's job reuses them) turn the sealed sector's witness into exactly its
    // one-pass a, b, c: the placeholder's R1CS is the real one, coefficient for coefficient
    // on this witness.
    let recorded = shape::placeholder_job(Placeholder::of(proof), SynthesisMode::Matrices)
        .unwrap()
        .matrices
        .unwrap();
    let two_pass = porep::prepare(&input, SynthesisMode::Matrices).unwrap();
    assert!(Arc::ptr_eq(two_pass.matrices.as_ref().unwrap(), &recorded));
    let from_matrices = two_pass
        .source
        .synthesize(0, key.shape, &EvalAlloc::heap())
        .unwrap();
    assert!(real.a == from_matrices.a, "a differs");
    assert!(real.b == from_matrices.b, "b differs");
    assert!(real.c == from_matrices.c, "c differs");
    assert!(
        real.inputs == from_matrices.inputs && real.aux == from_matrices.aux,
        "the assignments differ"
    );
    assert!(same_structure(&real, &from_matrices), "densities differ");
}
