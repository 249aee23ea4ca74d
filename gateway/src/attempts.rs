//! Which job a submission under a request id goes to: pure, over plain data.
//!
//! curio's request ids are deterministic per sector (`porep-<miner>-<sector>`,
//! `snap-<miner>-<sector>`) and it retries a failed proof with the same id (PoRep up to 10
//! times, SnapDeals 3), and sends a new C1 output for the same sector (a new seed) under the
//! same id too. So a request id names a series of attempts, each its own ProofJob:
//! - the same work while its job is queued, running or succeeded: that job again (a retry of
//!   a call that was cut, or a second caller);
//! - the same work after its job failed or was cancelled: a new attempt;
//! - other work (another input, proof or prover): a new attempt, and the old job, if still
//!   unfinished, is cancelled (its proof is wanted no more); a finished one is kept, with its
//!   outcome, until its `ttlSecondsAfterFinished`.
//!
//! That is the rule for PoRep and SnapDeals ([`AttemptRule::OtherWorkReplaces`]). PoSt ids
//! are not per sector: curio sends every on-chain partition of a WindowPoSt deadline under one
//! id (`wdpost-<miner>-<partition_index>-<randomness>`, partition index 0 in each), each with
//! its own sectors. There the id and the input's digest name the work
//! ([`AttemptRule::OnePerInput`]): other inputs under the id are other series that run side by
//! side and never cancel each other; within one input's series the rule above holds.
//!
//! Attempt 1 is named as before attempts existed (`submission::job_name`), so the jobs of
//! earlier gateways are found and a resubmission of the same id after its jobs are gone reuses
//! the name. ADR 0025.

use proofpipe_crds::{FilecoinWork, ProofJob, ProofJobPhase};

use crate::job_meta::{ATTEMPT_ANNOTATION, REQUEST_KEY_LABEL, request_id_of};

/// Where an earlier attempt stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptState {
    /// Waiting for a prover or being proved.
    Unfinished,
    Succeeded,
    Failed,
    /// Deleted (cancelled) but not yet gone.
    Deleting,
}

impl AttemptState {
    fn as_str(self) -> &'static str {
        match self {
            Self::Unfinished => "unfinished",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
            Self::Deleting => "cancelled",
        }
    }
}

/// An earlier attempt of a request id, as the decision needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriorAttempt {
    pub job_name: String,
    pub attempt: u32,
    pub state: AttemptState,
    /// Whether it proves exactly the submitted work.
    pub same_work: bool,
}

/// Why a new attempt starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The request id's previous job failed.
    PreviousFailed,
    /// The request id's previous job was cancelled (is being deleted).
    PreviousCancelled,
    /// The submission proves other work than the previous job (a new input for the sector).
    OtherWork,
}

impl Reason {
    /// The metric label and the annotation's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PreviousFailed => "previous_failed",
            Self::PreviousCancelled => "previous_cancelled",
            Self::OtherWork => "other_work",
        }
    }
}

/// The previous job a new attempt follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replaced {
    pub job_name: String,
    pub state: AttemptState,
    pub reason: Reason,
    /// Whether the gateway deletes it: unfinished work nobody wants any more.
    pub cancel: bool,
}

impl Replaced {
    /// The note kept on the new job (`proofpipe.dev/replaces`).
    pub fn note(&self) -> String {
        format!(
            "{} ({}; {})",
            self.job_name,
            self.state.as_str(),
            self.reason.as_str()
        )
    }
}

/// How a request id's submissions of other work relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptRule {
    /// Other work under the id replaces the latest attempt (a sector's new C1 output): PoRep
    /// and SnapDeals, whose ids name a sector.
    OtherWorkReplaces,
    /// The id and the input together name the work: other work under the id is a series of
    /// its own, beside this one. WindowPoSt and WinningPoSt, whose ids name a deadline or an
    /// epoch, not one partition's sectors.
    OnePerInput,
}

/// What to do with a submission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Answer with this existing job.
    Reattach { job_name: String },
    /// Create attempt `attempt` as `job_name`.
    Create {
        attempt: u32,
        job_name: String,
        replaces: Option<Replaced>,
    },
}

/// The decision for a submission whose first attempt is named `first_name`, given the
/// request id's earlier attempts (any order, any subset: the latest of the series decides).
/// Under [`AttemptRule::OnePerInput`] the series is the attempts that prove the same work;
/// the id's other jobs are left alone.
pub fn decide(first_name: &str, rule: AttemptRule, prior: &[PriorAttempt]) -> Decision {
    let series = prior
        .iter()
        .filter(|p| rule == AttemptRule::OtherWorkReplaces || p.same_work);
    let Some(latest) = series.max_by_key(|p| p.attempt) else {
        return Decision::Create {
            attempt: 1,
            job_name: first_name.to_owned(),
            replaces: None,
        };
    };
    let reason = match (latest.state, latest.same_work) {
        (AttemptState::Unfinished | AttemptState::Succeeded, true) => {
            return Decision::Reattach {
                job_name: latest.job_name.clone(),
            };
        }
        (AttemptState::Deleting, _) => Reason::PreviousCancelled,
        (AttemptState::Failed, true) => Reason::PreviousFailed,
        (_, false) => Reason::OtherWork,
    };
    let attempt = latest.attempt.saturating_add(1);
    Decision::Create {
        attempt,
        job_name: attempt_name(first_name, attempt),
        replaces: Some(Replaced {
            job_name: latest.job_name.clone(),
            state: latest.state,
            reason,
            cancel: latest.state == AttemptState::Unfinished,
        }),
    }
}

/// The longest job name: a DNS label, so it can be a label value too.
const MAX_NAME: usize = 63;
/// The end of a first name: `-` and 12 hex digits of the request id's digest.
const DIGEST_TAIL: usize = 13;

/// The job name of attempt `attempt` (1: the first name itself): the first name with
/// `-a<attempt>`, its readable part shortened when that would pass 63 characters (the digest
/// is kept, so the name stays the id's).
pub fn attempt_name(first_name: &str, attempt: u32) -> String {
    if attempt <= 1 {
        return first_name.to_owned();
    }
    let suffix = format!("-a{attempt}");
    let room = MAX_NAME.saturating_sub(suffix.len());
    if first_name.len() <= room || first_name.len() < DIGEST_TAIL {
        return format!("{first_name}{suffix}");
    }
    let (readable, digest) = first_name.split_at(first_name.len() - DIGEST_TAIL);
    let keep = room.saturating_sub(DIGEST_TAIL).min(readable.len());
    // Job names are ASCII (`submission::job_name`), so any byte is a character boundary.
    let readable = readable[..keep].trim_end_matches('-');
    format!("{readable}{digest}{suffix}")
}

/// `job` as an earlier attempt of `request_id` submitting `work`, if it is one: a job of
/// another request id (or none) is not.
pub fn prior_attempt(
    job: &ProofJob,
    request_id: &str,
    work: &FilecoinWork,
) -> Option<PriorAttempt> {
    if request_id_of(job) != Some(request_id) {
        return None;
    }
    let phase = job.status.as_ref().and_then(|s| s.phase);
    let state = if job.metadata.deletion_timestamp.is_some() {
        AttemptState::Deleting
    } else {
        match phase {
            Some(ProofJobPhase::Succeeded) => AttemptState::Succeeded,
            Some(ProofJobPhase::Failed) => AttemptState::Failed,
            _ => AttemptState::Unfinished,
        }
    };
    let attempt = job
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ATTEMPT_ANNOTATION))
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    Some(PriorAttempt {
        job_name: job.metadata.name.clone().unwrap_or_default(),
        attempt,
        state,
        same_work: job
            .spec
            .filecoin
            .as_ref()
            .is_some_and(|theirs| same_work(theirs, work)),
    })
}

/// Whether two jobs' Filecoin work proves the same thing: every field but where the input and
/// output are stored.
pub fn same_work(a: &FilecoinWork, b: &FilecoinWork) -> bool {
    a.kind == b.kind
        && a.seal_proof == b.seal_proof
        && a.update_proof == b.update_proof
        && a.miner_id == b.miner_id
        && a.prover_id == b.prover_id
        && a.sector_number == b.sector_number
        && a.input.sha256 == b.input.sha256
}

/// Whether `job` carries the request key label of `key` (how a request id's attempts are
/// listed; jobs of gateways before attempts lack it and are found by their name).
pub fn has_request_key(job: &ProofJob, key: &str) -> bool {
    job.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REQUEST_KEY_LABEL))
        .is_some_and(|k| k == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPLACES: AttemptRule = AttemptRule::OtherWorkReplaces;

    fn prior(attempt: u32, state: AttemptState, same_work: bool) -> PriorAttempt {
        PriorAttempt {
            job_name: attempt_name("porep-1000-1-abc", attempt),
            attempt,
            state,
            same_work,
        }
    }

    fn created(decision: &Decision) -> (u32, &str, Option<&Replaced>) {
        match decision {
            Decision::Create {
                attempt,
                job_name,
                replaces,
            } => (*attempt, job_name, replaces.as_ref()),
            Decision::Reattach { job_name } => panic!("reattached to {job_name}"),
        }
    }

    #[test]
    fn a_new_request_id_is_attempt_one_under_the_first_name() {
        assert_eq!(
            decide("porep-1000-1-abc", REPLACES, &[]),
            Decision::Create {
                attempt: 1,
                job_name: "porep-1000-1-abc".into(),
                replaces: None
            }
        );
    }

    #[test]
    fn the_same_work_reattaches_while_unfinished_or_succeeded() {
        for state in [AttemptState::Unfinished, AttemptState::Succeeded] {
            assert_eq!(
                decide("porep-1000-1-abc", REPLACES, &[prior(1, state, true)]),
                Decision::Reattach {
                    job_name: "porep-1000-1-abc".into()
                }
            );
        }
    }

    #[test]
    fn the_same_work_after_a_failure_or_a_cancel_is_a_new_attempt() {
        let decision = decide(
            "porep-1000-1-abc",
            REPLACES,
            &[prior(1, AttemptState::Failed, true)],
        );
        let (attempt, name, replaces) = created(&decision);
        assert_eq!((attempt, name), (2, "porep-1000-1-abc-a2"));
        let replaces = replaces.unwrap();
        assert_eq!(replaces.reason, Reason::PreviousFailed);
        assert!(!replaces.cancel, "a failed job is kept for its history");

        let decision = decide(
            "porep-1000-1-abc",
            REPLACES,
            &[prior(1, AttemptState::Deleting, true)],
        );
        let (attempt, _, replaces) = created(&decision);
        assert_eq!(attempt, 2);
        assert_eq!(replaces.unwrap().reason, Reason::PreviousCancelled);
        assert!(!replaces.unwrap().cancel, "already being deleted");
    }

    #[test]
    fn other_work_replaces_the_job_and_cancels_it_only_if_unfinished() {
        for (state, cancel) in [
            (AttemptState::Unfinished, true),
            (AttemptState::Succeeded, false),
            (AttemptState::Failed, false),
        ] {
            let decision = decide("porep-1000-1-abc", REPLACES, &[prior(1, state, false)]);
            let (attempt, _, replaces) = created(&decision);
            assert_eq!(attempt, 2);
            let replaces = replaces.unwrap();
            assert_eq!(
                (replaces.reason, replaces.cancel),
                (Reason::OtherWork, cancel),
                "{state:?}"
            );
            assert_eq!(replaces.job_name, "porep-1000-1-abc");
        }
    }

    #[test]
    fn the_latest_attempt_decides_whatever_the_order() {
        let history = [
            prior(3, AttemptState::Unfinished, true),
            prior(1, AttemptState::Failed, true),
            prior(2, AttemptState::Failed, true),
        ];
        assert_eq!(
            decide("porep-1000-1-abc", REPLACES, &history),
            Decision::Reattach {
                job_name: "porep-1000-1-abc-a3".into()
            }
        );
        let history = [
            prior(2, AttemptState::Failed, true),
            prior(1, AttemptState::Succeeded, true),
        ];
        let decision = decide("porep-1000-1-abc", REPLACES, &history);
        assert_eq!(created(&decision).0, 3);
    }

    /// A WindowPoSt deadline's partitions under one id: each input its own series.
    fn window_prior(
        name: &str,
        attempt: u32,
        state: AttemptState,
        same_work: bool,
    ) -> PriorAttempt {
        PriorAttempt {
            job_name: attempt_name(name, attempt),
            attempt,
            state,
            same_work,
        }
    }

    #[test]
    fn post_inputs_under_one_id_are_separate_series_that_never_cancel_each_other() {
        let rule = AttemptRule::OnePerInput;
        // Partition 1's input, while partition 0's job (same id, other input) is unfinished:
        // its own first attempt, nothing replaced or cancelled.
        let others = [
            window_prior("wdpost-p0-aaa", 1, AttemptState::Unfinished, false),
            window_prior("wdpost-p2-ccc", 3, AttemptState::Failed, false),
        ];
        assert_eq!(
            decide("wdpost-p1-bbb", rule, &others),
            Decision::Create {
                attempt: 1,
                job_name: "wdpost-p1-bbb".into(),
                replaces: None
            }
        );
        // The same input again reattaches while unfinished or succeeded, whatever the others.
        for state in [AttemptState::Unfinished, AttemptState::Succeeded] {
            let mut history = others.to_vec();
            history.push(window_prior("wdpost-p1-bbb", 1, state, true));
            assert_eq!(
                decide("wdpost-p1-bbb", rule, &history),
                Decision::Reattach {
                    job_name: "wdpost-p1-bbb".into()
                }
            );
        }
        // Its failed attempt's retry proves again, as its own series' next attempt, even
        // though another input's series is at a higher attempt number.
        let mut history = others.to_vec();
        history.push(window_prior("wdpost-p1-bbb", 1, AttemptState::Failed, true));
        let decision = decide("wdpost-p1-bbb", rule, &history);
        let (attempt, name, replaces) = created(&decision);
        assert_eq!((attempt, name), (2, "wdpost-p1-bbb-a2"));
        let replaces = replaces.unwrap();
        assert_eq!(replaces.job_name, "wdpost-p1-bbb");
        assert_eq!(replaces.reason, Reason::PreviousFailed);
        assert!(!replaces.cancel);
        // The same history under PoRep's rule would cancel partition 0's job: the bug this
        // rule exists for.
        let decision = decide("wdpost-p1-bbb", REPLACES, &others[..1]);
        assert!(created(&decision).2.unwrap().cancel);
    }

    #[test]
    fn attempt_names_stay_dns_labels() {
        for id in [
            "x".repeat(300),
            "a-".repeat(100),
            "porep-1000-7".into(),
            "".into(),
        ] {
            let first = crate::submission::job_name(&id);
            assert_eq!(attempt_name(&first, 1), first);
            for attempt in [2, 10, 1000, u32::MAX] {
                let name = attempt_name(&first, attempt);
                assert!(name.len() <= 63, "{name}");
                assert!(!name.starts_with('-') && !name.contains("--"), "{name}");
                // The id's digest stays in the name.
                assert!(
                    name.contains(&crate::submission::request_key(&id)),
                    "{name}"
                );
                assert!(name.ends_with(&format!("-a{attempt}")), "{name}");
            }
        }
        assert_eq!(
            attempt_name("porep-1000-7-3fa9c2d1e04b", 2),
            "porep-1000-7-3fa9c2d1e04b-a2"
        );
    }

    #[test]
    fn replaced_notes_say_what_and_why() {
        let decision = decide(
            "porep-1000-1-abc",
            REPLACES,
            &[prior(1, AttemptState::Failed, false)],
        );
        let (_, _, replaces) = created(&decision);
        assert_eq!(
            replaces.unwrap().note(),
            "porep-1000-1-abc (Failed; other_work)"
        );
    }
}
