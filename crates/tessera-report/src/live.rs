//! The live system's listings as the users' commands print them, in Slurm's
//! layouts: the queue (squeue), the nodes (sinfo) and a job (scontrol show
//! job). Every name and reason from outside is shown with its control
//! characters escaped (`tessera_core::quote::text`), so one job is one line and
//! nothing drives the terminal.

use std::collections::BTreeMap;
use std::fmt::Write;
use tessera_core::{hostlist, quote};
use tessera_proto::api::{JobInfo, JobStateCode, NodeInfo};

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

/// sinfo's default layout (one line per partition and state), or one line per
/// node with its cores, memory and reason (`-N`); names and reasons as [`shown`]
/// shows them.
pub fn render_nodes(nodes: &[NodeInfo], per_node: bool) -> String {
    if per_node {
        let mut o = format!("{:<12} {:>5} {:<10} {:<9} {:>13} {:>9} {:<32} {}\n", "NODELIST", "NODES", "PARTITION", "STATE", "CPUS(A/T)", "MEMORY", "CGROUP", "REASON");
        for n in nodes {
            // the controls confining its jobs (`none`: not confined)
            let cg = n.confinement.as_ref().map_or("none".to_string(), |c| c.to_string());
            for p in &n.partitions {
                o += &format!("{:<12} {:>5} {:<10} {:<9} {:>13} {:>9} {:<32} {}\n", shown(&n.name), 1, shown(p), shown(&n.state), format!("{}/{}", n.alloc_cores, n.cores), n.memory_mb, cg, shown(&n.reason));
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

fn show_time(t: Option<i64>) -> String {
    t.map_or("Unknown".into(), tessera_accounting::acct::datetime)
}

/// A job as `scontrol show job` shows it (its fields on five to ten lines).
pub fn job_text(j: &JobInfo) -> String {
    let mut o = String::new();
    writeln!(o, "JobId={} JobName={} UserId={}({})", shown(&j.display_id), shown(&j.name), shown(&j.user), j.uid).unwrap();
    writeln!(o, "   JobState={} Reason={} ExitCode={}:{}", j.state.name(), shown(&j.reason), j.exit_code.unwrap_or(0), j.signal.unwrap_or(0)).unwrap();
    if !j.reason_detail.is_empty() {
        writeln!(o, "   Why={}", shown(&j.reason_detail)).unwrap();
    }
    // the limit is in reference seconds; on its nodes it is their pace's
    let on_nodes = j.limit_on_nodes_s.map_or(String::new(), |l| format!(" LimitOnNodes={}", elapsed(l)));
    writeln!(o, "   RunTime={} TimeLimit={}{on_nodes} Requeues={}", elapsed(j.elapsed_s), j.time_limit_s.map_or("UNLIMITED".into(), elapsed), j.requeues).unwrap();
    writeln!(o, "   SubmitTime={} StartTime={} EndTime={}", show_time(Some(j.submit)), show_time(j.start), show_time(j.end)).unwrap();
    writeln!(o, "   Partition={} NodeList={} NumNodes={} NumCPUs={}", shown(&j.partition), if j.nodelist.is_empty() { "(null)".into() } else { shown(&j.nodelist) }, j.nodes, j.procs).unwrap();
    writeln!(o, "   WorkDir={}", shown(&j.workdir)).unwrap();
    writeln!(o, "   StdOut={}", shown(&j.stdout)).unwrap();
    writeln!(o, "   StdErr={}", shown(&j.stderr)).unwrap();
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_proto::api::{JobInfo, NodeInfo};

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
