//! How a pool's pods move toward `spec.replicas` and its current template: which to create,
//! which to delete.
//!
//! Scale-down removes, in this order: pods not Ready yet, idle Ready pods, and busy pods
//! last; outdated before current, then highest ordinal first within each group. So a busy
//! prover is never chosen while an idle one exists. This is why provers are plain Pods and
//! not a StatefulSet, which always removes the highest ordinal.
//!
//! A template change rolls the pool (ADR 0009): an outdated pod is deleted, and so replaced
//! from the new template, only while it has no job. Outdated pods that are not Ready go at
//! once (they serve nothing, and a broken template is the likely reason to change it).
//! Outdated Ready pods go at most [`max_unavailable`] at a time, counting every pod that is
//! not Ready: so a new template whose pods never become Ready (a wrong image, no node with
//! a GPU) halts the roll with the old provers still working.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use crate::names::prover_pod_name;
use crate::shared::prover_pods::{PodHealth, ProverPod};

/// Pod changes that bring a pool to its desired size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodPlan {
    /// Names of pods to create.
    pub create: Vec<String>,
    /// Terminated pods to delete so that they are replaced.
    pub replace: Vec<String>,
    /// Surplus pods to delete.
    pub scale_down: Vec<String>,
    /// Idle pods of an earlier template to delete, so that they are replaced from the
    /// current one.
    pub roll: Vec<String>,
}

impl PodPlan {
    pub fn is_empty(&self) -> bool {
        self.create.is_empty()
            && self.replace.is_empty()
            && self.scale_down.is_empty()
            && self.roll.is_empty()
    }

    /// Whether `pod` is deleted by this plan (so it must not be offered work).
    pub fn deletes(&self, pod: &str) -> bool {
        [&self.replace, &self.scale_down, &self.roll]
            .into_iter()
            .flatten()
            .any(|name| name == pod)
    }
}

/// How many pods of a pool of `desired` may be not Ready while it rolls: a quarter, at least
/// one (a Deployment's default `maxUnavailable`).
pub fn max_unavailable(desired: usize) -> usize {
    (desired / 4).max(1)
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
    plan.roll = roll(pods, busy, desired, &plan);
    plan
}

/// The outdated pods to delete now, given the rest of the plan.
fn roll(
    pods: &[ProverPod],
    busy: &BTreeSet<String>,
    desired: usize,
    plan: &PodPlan,
) -> Vec<String> {
    let mut candidates: Vec<&ProverPod> = pods
        .iter()
        .filter(|pod| pod.outdated && pod.health.is_alive())
        .filter(|pod| !busy.contains(&pod.name) && !plan.deletes(&pod.name))
        .collect();
    candidates.sort_by_key(|pod| Reverse(pod.ordinal.map_or(u64::MAX, u64::from)));
    let (starting, ready): (Vec<&ProverPod>, Vec<&ProverPod>) = candidates
        .into_iter()
        .partition(|pod| pod.health != PodHealth::Ready);

    // Every pod not serving now or soon: starting, being deleted, or about to be created.
    let unavailable = pods
        .iter()
        .filter(|pod| matches!(pod.health, PodHealth::Starting | PodHealth::Terminating))
        .count()
        + plan.create.len();
    let budget = max_unavailable(desired).saturating_sub(unavailable);
    starting
        .into_iter()
        .chain(ready.into_iter().take(budget))
        .map(|pod| pod.name.clone())
        .collect()
}

/// Sort key: smaller is removed first. Not Ready, then idle Ready, then busy; within a group
/// outdated pods first, then the highest ordinal, and pods not named by the operator before
/// all of them.
fn removal_order(pod: &ProverPod, busy: &BTreeSet<String>) -> (u8, bool, Reverse<u64>) {
    let group = match (busy.contains(&pod.name), pod.health) {
        (true, _) => 2,
        (false, PodHealth::Ready) => 1,
        (false, _) => 0,
    };
    (
        group,
        !pod.outdated,
        Reverse(pod.ordinal.map_or(u64::MAX, u64::from)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shared::prover_pods::tests::{outdated_prover, prover};

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
    fn a_roll_replaces_idle_outdated_pods_a_quarter_at_a_time_and_waits_for_busy_ones() {
        let pods: Vec<ProverPod> = (0..8)
            .map(|n| outdated_prover(n, PodHealth::Ready))
            .collect();
        let both_busy = busy(&["gpu-prover-7", "gpu-prover-2"]);
        let first = plan("gpu", 8, &pods, &both_busy);
        assert_eq!(
            first.roll,
            ["gpu-prover-6", "gpu-prover-5"],
            "2 of 8, idle ones"
        );
        assert!(first.create.is_empty() && first.scale_down.is_empty());

        // Next reconcile: those two are going, so nothing more goes until they are back.
        let mut rolling = pods.clone();
        rolling[6].health = PodHealth::Terminating;
        rolling[5].health = PodHealth::Terminating;
        let second = plan("gpu", 8, &rolling, &both_busy);
        assert_eq!(second.create, ["gpu-prover-8", "gpu-prover-9"]);
        assert!(second.roll.is_empty());

        // Replacements up but one not Ready yet: one more may go.
        let mut replaced: Vec<ProverPod> = [0, 1, 2, 3, 4, 7]
            .map(|n| outdated_prover(n, PodHealth::Ready))
            .into();
        replaced.push(prover(8, PodHealth::Ready));
        replaced.push(prover(9, PodHealth::Starting));
        let third = plan("gpu", 8, &replaced, &both_busy);
        assert_eq!(third.roll, ["gpu-prover-4"]);

        // At the end only the busy ones are left, and they go when their jobs finish.
        let mut last: Vec<ProverPod> = [2, 7].map(|n| outdated_prover(n, PodHealth::Ready)).into();
        last.extend([8, 9, 10, 11, 12, 13].map(|n| prover(n, PodHealth::Ready)));
        assert!(plan("gpu", 8, &last, &both_busy).is_empty());
        let seven_finished = busy(&["gpu-prover-2"]);
        assert_eq!(
            plan("gpu", 8, &last, &seven_finished).roll,
            ["gpu-prover-7"]
        );
    }

    #[test]
    fn outdated_pods_that_are_not_ready_go_at_once() {
        // A template that never became Ready (a wrong image), then fixed.
        let pods = [
            outdated_prover(0, PodHealth::Starting),
            outdated_prover(1, PodHealth::Starting),
            outdated_prover(2, PodHealth::Ready),
        ];
        let plan = plan("gpu", 3, &pods, &BTreeSet::new());
        assert_eq!(plan.roll, ["gpu-prover-1", "gpu-prover-0"]);
    }

    #[test]
    fn a_new_template_that_never_gets_ready_halts_the_roll() {
        let pods = [
            prover(3, PodHealth::Starting),
            outdated_prover(1, PodHealth::Ready),
            outdated_prover(2, PodHealth::Ready),
        ];
        assert!(plan("gpu", 3, &pods, &BTreeSet::new()).is_empty());
    }

    #[test]
    fn scale_down_takes_outdated_pods_before_current_ones() {
        let pods = [
            prover(0, PodHealth::Ready),
            outdated_prover(1, PodHealth::Ready),
            prover(2, PodHealth::Ready),
        ];
        let plan = plan("gpu", 2, &pods, &BTreeSet::new());
        assert_eq!(plan.scale_down, ["gpu-prover-1"]);
        assert!(plan.roll.is_empty(), "nothing outdated is left");
    }

    #[test]
    fn a_pool_at_its_size_needs_nothing() {
        let pods = [prover(0, PodHealth::Ready), prover(1, PodHealth::Starting)];
        assert!(plan("gpu", 2, &pods, &BTreeSet::new()).is_empty());
    }
}
