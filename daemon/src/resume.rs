//! What is left to prove of a ProofJob, from its spec and the proofs already in its status:
//! a job (re)started after a crash or a requeue never proves a verified partition again.

use std::str::FromStr;

use kube::ResourceExt;
use proofpipe_crds::{PartitionProof, ProofJob, ProofJobStatus};

use proofpipe_pipeline::circuits::CircuitKind;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::pipeline::JobSpec;

/// Partitions in `0..partitions` that already have a verified proof in `status` by a pod
/// the job was assigned to (the operator's rule, ADR 0014), ascending.
pub fn proved_partitions(status: Option<&ProofJobStatus>, partitions: u32) -> Vec<u32> {
    status.map_or_else(Vec::new, |status| {
        status.proved_partitions(partitions).into_iter().collect()
    })
}

/// How many partitions of `job` have no verified proof yet.
pub fn remaining_partitions(job: &ProofJob) -> usize {
    job.remaining_partitions() as usize
}

/// Whether `job` still needs a prover: partitions without a verified proof, or, for Filecoin
/// work, the sector's proof not yet assembled and checked (a prover that stopped between the
/// last partition and `status.filecoin` leaves exactly that for the next one).
pub fn has_work_left(job: &ProofJob) -> bool {
    let unassembled = job.spec.filecoin.is_some()
        && job
            .status
            .as_ref()
            .and_then(|s| s.filecoin.as_ref())
            .is_none();
    remaining_partitions(job) > 0 || unassembled
}

/// Verified proofs in `status` made by `pod`, perhaps by an earlier process of a pod with
/// the same name. Server-side apply drops list entries a manager stops applying, so the
/// daemon applies these again along with its new proofs.
pub fn own_proofs(status: Option<&ProofJobStatus>, pod: &str) -> Vec<PartitionProof> {
    status
        .and_then(|s| s.proofs.as_deref())
        .unwrap_or_default()
        .iter()
        .filter(|proof| proof.verified && proof.proved_by == pod)
        .cloned()
        .collect()
}

/// The pipeline job for the partitions of a synthetic-circuit `job` still to prove.
pub fn pipeline_job(job: &ProofJob) -> Result<JobSpec, ProverError> {
    let spec = &job.spec;
    let invalid = |what: &'static str, value: Option<i64>| ProverError::InvalidArgument {
        what,
        reason: format!(
            "{} in ProofJob {}",
            value.map_or("nothing".into(), |v| v.to_string()),
            job.name_any()
        ),
    };
    let circuit = CircuitKind::from_str(spec.circuit.as_deref().unwrap_or_default())?;
    let constraints = spec
        .constraints
        .and_then(|c| usize::try_from(c).ok())
        .ok_or_else(|| invalid("constraints", spec.constraints.map(i64::from)))?;
    let partitions = spec
        .partitions
        .and_then(|p| u32::try_from(p).ok())
        .filter(|&p| p > 0)
        .ok_or_else(|| invalid("partitions", spec.partitions.map(i64::from)))?;
    let seed = u64::try_from(spec.seed).map_err(|_| invalid("seed", Some(spec.seed)))?;
    Ok(JobSpec {
        circuit,
        constraints,
        partitions,
        seed,
        priority: spec.priority,
        skip: proved_partitions(job.status.as_ref(), partitions),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use proofpipe_crds::ProofJobSpec;

    use super::*;

    pub fn proof(partition: i32, verified: bool, by: &str) -> PartitionProof {
        PartitionProof {
            partition,
            proof: format!("proof-{partition}"),
            verified,
            public_inputs: vec![],
            proved_by: by.into(),
        }
    }

    pub fn job(name: &str, partitions: i32, proofs: Vec<PartitionProof>) -> ProofJob {
        let spec = serde_json::from_value::<ProofJobSpec>(serde_json::json!({
            "pool": "gpu", "circuit": "mul-chain", "constraints": 1024, "partitions": partitions,
            "seed": 7, "priority": 3,
        }))
        .unwrap();
        let mut job = ProofJob::new(name, spec);
        job.metadata.uid = Some(format!("uid-{name}"));
        // Every prover that wrote a proof was assigned the job, as the operator records it.
        let mut assigned: Vec<String> = proofs.iter().map(|p| p.proved_by.clone()).collect();
        assigned.dedup();
        job.status = Some(ProofJobStatus {
            proofs: Some(proofs),
            attempts: Some(1),
            assigned_pods: Some(assigned),
            ..ProofJobStatus::default()
        });
        job
    }

    #[test]
    fn a_proof_by_a_pod_never_assigned_the_job_is_proved_again() {
        let mut job = job("a", 3, vec![proof(0, true, "p0"), proof(1, true, "rogue")]);
        job.status.as_mut().unwrap().assigned_pods = Some(vec!["p0".into()]);
        assert_eq!(proved_partitions(job.status.as_ref(), 3), [0]);
    }

    #[test]
    fn only_verified_in_range_partitions_are_skipped() {
        let job = job(
            "a",
            4,
            vec![
                proof(2, true, "p0"),
                proof(0, true, "p1"),
                proof(1, false, "p0"),
                proof(9, true, "p0"),
                proof(2, true, "p0"),
            ],
        );
        assert_eq!(proved_partitions(job.status.as_ref(), 4), [0, 2]);
        assert_eq!(remaining_partitions(&job), 2);
        assert_eq!(pipeline_job(&job).unwrap().todo(), [1, 3]);
    }

    #[test]
    fn no_status_means_everything_to_prove() {
        assert!(proved_partitions(None, 3).is_empty());
        let mut job = job("a", 3, vec![]);
        job.status = None;
        let spec = pipeline_job(&job).unwrap();
        assert_eq!(
            (spec.circuit, spec.constraints, spec.seed, spec.priority),
            (CircuitKind::MulChain, 1024, 7, 3)
        );
        assert_eq!(spec.todo(), [0, 1, 2]);
    }

    #[test]
    fn own_proofs_are_the_verified_ones_of_this_pod() {
        let job = job(
            "a",
            4,
            vec![
                proof(0, true, "p0"),
                proof(1, true, "p1"),
                proof(2, false, "p0"),
            ],
        );
        assert_eq!(
            own_proofs(job.status.as_ref(), "p0"),
            [proof(0, true, "p0")]
        );
    }

    #[test]
    fn an_unknown_circuit_or_negative_seed_is_refused() {
        let mut unknown = job("a", 1, vec![]);
        unknown.spec.circuit = Some("poseidon".into());
        assert!(
            pipeline_job(&unknown)
                .unwrap_err()
                .to_string()
                .contains("poseidon")
        );
        let mut negative = job("b", 1, vec![]);
        negative.spec.seed = -1;
        assert!(
            pipeline_job(&negative)
                .unwrap_err()
                .to_string()
                .contains("seed")
        );
    }
}
