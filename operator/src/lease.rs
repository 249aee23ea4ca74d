//! Leader-election decisions on a `coordination.k8s.io/v1` Lease, without a client: is it
//! expired, is it mine, may I take it, and what the Lease says once I hold it.

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// What a candidate should do with the Lease it just read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseDecision {
    /// It is mine: renew it.
    Renew,
    /// Nobody holds it, or its holder stopped renewing: take it.
    TakeOver,
    /// Someone else holds it and it has not expired.
    Wait { holder: String },
}

/// Whether the Lease is free to take: no holder, never renewed, or `renewTime +
/// leaseDurationSeconds` has passed.
pub fn is_expired(lease: &LeaseSpec, now: Timestamp) -> bool {
    let (Some(_), Some(renewed), Some(seconds)) = (
        lease
            .holder_identity
            .as_deref()
            .filter(|holder| !holder.is_empty()),
        lease.renew_time.as_ref(),
        lease.lease_duration_seconds,
    ) else {
        return true;
    };
    renewed
        .0
        .checked_add(SignedDuration::from_secs(i64::from(seconds)))
        .is_ok_and(|expiry| expiry < now)
}

pub fn decide(lease: &LeaseSpec, me: &str, now: Timestamp) -> LeaseDecision {
    match lease.holder_identity.as_deref() {
        Some(holder) if holder == me => LeaseDecision::Renew,
        _ if is_expired(lease, now) => LeaseDecision::TakeOver,
        holder => LeaseDecision::Wait {
            holder: holder.unwrap_or_default().to_owned(),
        },
    }
}

/// The Lease as `me` holds it at `now`: renewed, or taken over (a new `acquireTime` and one
/// more transition).
pub fn held_by(previous: &LeaseSpec, me: &str, duration_seconds: i32, now: Timestamp) -> LeaseSpec {
    let mut lease = previous.clone();
    if lease.holder_identity.as_deref() != Some(me) {
        lease.holder_identity = Some(me.to_owned());
        lease.acquire_time = Some(MicroTime(now));
        let had_holder = previous
            .holder_identity
            .as_deref()
            .is_some_and(|holder| !holder.is_empty());
        lease.lease_transitions =
            Some(previous.lease_transitions.unwrap_or(0) + i32::from(had_holder));
    }
    lease.renew_time = Some(MicroTime(now));
    lease.lease_duration_seconds = Some(duration_seconds);
    lease
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + seconds).unwrap()
    }

    fn held(holder: &str, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            renew_time: Some(MicroTime(at(renewed))),
            lease_duration_seconds: Some(15),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn expiry_is_renew_time_plus_duration() {
        assert!(!is_expired(&held("a", 0), at(15)));
        assert!(is_expired(&held("a", 0), at(16)));
        assert!(
            is_expired(&LeaseSpec::default(), at(0)),
            "an empty Lease is free"
        );
        let released = LeaseSpec {
            holder_identity: Some(String::new()),
            ..held("a", 0)
        };
        assert!(is_expired(&released, at(0)), "a released Lease is free");
    }

    #[test]
    fn mine_is_renewed_theirs_is_waited_for_until_it_expires() {
        assert_eq!(decide(&held("me", 0), "me", at(100)), LeaseDecision::Renew);
        assert_eq!(
            decide(&held("other", 0), "me", at(10)),
            LeaseDecision::Wait {
                holder: "other".into()
            }
        );
        assert_eq!(
            decide(&held("other", 0), "me", at(16)),
            LeaseDecision::TakeOver
        );
        assert_eq!(
            decide(&LeaseSpec::default(), "me", at(0)),
            LeaseDecision::TakeOver
        );
    }

    #[test]
    fn taking_over_counts_a_transition_and_renewing_does_not() {
        let taken = held_by(&held("other", 0), "me", 15, at(20));
        assert_eq!(taken.holder_identity.as_deref(), Some("me"));
        assert_eq!(taken.acquire_time, Some(MicroTime(at(20))));
        assert_eq!(taken.lease_transitions, Some(1));

        let renewed = held_by(&taken, "me", 15, at(25));
        assert_eq!(renewed.acquire_time, Some(MicroTime(at(20))));
        assert_eq!(renewed.renew_time, Some(MicroTime(at(25))));
        assert_eq!(renewed.lease_transitions, Some(1));
        assert_eq!(
            held_by(&LeaseSpec::default(), "me", 15, at(0)).lease_transitions,
            Some(0)
        );

        let again = held_by(&held_by(&renewed, "third", 15, at(60)), "me", 15, at(90));
        assert_eq!(again.lease_transitions, Some(3));
    }
}
