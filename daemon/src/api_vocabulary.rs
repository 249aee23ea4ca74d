//! The API's vocabulary and the pipeline's agree: the names the CRDs accept and show are the
//! ones the pipeline builds and reports. Checked here, where the API meets the pipeline.

use proofpipe_pipeline::circuits::CircuitKind;
use proofpipe_pipeline::error::FailureClass;
use proofpipe_pipeline::pipeline::Stage;

#[test]
fn the_api_accepts_exactly_the_circuits_the_prover_builds() {
    let api: Vec<&str> = proofpipe_crds::CIRCUITS.to_vec();
    let built: Vec<&str> = CircuitKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(
        api, built,
        "the CRD's circuit list and CircuitKind drifted apart"
    );
}

#[test]
fn the_api_knows_each_circuits_minimum_size() {
    // The CRD refuses a job below its circuit's minimum (crds/src/proof_job.rs), which
    // would otherwise fail on every attempt; the numbers there must be these.
    let api: Vec<(&str, i32)> = proofpipe_crds::CIRCUIT_MIN_CONSTRAINTS.to_vec();
    let built: Vec<(&str, i32)> = CircuitKind::ALL
        .iter()
        .map(|kind| {
            let min = i32::try_from(kind.min_constraints()).expect("a minimum fits in i32");
            (kind.name(), min)
        })
        .collect();
    assert_eq!(
        api, built,
        "CIRCUIT_MIN_CONSTRAINTS in crds/src/proof_job.rs and the circuits' shapes drifted \
         apart"
    );
}

#[test]
fn stage_names_are_the_status_stage_seconds_fields() {
    // One vocabulary: metric labels and log fields name the stages as a ProofJob's
    // status.stageSeconds does.
    let status = serde_json::to_value(proofpipe_crds::StageSeconds::default()).unwrap();
    let mut fields: Vec<&str> = status
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut names: Vec<&str> = Stage::ALL.iter().map(|stage| stage.name()).collect();
    fields.sort_unstable();
    names.sort_unstable();
    assert_eq!(names, fields);
}

#[test]
fn the_gpu_lost_reason_is_the_apis() {
    assert_eq!(
        FailureClass::GpuLost.reason(),
        proofpipe_crds::GPU_LOST_REASON
    );
}
