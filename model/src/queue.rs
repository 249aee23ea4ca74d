//! A pool's queue: the jobs waiting for one of its provers, in the order they are served.
//! The operator assigns in this order and the gateway reports positions in it, so the two
//! can never disagree.

use std::cmp::Reverse;

/// What the queue needs to know of a job.
pub trait QueueEntry {
    /// The pool the job is for.
    fn pool(&self) -> &str;
    /// Waiting for a prover: not finished, not suspended, not assigned, not being deleted.
    fn is_waiting(&self) -> bool;
    /// Higher goes first.
    fn priority(&self) -> i32;
    /// When the job was created, in any monotonic unit (older goes first); `None` first.
    fn created(&self) -> Option<i64>;
    /// The job's name: the last tie-breaker, so that the order is total.
    fn name(&self) -> &str;
}

/// The waiting jobs of `pool` among `jobs`, head first: highest priority, then oldest, then
/// by name.
pub fn queue<'a, J: QueueEntry + 'a>(
    pool: &str,
    jobs: impl IntoIterator<Item = &'a J>,
) -> Vec<&'a J> {
    let mut queued: Vec<&J> = jobs
        .into_iter()
        .filter(|job| job.pool() == pool && job.is_waiting())
        .collect();
    queued.sort_by(|a, b| {
        (Reverse(a.priority()), a.created(), a.name()).cmp(&(
            Reverse(b.priority()),
            b.created(),
            b.name(),
        ))
    });
    queued
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Job(&'static str, &'static str, bool, i32, i64);

    impl QueueEntry for Job {
        fn pool(&self) -> &str {
            self.1
        }
        fn is_waiting(&self) -> bool {
            self.2
        }
        fn priority(&self) -> i32 {
            self.3
        }
        fn created(&self) -> Option<i64> {
            Some(self.4)
        }
        fn name(&self) -> &str {
            self.0
        }
    }

    #[test]
    fn priority_first_then_age_then_name_and_only_waiting_jobs_of_the_pool() {
        let jobs = [
            Job("old-low", "gpu", true, 0, 0),
            Job("new-high", "gpu", true, 10, 50),
            Job("old-high", "gpu", true, 10, 10),
            Job("b-tie", "gpu", true, 0, 5),
            Job("a-tie", "gpu", true, 0, 5),
            Job("negative", "gpu", true, -1, 0),
            Job("other-pool", "cpu", true, 99, 0),
            Job("running", "gpu", false, 99, 0),
        ];
        let names: Vec<&str> = queue("gpu", &jobs).iter().map(|j| j.0).collect();
        assert_eq!(
            names,
            [
                "old-high", "new-high", "old-low", "a-tie", "b-tie", "negative"
            ]
        );
    }
}
