//! The names the operator and the prover daemons agree on (ADR 0003): labels, the field
//! manager, the finalizer, the prover ServiceAccount.

pub use proofpipe_crds::{ASSIGNED_POD_LABEL, POOL_LABEL};

/// Annotation on an assigned ProofJob holding the UID of its pod. Prover pod names are
/// reused (lowest free ordinal), so a replacement pod can carry the name of the lost one:
/// the UID tells them apart, and the job is requeued rather than silently continued.
pub const ASSIGNED_POD_UID_ANNOTATION: &str = "proofpipe.dev/assigned-pod-uid";

/// Label on each prover pod: a hash of the pod spec its pool's template gave it. A pod whose
/// hash differs from the one the pool's template gives now is outdated and is rolled.
pub const TEMPLATE_HASH_LABEL: &str = "proofpipe.dev/template-hash";

/// Field manager of every server-side apply the operator makes.
pub const FIELD_MANAGER: &str = "proofpipe-operator";

/// Finalizer on ProofJobs: deleting a job first unassigns it, so its daemon cancels it.
pub const FINALIZER: &str = "proofpipe.dev/cleanup";

/// `app.kubernetes.io/name` of prover pods.
pub const NAME_LABEL: &str = "app.kubernetes.io/name";
/// Value of [`NAME_LABEL`] on prover pods.
pub const PROVER_APP: &str = "proofpipe-prover";
/// `app.kubernetes.io/managed-by` of everything the operator creates.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// ServiceAccount (and Role, RoleBinding) the prover daemons run as, one per namespace.
pub const PROVER_SERVICE_ACCOUNT: &str = "proofpipe-prover";

/// Label selector of every prover pod, whatever its pool.
pub fn all_provers_selector() -> String {
    format!("{NAME_LABEL}={PROVER_APP}")
}

/// Label selector of one pool's prover pods: the pool's `status.selector`.
pub fn pool_selector(pool: &str) -> String {
    format!("{POOL_LABEL}={pool},{NAME_LABEL}={PROVER_APP}")
}

/// Name of the prover pod with ordinal `n` in `pool`.
pub fn prover_pod_name(pool: &str, n: u32) -> String {
    format!("{pool}-prover-{n}")
}

/// The ordinal of a prover pod of `pool`, or `None` for a name the operator did not give.
pub fn prover_pod_ordinal(pool: &str, pod: &str) -> Option<u32> {
    let digits = pod.strip_prefix(pool)?.strip_prefix("-prover-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_round_trip() {
        assert_eq!(
            prover_pod_ordinal("gpu", &prover_pod_name("gpu", 7)),
            Some(7)
        );
        assert_eq!(prover_pod_ordinal("gpu", "gpu-prover-"), None);
        assert_eq!(prover_pod_ordinal("gpu", "gpu-prover-x1"), None);
        assert_eq!(prover_pod_ordinal("gpu", "cpu-prover-1"), None);
        // A pool whose name extends another's does not claim its pods.
        assert_eq!(prover_pod_ordinal("gpu", "gpu-a-prover-1"), None);
    }

    #[test]
    fn pool_selector_is_the_contract() {
        assert_eq!(
            pool_selector("gpu"),
            "proofpipe.dev/pool=gpu,app.kubernetes.io/name=proofpipe-prover"
        );
    }
}
