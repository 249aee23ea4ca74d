//! A record of ProofJob assignments as a watch sees them, checking ADR 0003's promises at
//! every step: a prover has at most one unfinished job, and a job moves from one pod to
//! another only through the queue (unassigned in between).

use std::collections::{BTreeMap, BTreeSet};

/// One observed state of a job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobState {
    /// The `proofpipe.dev/assigned-pod` label.
    pub assigned_pod: Option<String>,
    /// Whether the job is Succeeded or Failed.
    pub finished: bool,
}

/// Every job's latest state, the pods each was ever assigned to, and what went wrong.
#[derive(Debug, Default)]
pub struct AssignmentLog {
    latest: BTreeMap<String, JobState>,
    pods_of: BTreeMap<String, BTreeSet<String>>,
    violations: Vec<String>,
}

impl AssignmentLog {
    /// Records that `job` was seen in `state`.
    pub fn observe(&mut self, job: &str, state: JobState) {
        let previous = self.latest.insert(job.to_owned(), state.clone());
        let Some(pod) = &state.assigned_pod else {
            return;
        };
        self.pods_of
            .entry(job.to_owned())
            .or_default()
            .insert(pod.clone());
        if let Some(JobState {
            assigned_pod: Some(before),
            ..
        }) = previous
            && before != *pod
        {
            self.violations.push(format!(
                "job {job} moved from pod {before} to pod {pod} without being requeued"
            ));
        }
        if !state.finished {
            let unfinished: Vec<&str> = self
                .latest
                .iter()
                .filter(|(_, s)| !s.finished && s.assigned_pod.as_ref() == Some(pod))
                .map(|(name, _)| name.as_str())
                .collect();
            if unfinished.len() > 1 {
                self.violations.push(format!(
                    "pod {pod} has several unfinished jobs at once: {unfinished:?}"
                ));
            }
        }
    }

    /// Forgets a deleted job.
    pub fn forget(&mut self, job: &str) {
        self.latest.remove(job);
    }

    /// The pods `job` was ever assigned to.
    pub fn pods_of(&self, job: &str) -> BTreeSet<String> {
        self.pods_of.get(job).cloned().unwrap_or_default()
    }

    /// Every broken promise seen so far.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(pod: Option<&str>, finished: bool) -> JobState {
        JobState {
            assigned_pod: pod.map(str::to_owned),
            finished,
        }
    }

    #[test]
    fn requeue_then_reassignment_is_fine() {
        let mut log = AssignmentLog::default();
        log.observe("a", state(None, false));
        log.observe("a", state(Some("p0"), false));
        log.observe("a", state(None, false));
        log.observe("a", state(Some("p1"), false));
        log.observe("a", state(Some("p1"), true));
        assert_eq!(log.violations(), [] as [String; 0]);
        assert_eq!(log.pods_of("a").len(), 2);
    }

    #[test]
    fn direct_move_between_pods_is_a_violation() {
        let mut log = AssignmentLog::default();
        log.observe("a", state(Some("p0"), false));
        log.observe("a", state(Some("p1"), false));
        assert_eq!(
            log.violations(),
            ["job a moved from pod p0 to pod p1 without being requeued"]
        );
    }

    #[test]
    fn two_unfinished_jobs_on_one_pod_is_a_violation() {
        let mut log = AssignmentLog::default();
        log.observe("a", state(Some("p0"), false));
        log.observe("b", state(Some("p0"), false));
        assert_eq!(
            log.violations(),
            [r#"pod p0 has several unfinished jobs at once: ["a", "b"]"#]
        );
    }

    #[test]
    fn a_finished_job_frees_its_pod() {
        let mut log = AssignmentLog::default();
        log.observe("a", state(Some("p0"), false));
        log.observe("a", state(Some("p0"), true));
        log.observe("b", state(Some("p0"), false));
        log.forget("a");
        log.observe("c", state(Some("p1"), false));
        assert_eq!(log.violations(), [] as [String; 0]);
    }
}
