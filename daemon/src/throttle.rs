//! When the daemon writes its entry in the pool status (ADR 0003): at most every
//! `min_interval`, and only when the report changed, plus a heartbeat every `heartbeat` so
//! the operator sees the prover is alive. Fast-moving numbers belong on `/metrics`.

use std::time::{Duration, Instant};

pub const MIN_INTERVAL: Duration = Duration::from_secs(5);
pub const HEARTBEAT: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct ReportThrottle<T> {
    min_interval: Duration,
    heartbeat: Duration,
    last_attempt: Option<Instant>,
    last_written: Option<(Instant, T)>,
}

impl<T: PartialEq> ReportThrottle<T> {
    pub fn new(min_interval: Duration, heartbeat: Duration) -> Self {
        Self {
            min_interval,
            heartbeat,
            last_attempt: None,
            last_written: None,
        }
    }

    /// Whether `report` should be written at `now`.
    pub fn is_due(&self, now: Instant, report: &T) -> bool {
        if self
            .last_attempt
            .is_some_and(|at| now.duration_since(at) < self.min_interval)
        {
            return false;
        }
        match &self.last_written {
            None => true,
            Some((at, written)) => written != report || now.duration_since(*at) >= self.heartbeat,
        }
    }

    pub fn written(&mut self, now: Instant, report: T) {
        self.last_attempt = Some(now);
        self.last_written = Some((now, report));
    }

    /// A failed write counts against the interval too: an unreachable API server is not
    /// retried every tick.
    pub fn failed(&mut self, now: Instant) {
        self.last_attempt = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle() -> (ReportThrottle<u32>, Instant) {
        (ReportThrottle::new(MIN_INTERVAL, HEARTBEAT), Instant::now())
    }

    fn at(start: Instant, secs: u64) -> Instant {
        start + Duration::from_secs(secs)
    }

    #[test]
    fn the_first_report_is_due_at_once() {
        let (throttle, start) = throttle();
        assert!(throttle.is_due(start, &1));
    }

    #[test]
    fn a_change_waits_for_the_interval() {
        let (mut throttle, start) = throttle();
        throttle.written(start, 1);
        assert!(!throttle.is_due(at(start, 4), &2));
        assert!(throttle.is_due(at(start, 5), &2));
    }

    #[test]
    fn no_change_waits_for_the_heartbeat() {
        let (mut throttle, start) = throttle();
        throttle.written(start, 1);
        assert!(!throttle.is_due(at(start, 29), &1));
        assert!(throttle.is_due(at(start, 30), &1));
    }

    #[test]
    fn a_failed_write_is_retried_after_the_interval() {
        let (mut throttle, start) = throttle();
        throttle.failed(start);
        assert!(!throttle.is_due(at(start, 1), &1));
        assert!(throttle.is_due(at(start, 5), &1));
        throttle.written(at(start, 5), 1);
        throttle.failed(at(start, 40));
        assert!(!throttle.is_due(at(start, 41), &2));
    }
}
