//! The users' commands against a running controller: `tessera job submit`
//! (sbatch), `tessera queue` (squeue), `tessera nodes` (sinfo), `tessera job
//! cancel|hold|release|suspend|resume|requeue|show` and `tessera node
//! drain|resume|down|up` (scontrol).

use crate::out::{out, outln};
use crate::live_args::*;
use anyhow::{anyhow, bail, Context, Result};
use hyper::Method;
use std::collections::BTreeMap;
use std::path::PathBuf;
use tessera_core::{hostlist, quote};
use tessera_proto::api::*;
use tessera_proto::client::{Client, ClientError, Target};

/// The controller a client command talks to.
pub fn connect(c: &ClientArgs) -> Result<Client> {
    if let Some(url) = &c.controller {
        return Ok(Client::new(Target::parse(url).map_err(|e| anyhow!(e))?, c.token.clone()));
    }
    let dir = c.state_dir.clone().unwrap_or_else(|| PathBuf::from("tessera-state"));
    let ep = dir.join("controller.json");
    let text = std::fs::read_to_string(&ep).with_context(|| {
        format!("no controller found: {} is missing (start one with `tessera up --state-dir {}`, or give --controller URL)", ep.display(), dir.display())
    })?;
    let ep: tessera_controller::Endpoint = serde_json::from_str(&text).with_context(|| format!("{}", ep.display()))?;
    let target = if c.token.is_some() { Target::parse(&ep.url).map_err(|e| anyhow!(e))? } else { Target::Unix(ep.socket) };
    Ok(Client::new(target, c.token.clone()))
}

pub fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread().enable_all().build()?)
}

/// An API error as the user should read it: the message, and for bad input
/// what was expected.
pub(crate) fn explain(e: ClientError) -> anyhow::Error {
    match e {
        ClientError::Api { status, body } => {
            let mut m = body.error.clone();
            if status == 401 || status == 403 {
                m = format!("{m} (HTTP {status})");
            }
            anyhow!(m)
        }
        other => anyhow!(other),
    }
}

pub fn submit(a: SubmitArgs) -> Result<()> {
    let (script, script_name) = match (&a.script, &a.wrap) {
        (Some(p), _) => (std::fs::read_to_string(p).with_context(|| format!("reading script {}", p.display()))?, p.file_name().map(|n| n.to_string_lossy().to_string())),
        (None, Some(cmd)) => (format!("#!/bin/sh\n{cmd}\n"), Some("wrap".to_string())),
        (None, None) => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).context("reading the script from standard input")?;
            (s, Some("sbatch".to_string()))
        }
    };
    if script.trim().is_empty() {
        bail!("the batch script is empty (give a script file, --wrap CMD, or a script on standard input)");
    }
    let mut options = Vec::new();
    let mut opt = |name: &str, v: &Option<String>| {
        if let Some(v) = v {
            options.push(OptionArg { option: name.into(), value: v.clone() });
        }
    };
    opt("--nodes", &a.nodes);
    opt("--ntasks", &a.ntasks);
    opt("--cpus-per-task", &a.cpus_per_task);
    opt("--mem", &a.mem);
    opt("--mem-per-cpu", &a.mem_per_cpu);
    opt("--gpus", &a.gpus);
    opt("--gpus-per-node", &a.gpus_per_node);
    opt("--time", &a.time);
    opt("--partition", &a.partition);
    opt("--job-name", &a.job_name);
    opt("--output", &a.output);
    opt("--error", &a.error);
    opt("--constraint", &a.constraint);
    opt("--nodeset", &a.nodeset);
    opt("--dependency", &a.dependency);
    opt("--array", &a.array);
    if a.requeue {
        options.push(OptionArg { option: "--requeue".into(), value: String::new() });
    }
    if a.hold {
        options.push(OptionArg { option: "--hold".into(), value: String::new() });
    }
    let cwd = std::env::current_dir().context("the current directory")?;
    let workdir = match &a.chdir {
        Some(d) if d.is_absolute() => d.clone(),
        Some(d) => cwd.join(d),
        None => cwd,
    };
    let env: BTreeMap<String, String> = std::env::vars().filter(|(k, _)| !k.starts_with("TESSERA_TOKEN")).collect();
    let req = SubmitRequest { script, options, workdir: workdir.display().to_string(), env, script_name, idempotency_key: None };
    let mut client = connect(&a.client)?;
    let r: SubmitReply = runtime()?.block_on(client.call(Method::POST, "/v1/jobs", Some(&req))).map_err(explain)?;
    let first = r.jobs.first().copied().ok_or_else(|| anyhow!("the controller accepted no job"))?;
    if a.parsable {
        outln!("{first}")?;
    } else {
        outln!("Submitted batch job {first}")?;
    }
    Ok(())
}

/// squeue's TIME: M:SS, H:MM:SS or D-HH:MM:SS.
pub fn elapsed(s: i64) -> String {
    let s = s.max(0);
    let (d, h, m, sec) = (s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{sec:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{sec:02}")
    } else {
        format!("{m}:{sec:02}")
    }
}

/// A value from outside (a job, user, partition or node name, a reason) as a
/// command prints it: control characters escaped (`\n`, `\x1b`), so it cannot
/// start a line of its own or drive the terminal.
fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    quote::text(s)
}

/// The first `n` characters of `s` as [`shown`] shows it.
fn clip(s: &str, n: usize) -> String {
    shown(s).chars().take(n).collect()
}

/// The queue in squeue's default layout; names and reasons as [`shown`] shows
/// them, so one job is always one line. `long` adds squeue's TIME_LIMIT (the
/// reference limit) and the limit on the job's own nodes (their pace's).
pub fn render_queue(jobs: &[JobInfo], long: bool) -> String {
    let limits = |a: &str, b: &str| if long { format!(" {a:>10} {b:>14}") } else { String::new() };
    let mut o = format!("{:>18} {:>9} {:>8} {:>8} {:>2} {:>10}{} {:>6} {}\n", "JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", limits("TIME_LIMIT", "LIMIT_ON_NODES"), "NODES", "NODELIST(REASON)");
    for j in jobs {
        let limit = limits(&j.time_limit_s.map_or("UNLIMITED".into(), elapsed), &j.limit_on_nodes_s.map_or("-".into(), elapsed));
        let where_ = if j.state == JobStateCode::Pending { format!("({})", shown(&j.reason)) } else { shown(&j.nodelist).into_owned() };
        let nodes = if j.state == JobStateCode::Pending { 1.max(j.nodes) } else { j.nodes };
        o += &format!(
            "{:>18} {:>9} {:>8} {:>8} {:>2} {:>10}{} {:>6} {}\n",
            shown(&j.display_id),
            clip(&j.partition, 9),
            clip(&j.name, 8),
            clip(&j.user, 8),
            j.state.short(),
            elapsed(j.elapsed_s),
            limit,
            nodes,
            where_
        );
    }
    o
}

pub fn queue(a: QueueArgs) -> Result<()> {
    let mut client = connect(&a.client)?;
    let mut jobs: Vec<JobInfo> = runtime()?.block_on(client.call::<(), _>(Method::GET, "/v1/jobs", None)).map_err(explain)?;
    let live = |j: &JobInfo| matches!(j.state, JobStateCode::Pending | JobStateCode::Running | JobStateCode::Suspended | JobStateCode::Completing);
    if !a.all {
        jobs.retain(live);
    }
    if let Some(u) = &a.user {
        let users: Vec<&str> = u.split(',').map(str::trim).collect();
        jobs.retain(|j| users.contains(&j.user.as_str()));
    }
    if let Some(ids) = &a.jobs {
        let ids: Vec<JobRef> = ids.split(',').map(|x| x.trim().parse().map_err(|e: String| anyhow!("--jobs: {e}"))).collect::<Result<_>>()?;
        jobs.retain(|j| ids.iter().any(|r| *r == JobRef::Id(j.id) || r.to_string() == j.display_id));
    }
    match a.format {
        ListFormat::Json => outln!("{}", serde_json::to_string_pretty(&jobs)?)?,
        ListFormat::Table => out!("{}", render_queue(&jobs, a.long))?,
    }
    Ok(())
}

/// sinfo's default layout (one line per partition and state), or one line per
/// node with its cores, memory and reason (`-N`); names and reasons as [`shown`]
/// shows them.
pub fn render_nodes(nodes: &[NodeInfo], per_node: bool) -> String {
    if per_node {
        let mut o = format!("{:<12} {:>5} {:<10} {:<9} {:>13} {:>9} {}\n", "NODELIST", "NODES", "PARTITION", "STATE", "CPUS(A/T)", "MEMORY", "REASON");
        for n in nodes {
            for p in &n.partitions {
                o += &format!("{:<12} {:>5} {:<10} {:<9} {:>13} {:>9} {}\n", shown(&n.name), 1, shown(p), shown(&n.state), format!("{}/{}", n.alloc_cores, n.cores), n.memory_mb, shown(&n.reason));
            }
        }
        return o;
    }
    let mut groups: BTreeMap<(String, String), Vec<&str>> = BTreeMap::new();
    let mut order: Vec<(String, String)> = Vec::new();
    for n in nodes {
        for p in &n.partitions {
            let key = (p.clone(), n.state.clone());
            if !groups.contains_key(&key) {
                order.push(key.clone());
            }
            groups.entry(key).or_default().push(&n.name);
        }
    }
    let mut o = format!("{:<9} {:>5} {:>10} {:>5} {:<9} {}\n", "PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE", "NODELIST");
    for key in order {
        let names = &groups[&key];
        o += &format!("{:<9} {:>5} {:>10} {:>5} {:<9} {}\n", clip(&key.0, 9), "up", "infinite", names.len(), shown(&key.1), shown(&hostlist::compress(names)));
    }
    o
}

pub fn nodes(a: NodesArgs) -> Result<()> {
    let mut client = connect(&a.client)?;
    let nodes: Vec<NodeInfo> = runtime()?.block_on(client.call::<(), _>(Method::GET, "/v1/nodes", None)).map_err(explain)?;
    match a.format {
        ListFormat::Json => outln!("{}", serde_json::to_string_pretty(&nodes)?)?,
        ListFormat::Table => out!("{}", render_nodes(&nodes, a.node_oriented))?,
    }
    Ok(())
}

pub fn job_action(action: &str, a: JobIds) -> Result<()> {
    let mut client = connect(&a.client)?;
    let rt = runtime()?;
    let mut failed = 0;
    for id in &a.ids {
        let r: Result<JobInfo, _> = rt.block_on(client.call::<(), _>(Method::POST, &format!("/v1/jobs/{id}/{action}"), None));
        if let Err(e) = r {
            eprintln!("tessera job {action} {id}: {}", explain(e));
            failed += 1;
        }
    }
    if failed > 0 {
        let done = match action {
            "hold" => "held",
            "cancel" => "cancelled",
            "requeue" => "requeued",
            "release" => "released",
            "resume" => "resumed",
            other => other,
        };
        bail!("{failed} of {} jobs could not be {done}", a.ids.len());
    }
    Ok(())
}

fn show_time(t: Option<i64>) -> String {
    t.map_or("Unknown".into(), tessera_accounting::acct::datetime)
}

pub fn job_show(a: JobShowArgs) -> Result<()> {
    let mut client = connect(&a.client)?;
    let rt = runtime()?;
    let mut out = Vec::new();
    for id in &a.ids {
        out.push(rt.block_on(client.call::<(), JobInfo>(Method::GET, &format!("/v1/jobs/{id}"), None)).map_err(explain)?);
    }
    if a.format == ListFormat::Json {
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
        return Ok(());
    }
    for j in out {
        outln!("JobId={} JobName={} UserId={}({})", shown(&j.display_id), shown(&j.name), shown(&j.user), j.uid)?;
        outln!("   JobState={} Reason={} ExitCode={}:{}", j.state.name(), shown(&j.reason), j.exit_code.unwrap_or(0), j.signal.unwrap_or(0))?;
        if !j.reason_detail.is_empty() {
            outln!("   Why={}", shown(&j.reason_detail))?;
        }
        // the limit is in reference seconds; on its nodes it is their pace's
        let on_nodes = j.limit_on_nodes_s.map_or(String::new(), |l| format!(" LimitOnNodes={}", elapsed(l)));
        outln!("   RunTime={} TimeLimit={}{on_nodes} Requeues={}", elapsed(j.elapsed_s), j.time_limit_s.map_or("UNLIMITED".into(), elapsed), j.requeues)?;
        outln!("   SubmitTime={} StartTime={} EndTime={}", show_time(Some(j.submit)), show_time(j.start), show_time(j.end))?;
        outln!("   Partition={} NodeList={} NumNodes={} NumCPUs={}", shown(&j.partition), if j.nodelist.is_empty() { "(null)".into() } else { shown(&j.nodelist) }, j.nodes, j.procs)?;
        outln!("   WorkDir={}", shown(&j.workdir))?;
        outln!("   StdOut={}", shown(&j.stdout))?;
        outln!("   StdErr={}", shown(&j.stderr))?;
    }
    Ok(())
}

pub fn node_action(action: &str, a: NodeStateArgs) -> Result<()> {
    let names = hostlist::expand(&a.nodes).map_err(|e| anyhow!("node list {:?}: {e}", a.nodes))?;
    let mut client = connect(&a.client)?;
    let rt = runtime()?;
    let body = NodeAction { reason: a.reason.clone() };
    for n in names {
        let r: NodeInfo = rt.block_on(client.call(Method::POST, &format!("/v1/nodes/{n}/{action}"), Some(&body))).map_err(|e| anyhow!("node {n}: {}", explain(e)))?;
        outln!("{} {}{}", shown(&r.name), shown(&r.state), if r.reason.is_empty() { String::new() } else { format!(" ({})", shown(&r.reason)) })?;
    }
    Ok(())
}

pub fn reconfigure_cmd(a: ReconfigureArgs) -> Result<()> {
    let text = std::fs::read_to_string(&a.file).with_context(|| format!("reading cluster file {}", a.file.display()))?;
    let text = tessera_proto::submit::without_bom(&text);
    let path = a.file.display().to_string();
    // checked here first: the same message as everywhere else a file is read
    tessera_core::Cluster::from_toml(text, &path).map_err(|e| anyhow!("{e}"))?;
    let mut client = connect(&a.client)?;
    let rt = runtime()?;
    let summary = reconfigure(&mut client, &rt, text, &path)?;
    outln!("Applied {path}: {summary}")?;
    Ok(())
}

/// Apply a cluster file's text through `POST /v1/cluster`; what changed, as
/// [`changes`] says it.
pub fn reconfigure(client: &mut Client, rt: &tokio::runtime::Runtime, text: &str, path: &str) -> Result<String> {
    let body = ReconfigureRequest { toml: text.to_string(), path: path.to_string() };
    let r: ReconfigureReply = rt.block_on(client.call(Method::POST, "/v1/cluster", Some(&body))).map_err(explain)?;
    Ok(format!("cluster {}, {} nodes, {} cores; {}", shown(&r.cluster.name), r.cluster.nodes, r.cluster.cores, changes(&(r.added, r.removed, r.changed))))
}

/// "nodes added: …; removed: …; changed: …" (hostlists, `none` when empty).
pub fn changes((added, removed, changed): &(Vec<String>, Vec<String>, Vec<String>)) -> String {
    let names = |v: &Vec<String>| if v.is_empty() { "none".to_string() } else { shown(&hostlist::compress(&v.iter().map(|s| s.as_str()).collect::<Vec<_>>())).into_owned() };
    format!("nodes added: {}; removed: {}; changed: {}", names(added), names(removed), names(changed))
}

pub fn job_script(a: JobScriptArgs) -> Result<()> {
    let mut client = connect(&a.client)?;
    let rt = runtime()?;
    let s: JobScript = rt.block_on(client.call::<(), _>(Method::GET, &format!("/v1/jobs/{}/script", a.id), None)).map_err(explain)?;
    if a.env {
        for (k, v) in &s.env {
            outln!("{k}={v}")?;
        }
    } else {
        out!("{}", s.script)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job as the controller lists it (built from JSON, as the client reads it).
    fn job(id: u64, name: &str, user: &str, partition: &str, state: &str, reason: &str) -> JobInfo {
        serde_json::from_value(serde_json::json!({
            "id": id, "display_id": id.to_string(), "name": name, "user": user, "uid": 1000, "partition": partition,
            "state": state, "reason": reason, "reason_detail": reason, "submit": 0, "start": null, "end": null,
            "elapsed_s": 0, "time_limit_s": null, "procs": 1, "nodes": 1, "nodelist": "n1", "workdir": "/w",
            "stdout": "/w/out", "stderr": "/w/err", "exit_code": null, "signal": null, "requeues": 0
        }))
        .unwrap()
    }

    /// A job, user or partition name, or a reason, never adds a line to the
    /// queue or hands the terminal a control sequence.
    #[test]
    fn a_name_cannot_add_a_row_to_the_queue_or_the_node_list() {
        let evil = ["x\n9999 fake row", "a|b", "\r\n\u{1b}[2J", "sep\u{2028}", "c1\u{85}"];
        let jobs: Vec<JobInfo> = evil
            .iter()
            .enumerate()
            .map(|(i, v)| job(i as u64 + 1, v, evil[(i + 1) % evil.len()], evil[(i + 2) % evil.len()], if i % 2 == 0 { "PENDING" } else { "RUNNING" }, evil[(i + 3) % evil.len()]))
            .collect();
        let q = render_queue(&jobs, true);
        let breaks = ['\n', '\r', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}', '\u{85}', '\u{2028}', '\u{2029}'];
        assert_eq!(q.split(breaks).count(), jobs.len() + 2, "{q}");
        assert!(!q.contains(|c: char| c.is_control() && c != '\n'), "{q}");
        assert!(q.contains(" x\\n9999 "), "{q}");
        let nodes: Vec<NodeInfo> = evil
            .iter()
            .map(|v| {
                serde_json::from_value(serde_json::json!({
                    "name": v, "partitions": [v], "state": "drain", "reason": v, "cores": 4, "alloc_cores": 0,
                    "memory_mb": 1000, "alloc_memory_mb": 0, "gpus": 0, "alloc_gpus": 0, "features": [], "factor": 1.0, "agent": null
                }))
                .unwrap()
            })
            .collect();
        for per_node in [true, false] {
            let n = render_nodes(&nodes, per_node);
            // a header and one line per node (each node is its own partition)
            assert_eq!(n.split(breaks).count(), nodes.len() + 2, "{n}");
            assert!(!n.contains(|c: char| c.is_control() && c != '\n'), "{n}");
        }
    }
}
