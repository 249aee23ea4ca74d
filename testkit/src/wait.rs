//! Polling for a state with a deadline.

use std::future::Future;
use std::time::{Duration, Instant};

/// How often conditions are polled.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Polls `check` every [`POLL_INTERVAL`] until it returns `Ok`, or until `timeout` has passed,
/// then fails with `what` and the last reason `check` gave.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let reason = match check().await {
            Ok(value) => return Ok(value),
            Err(reason) => reason,
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "timed out after {timeout:?} waiting for {what}: {reason}"
            ));
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn returns_the_first_success() {
        let mut calls = 0;
        let value = eventually("the third call", Duration::from_secs(5), || {
            calls += 1;
            let result = if calls == 3 {
                Ok(calls)
            } else {
                Err(format!("call {calls}"))
            };
            async move { result }
        })
        .await;
        assert_eq!(value, Ok(3));
    }

    #[tokio::test]
    async fn times_out_with_the_last_reason() {
        let err = eventually("never", Duration::from_millis(1), || async {
            Err::<(), _>("still no".to_string())
        })
        .await
        .unwrap_err();
        assert!(err.contains("waiting for never: still no"), "{err}");
    }
}
