//! Slurm's time syntax, the one parser for every duration a user types: job
//! time limits (`-t`), QOS and association limits, priority periods and
//! reservation windows.

use crate::Time;

/// The longest duration accepted: 365 days, in seconds (a year of wall time is
/// beyond any partition's limit; larger values are typing errors).
pub const MAX_DURATION_S: Time = 365 * 86_400;

/// What [`parse_duration`] accepts, for error messages.
pub const DURATION_FORMS: &str = "minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes, days-hours:minutes:seconds, 0, UNLIMITED or INFINITE (at most 365 days)";

/// A duration in seconds; `Ok(None)` for none (`0`, `UNLIMITED`, `INFINITE`).
/// Slurm's forms: "minutes", "minutes:seconds", "hours:minutes:seconds",
/// "days-hours", "days-hours:minutes" and "days-hours:minutes:seconds"
/// (sbatch(1)). Seconds are kept as given (Slurm rounds them up to a minute).
/// `Err(())` for anything else; callers name the option and quote
/// [`DURATION_FORMS`].
#[allow(clippy::result_unit_err)]
pub fn parse_duration(s: &str) -> Result<Option<Time>, ()> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("infinite") {
        return Ok(None);
    }
    let num = |x: &str| -> Result<i64, ()> {
        if x.is_empty() || x.len() > 9 || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(());
        }
        x.parse::<i64>().map_err(|_| ())
    };
    let sixty = |v: i64| if v < 60 { Ok(v) } else { Err(()) };
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(num(d)?), r),
        None => (None, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let secs = match (days, parts.as_slice()) {
        (None, [m]) => num(m)? * 60,
        (None, [m, s]) => num(m)? * 60 + sixty(num(s)?)?,
        (None, [h, m, s]) => num(h)? * 3600 + sixty(num(m)?)? * 60 + sixty(num(s)?)?,
        (Some(d), [h]) => d * 86_400 + num(h)? * 3600,
        (Some(d), [h, m]) => d * 86_400 + num(h)? * 3600 + sixty(num(m)?)? * 60,
        (Some(d), [h, m, s]) => d * 86_400 + num(h)? * 3600 + sixty(num(m)?)? * 60 + sixty(num(s)?)?,
        _ => return Err(()),
    };
    if secs > MAX_DURATION_S {
        return Err(());
    }
    Ok((secs > 0).then_some(secs))
}

/// Seconds in Slurm's own form, `D-HH:MM:SS` (`HH:MM:SS` under a day).
pub fn format_duration(s: Time) -> String {
    let (d, h, m, sec) = (s / 86_400, s % 86_400 / 3600, s % 3600 / 60, s % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{sec:02}")
    } else {
        format!("{h:02}:{m:02}:{sec:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_forms() {
        for (s, want) in [("90", 5400), ("1:30", 90), ("1:00:00", 3600), ("2-3", 2 * 86400 + 3 * 3600), ("1-0:30", 86400 + 1800), ("7-00:00:01", 7 * 86400 + 1)] {
            assert_eq!(parse_duration(s), Ok(Some(want)), "{s}");
        }
        for s in ["0", "UNLIMITED", "infinite"] {
            assert_eq!(parse_duration(s), Ok(None), "{s}");
        }
        for s in ["", "1:60", "abc", "366-0", "1-2-3", "-1", "1:2:3:4"] {
            assert_eq!(parse_duration(s), Err(()), "{s}");
        }
        assert_eq!(format_duration(7 * 86400 + 61), "7-00:01:01");
        assert_eq!(format_duration(3599), "00:59:59");
    }
}
