//! [`RetryPolicy`]: when and how long to wait before calling a model again.

use std::time::Duration;

use super::ModelError;

/// How a [`ChatModelAgent`](crate::ChatModelAgent) retries a model call that failed with a
/// [retryable](ModelError::retryable) error: up to `max_retries` more attempts, waiting
/// `initial_backoff`, then `multiplier` times longer each time, never more than `max_backoff`
/// (a server's `Retry-After` is honoured up to `max_backoff`). Each wait is then shortened by
/// up to `jitter` of itself (see [`jittered`](Self::jittered)), so that many runs failing at
/// once (a fan-out meeting a 429) do not retry in lockstep; the share is drawn from the run's
/// host clock, so a run on a [`ManualHost`](crate::host::ManualHost) waits the same every time.
///
/// The default is 3 retries after 500 ms, 1 s and 2 s (at most 10 s), each up to 20% shorter.
///
/// ```
/// use std::time::Duration;
/// use agentweave_runtime::model::{ModelError, RetryPolicy};
///
/// let policy = RetryPolicy::new(4).initial_backoff(Duration::from_millis(100));
/// let busy = ModelError::http("gpt", 429, "slow down");
/// assert_eq!(policy.delay(1, &busy), Duration::from_millis(100));
/// assert_eq!(policy.delay(3, &busy), Duration::from_millis(400));
/// assert!(policy.should_retry(4, &busy));
/// assert!(!policy.should_retry(5, &busy));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts after the first; 0 disables retries.
    pub max_retries: u32,
    /// Wait before the first retry.
    pub initial_backoff: Duration,
    /// Longest wait between two attempts.
    pub max_backoff: Duration,
    /// Factor the wait grows by after each retry (at least 1).
    pub multiplier: f64,
    /// The largest share of a wait taken off at random (0 to 1; 0: no jitter).
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(10),
            multiplier: 2.0,
            jitter: 0.2,
        }
    }
}

impl RetryPolicy {
    /// The default policy with `max_retries` retries.
    pub fn new(max_retries: u32) -> Self {
        RetryPolicy {
            max_retries,
            ..RetryPolicy::default()
        }
    }

    /// No retries: the first failure is final.
    pub fn none() -> Self {
        Self::new(0)
    }

    /// Sets the wait before the first retry.
    pub fn initial_backoff(mut self, wait: Duration) -> Self {
        self.initial_backoff = wait;
        self
    }

    /// Sets the longest wait.
    pub fn max_backoff(mut self, wait: Duration) -> Self {
        self.max_backoff = wait;
        self
    }

    /// Sets the growth factor of the wait.
    pub fn multiplier(mut self, factor: f64) -> Self {
        self.multiplier = factor;
        self
    }

    /// Sets the largest share of a wait taken off at random (clamped to 0..=1).
    pub fn jitter(mut self, share: f64) -> Self {
        self.jitter = if share.is_nan() {
            0.0
        } else {
            share.clamp(0.0, 1.0)
        };
        self
    }

    /// `wait` shortened by up to [`jitter`](Self::jitter) of itself, by a share `seed` picks
    /// (any 64 bits: the same seed gives the same wait).
    ///
    /// ```
    /// use std::time::Duration;
    /// use agentweave_runtime::model::RetryPolicy;
    /// let policy = RetryPolicy::default().jitter(0.5);
    /// let wait = Duration::from_secs(2);
    /// assert_eq!(policy.jittered(wait, 0), wait);
    /// assert_eq!(policy.jittered(wait, u64::MAX / 2 + 1), Duration::from_millis(1500));
    /// assert!(policy.jittered(wait, u64::MAX) >= Duration::from_secs(1));
    /// assert_eq!(RetryPolicy::default().jitter(0.0).jittered(wait, 12345), wait);
    /// ```
    pub fn jittered(&self, wait: Duration, seed: u64) -> Duration {
        let share = (seed as f64 / u64::MAX as f64) * self.jitter.clamp(0.0, 1.0);
        wait.mul_f64(1.0 - share.clamp(0.0, 1.0))
    }

    /// Whether attempt number `failed_attempt` (1 for the first call), which failed with
    /// `error`, should be followed by another.
    pub fn should_retry(&self, failed_attempt: u32, error: &ModelError) -> bool {
        error.retryable() && failed_attempt <= self.max_retries
    }

    /// How long to wait before retry number `retry` (1 for the first retry) after `error`.
    pub fn delay(&self, retry: u32, error: &ModelError) -> Duration {
        if let Some(asked) = error.retry_after() {
            return asked.min(self.max_backoff);
        }
        let factor = self
            .multiplier
            .max(1.0)
            .powi(retry.saturating_sub(1) as i32);
        let wait = self.initial_backoff.as_secs_f64() * factor;
        if wait.is_finite() && wait < self.max_backoff.as_secs_f64() {
            Duration::from_secs_f64(wait)
        } else {
            self.max_backoff
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_and_honours_retry_after() {
        let p = RetryPolicy::default();
        let e = ModelError::http("m", 500, "");
        let waits: Vec<u128> = (1..=7).map(|r| p.delay(r, &e).as_millis()).collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 10000, 10000]);
        let asked = ModelError::Http {
            model: "m".into(),
            status: 429,
            body: "".into(),
            retry_after: Some(Duration::from_secs(3)),
        };
        assert_eq!(p.delay(1, &asked), Duration::from_secs(3));
        let too_long = ModelError::Http {
            model: "m".into(),
            status: 429,
            body: "".into(),
            retry_after: Some(Duration::from_secs(60)),
        };
        assert_eq!(p.delay(1, &too_long), Duration::from_secs(10));
    }

    #[test]
    fn non_retryable_errors_are_not_retried() {
        let p = RetryPolicy::new(5);
        assert!(!p.should_retry(1, &ModelError::http("m", 400, "")));
        assert!(!RetryPolicy::none().should_retry(1, &ModelError::http("m", 503, "")));
    }
}
