//! APEL accounting messages (EGI/WLCG), as the APEL loader (`apel/apel`,
//! `apel/db/records/*.py`) parses them: a header line, then `Key: value` records
//! separated by `%%` lines, integer seconds, epoch times, UTC months by end time.
//!
//! | message | header | version |
//! |---|---|---|
//! | individual job | `APEL-individual-job-message: v0.3` | ServiceLevelType HEPSPEC + ServiceLevel |
//! | individual job | `APEL-individual-job-message: v0.4` | `ServiceLevel: {hepspec: X}` |
//! | summary | `APEL-summary-job-message: v0.2` | ServiceLevelType + ServiceLevel |
//! | summary | `APEL-summary-job-message: v0.4` | `ServiceLevel: {hepspec: X}` |
//! | normalised summary | `APEL-summary-job-message: v0.3` | Normalised{Wall,Cpu}Duration, `Infrastructure` |
//! | normalised summary | `APEL-normalised-summary-message: v0.4` | `NormalisedWallDuration: {hepspec: N}` |
//! | sync | `APEL-sync-message: v0.1` | jobs per submit host and month |
//!
//! Unlike APEL's batch-system parsers, which publish one site-wide benchmark,
//! Tessera's ServiceLevel is the HEP-SPEC06 per core of the nodes each job ran on
//! (the mean over its cores). Normalised durations are duration × ServiceLevel,
//! as the APEL server computes them (no × Processors).
//!
//! Values from outside (site, user, account, partition, host names) are written
//! with [`quote::apel`]: the loader splits a message into lines with Python's
//! `splitlines` and into records at every `%%`, so control characters, line
//! separators and `%` are escaped (`\n`, `\x25`) and a value cannot add a field
//! or a record.

use crate::store::{Store, StoreError};
use crate::usage::month_of;
use rusqlite::params;
use std::collections::BTreeMap;
use std::fmt::Write;
use tessera_core::quote;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    Individual03,
    Individual04,
    Summary02,
    Summary04,
    Normalised03,
    Normalised04,
    Sync01,
}

impl Message {
    pub fn header(self) -> &'static str {
        match self {
            Message::Individual03 => "APEL-individual-job-message: v0.3",
            Message::Individual04 => "APEL-individual-job-message: v0.4",
            Message::Summary02 => "APEL-summary-job-message: v0.2",
            Message::Summary04 => "APEL-summary-job-message: v0.4",
            Message::Normalised03 => "APEL-summary-job-message: v0.3",
            Message::Normalised04 => "APEL-normalised-summary-message: v0.4",
            Message::Sync01 => "APEL-sync-message: v0.1",
        }
    }

    /// Mandatory fields (the loader's `_mandatory_fields`).
    pub fn mandatory(self) -> &'static [&'static str] {
        match self {
            Message::Individual03 | Message::Individual04 => &["Site", "LocalJobId", "WallDuration", "CpuDuration", "StartTime", "EndTime"],
            Message::Summary02 | Message::Summary04 => &["Site", "Month", "Year", "WallDuration", "CpuDuration", "NumberOfJobs"],
            Message::Normalised03 | Message::Normalised04 => {
                &["Site", "Month", "Year", "WallDuration", "CpuDuration", "NormalisedWallDuration", "NormalisedCpuDuration", "NumberOfJobs"]
            }
            Message::Sync01 => &["Site", "NumberOfJobs", "Month", "Year"],
        }
    }

    pub fn from_kind(kind: &str, version: Option<&str>) -> Result<Message, String> {
        let v = version.map(|v| v.trim_start_matches('v'));
        Ok(match (kind, v) {
            ("individual", None | Some("0.3")) => Message::Individual03,
            ("individual", Some("0.4")) => Message::Individual04,
            ("summary", None | Some("0.2")) => Message::Summary02,
            ("summary", Some("0.4")) => Message::Summary04,
            ("normalised", None | Some("0.3")) => Message::Normalised03,
            ("normalised", Some("0.4")) => Message::Normalised04,
            ("sync", None | Some("0.1")) => Message::Sync01,
            (k, Some(v)) => return Err(format!("no APEL {k} message v{v}; known: individual 0.3|0.4, summary 0.2|0.4, normalised 0.3|0.4, sync 0.1")),
            (k, None) => return Err(format!("unknown APEL message type `{k}`")),
        })
    }
}

/// Who reports: APEL `Site`, `SubmitHost` and `MachineName`.
#[derive(Clone, Debug)]
pub struct Reporter {
    pub site: String,
    pub submit_host: String,
    pub machine: String,
}

struct JobRow {
    job_id: i64,
    user: String,
    account: String,
    partition: String,
    start: i64,
    end: i64,
    wall: i64,
    cpu: f64,
    procs: i64,
    nodes: i64,
    mem_mb: i64,
    hs06: Option<f64>,
}

fn rows(store: &Store, run: i64) -> Result<(i64, Vec<JobRow>), StoreError> {
    let e = |source| StoreError::Sqlite { path: store.path().to_string(), source };
    let c = store.connection();
    let offset: i64 = c.query_row("SELECT epoch_offset FROM runs WHERE id = ?1", params![run], |r| r.get(0)).map_err(e)?;
    let mut q = c
        .prepare("SELECT job_id, user, account, partition, start_time, end_time, wall_raw_s, cpu_raw_s, alloc_cores, alloc_nodes, req_mem_mb, hs06_per_core FROM jobs WHERE run_id = ?1 ORDER BY id")
        .map_err(e)?;
    let v = q
        .query_map(params![run], |r| {
            Ok(JobRow {
                job_id: r.get(0)?,
                user: r.get(1)?,
                account: r.get(2)?,
                partition: r.get(3)?,
                start: r.get::<_, i64>(4)? + offset,
                end: r.get::<_, i64>(5)? + offset,
                wall: r.get(6)?,
                cpu: r.get(7)?,
                procs: r.get(8)?,
                nodes: r.get(9)?,
                mem_mb: r.get(10)?,
                hs06: r.get(11)?,
            })
        })
        .map_err(e)?
        .collect::<Result<_, _>>()
        .map_err(e)?;
    Ok((offset, v))
}

fn bench(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Render one message of `kind` for a run.
pub fn export(store: &Store, run: i64, kind: Message, who: &Reporter) -> Result<String, StoreError> {
    let (_, jobs) = rows(store, run)?;
    let mut out = String::new();
    let _ = writeln!(out, "{}", kind.header());
    let mut record = |fields: &[(&str, String)]| {
        for (k, v) in fields {
            let _ = writeln!(out, "{k}: {}", quote::apel(v));
        }
        let _ = writeln!(out, "%%");
    };
    match kind {
        Message::Individual03 | Message::Individual04 => {
            for j in &jobs {
                let mut f: Vec<(&str, String)> = vec![
                    ("Site", who.site.clone()),
                    ("SubmitHost", who.submit_host.clone()),
                    ("MachineName", who.machine.clone()),
                    ("Queue", j.partition.clone()),
                    ("LocalJobId", j.job_id.to_string()),
                    ("LocalUserId", j.user.clone()),
                    ("VO", j.account.clone()),
                    ("WallDuration", j.wall.to_string()),
                    ("CpuDuration", (j.cpu.round() as i64).to_string()),
                    ("Processors", j.procs.to_string()),
                    ("NodeCount", j.nodes.to_string()),
                    ("StartTime", j.start.to_string()),
                    ("EndTime", j.end.to_string()),
                    ("InfrastructureDescription", "APEL-Tessera-Tessera".into()),
                    ("InfrastructureType", "local".into()),
                ];
                if j.mem_mb > 0 {
                    f.push(("MemoryReal", (j.mem_mb * 1024).to_string()));
                }
                if let Some(b) = j.hs06 {
                    if kind == Message::Individual03 {
                        f.push(("ServiceLevelType", "HEPSPEC".into()));
                        f.push(("ServiceLevel", bench(b)));
                    } else {
                        f.push(("ServiceLevel", format!("{{hepspec: {}}}", bench(b))));
                    }
                }
                record(&f);
            }
        }
        Message::Summary02 | Message::Summary04 | Message::Normalised03 | Message::Normalised04 => {
            let normalised = matches!(kind, Message::Normalised03 | Message::Normalised04);
            // key: (year-month, account, processors, nodes, service level in milli-HS06)
            #[derive(Default)]
            struct Agg {
                earliest: i64,
                latest: i64,
                wall: i64,
                cpu: f64,
                norm_wall: f64,
                norm_cpu: f64,
                n: u64,
            }
            let mut groups: BTreeMap<(String, String, i64, i64, Option<i64>), Agg> = BTreeMap::new();
            for j in &jobs {
                let level = if normalised { None } else { j.hs06.map(|b| (b * 10_000.0).round() as i64) };
                let g = groups.entry((month_of(j.end), j.account.clone(), j.procs, j.nodes, level)).or_insert(Agg { earliest: i64::MAX, latest: i64::MIN, ..Default::default() });
                g.earliest = g.earliest.min(j.end);
                g.latest = g.latest.max(j.end);
                g.wall += j.wall;
                g.cpu += j.cpu;
                g.norm_wall += j.wall as f64 * j.hs06.unwrap_or(0.0);
                g.norm_cpu += j.cpu * j.hs06.unwrap_or(0.0);
                g.n += 1;
            }
            for ((month, account, procs, nodes, level), g) in groups {
                let (y, m) = (&month[..4], month[5..].trim_start_matches('0'));
                let mut f: Vec<(&str, String)> = vec![
                    ("Site", who.site.clone()),
                    ("Month", m.to_string()),
                    ("Year", y.to_string()),
                    ("VO", account),
                    ("SubmitHost", who.submit_host.clone()),
                ];
                if normalised {
                    f.push(("Infrastructure", "local".into()));
                } else {
                    f.push(("InfrastructureType", "local".into()));
                    match (kind, level) {
                        (Message::Summary02, Some(l)) => {
                            f.push(("ServiceLevelType", "HEPSPEC".into()));
                            f.push(("ServiceLevel", bench(l as f64 / 10_000.0)));
                        }
                        (Message::Summary04, Some(l)) => f.push(("ServiceLevel", format!("{{hepspec: {}}}", bench(l as f64 / 10_000.0)))),
                        _ => {}
                    }
                }
                f.extend([
                    ("NodeCount", nodes.to_string()),
                    ("Processors", procs.to_string()),
                    ("EarliestEndTime", g.earliest.to_string()),
                    ("LatestEndTime", g.latest.to_string()),
                    ("WallDuration", g.wall.to_string()),
                    ("CpuDuration", (g.cpu.round() as i64).to_string()),
                ]);
                if kind == Message::Normalised03 {
                    f.push(("NormalisedWallDuration", (g.norm_wall.round() as i64).to_string()));
                    f.push(("NormalisedCpuDuration", (g.norm_cpu.round() as i64).to_string()));
                } else if kind == Message::Normalised04 {
                    f.push(("NormalisedWallDuration", format!("{{hepspec: {}}}", g.norm_wall.round() as i64)));
                    f.push(("NormalisedCpuDuration", format!("{{hepspec: {}}}", g.norm_cpu.round() as i64)));
                }
                f.push(("NumberOfJobs", g.n.to_string()));
                record(&f);
            }
        }
        Message::Sync01 => {
            let mut per_month: BTreeMap<String, u64> = BTreeMap::new();
            for j in &jobs {
                *per_month.entry(month_of(j.end)).or_default() += 1;
            }
            for (month, n) in per_month {
                record(&[
                    ("Site", who.site.clone()),
                    ("SubmitHost", who.submit_host.clone()),
                    ("NumberOfJobs", n.to_string()),
                    ("Month", month[5..].trim_start_matches('0').to_string()),
                    ("Year", month[..4].to_string()),
                ]);
            }
        }
    }
    Ok(out)
}

/// Check a message against the APEL loader's rules: a known header, `Key: value`
/// lines, every mandatory field present and not null, integers and epoch times
/// that parse, StartTime <= EndTime, months 1-12 with end times inside them,
/// durations >= 0, benchmark dictionaries of numbers. Returns the record count.
pub fn validate(msg: &str) -> Result<usize, String> {
    let (header, body) = msg.split_once('\n').ok_or("empty message")?;
    let kind = [
        Message::Individual03,
        Message::Individual04,
        Message::Summary02,
        Message::Summary04,
        Message::Normalised03,
        Message::Normalised04,
        Message::Sync01,
    ]
    .into_iter()
    .find(|m| m.header() == header)
    .ok_or_else(|| format!("unknown header `{header}`"))?;
    let ints = ["WallDuration", "CpuDuration", "Processors", "NodeCount", "MemoryReal", "MemoryVirtual", "Month", "Year", "NumberOfJobs", "StartTime", "EndTime", "EarliestEndTime", "LatestEndTime"];
    let mut count = 0;
    for (i, rec) in body.split("%%").enumerate() {
        if rec.trim().is_empty() {
            continue;
        }
        let mut f: BTreeMap<&str, &str> = BTreeMap::new();
        for line in rec.trim().lines() {
            let (k, v) = line.split_once(':').ok_or_else(|| format!("record {i}: line `{line}` has no `:`"))?;
            if f.insert(k.trim(), v.trim()).is_some() {
                return Err(format!("record {i}: field {} twice", k.trim()));
            }
        }
        for m in kind.mandatory() {
            match f.get(m) {
                None => return Err(format!("record {i}: mandatory field {m} missing")),
                Some(v) if v.is_empty() || v.eq_ignore_ascii_case("none") || v.eq_ignore_ascii_case("null") => {
                    return Err(format!("record {i}: mandatory field {m} is null"))
                }
                _ => {}
            }
        }
        let int = |k: &str| f.get(k).map(|v| v.parse::<i64>().map_err(|_| format!("record {i}: {k} `{v}` is not an integer"))).transpose();
        for k in ints {
            if let Some(v) = int(k)? {
                if v < 0 {
                    return Err(format!("record {i}: {k} is negative"));
                }
            }
        }
        for (k, v) in &f {
            if v.starts_with('{') {
                let inner = v.strip_prefix('{').and_then(|x| x.strip_suffix('}')).ok_or_else(|| format!("record {i}: {k} dictionary not closed"))?;
                for pair in inner.split(',') {
                    let (name, num) = pair.split_once(':').ok_or_else(|| format!("record {i}: {k} entry `{pair}` is not name: number"))?;
                    if !["hepspec", "hepscore23", "si2k"].contains(&name.trim().to_ascii_lowercase().as_str()) || num.trim().parse::<f64>().is_err() {
                        return Err(format!("record {i}: {k} entry `{pair}` is not a benchmark and a number"));
                    }
                }
            }
        }
        if let (Some(s), Some(e)) = (int("StartTime")?, int("EndTime")?) {
            if s > e {
                return Err(format!("record {i}: StartTime {s} is after EndTime {e}"));
            }
        }
        if let Some(m) = int("Month")? {
            if !(1..=12).contains(&m) {
                return Err(format!("record {i}: Month {m} is not 1-12"));
            }
            let y = int("Year")?.unwrap_or(1970);
            let ym = format!("{y:04}-{m:02}");
            for k in ["EarliestEndTime", "LatestEndTime"] {
                if let Some(t) = int(k)? {
                    if month_of(t) != ym {
                        return Err(format!("record {i}: {k} {t} is not in {ym}"));
                    }
                }
            }
            if let (Some(a), Some(b)) = (int("EarliestEndTime")?, int("LatestEndTime")?) {
                if a > b {
                    return Err(format!("record {i}: EarliestEndTime after LatestEndTime"));
                }
            }
        }
        if f.contains_key("ServiceLevelType") != f.contains_key("ServiceLevel") && matches!(kind, Message::Individual03 | Message::Summary02) {
            return Err(format!("record {i}: ServiceLevelType and ServiceLevel go together"));
        }
        count += 1;
    }
    Ok(count)
}
