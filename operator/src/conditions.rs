//! Standard `metav1.Condition`s whose `lastTransitionTime` only moves when the status does,
//! so recomputing the same conditions yields an identical status and no write.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// One condition as the operator wants it, before times are settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredCondition {
    pub type_: &'static str,
    pub status: bool,
    pub reason: &'static str,
    pub message: String,
}

impl DesiredCondition {
    pub fn new(
        type_: &'static str,
        status: bool,
        reason: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            type_,
            status,
            reason,
            message: message.into(),
        }
    }
}

/// The conditions to write: `desired`, each keeping the `lastTransitionTime` of the
/// `previous` condition of its type when its status did not change, else stamped `now`.
pub fn settle(
    previous: Option<&[Condition]>,
    desired: Vec<DesiredCondition>,
    observed_generation: Option<i64>,
    now: Timestamp,
) -> Vec<Condition> {
    desired
        .into_iter()
        .map(|want| {
            let status = if want.status { "True" } else { "False" };
            let last_transition_time = previous
                .into_iter()
                .flatten()
                .find(|old| old.type_ == want.type_ && old.status == status)
                .map_or(Time(now), |old| old.last_transition_time.clone());
            Condition {
                type_: want.type_.to_owned(),
                status: status.to_owned(),
                reason: want.reason.to_owned(),
                message: want.message,
                observed_generation,
                last_transition_time,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn transition_time_moves_only_with_the_status() {
        let first = settle(
            None,
            vec![DesiredCondition::new("Ready", false, "Starting", "0/1")],
            Some(1),
            at(10),
        );
        assert_eq!(first[0].last_transition_time, Time(at(10)));

        let message_only = settle(
            Some(&first),
            vec![DesiredCondition::new("Ready", false, "Starting", "0/2")],
            Some(2),
            at(20),
        );
        assert_eq!(message_only[0].last_transition_time, Time(at(10)));
        assert_eq!(message_only[0].observed_generation, Some(2));

        let flipped = settle(
            Some(&message_only),
            vec![DesiredCondition::new(
                "Ready",
                true,
                "AllProversReady",
                "2/2",
            )],
            Some(2),
            at(30),
        );
        assert_eq!(flipped[0].last_transition_time, Time(at(30)));
        assert_eq!(flipped[0].status, "True");
    }
}
