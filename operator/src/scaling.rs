//! How a pool's pods move toward `spec.replicas`: which to create, which to delete.
//!
//! Scale-down removes, in this order: pods not Ready yet, idle Ready pods, and busy pods
//! last, highest ordinal first within each group. So a busy prover is never chosen while an
//! idle one exists. This is why provers are plain Pods and not a StatefulSet, which always
//! removes the highest ordinal.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use crate::names::prover_pod_name;
use crate::prover_pods::{PodHealth, ProverPod};

/// Pod changes that bring a pool to its desired size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodPlan {
    /// Names of pods to create.
    pub create: Vec<String>,
    /// Terminated pods to delete so that they are replaced.
    pub replace: Vec<String>,
    /// Surplus pods to delete.
    pub scale_down: Vec<String>,
}

impl PodPlan {
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.replace.is_empty() && self.scale_down.is_empty()
    }
}

/// The plan for `pool` with `replicas` desired, given its pods and the pods that have a job.
pub fn plan(pool: &str, replicas: i32, pods: &[ProverPod], busy: &BTreeSet<String>) -> PodPlan {
    let desired = usize::try_from(replicas).unwrap_or(0);
    // A terminated pod still holding a job stays until the job has been requeued, so the
    // job's reconcile can read how its prover ended (an OOMKill, say) from the pod.
    let replace: Vec<String> = pods
        .iter()
        .filter(|pod| pod.health == PodHealth::Terminated && !busy.contains(&pod.name))
        .map(|pod| pod.name.clone())
        .collect();
    let mut alive: Vec<&ProverPod> = pods.iter().filter(|pod| pod.health.is_alive()).collect();

    let mut plan = PodPlan {
        replace,
        ..PodPlan::default()
    };
    if alive.len() < desired {
        // Names stay taken until their pod is gone, terminated and terminating ones included.
        let taken: BTreeSet<&str> = pods.iter().map(|pod| pod.name.as_str()).collect();
        plan.create = (0..)
            .map(|n| prover_pod_name(pool, n))
            .filter(|name| !taken.contains(name.as_str()))
            .take(desired - alive.len())
            .collect();
    } else if alive.len() > desired {
        alive.sort_by_key(|pod| removal_order(pod, busy));
        plan.scale_down = alive[..alive.len() - desired]
            .iter()
            .map(|pod| pod.name.clone())
            .collect();
    }
    plan
}

/// Sort key: smaller is removed first. Not Ready, then idle Ready, then busy; within a group
/// the highest ordinal first, and pods not named by the operator before all of them.
fn removal_order(pod: &ProverPod, busy: &BTreeSet<String>) -> (u8, Reverse<u64>) {
    let group = match (busy.contains(&pod.name), pod.health) {
        (true, _) => 2,
        (false, PodHealth::Ready) => 1,
        (false, _) => 0,
    };
    (group, Reverse(pod.ordinal.map_or(u64::MAX, u64::from)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prover_pods::tests::prover;

    fn busy(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn scale_up_fills_the_lowest_free_ordinals() {
        let pods = [
            prover(1, PodHealth::Ready),
            prover(3, PodHealth::Terminating),
        ];
        let plan = plan("gpu", 4, &pods, &BTreeSet::new());
        assert_eq!(
            plan.create,
            ["gpu-prover-0", "gpu-prover-2", "gpu-prover-4"]
        );
        assert!(plan.scale_down.is_empty() && plan.replace.is_empty());
    }

    #[test]
    fn terminated_pods_are_deleted_and_replaced_under_a_new_name() {
        let pods = [
            prover(0, PodHealth::Terminated),
            prover(1, PodHealth::Ready),
        ];
        let plan = plan("gpu", 2, &pods, &BTreeSet::new());
        assert_eq!(plan.replace, ["gpu-prover-0"]);
        assert_eq!(plan.create, ["gpu-prover-2"]);
    }

    #[test]
    fn a_terminated_pod_with_a_job_is_kept_until_the_job_moves_but_is_replaced_at_once() {
        let pods = [
            prover(0, PodHealth::Terminated),
            prover(1, PodHealth::Ready),
        ];
        let plan = plan("gpu", 2, &pods, &busy(&["gpu-prover-0"]));
        assert!(plan.replace.is_empty());
        assert_eq!(
            plan.create,
            ["gpu-prover-2"],
            "its capacity is restored meanwhile"
        );
    }

    #[test]
    fn scale_down_never_picks_a_busy_prover_while_an_idle_one_exists() {
        let pods = [
            prover(0, PodHealth::Ready),
            prover(1, PodHealth::Ready),
            prover(2, PodHealth::Ready),
            prover(3, PodHealth::Starting),
        ];
        let busy = busy(&["gpu-prover-0", "gpu-prover-2"]);
        assert_eq!(plan("gpu", 3, &pods, &busy).scale_down, ["gpu-prover-3"]);
        assert_eq!(
            plan("gpu", 2, &pods, &busy).scale_down,
            ["gpu-prover-3", "gpu-prover-1"]
        );
        assert_eq!(
            plan("gpu", 1, &pods, &busy).scale_down,
            ["gpu-prover-3", "gpu-prover-1", "gpu-prover-2"]
        );
        assert_eq!(plan("gpu", 0, &pods, &busy).scale_down.len(), 4);
    }

    #[test]
    fn scale_down_prefers_the_highest_ordinal_among_equals() {
        let pods = [
            prover(0, PodHealth::Ready),
            prover(5, PodHealth::Ready),
            prover(2, PodHealth::Ready),
        ];
        assert_eq!(
            plan("gpu", 2, &pods, &BTreeSet::new()).scale_down,
            ["gpu-prover-5"]
        );
    }

    #[test]
    fn a_pool_at_its_size_needs_nothing() {
        let pods = [prover(0, PodHealth::Ready), prover(1, PodHealth::Starting)];
        assert!(plan("gpu", 2, &pods, &BTreeSet::new()).is_empty());
    }
}
