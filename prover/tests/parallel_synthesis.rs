//! One partition on every core (ADR 0023), bit for bit: a sealed 2 KiB sector's PoRep
//! partition synthesized from the R1CS matrices with its challenges split over rayon's tasks
//! equals its one-pass synthesis in everything the GPU stage reads (a, b, c, the assignment,
//! the densities). Proofs from the parallel path are checked by filecoin-proofs' verifiers in
//! tests/filecoin.rs (`--synthesis matrices`) and tests/filecoin_post.rs.
//!
//! Needs the Filecoin test data (`PROOFPIPE_FILECOIN_TESTDATA`, made by
//! scripts/filecoin-testdata.sh); without it the test says so and passes, except under CI.

use std::path::PathBuf;

use proofpipe_filecoin::c1::{self, SectorIdentity};
use proofpipe_filecoin::porep;
use proofpipe_kernels::EvalAlloc;
use proofpipe_pipeline::groth16::SynthesisMode;

fn c1_file() -> Option<PathBuf> {
    match std::env::var_os("PROOFPIPE_FILECOIN_TESTDATA") {
        Some(dir) => Some(PathBuf::from(dir).join("c1-2KiB.json")),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!(
                "CI must run the Filecoin tests: scripts/test.sh exports PROOFPIPE_FILECOIN_TESTDATA"
            )
        }
        None => {
            eprintln!(
                "SKIPPED: PROOFPIPE_FILECOIN_TESTDATA is unset (scripts/filecoin-testdata.sh)"
            );
            None
        }
    }
}

#[test]
fn a_sealed_porep_partition_split_by_challenges_equals_its_one_pass_synthesis() {
    let Some(path) = c1_file() else { return };
    let input = c1::read(&path, SectorIdentity::default()).unwrap();
    let one_pass = porep::prepare(&input, SynthesisMode::OnePass).unwrap();
    let split = porep::prepare(&input, SynthesisMode::Matrices).unwrap();
    assert_eq!(one_pass.source.synthesis_threads(), 1);
    // 2 KiB partitions have 2 challenges: two sub-circuits, stitched.
    assert_eq!(split.source.synthesis_threads(), 2);
    let shape = split.matrices.as_ref().unwrap().shape();
    let heap = EvalAlloc::heap();
    let a = one_pass.source.synthesize(0, shape, &heap).unwrap();
    let b = split.source.synthesize(0, shape, &heap).unwrap();
    assert_eq!(a.a.len(), shape.constraints);
    assert_eq!(a.first_difference(&b), None, "the split synthesis differs");
}
