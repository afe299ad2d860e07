//! The users' commands against a running controller: `tessera job submit`
//! (sbatch), `tessera queue` (squeue), `tessera nodes` (sinfo), `tessera job
//! cancel|hold|release|suspend|resume|requeue|show` and `tessera node
//! drain|resume|down|up` (scontrol).

use crate::out::{out, outln};
use crate::live_args::*;
use anyhow::{anyhow, bail, Context, Result};
use hyper::Method;
use std::collections::BTreeMap;
use tessera_core::{hostlist, quote};
use tessera_report::live::{job_text, render_nodes, render_queue};
use tessera_proto::api::*;

use tessera_emulation::client::{explain, reconfigure, runtime};

pub use tessera_emulation::client::connect;

/// `tessera run`: a step of the job it runs in; ends with the step's code.
pub fn run(a: RunCmd) -> Result<()> {
    let code = tessera_agent::run::run_here(connect(&a.client)?, &a.run).map_err(|e| anyhow!("tessera run: {e}"))?;
    std::process::exit(code)
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
    let options = a.opts.options();
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
        out!("{}", job_text(&j))?;
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
        outln!("{} {}{}", quote::text(&r.name), quote::text(&r.state), if r.reason.is_empty() { String::new() } else { format!(" ({})", quote::text(&r.reason)) })?;
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

pub fn set_budget(a: SetBudgetArgs) -> Result<()> {
    outln!("{}", tessera_emulation::client::set_budget(&mut connect(&a.client)?, &runtime()?, a.watts)?)?;
    Ok(())
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
