//! A schedule's cron expression, parsed and checked once (with the `croner` crate: the Vixie
//! cron fields, `0`–`7` days of the week with `0` and `7` Sunday, names of days and months,
//! `L`, `W` and `#`, and an optional leading seconds field), and the due times it gives, in
//! milliseconds since the Unix epoch, in UTC.

use chrono::{DateTime, TimeZone as _, Utc};
use croner::parser::{CronParser, Seconds};
use croner::Cron;

use crate::error::ApiError;

/// The longest cron expression taken.
const MAX_CRON_CHARS: usize = 200;

/// A parsed cron expression: when a schedule fires.
#[derive(Debug, Clone)]
pub(crate) struct When {
    cron: Cron,
}

impl When {
    /// Parses `expression` (5 fields, or 6 with seconds first) in time zone `timezone` (only
    /// UTC: `None`, `UTC`, `Etc/UTC`, `Z`); a 400 saying what is wrong otherwise.
    pub fn parse(expression: &str, timezone: Option<&str>) -> Result<When, ApiError> {
        check_timezone(timezone)?;
        let shown: String = expression.chars().take(60).collect();
        if expression.chars().count() > MAX_CRON_CHARS {
            return Err(ApiError::BadRequest(format!(
                "the cron expression '{shown}...' is longer than {MAX_CRON_CHARS} characters"
            )));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .build()
            .parse(expression.trim())
            .map_err(|e| {
                ApiError::BadRequest(format!(
                    "the cron expression '{shown}' is not valid ({e}); write 5 fields \
                     (minute hour day-of-month month day-of-week, e.g. `0 9 * * MON-FRI`) or 6 \
                     with seconds first"
                ))
            })?;
        let when = When { cron };
        // An expression that never matches (e.g. `0 0 30 2 *`) is refused too.
        if when.next_after(0).is_none() {
            return Err(ApiError::BadRequest(format!(
                "the cron expression '{shown}' never fires (no date matches it)"
            )));
        }
        Ok(when)
    }

    /// The first due time strictly after `ms`.
    pub fn next_after(&self, ms: u64) -> Option<u64> {
        let at = at(ms)?;
        self.cron
            .find_next_occurrence(&at, false)
            .ok()
            .map(|t| t.timestamp_millis().max(0) as u64)
    }

    /// The latest due time at or before `ms`.
    pub fn latest_until(&self, ms: u64) -> Option<u64> {
        let at = at(ms)?;
        self.cron
            .find_previous_occurrence(&at, true)
            .ok()
            .map(|t| t.timestamp_millis().max(0) as u64)
    }
}

/// Checks that `timezone` names UTC (the only zone schedules take).
pub(crate) fn check_timezone(timezone: Option<&str>) -> Result<(), ApiError> {
    match timezone {
        None | Some("UTC" | "Etc/UTC" | "utc" | "Z" | "GMT" | "Etc/GMT") => Ok(()),
        Some(other) => Err(ApiError::BadRequest(format!(
            "time zone '{}' is not taken: schedules run in UTC only; leave `timezone` out or \
             send \"UTC\", and write the cron expression in UTC",
            other.chars().take(60).collect::<String>()
        ))),
    }
}

fn at(ms: u64) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(i64::try_from(ms).ok()?).single()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hourly_due_times() {
        let when = When::parse("0 * * * *", None).unwrap();
        let hour = 3_600_000;
        assert_eq!(when.next_after(0), Some(hour));
        assert_eq!(when.next_after(hour), Some(2 * hour));
        assert_eq!(when.latest_until(2 * hour + 5), Some(2 * hour));
        assert_eq!(when.latest_until(2 * hour), Some(2 * hour));
    }

    #[test]
    fn seconds_field_and_sunday_as_zero() {
        let when = When::parse("*/10 * * * * *", None).unwrap();
        assert_eq!(when.next_after(1_000), Some(10_000));
        // 1970-01-04 was a Sunday.
        let sunday = When::parse("0 0 * * 0", None).unwrap();
        assert_eq!(sunday.next_after(0), Some(3 * 86_400_000));
    }

    #[test]
    fn bad_expressions_and_zones_are_refused() {
        for bad in ["", "* * *", "61 * * * *", "0 0 30 2 *", "hello"] {
            assert!(When::parse(bad, None).is_err(), "{bad}");
        }
        assert!(When::parse("0 * * * *", Some("America/New_York")).is_err());
        assert!(When::parse("0 * * * *", Some("UTC")).is_ok());
    }
}
