//! A reservation as an operator writes it: `scontrol create reservation`'s
//! `Key=Value` words, a reservations file's `[[reservation]]` tables, or the
//! API's JSON; names (nodes, partition) resolved against a cluster and
//! instants against the engine's clock ([`ResvRequest::resolve`]).

use super::{Repeat, ReservationSpec, ResvNodes};
use crate::cluster::Cluster;
use crate::duration::{parse_duration, DURATION_FORMS};
use crate::Time;
use serde::{Deserialize, Serialize};

/// A reservation request, names unresolved.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResvRequest {
    /// `ReservationName` (the driver names one it is not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `StartTime`: see [`INSTANT_FORMS`].
    pub start: String,
    /// `EndTime`, or `Duration` ([`DURATION_FORMS`]); one of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// `Nodes`: a hostlist, or `ALL`; or `NodeCnt` with `Features` (and
    /// `PartitionName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// `Flags`: MAINT, IGNORE_JOBS, DAILY, WEEKLY.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accounts: Vec<String>,
}

/// What an instant may be, for error messages.
pub const INSTANT_FORMS: &str = "now, now+N with an optional unit (seconds, minutes, hours, days, weeks; seconds by default), YYYY-MM-DDTHH:MM[:SS] (UTC), or seconds of the engine's clock (Unix time live, seconds from the trace's start in the simulator)";

/// A field that cannot be read or resolved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}={value}: expected {expected}")]
pub struct ResvReqError {
    pub field: String,
    pub value: String,
    pub expected: String,
}

fn bad(field: &str, value: &str, expected: impl Into<String>) -> ResvReqError {
    ResvReqError { field: field.into(), value: crate::quote::bounded(value), expected: expected.into() }
}

fn list(v: &str) -> Vec<String> {
    v.split([',', '&']).map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}

impl ResvRequest {
    /// From scontrol's words: `StartTime=now Duration=120 Nodes=n[1-4]
    /// Flags=MAINT Users=alice` (keys in any case; `ReservationName` or `Name`,
    /// `NodeCnt`, `PartitionName`, `User(s)`, `Account(s)`).
    pub fn from_words<S: AsRef<str>>(words: &[S]) -> Result<ResvRequest, ResvReqError> {
        let mut r = ResvRequest::default();
        let mut start = None;
        for w in words {
            let w = w.as_ref();
            let Some((k, v)) = w.split_once('=') else {
                return Err(bad(w, "", "Key=Value (StartTime, Duration, EndTime, Nodes, NodeCnt, Features, PartitionName, Flags, Users, Accounts, ReservationName)"));
            };
            let v = v.trim();
            match k.trim().to_ascii_lowercase().as_str() {
                "reservationname" | "reservation" | "name" => r.name = Some(v.to_string()),
                "starttime" | "start" => start = Some(v.to_string()),
                "endtime" | "end" => r.end = Some(v.to_string()),
                "duration" => r.duration = Some(v.to_string()),
                "nodes" | "nodelist" => r.nodes = Some(v.to_string()),
                "nodecnt" | "nodecount" => r.node_count = Some(v.parse().map_err(|_| bad(k, v, "a node count"))?),
                "features" => r.features = list(v),
                "partitionname" | "partition" => r.partition = Some(v.to_string()),
                "flags" => r.flags = list(v),
                "users" | "user" => r.users = list(v),
                "accounts" | "account" => r.accounts = list(v),
                _ => return Err(bad(k, v, "one of StartTime, Duration, EndTime, Nodes, NodeCnt, Features, PartitionName, Flags, Users, Accounts, ReservationName")),
            }
        }
        r.start = start.ok_or_else(|| bad("StartTime", "", INSTANT_FORMS))?;
        Ok(r)
    }

    /// The reservation on `cluster`, its instants read at `now` of the
    /// engine's clock; `name` when it names none.
    pub fn resolve(&self, cluster: &Cluster, now: Time, name: &str) -> Result<ReservationSpec, ResvReqError> {
        let name = self.name.clone().unwrap_or_else(|| name.to_string());
        if name.is_empty() || name.len() > 64 || name.chars().any(|c| c.is_whitespace() || c.is_control() || c == '/' || c == ',') {
            return Err(bad("ReservationName", &name, "a name of at most 64 characters without white space, `,` or `/`"));
        }
        let start = instant(&self.start, now).ok_or_else(|| bad("StartTime", &self.start, INSTANT_FORMS))?;
        let end = match (&self.end, &self.duration) {
            (Some(e), None) => instant(e, now).ok_or_else(|| bad("EndTime", e, INSTANT_FORMS))?,
            (None, Some(d)) => match parse_duration(d) {
                Ok(Some(s)) => start.saturating_add(s),
                _ => return Err(bad("Duration", d, format!("a positive duration: {DURATION_FORMS}"))),
            },
            _ => return Err(bad("Duration", self.duration.as_deref().unwrap_or(""), "Duration or EndTime (one of them)")),
        };
        if end <= start {
            return Err(bad("EndTime", self.end.as_deref().unwrap_or(""), format!("an end after the start ({start})")));
        }
        let (mut maint, mut ignore_jobs, mut repeat) = (false, false, Repeat::Once);
        for f in &self.flags {
            match f.to_ascii_uppercase().as_str() {
                "MAINT" => maint = true,
                "IGNORE_JOBS" => ignore_jobs = true,
                "DAILY" => repeat = Repeat::Daily,
                "WEEKLY" => repeat = Repeat::Weekly,
                _ => return Err(bad("Flags", f, "MAINT, IGNORE_JOBS, DAILY or WEEKLY")),
            }
        }
        if !maint && self.users.is_empty() && self.accounts.is_empty() {
            return Err(bad("Users", "", "Users or Accounts that may use it (or Flags=MAINT, for nobody)"));
        }
        let partition = match &self.partition {
            None => None,
            Some(p) => Some(cluster.partitions.iter().position(|q| q.name == *p).ok_or_else(|| {
                bad("PartitionName", p, format!("one of the cluster's partitions ({})", cluster.partitions.iter().map(|q| q.name.as_str()).collect::<Vec<_>>().join(", ")))
            })? as u16),
        };
        let nodes = match (&self.nodes, self.node_count) {
            (Some(n), None) if n.eq_ignore_ascii_case("all") => match partition {
                Some(p) => ResvNodes::List(cluster.partitions[p as usize].nodes.iter().map(|&i| i as u32).collect()),
                None => ResvNodes::List((0..cluster.nodes.len() as u32).collect()),
            },
            (Some(n), None) => {
                // no more names than the cluster has nodes, each found by name
                let names = crate::hostlist::expand_at_most(n, cluster.nodes.len()).map_err(|e| bad("Nodes", n, format!("a hostlist of the cluster's nodes ({e})")))?;
                let index: std::collections::BTreeMap<&str, u32> = cluster.nodes.iter().enumerate().map(|(i, x)| (x.name.as_str(), i as u32)).collect();
                let mut idx = Vec::new();
                for m in &names {
                    let i = index.get(m.as_str()).copied().ok_or_else(|| bad("Nodes", m, "nodes of the cluster"))?;
                    idx.push(i);
                }
                ResvNodes::List(idx)
            }
            (None, Some(count)) if count > 0 => ResvNodes::Count { count, features: self.features.clone(), partition },
            _ => return Err(bad("Nodes", self.nodes.as_deref().unwrap_or(""), "Nodes (a hostlist or ALL) or NodeCnt (at least 1), one of them")),
        };
        Ok(ReservationSpec { name, start, end, nodes, maint, ignore_jobs, repeat, users: self.users.clone(), accounts: self.accounts.clone() })
    }
}

/// An instant of the engine's clock ([`INSTANT_FORMS`]).
pub fn instant(s: &str, now: Time) -> Option<Time> {
    let s = s.trim();
    let lower = s.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("now") {
        if rest.is_empty() {
            return Some(now);
        }
        let rest = rest.strip_prefix('+')?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n: Time = rest[..digits].parse().ok().filter(|&n: &Time| n <= crate::MAX_TIME)?;
        let unit = match &rest[digits..] {
            "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "h" | "hour" | "hours" => 3600,
            "d" | "day" | "days" => 86_400,
            "w" | "week" | "weeks" => 7 * 86_400,
            _ => return None,
        };
        return now.checked_add(n.checked_mul(unit)?).filter(|&t| t <= crate::MAX_TIME);
    }
    if s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() && s.len() <= 13 {
        return s.parse().ok().filter(|&t: &Time| t <= crate::MAX_TIME);
    }
    // YYYY-MM-DD[THH:MM[:SS]], UTC
    let (date, time) = s.split_once('T').unwrap_or((s, "00:00"));
    let d: Vec<&str> = date.split('-').collect();
    let t: Vec<&str> = time.split(':').collect();
    let num = |x: &str, lo: i64, hi: i64| x.parse::<i64>().ok().filter(|v| (lo..=hi).contains(v) && !x.is_empty() && x.len() <= 4);
    let ([y, mo, da], [h, mi, rest @ ..]) = (d.as_slice(), t.as_slice()) else { return None };
    let (y, mo, da, h, mi) = (num(y, 1970, 9999)?, num(mo, 1, 12)?, num(da, 1, 31)?, num(h, 0, 23)?, num(mi, 0, 59)?);
    let sec = match rest {
        [] => 0,
        [s] => num(s, 0, 59)?,
        _ => return None,
    };
    Some(crate::civil::days_from_civil(y, mo, da) * 86_400 + h * 3600 + mi * 60 + sec)
}

/// A reservations file (the simulator's `--reservations`): `[[reservation]]`
/// tables with the request's fields (`start` and `end` as integers are
/// seconds from the trace's start, as `D-HH:MM:SS` durations from it; an
/// integer `duration` is seconds), each with its table's line. Errors name
/// file, line and key.
pub fn from_toml(text: &str, source_name: &str) -> Result<Vec<(ResvRequest, Option<usize>)>, crate::ClusterError> {
    use crate::cluster::config::Source;
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        #[serde(default)]
        reservation: Vec<toml::Spanned<toml::Table>>,
    }
    let src = Source::new(text, source_name);
    let f: File = toml::from_str(text).map_err(|e| src.err(e.span().and_then(|s| src.line_of(s)), String::new(), e.message().trim().to_string()))?;
    let mut out = Vec::new();
    for (i, t) in f.reservation.iter().enumerate() {
        let span = t.span();
        let mut table = t.get_ref().clone();
        // integer instants are seconds of the clock, and a duration
        // (`D-HH:MM:SS`) is that long after its start (the trace's): the
        // request reads seconds
        for k in ["start", "end"] {
            let secs = match table.get(k) {
                Some(toml::Value::Integer(n)) => Some(*n),
                Some(toml::Value::String(t)) if t.contains(':') => parse_duration(t).ok().map(|d| d.unwrap_or(0)),
                _ => None,
            };
            if let Some(n) = secs {
                table.insert(k.into(), toml::Value::String(n.to_string()));
            }
        }
        // an integer duration is seconds too (scontrol's bare number is minutes)
        if let Some(toml::Value::Integer(n)) = table.get("duration") {
            let n = *n;
            let text = if n >= 0 { format!("{}:{:02}", n / 60, n % 60) } else { n.to_string() };
            table.insert("duration".into(), toml::Value::String(text));
        }
        let r: ResvRequest = toml::Value::Table(table).try_into().map_err(|e: toml::de::Error| {
            let msg = e.message().trim().to_string();
            let key = msg.split('`').nth(1).unwrap_or("").to_string();
            src.err(src.key_line(span.clone(), &key).or_else(|| src.line_of(span.clone())), format!("reservation[{i}]"), msg)
        })?;
        out.push((r, src.line_of(span)));
    }
    Ok(out)
}
