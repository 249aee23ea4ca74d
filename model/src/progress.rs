//! Which partitions of a job are proved: one rule for the operator (progress, success), the
//! provers (what is left to prove) and the gateway. A proof counts only when it is verified,
//! of a partition the job has, and written by a pod the job was assigned to (ADR 0014): any
//! holder of the prover Role can write a job's status, only the operator records assignments.

use std::collections::BTreeSet;

/// One partition proof as a job's status holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProofRecord<'a> {
    pub partition: i64,
    pub verified: bool,
    pub proved_by: &'a str,
}

/// The distinct partitions of `0..partitions` with a proof that counts; `counts(pod)` says
/// whether `pod`'s work counts.
pub fn proved_partitions<'a>(
    proofs: impl IntoIterator<Item = ProofRecord<'a>>,
    partitions: u32,
    counts: impl Fn(&str) -> bool,
) -> BTreeSet<u32> {
    proofs
        .into_iter()
        .filter(|proof| proof.verified && counts(proof.proved_by))
        .filter_map(|proof| u32::try_from(proof.partition).ok())
        .filter(|&partition| partition < partitions)
        .collect()
}

/// Whether the work of `pod` counts for a job assigned to `assigned_pods` (`None`: a job
/// assigned by an operator that predates the list, trusted once it has had an attempt).
pub fn counts_work_of(assigned_pods: Option<&[String]>, attempts: Option<i32>, pod: &str) -> bool {
    match assigned_pods {
        Some(pods) => pods.iter().any(|assigned| assigned == pod),
        // A job never assigned has no prover whose proofs could count.
        None => attempts.unwrap_or(0) > 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proof(partition: i64, verified: bool, proved_by: &str) -> ProofRecord<'_> {
        ProofRecord {
            partition,
            verified,
            proved_by,
        }
    }

    #[test]
    fn only_verified_proofs_of_assigned_pods_within_the_job_count_once_each() {
        let assigned = vec!["p0".to_owned(), "p1".to_owned()];
        let counts = |pod: &str| counts_work_of(Some(&assigned), Some(2), pod);
        let proofs = [
            proof(0, true, "p0"),
            proof(0, true, "p1"),
            proof(1, false, "p0"),
            proof(2, true, "rogue"),
            proof(3, true, "p1"),
            proof(9, true, "p0"),
            proof(-1, true, "p0"),
        ];
        assert_eq!(proved_partitions(proofs, 4, counts), BTreeSet::from([0, 3]));
    }

    #[test]
    fn a_job_without_the_list_trusts_its_provers_once_it_had_an_attempt() {
        assert!(counts_work_of(None, Some(1), "anyone"));
        assert!(!counts_work_of(None, None, "anyone"));
        assert!(!counts_work_of(Some(&[]), Some(3), "anyone"));
    }
}
