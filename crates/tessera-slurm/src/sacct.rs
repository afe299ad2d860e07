//! A Slurm site's job history, as `sacct -P` prints it, read into jobs.
//!
//! The input is sacct's parsable output with its header line (fields in any
//! order, found by name; [`FORMAT`] is the list to ask for). Rows become
//! jobs as sacct shows them (sacct(1), Slurm 22.05):
//!
//! * a step row (`123.batch`, `123.extern`, `123.0`, `123_4.batch`,
//!   `123+1.0`) is folded into the job row before it with the same JobIDRaw;
//! * an array task (`123_4`) is a job of its own (its JobIDRaw is its own id),
//!   remembered as task 4 of array 123; a pending remainder (`123_[5-10]`) has
//!   not run and is counted, not imported;
//! * a heterogeneous job's components (`67767+0`, `67767+1`) are jobs of
//!   their own, each with its own JobIDRaw;
//! * a requeued job shows (with `-D`) one row per run, the earlier ones
//!   `REQUEUED`: they fold into one job, submitted when the first was, as the
//!   last run ran, with the runs before counted;
//! * jobs still pending or running when sacct ran are counted, not imported.
//!
//! sacct records no dependencies (22.05 has no such field), so none are read.

use crate::conf::{q, ImportError, Place};
use std::collections::BTreeMap;
use tessera_core::civil::days_from_civil;

/// The fields to ask sacct for: `sacct -P -a -D --format=` this.
pub const FORMAT: &str = "JobIDRaw,JobID,JobName,User,Group,Account,Partition,QOS,Reservation,Submit,Eligible,Start,End,Suspended,Timelimit,ReqCPUS,AllocCPUS,ReqNodes,NNodes,ReqMem,ReqTRES,AllocTRES,NodeList,State,ExitCode,TotalCPU,NTasks";

/// Fields a file must have.
const REQUIRED: [&str; 6] = ["JobIDRaw", "JobID", "State", "Submit", "Start", "End"];

/// How a job ended, as sacct names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ended {
    Completed,
    Failed,
    Cancelled,
    Timeout,
    NodeFail,
    Preempted,
    OutOfMemory,
    BootFail,
    Deadline,
}

/// A job's time limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Seconds(i64),
    Unlimited,
    /// `Partition_Limit`: the partition's MaxTime.
    Partition,
}

/// One step of a job, as its row shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// `batch`, `extern`, or the step's number.
    pub step: String,
    pub name: String,
    pub node_list: String,
    pub ntasks: u32,
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub state: String,
    pub exit_code: i32,
    pub signal: i32,
    pub cpu_s: Option<f64>,
}

/// A finished job: its last run, submitted when its first run was.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Where its (last) row is.
    pub line: usize,
    /// JobIDRaw: unique, an array task's and a component's own.
    pub id: i64,
    /// JobID as sacct shows it (`123`, `123_4`, `67767+1`).
    pub shown: String,
    pub array: Option<(i64, u32)>,
    pub het: Option<(i64, u32)>,
    pub name: String,
    pub user: String,
    pub group: String,
    pub account: String,
    pub partition: String,
    pub qos: String,
    pub reservation: String,
    /// Unix seconds (sacct's local time read as UTC: differences are exact).
    pub submit: i64,
    pub eligible: Option<i64>,
    /// None: it never started (cancelled or failed while pending).
    pub start: Option<i64>,
    pub end: i64,
    pub suspended_s: i64,
    pub limit: Limit,
    pub req_cpus: u32,
    pub alloc_cpus: u32,
    pub req_nodes: u32,
    pub alloc_nodes: u32,
    /// Whole job, MiB.
    pub req_mem_mb: u64,
    pub alloc_mem_mb: u64,
    pub req_gpus: u32,
    pub alloc_gpus: u32,
    pub nodes: Vec<String>,
    pub ended: Ended,
    pub exit_code: i32,
    pub signal: i32,
    pub cpu_s: Option<f64>,
    pub steps: Vec<Step>,
    /// Runs before the last (requeues).
    pub requeues: u32,
}

/// What a history file held.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    pub jobs: Vec<Job>,
    /// Rows read (header aside), and of them: step rows folded into their
    /// job, earlier runs of requeued jobs folded into it, rows of jobs not
    /// finished (pending, running, suspended, pending array remainders).
    pub rows: u64,
    pub steps: u64,
    pub requeued_runs: u64,
    pub unfinished: u64,
}

fn err(file: &str, line: usize, field: &str, m: impl Into<String>) -> ImportError {
    ImportError::new(&Place { file: file.to_string(), line }, field, m)
}

/// `YYYY-MM-DDTHH:MM:SS` as Unix seconds (None: `Unknown`, `None`, empty).
pub fn parse_time(s: &str) -> Result<Option<i64>, ()> {
    let s = s.trim();
    if s.is_empty() || s.eq_ignore_ascii_case("unknown") || s.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let (d, t) = s.split_once('T').ok_or(())?;
    let n = |x: &str| x.parse::<i64>().map_err(|_| ());
    let dp: Vec<&str> = d.split('-').collect();
    let tp: Vec<&str> = t.split(':').collect();
    let ([y, mo, da], [h, mi, se]) = (dp.as_slice(), tp.as_slice()) else { return Err(()) };
    let (y, mo, da, h, mi, se) = (n(y)?, n(mo)?, n(da)?, n(h)?, n(mi)?, n(se)?);
    if !(1970..=9999).contains(&y) || !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || se > 60 {
        return Err(());
    }
    Ok(Some(days_from_civil(y, mo, da) * 86_400 + h * 3600 + mi * 60 + se))
}

/// `[D-][HH:]MM:SS[.mmm]` as seconds (Elapsed, Suspended, TotalCPU).
pub fn parse_elapsed(s: &str) -> Result<Option<f64>, ()> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<f64>().map_err(|_| ())?, r),
        None => (0.0, s),
    };
    let parts: Vec<f64> = rest.split(':').map(|p| p.parse::<f64>().map_err(|_| ())).collect::<Result<_, _>>()?;
    let secs = match parts.as_slice() {
        [m, s] => m * 60.0 + s,
        [h, m, s] => h * 3600.0 + m * 60.0 + s,
        _ => return Err(()),
    };
    let total = days * 86_400.0 + secs;
    if !total.is_finite() || secs < 0.0 || days < 0.0 {
        return Err(());
    }
    Ok(Some(total))
}

/// A size in MiB: a number with a unit K, M (the default), G, T or P, as
/// sacct prints memory (`4000M`, `8G`, `1.50G`). Slurm before 21.08 added
/// `c` (per CPU) or `n` (per node), returned as the second value.
pub fn parse_mem(s: &str) -> Result<(f64, Option<char>), ()> {
    let mut t = s.trim();
    let mut per = None;
    if let Some(x) = t.strip_suffix(['c', 'n']) {
        per = t.chars().last();
        t = x;
    }
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1.0 / 1024.0),
        Some('M' | 'm') => (&t[..t.len() - 1], 1.0),
        Some('G' | 'g') => (&t[..t.len() - 1], 1024.0),
        Some('T' | 't') => (&t[..t.len() - 1], 1024.0 * 1024.0),
        Some('P' | 'p') => (&t[..t.len() - 1], 1024.0 * 1024.0 * 1024.0),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| ())?;
    if !v.is_finite() || v < 0.0 {
        return Err(());
    }
    Ok((v * mult, per))
}

/// A count as sacct prints large ones (`2K` is 2048).
fn parse_count(s: &str) -> Result<Option<u32>, ()> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let (num, mult) = match s.chars().last() {
        Some('K') => (&s[..s.len() - 1], 1024u64),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        _ => (s, 1),
    };
    let v = num.parse::<u64>().map_err(|_| ())?.checked_mul(mult).ok_or(())?;
    u32::try_from(v).map(Some).map_err(|_| ())
}

/// A TRES list (`billing=4,cpu=4,gres/gpu=1,mem=8G,node=1`): cpus, MiB,
/// GPUs and nodes, where given.
#[derive(Default)]
struct Tres {
    cpu: Option<u32>,
    mem_mb: Option<u64>,
    gpus: Option<u32>,
    nodes: Option<u32>,
}

fn parse_tres(s: &str) -> Result<Tres, String> {
    let mut t = Tres::default();
    let mut typed_gpus = 0u32;
    for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let (k, v) = item.split_once('=').ok_or_else(|| format!("{}: expected type=count", q(item)))?;
        let count = || v.parse::<u32>().map_err(|_| format!("{}: expected a count", q(item)));
        match k {
            "cpu" => t.cpu = Some(count()?),
            "node" => t.nodes = Some(count()?),
            "mem" => t.mem_mb = Some(parse_mem(v).map_err(|()| format!("{}: expected a size such as 8G", q(item)))?.0.round() as u64),
            "gres/gpu" => t.gpus = Some(count()?),
            k if k.starts_with("gres/gpu:") => typed_gpus = typed_gpus.saturating_add(count()?),
            _ => {}
        }
    }
    // typed GPUs are also counted untyped where both are listed
    if t.gpus.is_none() && typed_gpus > 0 {
        t.gpus = Some(typed_gpus);
    }
    Ok(t)
}

pub(crate) fn ended(state: &str) -> Option<Ended> {
    Some(match state.split_whitespace().next().unwrap_or("") {
        "COMPLETED" => Ended::Completed,
        "FAILED" | "SPECIAL_EXIT" => Ended::Failed,
        "CANCELLED" => Ended::Cancelled,
        "TIMEOUT" => Ended::Timeout,
        "NODE_FAIL" => Ended::NodeFail,
        "PREEMPTED" => Ended::Preempted,
        "OUT_OF_MEMORY" => Ended::OutOfMemory,
        "BOOT_FAIL" => Ended::BootFail,
        "DEADLINE" => Ended::Deadline,
        _ => return None,
    })
}

/// States of a job that has not finished (its row is counted, not imported).
const UNFINISHED: [&str; 8] = ["PENDING", "RUNNING", "SUSPENDED", "REQUEUE_HOLD", "COMPLETING", "RESIZING", "REVOKED", "REQUEUE_FED"];

fn exit(s: &str) -> Result<(i32, i32), ()> {
    if s.trim().is_empty() {
        return Ok((0, 0));
    }
    let (c, g) = s.trim().split_once(':').ok_or(())?;
    Ok((c.parse().map_err(|_| ())?, g.parse().map_err(|_| ())?))
}

/// Most node names the jobs of one dump may list in all (16,777,216: a
/// million jobs of 16 nodes each); a bound on the reader's time and memory.
pub const MAX_NODE_NAMES: usize = 1 << 24;

/// Read sacct's parsable output; `file` names it in errors.
pub fn read(text: &str, file: &str) -> Result<History, ImportError> {
    read_at_most(text, file, MAX_NODE_NAMES)
}

/// [`read`], where the jobs' NodeLists name at most `max_names` nodes in
/// all: an error, before the names are built, where they name more.
pub fn read_at_most(text: &str, file: &str, max_names: usize) -> Result<History, ImportError> {
    let mut names_left = max_names;
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((h0, header)) = lines.next() else {
        return Err(err(file, 0, "", "empty: expected sacct's header line (sacct -P prints it first)"));
    };
    let names: Vec<&str> = header.trim_end_matches('|').split('|').map(str::trim).collect();
    let col: BTreeMap<String, usize> = names.iter().enumerate().map(|(i, n)| (n.to_ascii_lowercase(), i)).collect();
    for r in REQUIRED {
        if !col.contains_key(&r.to_ascii_lowercase()) {
            return Err(err(file, h0 + 1, r, format!("missing from the header: run sacct -P -a -D --format={FORMAT}")));
        }
    }
    let mut h = History::default();
    // each job's runs (rows) by JobIDRaw, whether each was requeued, and the
    // run the next step rows belong to
    let mut runs: BTreeMap<i64, Vec<(Job, bool)>> = BTreeMap::new();
    let mut last_job: Option<(i64, Option<usize>)> = None;
    for (i, raw) in lines {
        let line = i + 1;
        h.rows += 1;
        let fields: Vec<&str> = raw.trim_end_matches(['\r']).split('|').collect();
        // -p ends each row with a `|`, -P does not
        let fields = if fields.len() == names.len() + 1 && fields.last() == Some(&"") { &fields[..names.len()] } else { &fields[..] };
        if fields.len() != names.len() {
            return Err(err(file, line, "", format!("expected {} fields separated by `|`, as the header has, found {} (a `|` inside a field such as JobName?)", names.len(), fields.len())));
        }
        let get = |name: &str| col.get(&name.to_ascii_lowercase()).map_or("", |&c| fields[c].trim());
        let bad = |name: &str, what: &str| err(file, line, name, format!("expected {what}, found {}", q(get(name))));
        let raw_id = get("JobIDRaw");
        let shown = get("JobID");
        let (job_part, step) = match raw_id.split_once('.') {
            Some((j, s)) => (j, Some(s)),
            None => (raw_id, None),
        };
        if shown.contains('[') {
            // a pending array remainder: no job has run for it yet
            h.unfinished += 1;
            last_job = None;
            continue;
        }
        let id: i64 = job_part.parse().map_err(|_| bad("JobIDRaw", "a job id (digits, then `.step` on a step row)"))?;
        let state = get("State");
        let (code, signal) = exit(get("ExitCode")).map_err(|()| bad("ExitCode", "code:signal such as 0:0"))?;
        let time = |name: &str| parse_time(get(name)).map_err(|()| bad(name, "a time such as 2022-06-01T10:00:05, Unknown or None"));
        if let Some(step) = step {
            h.steps += 1;
            let Some((_, slot)) = last_job.filter(|(o, _)| *o == id) else {
                return Err(err(file, line, "JobIDRaw", format!("step {raw_id} does not follow a row of job {id}: sacct prints each job before its steps")));
            };
            if let Some(r) = slot {
                let cpu_s = parse_elapsed(get("TotalCPU")).map_err(|()| bad("TotalCPU", "[D-][HH:]MM:SS[.mmm]"))?;
                runs.get_mut(&id).expect("the job's runs")[r].0.steps.push(Step {
                    step: step.to_string(),
                    name: get("JobName").to_string(),
                    node_list: get("NodeList").to_string(),
                    ntasks: parse_count(get("NTasks")).map_err(|()| bad("NTasks", "a count"))?.unwrap_or(0),
                    start: time("Start")?,
                    end: time("End")?,
                    state: state.to_string(),
                    exit_code: code,
                    signal,
                    cpu_s,
                });
            }
            continue;
        }
        let base = state.split_whitespace().next().unwrap_or("");
        let requeued = base == "REQUEUED";
        let Some(how) = ended(state).or(requeued.then_some(Ended::Preempted)) else {
            if UNFINISHED.contains(&base) {
                h.unfinished += 1;
                last_job = Some((id, None));
                continue;
            }
            return Err(bad("State", "a Slurm job state such as COMPLETED, FAILED, CANCELLED by 1000, TIMEOUT, REQUEUED or RUNNING"));
        };
        let submit = time("Submit")?.ok_or_else(|| bad("Submit", "the time the job was submitted"))?;
        let start = time("Start")?;
        let end = time("End")?;
        let end = match (start, end) {
            (_, Some(e)) => e,
            (Some(s), None) => s,
            (None, None) => submit,
        };
        if start.is_some_and(|s| s > end || s < submit) {
            return Err(err(file, line, "Start", format!("expected a start between Submit and End, found {}", q(get("Start")))));
        }
        let req = parse_tres(get("ReqTRES")).map_err(|m| err(file, line, "ReqTRES", m))?;
        let alloc = parse_tres(get("AllocTRES")).map_err(|m| err(file, line, "AllocTRES", m))?;
        let count = |name: &str| parse_count(get(name)).map_err(|()| bad(name, "a count"));
        let alloc_cpus = count("AllocCPUS")?.or(alloc.cpu).unwrap_or(0);
        let req_cpus = count("ReqCPUS")?.or(req.cpu).unwrap_or(alloc_cpus);
        let alloc_nodes = count("NNodes")?.or(alloc.nodes).unwrap_or(0);
        let req_nodes = count("ReqNodes")?.or(req.nodes).unwrap_or(alloc_nodes);
        let req_mem_mb = match get("ReqMem") {
            "" => req.mem_mb.unwrap_or(0),
            m => {
                let (v, per) = parse_mem(m).map_err(|()| bad("ReqMem", "a size such as 4000M or 8G (or 4000Mc, 4000Mn before Slurm 21.08)"))?;
                let times = match per {
                    Some('c') => req_cpus.max(1) as f64,
                    Some('n') => req_nodes.max(1) as f64,
                    _ => 1.0,
                };
                (v * times).round() as u64
            }
        };
        let node_list = get("NodeList");
        let nodes = if start.is_none() || node_list.is_empty() || node_list.eq_ignore_ascii_case("none assigned") {
            Vec::new()
        } else {
            let nodes = tessera_core::hostlist::expand_at_most(node_list, names_left).map_err(|e| match max_names - names_left {
                0 => err(file, line, "NodeList", e.to_string()),
                before => err(file, line, "NodeList", format!("{e}: the jobs before it list {before} nodes, and a dump at most {max_names} in all (split it with sacct -S and -E)")),
            })?;
            names_left -= nodes.len();
            nodes
        };
        let limit = match get("Timelimit") {
            "" | "Partition_Limit" => Limit::Partition,
            t if t.eq_ignore_ascii_case("unlimited") => Limit::Unlimited,
            t => match tessera_core::duration::parse_duration(t) {
                Ok(Some(s)) => Limit::Seconds(s),
                Ok(None) => Limit::Unlimited,
                Err(()) => return Err(bad("Timelimit", "a limit such as 01:00:00, 2-00:00:00, UNLIMITED or Partition_Limit")),
            },
        };
        // suspended within its run, at most
        let ran = start.map_or(0, |s| end - s);
        let suspended_s = (parse_elapsed(get("Suspended")).map_err(|()| bad("Suspended", "[D-]HH:MM:SS"))?.unwrap_or(0.0) as i64).min(ran);
        let cpu_s = parse_elapsed(get("TotalCPU")).map_err(|()| bad("TotalCPU", "[D-][HH:]MM:SS[.mmm]"))?;
        let split = |sep: char| -> Option<(i64, u32)> {
            let (a, b) = shown.split_once(sep)?;
            Some((a.parse().ok()?, b.parse().ok()?))
        };
        let job = Job {
            line,
            id,
            shown: shown.to_string(),
            array: split('_'),
            het: split('+'),
            name: get("JobName").to_string(),
            user: get("User").to_string(),
            group: get("Group").to_string(),
            account: get("Account").to_string(),
            partition: get("Partition").to_string(),
            qos: get("QOS").to_string(),
            reservation: get("Reservation").to_string(),
            submit,
            eligible: time("Eligible")?,
            start,
            end,
            suspended_s,
            limit,
            req_cpus,
            alloc_cpus,
            req_nodes,
            alloc_nodes,
            req_mem_mb,
            alloc_mem_mb: alloc.mem_mb.unwrap_or(0),
            req_gpus: req.gpus.unwrap_or(0),
            alloc_gpus: alloc.gpus.unwrap_or(0),
            nodes,
            ended: how,
            exit_code: code,
            signal,
            cpu_s,
            steps: Vec::new(),
            requeues: 0,
        };
        let list = runs.entry(id).or_default();
        list.push((job, requeued));
        last_job = Some((id, Some(list.len() - 1)));
    }
    // a job's runs: the latest submission is its last run (a requeue resets
    // Submit), the earliest its submission; a job whose last run was
    // requeued has not finished
    for (_, mut list) in runs {
        list.sort_by_key(|(j, _)| j.submit);
        let first_submit = list[0].0.submit;
        let n = list.len() as u32;
        h.requeued_runs += (n - 1) as u64;
        let (mut job, requeued) = list.pop().expect("a run");
        if requeued {
            h.unfinished += 1;
            continue;
        }
        job.submit = first_submit;
        job.requeues = n - 1;
        h.jobs.push(job);
    }
    h.jobs.sort_by_key(|j| (j.submit, j.id));
    Ok(h)
}
