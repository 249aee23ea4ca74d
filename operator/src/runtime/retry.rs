//! Exponential backoff for objects whose reconcile keeps failing: 1 s, 2 s, 4 s, ... up to
//! 5 minutes, reset by the next success.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

const FIRST: Duration = Duration::from_secs(1);
const MAX: Duration = Duration::from_secs(300);

/// The delay before retrying after the `failures`-th consecutive failure (1-based).
pub fn delay(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    FIRST.saturating_mul(1 << doublings).min(MAX)
}

/// Consecutive failures per object.
#[derive(Default)]
pub struct FailureCounts(Mutex<HashMap<String, u32>>);

impl FailureCounts {
    /// Counts one more failure of `key` and returns how long to wait before retrying.
    pub fn failed(&self, key: &str) -> Duration {
        let mut counts = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let failures = counts.entry(key.to_owned()).or_insert(0);
        *failures = failures.saturating_add(1);
        delay(*failures)
    }

    pub fn succeeded(&self, key: &str) {
        let mut counts = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        counts.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_five_minutes() {
        let secs: Vec<u64> = [1, 2, 3, 4, 9, 10, 1000]
            .map(|n| delay(n).as_secs())
            .to_vec();
        assert_eq!(secs, [1, 2, 4, 8, 256, 300, 300]);
    }

    #[test]
    fn success_resets_the_count() {
        let counts = FailureCounts::default();
        assert_eq!(counts.failed("a"), Duration::from_secs(1));
        assert_eq!(counts.failed("a"), Duration::from_secs(2));
        assert_eq!(counts.failed("b"), Duration::from_secs(1));
        counts.succeeded("a");
        assert_eq!(counts.failed("a"), Duration::from_secs(1));
    }
}
