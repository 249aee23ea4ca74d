//! The autoscaler's decision: how many provers a pool's queue needs, as a pure function of
//! the queue, the busy provers, the policy and the time the pool has had a surplus.
//!
//! Scale-up is immediate: waiting work is the expensive state, and new GPU nodes take
//! minutes to arrive. Scale-down waits until the surplus has lasted `scaleDownDelaySeconds`,
//! so a pool does not give back a GPU node between two bursts, and never removes more than
//! the surplus: busy provers are always needed, so they are never scaled away (the pod plan
//! removes idle pods first in any case).
//!
//! Each job goes to one prover whole, so the queue never asks for more provers than it has
//! jobs, however many partitions they hold.

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use proofpipe_crds::AutoscalingSpec;

/// The bounds and targets of `spec.autoscaling`, as plain numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub min_replicas: u32,
    pub max_replicas: u32,
    /// Queued partitions one prover is expected to hold.
    pub target_queued_partitions_per_prover: u32,
    /// How long a surplus of provers lasts before they are removed.
    pub scale_down_delay: Duration,
}

impl Policy {
    pub fn from_spec(spec: &AutoscalingSpec) -> Self {
        let non_negative = |n: i32| u32::try_from(n).unwrap_or(0);
        Self {
            min_replicas: non_negative(spec.min_replicas),
            max_replicas: non_negative(spec.max_replicas).max(non_negative(spec.min_replicas)),
            target_queued_partitions_per_prover: non_negative(
                spec.target_queued_partitions_per_prover,
            )
            .max(1),
            scale_down_delay: Duration::from_secs(
                u64::try_from(spec.scale_down_delay_seconds).unwrap_or(0),
            ),
        }
    }
}

/// The work a pool has: provers proving a job, and jobs waiting for one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Demand {
    pub busy_provers: u32,
    pub queued_jobs: u32,
    pub queued_partitions: u64,
}

impl Demand {
    /// Provers for the waiting jobs: one per `target` partitions, at most one per job.
    pub fn provers_for_queue(&self, target_per_prover: u32) -> u32 {
        let by_partitions = self
            .queued_partitions
            .div_ceil(u64::from(target_per_prover.max(1)));
        u32::try_from(by_partitions)
            .unwrap_or(u32::MAX)
            .min(self.queued_jobs)
    }

    /// Provers the work needs, before the policy's bounds.
    pub fn provers_needed(&self, target_per_prover: u32) -> u32 {
        self.busy_provers
            .saturating_add(self.provers_for_queue(target_per_prover))
    }
}

/// What the decision is made from.
#[derive(Clone, Copy, Debug)]
pub struct AutoscaleObservation {
    pub policy: Policy,
    /// `spec.replicas` now.
    pub replicas: u32,
    pub demand: Demand,
    /// Since when the pool has had more provers than needed, as last recorded.
    pub surplus_since: Option<Timestamp>,
    pub now: Timestamp,
}

/// A change of `spec.replicas`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    Up { from: u32, to: u32 },
    Down { from: u32, to: u32 },
}

/// The autoscaler's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoscaleDecision {
    /// What `spec.replicas` should be now.
    pub replicas: u32,
    /// What the queue needs within the bounds; `replicas` reaches it once any scale-down
    /// delay has passed.
    pub desired: u32,
    /// Since when there has been a surplus; `None` when there is none (or it was just
    /// removed).
    pub surplus_since: Option<Timestamp>,
    /// How long until a pending scale-down is due (`Some` exactly when `surplus_since` is),
    /// so the caller looks again then.
    pub scale_down_in: Option<Duration>,
    /// The change to make, if any.
    pub change: Option<Change>,
    /// How `desired` follows from the queue, for the status and the Events.
    pub reason: String,
}

pub fn decide(observation: &AutoscaleObservation) -> AutoscaleDecision {
    let policy = observation.policy;
    let demand = observation.demand;
    let current = observation.replicas;
    let needed = demand.provers_needed(policy.target_queued_partitions_per_prover);
    let desired = needed.clamp(policy.min_replicas, policy.max_replicas);
    let reason = reason(&demand, &policy, desired);

    let decision = |replicas: u32, surplus_since: Option<Timestamp>| {
        let change = match replicas.cmp(&current) {
            std::cmp::Ordering::Greater => Some(Change::Up {
                from: current,
                to: replicas,
            }),
            std::cmp::Ordering::Less => Some(Change::Down {
                from: current,
                to: replicas,
            }),
            std::cmp::Ordering::Equal => None,
        };
        let scale_down_in = surplus_since.map(|since: Timestamp| {
            let waited = observation.now.duration_since(since).unsigned_abs();
            policy.scale_down_delay.saturating_sub(waited)
        });
        AutoscaleDecision {
            replicas,
            desired,
            surplus_since,
            scale_down_in,
            change,
            reason: reason.clone(),
        }
    };

    if current <= desired {
        return decision(desired, None);
    }
    if current > policy.max_replicas {
        // The bound itself was lowered: honour it now; the rest of any surplus waits.
        let surplus_since = (policy.max_replicas > desired).then_some(observation.now);
        return decision(policy.max_replicas, surplus_since);
    }
    let since = observation.surplus_since.unwrap_or(observation.now);
    let lasted = observation.now.duration_since(since);
    let delay = SignedDuration::try_from(policy.scale_down_delay).unwrap_or(SignedDuration::MAX);
    if lasted >= delay {
        decision(desired, None)
    } else {
        decision(current, Some(since))
    }
}

fn reason(demand: &Demand, policy: &Policy, desired: u32) -> String {
    let target = policy.target_queued_partitions_per_prover;
    let for_queue = demand.provers_for_queue(target);
    let jobs = match demand.queued_jobs {
        1 => "1 job".to_owned(),
        n => format!("{n} jobs"),
    };
    let mut reason = format!(
        "{} busy + {for_queue} for {} queued partitions in {jobs} (target {target} per prover)",
        demand.busy_provers, demand.queued_partitions
    );
    let needed = demand.provers_needed(target);
    if needed != desired {
        reason.push_str(&format!(
            ", bounded to {}..={}",
            policy.min_replicas, policy.max_replicas
        ));
    }
    reason
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELAY: Duration = Duration::from_secs(300);

    fn policy(min: u32, max: u32) -> Policy {
        Policy {
            min_replicas: min,
            max_replicas: max,
            target_queued_partitions_per_prover: 4,
            scale_down_delay: DELAY,
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn demand(busy: u32, jobs: u32, partitions: u64) -> Demand {
        Demand {
            busy_provers: busy,
            queued_jobs: jobs,
            queued_partitions: partitions,
        }
    }

    fn observe(
        policy: Policy,
        replicas: u32,
        demand: Demand,
        surplus_since: Option<Timestamp>,
        now: Timestamp,
    ) -> AutoscaleDecision {
        decide(&AutoscaleObservation {
            policy,
            replicas,
            demand,
            surplus_since,
            now,
        })
    }

    #[test]
    fn waiting_work_scales_up_at_once_one_prover_per_target() {
        let d = observe(policy(0, 10), 1, demand(1, 5, 18), None, at(0));
        // 18 partitions at 4 per prover: 5, plus the busy one.
        assert_eq!(d.replicas, 6);
        assert_eq!(d.change, Some(Change::Up { from: 1, to: 6 }));
        assert_eq!(d.surplus_since, None);
        assert_eq!(
            d.reason,
            "1 busy + 5 for 18 queued partitions in 5 jobs (target 4 per prover)"
        );
    }

    #[test]
    fn the_queue_never_asks_for_more_provers_than_it_has_jobs() {
        // One job of 40 partitions goes to one prover whole.
        let d = observe(policy(0, 10), 0, demand(0, 1, 40), None, at(0));
        assert_eq!(d.replicas, 1);
    }

    #[test]
    fn scale_up_stops_at_max_and_says_so() {
        let d = observe(policy(1, 3), 2, demand(2, 6, 24), None, at(0));
        assert_eq!(d.replicas, 3);
        assert!(d.reason.ends_with("bounded to 1..=3"), "{}", d.reason);
    }

    #[test]
    fn a_surplus_waits_for_the_delay_then_goes_down_to_the_need() {
        let p = policy(1, 10);
        let idle = demand(2, 0, 0);
        let first = observe(p, 5, idle, None, at(0));
        assert_eq!((first.replicas, first.change), (5, None));
        assert_eq!(first.surplus_since, Some(at(0)));

        let waiting = observe(p, 5, idle, first.surplus_since, at(299));
        assert_eq!((waiting.replicas, waiting.change), (5, None));
        assert_eq!(
            waiting.surplus_since,
            Some(at(0)),
            "the clock keeps its start"
        );

        let done = observe(p, 5, idle, waiting.surplus_since, at(300));
        assert_eq!(done.replicas, 2, "busy provers stay");
        assert_eq!(done.change, Some(Change::Down { from: 5, to: 2 }));
        assert_eq!(done.surplus_since, None);
        assert_eq!(done.scale_down_in, None);
    }

    #[test]
    fn new_work_during_the_delay_resets_the_clock() {
        let p = policy(0, 10);
        let started = observe(p, 3, demand(0, 0, 0), None, at(0));
        assert_eq!(started.surplus_since, Some(at(0)));
        let busy_again = observe(p, 3, demand(1, 2, 8), started.surplus_since, at(200));
        assert_eq!((busy_again.replicas, busy_again.surplus_since), (3, None));
        let idle_again = observe(p, 3, demand(0, 0, 0), busy_again.surplus_since, at(250));
        assert_eq!(idle_again.surplus_since, Some(at(250)));
        assert_eq!(
            observe(p, 3, demand(0, 0, 0), idle_again.surplus_since, at(549)).replicas,
            3
        );
    }

    #[test]
    fn an_idle_pool_scales_to_zero_after_the_delay_and_back_on_new_work() {
        let p = policy(0, 4);
        let idle = observe(p, 2, Demand::default(), Some(at(0)), at(300));
        assert_eq!(idle.replicas, 0);
        assert_eq!(
            idle.reason,
            "0 busy + 0 for 0 queued partitions in 0 jobs (target 4 per prover)"
        );
        let woken = observe(p, 0, demand(0, 1, 3), None, at(400));
        assert_eq!(woken.change, Some(Change::Up { from: 0, to: 1 }));
    }

    #[test]
    fn min_replicas_holds_even_when_idle_and_is_restored_at_once() {
        let p = policy(2, 4);
        assert_eq!(
            observe(p, 2, Demand::default(), Some(at(0)), at(9999)).replicas,
            2
        );
        let below = observe(p, 0, Demand::default(), None, at(0));
        assert_eq!(below.change, Some(Change::Up { from: 0, to: 2 }));
    }

    #[test]
    fn a_lowered_max_applies_at_once_and_the_rest_of_the_surplus_waits() {
        let d = observe(policy(0, 3), 6, demand(1, 0, 0), None, at(0));
        assert_eq!(d.change, Some(Change::Down { from: 6, to: 3 }));
        assert_eq!(d.surplus_since, Some(at(0)));
    }

    #[test]
    fn busy_provers_are_never_a_surplus() {
        // Every prover busy, nothing queued: no scale-down however long it lasts.
        let d = observe(policy(0, 8), 4, demand(4, 0, 0), Some(at(0)), at(10_000));
        assert_eq!((d.replicas, d.change, d.surplus_since), (4, None, None));
    }

    #[test]
    fn policy_from_spec_repairs_what_the_schema_cannot_rule_out() {
        let spec = AutoscalingSpec {
            min_replicas: 3,
            max_replicas: 2,
            target_queued_partitions_per_prover: 0,
            scale_down_delay_seconds: -5,
        };
        let p = Policy::from_spec(&spec);
        assert_eq!((p.min_replicas, p.max_replicas), (3, 3));
        assert_eq!(p.target_queued_partitions_per_prover, 1);
        assert_eq!(p.scale_down_delay, Duration::ZERO);
    }
}
