//! Leader-election decisions on a `coordination.k8s.io/v1` Lease, without a client, with
//! client-go's guarantees (ADR 0012):
//!
//! - a candidate judges a Lease expired by watching its record stay unchanged for a whole
//!   `leaseDurationSeconds` on its *own* monotonic clock ([`Observation`], client-go's
//!   `observedTime`), never by comparing the holder's `renewTime` with its wall clock;
//! - the leader stops acting once `renew_deadline` has passed on its own monotonic clock
//!   since the start of its last successful renewal ([`may_lead`]); since the renew deadline
//!   is below the lease duration, it stops before any candidate can take over;
//! - a released Lease has no holder and a 1 s duration ([`released`]).
//!
//! Times are `std::time::Instant` (monotonic) for every decision; the wall-clock
//! `Timestamp`s only fill `renewTime` and `acquireTime` for humans and other tools.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;

/// The three durations of client-go's `LeaderElectionConfig`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// How long candidates wait after the Lease last changed before taking it.
    pub lease_duration: Duration,
    /// How long the leader keeps acting without a successful renewal.
    pub renew_deadline: Duration,
    /// How often a candidate tries to take the Lease and the leader renews it.
    pub retry_period: Duration,
}

impl Default for Timing {
    /// client-go's defaults (and kube-controller-manager's): 15 s, 10 s, 2 s.
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl Timing {
    /// The timing, if `retry_period < renew_deadline < lease_duration` and the lease
    /// duration is whole seconds (the Lease stores seconds); otherwise why not.
    pub fn new(
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Result<Self, String> {
        if retry_period.is_zero() {
            return Err("the retry period must be above zero".into());
        }
        if renew_deadline <= retry_period {
            return Err(format!(
                "the renew deadline ({renew_deadline:?}) must be longer than the retry period \
                 ({retry_period:?}), or the leader gets at most one try per deadline"
            ));
        }
        if lease_duration <= renew_deadline {
            return Err(format!(
                "the lease duration ({lease_duration:?}) must be longer than the renew deadline \
                 ({renew_deadline:?}), or a stalled leader may still act after a standby took over"
            ));
        }
        if lease_duration.subsec_nanos() != 0 {
            return Err(format!(
                "the lease duration ({lease_duration:?}) must be whole seconds: the Lease stores seconds"
            ));
        }
        Ok(Self {
            lease_duration,
            renew_deadline,
            retry_period,
        })
    }

    /// `spec.leaseDurationSeconds` for this timing.
    pub fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// What a candidate last saw of the Lease, and since when on its own monotonic clock.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    pub record: LeaseSpec,
    pub resource_version: Option<String>,
    /// When this candidate first saw this record (client-go's `observedTime`).
    pub since: Instant,
}

/// The observation after reading `record` at `now`: `since` moves only when the record
/// changed, so a holder that keeps renewing keeps pushing the candidate's expiry away, and
/// one that stopped is expired a lease duration after the candidate first saw its last
/// renewal, whatever either clock says the time of day is.
pub fn observe(
    previous: Option<&Observation>,
    record: &LeaseSpec,
    resource_version: Option<&str>,
    now: Instant,
) -> Observation {
    let unchanged = previous.filter(|previous| {
        previous.record == *record && previous.resource_version.as_deref() == resource_version
    });
    Observation {
        record: record.clone(),
        resource_version: resource_version.map(str::to_owned),
        since: unchanged.map_or(now, |previous| previous.since),
    }
}

/// What a candidate should do with the Lease it just read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseDecision {
    /// It is mine: renew it.
    Renew,
    /// Nobody holds it, or its record has not changed for its whole duration: take it.
    TakeOver,
    /// Someone else holds it and its record changed less than a lease duration ago.
    Wait { holder: String },
}

/// The holder named by a Lease record, if any (an empty name is none: a released Lease).
pub fn holder(record: &LeaseSpec) -> Option<&str> {
    record
        .holder_identity
        .as_deref()
        .filter(|holder| !holder.is_empty())
}

/// Whether the observed Lease is free to take at `now`: no holder, or its record unchanged
/// for `leaseDurationSeconds` (as the record says; 0 or absent is expired) since observed.
pub fn is_expired(observation: &Observation, now: Instant) -> bool {
    if holder(&observation.record).is_none() {
        return true;
    }
    let seconds = observation.record.lease_duration_seconds.unwrap_or(0);
    let duration = Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    now.saturating_duration_since(observation.since) >= duration
}

pub fn decide(observation: &Observation, me: &str, now: Instant) -> LeaseDecision {
    match holder(&observation.record) {
        Some(holder) if holder == me => LeaseDecision::Renew,
        _ if is_expired(observation, now) => LeaseDecision::TakeOver,
        holder => LeaseDecision::Wait {
            holder: holder.unwrap_or_default().to_owned(),
        },
    }
}

/// The renew-deadline rule: the leader may act (write anything, the Lease included) only
/// while `now` is within `renew_deadline` of the start of its last successful renewal, on
/// its own monotonic clock. A leader paused (SIGSTOP, a long GC, a frozen VM) past it must
/// step down when it resumes, because a candidate may have taken the Lease meanwhile.
pub fn may_lead(last_renewal_started: Instant, now: Instant, timing: &Timing) -> bool {
    now.saturating_duration_since(last_renewal_started) < timing.renew_deadline
}

/// The instant after which [`may_lead`] says no.
pub fn leadership_deadline(last_renewal_started: Instant, timing: &Timing) -> Instant {
    last_renewal_started + timing.renew_deadline
}

/// The Lease as `me` holds it at `now`: renewed, or taken over (a new `acquireTime` and one
/// more transition).
pub fn held_by(previous: &LeaseSpec, me: &str, duration_seconds: i32, now: Timestamp) -> LeaseSpec {
    let mut lease = previous.clone();
    if lease.holder_identity.as_deref() != Some(me) {
        lease.holder_identity = Some(me.to_owned());
        lease.acquire_time = Some(MicroTime(now));
        let had_holder = holder(previous).is_some();
        lease.lease_transitions =
            Some(previous.lease_transitions.unwrap_or(0) + i32::from(had_holder));
    }
    lease.renew_time = Some(MicroTime(now));
    lease.lease_duration_seconds = Some(duration_seconds);
    lease
}

/// The Lease given up by its holder, as client-go's `ReleaseOnCancel` writes it: no holder,
/// a 1 s duration, so any candidate takes it at its next try instead of a lease duration
/// later. The transition count is kept; the next holder adds none for an empty Lease.
pub fn released(previous: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        renew_time: Some(MicroTime(now)),
        acquire_time: Some(MicroTime(now)),
        ..previous.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wall(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn held(holder: &str, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            renew_time: Some(MicroTime(wall(renewed))),
            lease_duration_seconds: Some(15),
            ..LeaseSpec::default()
        }
    }

    /// A monotonic clock for tests: `t(s)` is `s` seconds after an arbitrary start.
    struct Clock(Instant);

    impl Clock {
        fn t(&self, seconds: u64) -> Instant {
            self.0 + Duration::from_secs(seconds)
        }
    }

    fn clock() -> Clock {
        Clock(Instant::now())
    }

    #[test]
    fn default_timing_is_client_gos_and_valid() {
        let timing = Timing::default();
        assert_eq!(
            Timing::new(
                timing.lease_duration,
                timing.renew_deadline,
                timing.retry_period
            ),
            Ok(timing)
        );
        assert_eq!(timing.lease_duration_seconds(), 15);
    }

    #[test]
    fn timing_is_refused_unless_retry_below_deadline_below_duration() {
        let s = Duration::from_secs;
        let error = Timing::new(s(10), s(10), s(2)).unwrap_err();
        assert!(error.contains("lease duration"), "{error}");
        let error = Timing::new(s(15), s(2), s(2)).unwrap_err();
        assert!(error.contains("retry period"), "{error}");
        assert!(Timing::new(s(15), s(10), Duration::ZERO).is_err());
        assert!(Timing::new(Duration::from_millis(3500), s(2), s(1)).is_err());
        assert!(Timing::new(s(3), s(2), Duration::from_millis(500)).is_ok());
    }

    #[test]
    fn a_record_unchanged_for_its_duration_on_our_clock_is_expired() {
        let clock = clock();
        let seen = observe(None, &held("other", 0), Some("1"), clock.t(100));
        assert_eq!(
            decide(&seen, "me", clock.t(114)),
            LeaseDecision::Wait {
                holder: "other".into()
            }
        );
        // Read again, unchanged: the clock still runs from the first sight.
        let again = observe(Some(&seen), &held("other", 0), Some("1"), clock.t(110));
        assert_eq!(again.since, clock.t(100));
        assert_eq!(decide(&again, "me", clock.t(115)), LeaseDecision::TakeOver);
    }

    #[test]
    fn the_holders_timestamp_is_not_compared_with_our_wall_clock() {
        // A renewTime an hour in the past (the holder's clock is behind, or ours ahead) is
        // not expired: we only know it is alive by seeing it change.
        let clock = clock();
        let stale_clock = observe(None, &held("other", -3600), Some("7"), clock.t(0));
        assert_eq!(
            decide(&stale_clock, "me", clock.t(1)),
            LeaseDecision::Wait {
                holder: "other".into()
            }
        );
    }

    #[test]
    fn a_renewal_restarts_the_candidates_clock() {
        let clock = clock();
        let first = observe(None, &held("other", 0), Some("1"), clock.t(0));
        // Renewed (new renewTime, new resourceVersion) and seen at 12 s.
        let renewed = observe(Some(&first), &held("other", 2), Some("2"), clock.t(12));
        assert_eq!(renewed.since, clock.t(12));
        assert!(!is_expired(&renewed, clock.t(20)));
        assert!(is_expired(&renewed, clock.t(27)));
        // A write that changes only the resourceVersion counts as a change too.
        let touched = observe(Some(&renewed), &held("other", 2), Some("3"), clock.t(20));
        assert_eq!(touched.since, clock.t(20));
    }

    #[test]
    fn mine_is_renewed_and_an_empty_or_released_lease_is_free() {
        let clock = clock();
        let mine = observe(None, &held("me", 0), None, clock.t(0));
        assert_eq!(decide(&mine, "me", clock.t(0)), LeaseDecision::Renew);
        let empty = observe(None, &LeaseSpec::default(), None, clock.t(0));
        assert_eq!(decide(&empty, "me", clock.t(0)), LeaseDecision::TakeOver);
        let released = observe(
            None,
            &released(&held("other", 0), wall(1)),
            None,
            clock.t(0),
        );
        assert_eq!(decide(&released, "me", clock.t(0)), LeaseDecision::TakeOver);
        let blank = LeaseSpec {
            holder_identity: Some(String::new()),
            ..held("other", 0)
        };
        let blank = observe(None, &blank, None, clock.t(0));
        assert_eq!(decide(&blank, "me", clock.t(0)), LeaseDecision::TakeOver);
    }

    /// Fails if the renew-deadline rule is removed: a leader that has not renewed for the
    /// renew deadline must stop, strictly before a standby may take the Lease.
    #[test]
    fn the_leader_stops_at_the_renew_deadline_before_a_standby_may_take_over() {
        let clock = clock();
        let timing = Timing::default();
        let renewal_started = clock.t(0);
        assert!(may_lead(renewal_started, clock.t(9), &timing));
        assert!(!may_lead(renewal_started, clock.t(10), &timing));
        assert!(!may_lead(renewal_started, clock.t(3600), &timing));
        assert_eq!(leadership_deadline(renewal_started, &timing), clock.t(10));

        // The standby saw that renewal no earlier than it started, and may take the Lease
        // only a lease duration later: by then the leader has stopped.
        let standby = observe(None, &held("leader", 0), Some("1"), renewal_started);
        let take_over = (0..3600)
            .map(|second| clock.t(second))
            .find(|&now| decide(&standby, "standby", now) == LeaseDecision::TakeOver)
            .expect("the standby takes over eventually");
        assert!(!may_lead(renewal_started, take_over, &timing));
        assert!(
            take_over - leadership_deadline(renewal_started, &timing) >= Duration::from_secs(5)
        );
    }

    #[test]
    fn taking_over_counts_a_transition_and_renewing_does_not() {
        let taken = held_by(&held("other", 0), "me", 15, wall(20));
        assert_eq!(taken.holder_identity.as_deref(), Some("me"));
        assert_eq!(taken.acquire_time, Some(MicroTime(wall(20))));
        assert_eq!(taken.lease_transitions, Some(1));

        let renewed = held_by(&taken, "me", 15, wall(25));
        assert_eq!(renewed.acquire_time, Some(MicroTime(wall(20))));
        assert_eq!(renewed.renew_time, Some(MicroTime(wall(25))));
        assert_eq!(renewed.lease_transitions, Some(1));
        assert_eq!(
            held_by(&LeaseSpec::default(), "me", 15, wall(0)).lease_transitions,
            Some(0)
        );

        let again = held_by(
            &held_by(&renewed, "third", 15, wall(60)),
            "me",
            15,
            wall(90),
        );
        assert_eq!(again.lease_transitions, Some(3));
    }

    #[test]
    fn releasing_clears_the_holder_and_keeps_the_transitions() {
        let mine = held_by(&held("other", 0), "me", 15, wall(20));
        let free = released(&mine, wall(30));
        assert_eq!(free.holder_identity, None);
        assert_eq!(free.lease_duration_seconds, Some(1));
        assert_eq!(free.lease_transitions, Some(1));
        let next = held_by(&free, "standby", 15, wall(31));
        assert_eq!(next.lease_transitions, Some(1), "an empty Lease adds none");
    }
}
