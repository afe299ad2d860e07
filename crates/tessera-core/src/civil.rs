//! Unix seconds to and from the proleptic Gregorian calendar (UTC), for every
//! year a store can hold: H. Hinnant's days-from-civil algorithms
//! (<https://howardhinnant.github.io/date_algorithms.html>). Years 0 to 9999 print
//! with four digits; others in ISO 8601's expanded form (`+141338`, `-0001`), so a
//! far-future date reads as one instead of as garbage.

/// (year, month, day) of a count of days since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Days since 1970-01-01 of a civil date.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn year(y: i64) -> String {
    match y {
        0..=9999 => format!("{y:04}"),
        10_000.. => format!("+{y}"),
        _ => format!("-{:04}", -y),
    }
}

/// Calendar month `YYYY-MM` (UTC) of a Unix time.
pub fn month_of(unix: i64) -> String {
    let (y, m, _) = civil_from_days(unix.div_euclid(86400));
    format!("{}-{m:02}", year(y))
}

/// `YYYY-MM-DDTHH:MM:SS` (UTC) of a Unix time, as sacct prints it.
pub fn datetime(unix: i64) -> String {
    let (y, m, d) = civil_from_days(unix.div_euclid(86400));
    let s = unix.rem_euclid(86400);
    format!("{}-{m:02}-{d:02}T{:02}:{:02}:{:02}", year(y), s / 3600, s % 3600 / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(datetime(0), "1970-01-01T00:00:00");
        assert_eq!(datetime(951_868_799), "2000-02-29T23:59:59");
        assert_eq!(datetime(253_402_300_799), "9999-12-31T23:59:59");
        assert_eq!(datetime(253_402_300_800), "+10000-01-01T00:00:00");
        assert_eq!(datetime(-62_167_219_201), "-0001-12-31T23:59:59");
        assert_eq!(month_of(-1), "1969-12");
    }

    /// Every day from 2^43 s before 1970 to 2^43 s after turns into a date and
    /// back (sampled), with a month from 1 to 12 and a day from 1 to 31.
    #[test]
    fn round_trip_across_the_stored_range() {
        let span = (1i64 << 43) / 86400;
        let mut d = -span;
        while d <= span {
            let (y, m, day) = civil_from_days(d);
            assert!((1..=12).contains(&m) && (1..=31).contains(&day), "{d}: {y}-{m}-{day}");
            assert_eq!(days_from_civil(y, m, day), d);
            d += 9_973;
        }
    }
}
