//! Power-aware scheduling live: `--policy parm` on emulated nodes that keep
//! their caps and draw by the cluster file's power model. Moldable and
//! malleable jobs run to completion on the node counts and caps PARM chose
//! (which reach them as SLURM_NNODES and TESSERA_POWER_CAP_W), the power the
//! agents report never exceeds the budget, and every job's energy reaches the
//! accounting store. A node whose cap cannot be set is drained with the reason.

use super::{Live, BIN};
use tessera_proto::api::JobStateCode;

/// 8 nodes of 4 cores; 600 W powers 5 busy nodes at full power (116 W), 6 at
/// the lowest cap (86 W).
const POWERED: &str = r#"
name = "powered"
power_budget_w = 600

[[nodetype]]
name = "n"
nodes = "node[001-008]"
cores = 4
memory = "8G"
base_power_w = 38
memory_power_w = 18
cpu_max_power_w = 60
cpu_cap_levels_w = [30, 32, 34, 39, 45, 55, 60]

[[partition]]
name = "default"
nodetypes = ["n"]
default = true
allocation = "exclusive"
"#;

/// A powercap tree under `root` laid out as sysfs has it, with one RAPL
/// package whose `long_term` limit is `limit_w` (5 W to `max_w`) and whose
/// energy counter starts at 0: its directory.
fn fake_package(root: &std::path::Path, limit_w: u64, max_w: u64) -> std::path::PathBuf {
    let pkg = root.join("intel-rapl:0");
    std::fs::create_dir_all(&pkg).unwrap();
    let (limit, max) = ((limit_w * 1_000_000).to_string(), (max_w * 1_000_000).to_string());
    for (f, v) in [("name", "package-0"), ("enabled", "1"), ("energy_uj", "0"), ("constraint_0_name", "long_term"), ("constraint_0_power_limit_uw", &limit), ("constraint_0_max_power_uw", &max), ("constraint_0_min_power_uw", "5000000")] {
        std::fs::write(pkg.join(f), format!("{v}\n")).unwrap();
    }
    pkg
}

/// A metric's value in `/metrics` text.
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[test]
fn moldable_and_malleable_jobs_run_live_under_the_budget_with_their_energy_accounted() {
    let l = Live::start_with(2, 10, Some((POWERED, 8)), "parm", &[]);
    let out = |j: &str| l.dir.path().join(format!("{j}.out"));
    // a malleable job acknowledges every new configuration (docs/live.md)
    let report = "trap 'echo ok >> \"$TESSERA_CONFIG_ACK\"' WINCH; echo \"$SLURM_NNODES $TESSERA_POWER_CAP_W $SLURM_JOB_NODELIST\"; i=0; while [ $i -lt 40 ]; do sleep 0.1; i=$((i+1)); done";
    let a = l.submit(&["--moldable", "2-8", "--malleable", "--power-profile", "LeanMD", "-t", "0:30", "-o", out("a").to_str().unwrap(), "--wrap", report]);
    let b = l.submit(&["--moldable", "2-6", "--power-profile", "Wave2D", "-t", "0:20", "-o", out("b").to_str().unwrap(), "--wrap", report]);
    let c = l.submit(&["-N", "2", "-t", "0:10", "-o", out("c").to_str().unwrap(), "--wrap", report]);
    let budget = 600.0;
    let mut seen_measured = false;
    // the agents report every 2 s, each at its own instants: their sum may
    // mix a node's reading from before a change with another's after it, but
    // never stays over the budget for longer than one interval
    let mut over_since: Option<std::time::Instant> = None;
    l.wait_for("every job completed", 60, |l| {
        let m = l.metrics();
        if let (Some(alloc), Some(measured)) = (metric(&m, "tessera_allocated_power_watts"), metric(&m, "tessera_measured_power_watts")) {
            assert!(alloc <= budget + 1e-6, "allocated {alloc} W over the budget:\n{m}");
            if measured > budget + 1e-6 {
                let since = *over_since.get_or_insert_with(std::time::Instant::now);
                assert!(since.elapsed() < std::time::Duration::from_millis(2500), "measured {measured} W over the budget for more than one interval:\n{m}");
            } else {
                over_since = None;
            }
            seen_measured |= measured > 0.0;
        }
        [a, b, c].iter().all(|&j| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed))
    });
    assert!(seen_measured, "the agents reported the power their nodes drew\n{}", l.logs());
    assert_eq!(metric(&l.metrics(), "tessera_power_budget_watts"), Some(budget));
    // each job was told its size and cap
    let caps = [30.0, 32.0, 34.0, 39.0, 45.0, 55.0, 60.0];
    for (j, (lo, hi)) in [("a", (2, 8)), ("b", (2, 6)), ("c", (2, 2))] {
        let text = std::fs::read_to_string(out(j)).unwrap();
        let f: Vec<&str> = text.split_whitespace().collect();
        let n: u32 = f[0].parse().unwrap();
        let cap: f64 = f[1].parse().unwrap();
        assert!((lo..=hi).contains(&n), "job {j}: {text}");
        assert!(caps.contains(&cap), "job {j}: {text}");
        assert_eq!(tessera_core::hostlist::expand(f[2]).unwrap().len() as u32, n, "job {j}: {text}");
        if j == "c" {
            assert_eq!(cap, 60.0, "a job without a profile runs at full power");
        }
    }
    // every record carries the energy its nodes drew (modelled: emulated nodes)
    let o = l.cli(&["acct", "-P", "-o", "JobIDRaw,State,ConsumedEnergyRaw,ConsumedEnergy,AllocNodes"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let acct = String::from_utf8_lossy(&o.stdout).to_string();
    for j in [a, b, c] {
        let row: Vec<&str> = acct.lines().find(|r| r.starts_with(&format!("{j}|"))).unwrap_or_else(|| panic!("no row for {j}:\n{acct}")).split('|').collect();
        assert_eq!(row[1], "COMPLETED", "{acct}");
        let joules: f64 = row[2].parse().unwrap_or_else(|_| panic!("{acct}"));
        let nodes: f64 = row[4].parse().unwrap();
        // at least its nodes at the lowest cap for the 4 s it slept
        assert!(joules >= nodes * 86.0 * 3.0, "job {j}: {joules} J on {nodes} nodes\n{acct}");
        assert_eq!(row[3], tessera_accounting::acct::energy(joules), "{acct}");
    }
    // the agents keep the caps they set
    assert!(l.agent_state(0).join("power.json").exists());
}

#[test]
fn a_node_whose_cap_cannot_be_set_is_drained_with_the_reason() {
    let mut l = Live::start_with(2, 10, Some((POWERED, 8)), "parm", &[]);
    // agent 2 (node[005-008]) comes back on real RAPL packages, here a fake
    // powercap tree whose one package takes at most 25 W: below every cap
    let rapl = l.dir.path().join("powercap");
    fake_package(&rapl, 20, 25);
    l.kill9_agent(1);
    l.local.restart_agent_with(1, &["--power-domain".into(), "rapl".into(), "--powercap-root".into(), rapl.display().to_string()]).unwrap();
    l.wait_for("agent 2 back", 30, |l| l.nodes().iter().filter(|n| n.agent.as_deref() == Some("agent2")).count() == 4 && l.nodes().iter().all(|n| n.state == "idle"));
    // six nodes at the lowest cap fill the budget: node[001-006]
    let j = l.submit(&["-N", "6", "--power-profile", "LeanMD", "-t", "0:10", "--wrap", "sleep 3"]);
    l.wait_for("node005 and node006 drained", 30, |l| {
        let nodes = l.nodes();
        ["node005", "node006"].iter().all(|name| nodes.iter().any(|n| n.name == *name && matches!(n.state.as_str(), "draining" | "drain") && n.reason.contains("above the maximum of 25")))
    });
    // the job runs on, the drained nodes take nothing new, the others are in service
    l.wait_for("the job completed", 30, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed));
    let nodes = l.nodes();
    assert!(nodes.iter().filter(|n| n.state == "drain").count() == 2, "{nodes:?}");
    assert!(nodes.iter().filter(|n| n.state == "idle").count() == 6, "{nodes:?}");
    let _ = BIN;
}

/// The caps an agent keeps (its spool's `power.json`).
fn kept_caps(l: &Live, k: usize) -> std::collections::BTreeMap<String, f64> {
    let text = std::fs::read_to_string(l.agent_state(k).join("power.json")).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    v["caps"].as_object().map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_f64().unwrap())).collect()).unwrap_or_default()
}

#[test]
fn a_controller_killed_mid_run_finds_the_jobs_sizes_and_caps_as_they_were() {
    let mut l = Live::start_with(2, 30, Some((POWERED, 8)), "parm", &[]);
    // two jobs of at most 3 nodes: both run at once on the 8 nodes
    let jobs: Vec<u64> = [("2-3", "LeanMD"), ("2-3", "Jacobi2D")]
        .iter()
        .map(|(r, p)| l.submit(&["--moldable", r, "--power-profile", p, "-t", "0:20", "--wrap", "sleep 6"]))
        .collect();
    l.wait_for("every job running", 20, |l| jobs.iter().all(|&j| l.job(j).is_some_and(|x| x.state == JobStateCode::Running)));
    let before: Vec<(u64, String)> = jobs.iter().map(|&j| (j, l.job(j).unwrap().nodelist)).collect();
    // a job runs once the controller hears so; its agent may write the cap
    // of its last node a moment later
    let used: Vec<String> = before.iter().flat_map(|(_, nodes)| tessera_core::hostlist::expand(nodes).unwrap()).collect();
    l.wait_for("the agents keep every running node's cap", 10, |l| {
        let (a, b) = (kept_caps(l, 0), kept_caps(l, 1));
        used.iter().all(|n| a.contains_key(n) || b.contains_key(n))
    });
    let caps = (kept_caps(&l, 0), kept_caps(&l, 1));
    assert!(!caps.0.is_empty() || !caps.1.is_empty(), "the agents keep the caps they set");
    l.kill9_controller();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // the nodes keep their caps while the controller is away
    assert_eq!((kept_caps(&l, 0), kept_caps(&l, 1)), caps);
    l.start_controller();
    // the restarted controller has every job where it ran, at the caps it had
    for (j, nodes) in &before {
        let x = l.job(*j).unwrap();
        assert!(matches!(x.state, JobStateCode::Running | JobStateCode::Completed), "job {j}: {x:?}");
        assert_eq!(&x.nodelist, nodes, "job {j} keeps its nodes");
    }
    l.wait_for("every job completed", 40, |l| jobs.iter().all(|&j| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed)));
    let rows = l.acct();
    for j in &jobs {
        assert_eq!(rows.iter().filter(|r| r.0 == *j).count(), 1, "job {j} accounted once: {rows:?}");
    }
}

#[test]
fn a_shrunk_job_gives_up_its_nodes_once_it_acknowledges_and_one_that_does_not_is_killed() {
    let l = Live::start_with(2, 30, Some((POWERED, 8)), "parm", &["--resize-ack", "3"]);
    let dir = l.dir.path();
    // acknowledges every configuration it is told of, after a moment
    let polite = "trap 'sleep 0.5; echo ok >> \"$TESSERA_CONFIG_ACK\"' WINCH\ni=0; while [ $i -lt 120 ]; do sleep 0.1; i=$((i+1)); done\n";
    std::fs::write(dir.join("polite.sh"), format!("#!/bin/sh\n{polite}")).unwrap();
    let a = l.submit(&["--moldable", "2-8", "--malleable", "--power-profile", "LeanMD", "-t", "1:00", dir.join("polite.sh").to_str().unwrap()]);
    l.wait_for("the first job running", 20, |l| l.job(a).is_some_and(|x| x.state == JobStateCode::Running));
    let n0 = l.job(a).unwrap().nodes;
    let b = l.submit(&["--moldable", "2-4", "--power-profile", "Jacobi2D", "-t", "0:30", "--wrap", "sleep 2"]);
    l.wait_for("the second job running", 20, |l| l.job(b).is_some_and(|x| x.state == JobStateCode::Running));
    let first = l.job(a).unwrap();
    assert!(first.nodes < n0, "the first job shrank: {n0} -> {}", first.nodes);
    let logs = l.logs();
    assert!(logs.contains("acknowledged its resize"), "{logs}");
    // its configuration record says what it was told
    let conf = std::fs::read_dir(l.agent_state(0).join("jobs")).unwrap().flatten().find(|e| e.path().extension().is_some_and(|x| x == "conf") && std::fs::metadata(e.path()).is_ok_and(|m| m.len() > 0)).expect("a configuration record");
    let line = std::fs::read_to_string(conf.path()).unwrap();
    let f: Vec<&str> = line.lines().last().unwrap().split(' ').collect();
    assert_eq!(f[1], first.nodes.to_string(), "{line}");
    assert_eq!(tessera_core::hostlist::compress(&tessera_core::hostlist::expand(f[3]).unwrap().iter().map(|s| s.as_str()).collect::<Vec<_>>()), first.nodelist, "{line}");
    l.wait_for("both completed", 40, |l| [a, b].iter().all(|&j| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed)));

    // a malleable job that never acknowledges is killed when its time is up
    let c = l.submit(&["--moldable", "2-8", "--malleable", "--power-profile", "LeanMD", "-t", "1:00", "--wrap", "sleep 30"]);
    l.wait_for("the third job running", 20, |l| l.job(c).is_some_and(|x| x.state == JobStateCode::Running));
    let d = l.submit(&["--moldable", "2-4", "--power-profile", "Jacobi2D", "-t", "0:30", "--wrap", "sleep 1"]);
    l.wait_for("the silent job killed and the fourth run", 30, |l| {
        l.job(c).is_some_and(|x| x.state == JobStateCode::Failed) && l.job(d).is_some_and(|x| matches!(x.state, JobStateCode::Running | JobStateCode::Completed))
    });
    let (killed, started) = (l.job(c).unwrap(), l.job(d).unwrap());
    assert!(started.start.unwrap() >= killed.end.unwrap(), "the fourth started on the nodes the third gave up only once it had ended: {killed:?} {started:?}");
}

#[test]
fn an_operator_lowers_the_budget_live_and_the_caps_come_down() {
    let mut l = Live::start_with(2, 30, Some((POWERED, 8)), "parm", &[]);
    let j = l.submit(&["-N", "4", "--power-profile", "LeanMD", "-t", "1:00", "--wrap", "sleep 12"]);
    l.wait_for("the job running", 20, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::Running));
    let caps = |l: &Live| kept_caps(l, 0);
    // as fast as LeanMD runs (its saturation power, 52 W, rounds up to the 55 W level)
    assert!(caps(&l).values().all(|&c| c == 55.0), "under 600 W: {:?}", caps(&l));
    // 4 nodes at LeanMD's lowest cap draw 344 W: 300 W is refused, 400 W taken
    let o = l.cli(&["cluster", "set-budget", "300"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("below what the running jobs need at their lowest caps, 344 W"), "{e}");
    let o = l.cli(&["cluster", "set-budget", "400"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "Power budget 400 W (was 600 W)");
    l.wait_for("the caps down and the measured power within 400 W", 10, |l| {
        let m = l.metrics();
        caps(l).values().all(|&c| 4.0 * (c + 56.0) <= 400.0) && metric(&m, "tessera_measured_power_watts").is_some_and(|w| w > 0.0 && w <= 400.0) && metric(&m, "tessera_power_budget_watts") == Some(400.0)
    });
    // journaled: a restarted controller keeps it
    l.kill9_controller();
    l.start_controller();
    l.wait_for("the budget after a restart", 10, |l| metric(&l.metrics(), "tessera_power_budget_watts") == Some(400.0));
    l.wait_for("the job completed", 30, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed));
}

#[test]
fn emulated_malleable_jobs_end_when_the_model_says_through_their_resizes() {
    use tessera_sim::sleeplog::read_log;
    let l = Live::start_with(2, 30, Some((POWERED, 8)), "parm", &["--alpha", "0"]);
    let log = l.dir.path().join("sleep.log");
    let job = |id: u64, runtime: u64| format!("exec {BIN} sleep-job --work --id {id} --runtime {runtime} --log {}", log.display());
    // a long malleable job alone takes what it can; a second one makes it shrink
    let a = l.submit(&["--moldable", "2-8", "--malleable", "--power-profile", "Jacobi2D", "-t", "0:08", "--wrap", &job(1, 8)]);
    l.wait_for("the first job running", 20, |l| l.job(a).is_some_and(|x| x.state == JobStateCode::Running));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let b = l.submit(&["--moldable", "4-6", "--power-profile", "Wave2D", "-t", "0:04", "--wrap", &job(2, 4)]);
    l.wait_for("both completed", 60, |l| [a, b].iter().all(|&j| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed)));
    let recs = read_log(&log).unwrap();
    assert_eq!(recs.len(), 2, "{recs:?}");
    let first = recs.iter().find(|r| r.id == 1).unwrap();
    assert!(first.configs.len() >= 2, "the first job was reconfigured: {first:?}");
    assert!(first.configs.windows(2).any(|w| w[1].nodes < w[0].nodes), "and shrank: {first:?}");
    // each ended when the scheduler's model said, to the second it recorded
    for (id, j) in [(1, a), (2, b)] {
        let r = recs.iter().find(|r| r.id == id).unwrap();
        let end = l.job(j).unwrap().end.unwrap() as f64;
        assert!(r.end >= end - 0.05 && r.end < end + 1.0, "job {id}: logged end {} against the recorded {end}: {r:?}", r.end);
    }
}

/// A power budget holds under a queue policy too: EASY runs every busy node at
/// full power (116 W), so 600 W powers 5 of the 8 nodes; a sixth job waits
/// with the PowerBudget reason until one ends, one that needs 6 nodes at once
/// is refused at submission, and the measured power stays under the budget.
#[test]
fn easy_runs_under_the_power_budget_and_jobs_wait_for_power() {
    let l = Live::start_with(2, 10, Some((POWERED, 8)), "easy", &[]);
    let o = l.cli(&["job", "submit", "-N", "6", "--exclusive", "-t", "0:10", "--wrap", "true"]);
    assert!(!o.status.success(), "6 nodes at full power need 696 W");
    assert!(String::from_utf8_lossy(&o.stderr).contains("power budget"), "{}", String::from_utf8_lossy(&o.stderr));
    let jobs: Vec<u64> = (0..6).map(|_| l.submit(&["-N", "1", "--exclusive", "-t", "0:30", "--wrap", "sleep 4"])).collect();
    l.wait_for("5 running, 1 waiting for power", 20, |l| {
        let js: Vec<_> = jobs.iter().filter_map(|&j| l.job(j)).collect();
        js.iter().filter(|j| j.state == JobStateCode::Running).count() == 5 && js.iter().any(|j| j.state == JobStateCode::Pending && j.reason == "PowerBudget")
    });
    let mut over_since: Option<std::time::Instant> = None;
    l.wait_for("every job completed", 60, |l| {
        let m = l.metrics();
        let alloc = metric(&m, "tessera_allocated_power_watts").unwrap_or(0.0);
        assert!(alloc <= 600.0 + 1e-6, "allocated {alloc} W:\n{m}");
        if metric(&m, "tessera_measured_power_watts").unwrap_or(0.0) > 600.0 + 1e-6 {
            assert!(over_since.get_or_insert_with(std::time::Instant::now).elapsed() < std::time::Duration::from_millis(2500), "measured over the budget:\n{m}");
        } else {
            over_since = None;
        }
        jobs.iter().all(|&j| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed))
    });
    // each record carries its energy: one node at full power (116 W) for the
    // 4 s it slept, at least
    let o = l.cli(&["acct", "-P", "-o", "JobIDRaw,ConsumedEnergyRaw"]);
    let acct = String::from_utf8_lossy(&o.stdout).to_string();
    for j in &jobs {
        let row = acct.lines().find(|r| r.starts_with(&format!("{j}|"))).unwrap_or_else(|| panic!("no row for {j}:\n{acct}"));
        let joules: f64 = row.split('|').nth(1).unwrap().parse().unwrap_or_else(|_| panic!("{acct}"));
        assert!(joules >= 116.0 * 3.5, "job {j}: {joules} J\n{acct}");
    }
    // bills price it: the energy of the records, at 0.30 per kWh
    let total_j: f64 = acct.lines().skip(1).filter_map(|r| r.split('|').nth(1)?.parse::<f64>().ok()).sum();
    let state = l.state();
    let o = l.cli(&["report", "bill", "--state-dir", state.to_str().unwrap(), "--format", "json", "--price-kwh", "0.30"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let kwh: f64 = r["accounts"].as_object().unwrap().values().map(|a| a["energy_kwh"].as_f64().unwrap()).sum();
    let cost: f64 = r["accounts"].as_object().unwrap().values().map(|a| a["cost"].as_f64().unwrap()).sum();
    assert!((kwh - total_j / 3.6e6).abs() < 1e-9, "{kwh} kWh against {total_j} J: {r}");
    assert!((cost - 0.30 * kwh).abs() < 1e-9, "{r}");
}

/// The power governor live: agent 2's nodes (node[005-008]) come back on a
/// fake RAPL package whose energy counter a thread advances at 200 W per
/// node, far above what their model allocates. The measured sum stays over
/// the 600 W budget, so the controller cuts caps, the most over-drawing job
/// (the one on node005) first, and says so in `/metrics`.
#[test]
fn measured_power_over_the_budget_brings_the_over_drawing_jobs_cap_down() {
    let mut l = Live::start_with(2, 10, Some((POWERED, 8)), "easy", &[]);
    let rapl = l.dir.path().join("powercap");
    let pkg = fake_package(&rapl, 60, 60);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let counter = {
        let (stop, file) = (stop.clone(), pkg.join("energy_uj"));
        std::thread::spawn(move || {
            let mut uj: u64 = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(100));
                uj += 20_000_000; // 200 W for 0.1 s
                std::fs::write(&file, format!("{uj}\n")).unwrap();
            }
        })
    };
    l.kill9_agent(1);
    l.local.restart_agent_with(1, &["--power-domain".into(), "rapl".into(), "--powercap-root".into(), rapl.display().to_string()]).unwrap();
    l.wait_for("agent 2 back", 30, |l| l.nodes().iter().filter(|n| n.agent.as_deref() == Some("agent2")).count() == 4 && l.nodes().iter().all(|n| n.state == "idle"));
    // node[001-004] for the first job, node005 for the second
    let a = l.submit(&["-N", "4", "--exclusive", "-t", "1:00", "--wrap", "sleep 30"]);
    l.wait_for("job a running", 20, |l| l.job(a).is_some_and(|x| x.state == JobStateCode::Running));
    let b = l.submit(&["-N", "1", "--exclusive", "-t", "1:00", "--wrap", "sleep 30"]);
    l.wait_for("job b running on node005", 20, |l| l.job(b).is_some_and(|x| x.state == JobStateCode::Running && x.nodelist == "node005"));
    l.wait_for("the governor cut a cap", 30, |l| metric(&l.metrics(), "tessera_power_throttles_total").is_some_and(|t| t >= 1.0));
    // node005's job drew 84 W over its allocation, job a nothing: b's cap came down first
    l.wait_for("node005 capped below full power", 20, |l| kept_caps(l, 1).get("node005").is_some_and(|&c| c < 60.0));
    let log = std::fs::read_to_string(l.state().join("controller.log")).unwrap();
    let first = log.lines().find(|x| x.contains("measured power over the budget")).unwrap_or_else(|| panic!("{log}"));
    assert!(first.contains(&format!("job={b}")), "the most over-drawing job first: {first}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    counter.join().unwrap();
    for j in [a, b] {
        let _ = l.cli(&["job", "cancel", &j.to_string()]);
    }
}
