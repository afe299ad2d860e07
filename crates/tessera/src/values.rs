//! The values of flags that clap checks by parsing them: an unknown or
//! impossible value is a usage error (exit 2), like an unknown flag. Every
//! argument definition (`cli.rs`, `live_args.rs`, `tool_args.rs`) takes its
//! parsers from here.

/// `90`, `90s`, `15m`, `1h`, `2d`: seconds, at least 0.
pub fn duration_s(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], c),
        _ => (t, 's'),
    };
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86400,
        _ => return Err(format!("`{t}`: expected seconds, or a number with s, m, h or d")),
    };
    num.parse::<i64>().ok().filter(|n| *n >= 0).and_then(|n| n.checked_mul(scale)).ok_or_else(|| format!("`{t}`: expected a whole number of at least 0, with s, m, h or d"))
}

/// A price: a finite number >= 0 (NaN, infinities and negative prices refused).
pub fn price(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x + 0.0),
        _ => Err(format!("expected a finite price >= 0, e.g. 0.05, not {}", tessera_workload::quote::bounded(s))),
    }
}

/// A value clap checks by parsing it as `T`, kept as text: an unknown value is a
/// usage error (exit 2), like an unknown flag.
pub fn parsed_as<T: std::str::FromStr>(s: &str) -> Result<String, String>
where
    T::Err: std::fmt::Display,
{
    s.parse::<T>().map(|_| s.to_string()).map_err(|e| e.to_string())
}

/// A comma-separated list whose every element `ok` accepts, kept as text.
fn each(s: &str, ok: impl Fn(&str) -> Result<(), String>) -> Result<String, String> {
    for x in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        ok(x)?;
    }
    Ok(s.to_string())
}

/// A count of at least 1 (`--max-jobs 0` would replay nothing: omit the flag
/// for all).
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number >= 1 (omit the flag for all)".to_string()),
    }
}

/// `--policy`: a known policy.
pub fn policy(s: &str) -> Result<String, String> {
    parsed_as::<tessera_core::PolicyKind>(s)
}

/// `--policy a,b`: known policies.
pub fn policies(s: &str) -> Result<String, String> {
    each(s, |p| policy(p).map(|_| ()))
}

/// `acct --format`: sacct field names.
pub fn acct_fields(s: &str) -> Result<String, String> {
    use tessera_accounting::acct::{field_name, FIELDS};
    each(s, |f| field_name(f).map(|_| ()).ok_or_else(|| format!("unknown field `{f}`; known: {}", FIELDS.iter().map(|f| f.0).collect::<Vec<_>>().join(", "))))
}

/// `acct --state`: job states.
pub fn acct_states(s: &str) -> Result<String, String> {
    each(s, |x| tessera_accounting::acct::state_name(x).map(|_| ()).ok_or_else(|| format!("unknown state `{x}`; known: COMPLETED (CD), FAILED (F), CANCELLED (CA), TIMEOUT (TO), NODE_FAIL (NF)")))
}

/// `MIN:MAX` seconds, 0 <= MIN <= MAX <= 86400.
pub fn seconds_range(s: &str) -> Result<(f64, f64), String> {
    let bad = || format!("expected MIN:MAX seconds with 0 <= MIN <= MAX <= 86400 (e.g. 5:30), found {}", tessera_core::quote::bounded(s));
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let (a, b): (f64, f64) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if !(a.is_finite() && b.is_finite() && 0.0 <= a && a <= b && b <= 86_400.0) {
        return Err(bad());
    }
    Ok((a, b))
}
