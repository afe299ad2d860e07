//! `tessera sleep-job`: suspended and resumed by signals it records its
//! suspension and sleeps only the time that remained; thousands appending to
//! one log never interleave or lose a line.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tessera_sim::sleeplog::read_log;

/// One `tessera twin` at a time: each runs a controller and agents whose
/// passes must come within their second (preemption twins compare suspended
/// times to the second), so two of them on this machine's two cores at once
/// would be the test's load, not the code's. (Under `cargo nextest`, each
/// test its own process, the group `live-timed` of .config/nextest.toml does
/// the same.)
static TWIN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_twin() -> std::sync::MutexGuard<'static, ()> {
    TWIN.lock().unwrap_or_else(|e| e.into_inner())
}

fn sleep_job(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.arg("sleep-job").args(args).env_remove("TESSERA_START_TIME").env_remove("TESSERA_SUBMIT_TIME").env_remove("TESSERA_NTASKS").stdin(Stdio::null());
    c
}

fn signal(pid: u32, s: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), s).unwrap();
}

fn state(pid: u32) -> char {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    s[s.rfind(')').unwrap() + 2..].chars().next().unwrap()
}

#[test]
fn a_suspended_sleep_job_records_the_suspension_and_sleeps_only_what_remained() {
    use nix::sys::signal::Signal::*;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let t0 = Instant::now();
    let mut child = sleep_job(&["--id", "42", "--runtime", "2", "--log", log.to_str().unwrap(), "--submit", "1000", "--cores", "4"]).spawn().unwrap();
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(500));
    signal(pid, SIGTSTP);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(state(pid), 'T', "SIGTSTP stops the job");
    std::thread::sleep(Duration::from_millis(1200)); // suspended ~1.5 s in all
    signal(pid, SIGCONT);
    std::thread::sleep(Duration::from_millis(300));
    signal(pid, SIGTSTP); // a second suspension, ~0.5 s
    std::thread::sleep(Duration::from_millis(500));
    signal(pid, SIGCONT);
    let status = child.wait().unwrap();
    let took = t0.elapsed().as_secs_f64();
    assert!(status.success(), "{status:?}");
    // 2 s of sleep plus ~2 s suspended: it did not end early (plain sleep would at 2 s)
    assert!(took > 3.8 && took < 5.0, "took {took} s");
    let recs = read_log(&log).unwrap();
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!((r.id, r.cores, r.runtime, r.submit), (42, 4, 2.0, 1000.0));
    assert_eq!(r.suspensions.len(), 2, "{r:?}");
    let s0 = &r.suspensions[0];
    assert!((s0.suspend - r.start - 0.5).abs() < 0.15, "first suspension 0.5 s after the start: {r:?}");
    assert!((s0.resume - s0.suspend - 1.5).abs() < 0.15, "suspended ~1.5 s: {r:?}");
    assert!((r.suspended() - 2.0).abs() < 0.2, "{r:?}");
    let ran = r.end - r.start - r.suspended();
    assert!((ran - 2.0).abs() < 0.1, "ran its runtime, suspended time excluded: {ran} s");
    // the log line has exactly the documented keys
    let line: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    let keys: Vec<&str> = line.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["cores", "end", "id", "runtime", "start", "submit", "suspensions"]);
}

#[test]
fn a_terminated_sleep_job_logs_its_end_and_dies_of_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let mut child = sleep_job(&["--id", "7", "--runtime", "30", "--log", log.to_str().unwrap()]).env("TESSERA_NTASKS", "3").spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    signal(child.id(), nix::sys::signal::Signal::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status:?}");
    let r = &read_log(&log).unwrap()[0];
    assert_eq!((r.id, r.cores), (7, 3), "cores from $TESSERA_NTASKS");
    assert!(r.end - r.start < 1.0 && r.submit == r.start, "{r:?}");
}

#[test]
fn the_runtime_counts_from_the_schedulers_start() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    // the controller started it 1 s ago: 1 of its 1.5 s are gone
    let t0 = Instant::now();
    let st = sleep_job(&["--id", "1", "--runtime", "1.5", "--log", log.to_str().unwrap()]).env("TESSERA_START_TIME", format!("{}", now - 1.0)).status().unwrap();
    assert!(st.success());
    let took = t0.elapsed().as_secs_f64();
    assert!(took < 1.0, "slept only what remained: {took} s");
    let t0 = Instant::now();
    let st = sleep_job(&["--id", "2", "--runtime", "1.5", "--log", log.to_str().unwrap(), "--count-from", "process"]).env("TESSERA_START_TIME", format!("{}", now - 1.0)).status().unwrap();
    assert!(st.success());
    assert!(t0.elapsed().as_secs_f64() >= 1.5, "--count-from process sleeps the whole runtime");
}

/// A job the controller suspended before its process could count (its launch
/// and its suspension reached the node together): it counts the suspension
/// as the controller recorded it, and runs its whole runtime after the
/// resumption. Counting from the scheduler's start alone, it took the
/// suspended seconds for run time and ended at once (a live job suspended
/// for 54 s ran 0 s where the simulator ran it 1 s).
#[test]
fn suspensions_count_as_the_controller_recorded_them() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let record = dir.path().join("1.susp");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    // started 3 s ago, suspended at once for 2 s, resumed 1 s ago: 1 s of
    // its 1.5 s run has gone since, 0.5 s remains
    std::fs::write(&record, format!("S {}\nR {}\n", now - 3.0, now - 1.0)).unwrap();
    let t0 = Instant::now();
    let st = sleep_job(&["--id", "7", "--runtime", "1.5", "--log", log.to_str().unwrap()])
        .env("TESSERA_START_TIME", format!("{}", now - 3.0))
        .env("TESSERA_SUSPENSIONS", &record)
        .status()
        .unwrap();
    assert!(st.success());
    let took = t0.elapsed().as_secs_f64();
    assert!((0.35..0.9).contains(&took), "slept {took} s, expected about 0.5 s");
    let rec: tessera_sim::sleeplog::SleepRecord = serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(rec.suspensions.len(), 1);
    assert_eq!((rec.suspensions[0].suspend, rec.suspensions[0].resume), (now - 3.0, now - 1.0));
    assert_eq!(rec.start, now - 3.0, "it started, as far as anyone can tell, when it was suspended");
    rec.check().unwrap();
}

#[test]
fn thousands_of_sleep_jobs_append_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let n = 1000;
    let mut children = Vec::new();
    for id in 0..n {
        // all end within the same few milliseconds
        children.push(sleep_job(&["--id", &id.to_string(), "--runtime", "1", "--log", log.to_str().unwrap(), "--cores", "1"]).spawn().unwrap());
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let recs = read_log(&log).unwrap(); // fails on a torn or merged line
    assert_eq!(recs.len(), n);
    let mut ids: Vec<u64> = recs.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..n as u64).collect::<Vec<_>>());
}

/// The short form of the digital-twin check (docs/emulation.md): a replay of
/// 40 SDSC-SP2 jobs shrunk to 0.05% through a local controller and agents,
/// against the simulation of the same workload.
#[test]
fn a_short_twin_run_replays_every_job_and_starts_them_when_the_simulator_does() {
    let Some(dir) = tessera_workload::traces::shared_dir_or_skip("a_short_twin_run") else { return };
    let trace = dir.join("SDSC-SP2-1998-4.2-cln.swf.gz");
    let cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/sdsc-sp2.toml");
    let tmp = tempfile::tempdir().unwrap();
    let _one = one_twin();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["twin", "--trace", trace.to_str().unwrap(), "--max-jobs", "40", "--shrink", "0.05", "--cluster", cluster, "--format", "json", "--dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = t["jobs"].as_u64().unwrap();
    assert!(jobs >= 35, "{t}");
    assert_eq!(t["live"]["jobs"].as_u64(), Some(jobs), "every job has its line in the log");
    assert!(t["start_abs_median"].as_f64().unwrap() < 1.0, "{t}");
    let csv = std::fs::read_to_string(tmp.path().join("twin.csv")).unwrap();
    assert_eq!(csv.lines().count() as u64, jobs + 1);
}

/// `tessera twin` on a cluster file (its text), `max_jobs` SDSC-SP2 jobs
/// shrunk to `shrink`%, with a reservations file (its text) if given: its
/// JSON summary, and the directory whose `run` holds the run's files.
fn twin_on(cluster: &str, max_jobs: u32, shrink: &str, reservations: Option<&str>) -> Option<(serde_json::Value, tempfile::TempDir)> {
    let dir = tessera_workload::traces::shared_dir_or_skip("a twin run on a cluster file")?;
    let trace = dir.join("SDSC-SP2-1998-4.2-cln.swf.gz");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("cluster.toml");
    std::fs::write(&file, cluster).unwrap();
    let mut twin = Command::new(env!("CARGO_BIN_EXE_tessera"));
    twin.args(["twin", "--trace", trace.to_str().unwrap(), "--max-jobs", &max_jobs.to_string(), "--shrink", shrink, "--format", "json"]).arg("--cluster").arg(&file).arg("--dir").arg(tmp.path().join("run"));
    if let Some(text) = reservations {
        let resv = tmp.path().join("resv.toml");
        std::fs::write(&resv, text).unwrap();
        twin.arg("--reservations").arg(resv);
    }
    let _one = one_twin();
    let out = twin.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some((serde_json::from_slice(&out.stdout).unwrap(), tmp))
}

/// SDSC-SP2's machine with accounts for the trace groups of its first jobs
/// (g7 with a higher QOS by default, the user's other jobs under `other`),
/// multifactor priority recalculated every second with a 30-second half-life,
/// for the local user `user`.
fn sp2_with_accounts(user: &str) -> String {
    let base = include_str!("../../../../examples/clusters/sdsc-sp2.toml");
    format!(
        "{base}\n[priority]\ntype = \"multifactor\"\ncalc_period = \"0:01\"\nhalf_life = \"0:30\"\nmax_age = \"1:00\"\n\
         weights = {{ age = 100, fairshare = 10000, qos = 5000 }}\n\n\
         [[qos]]\nname = \"high\"\npriority = 100\n\n\
         [[account]]\nname = \"g75\"\nshares = 1\n\n[[account]]\nname = \"g7\"\nshares = 4\ndefault_qos = \"high\"\n\n\
         [[account]]\nname = \"g73\"\nshares = 2\n\n[[account]]\nname = \"other\"\nshares = 1\n\n\
         [[user]]\nname = \"{user}\"\naccounts = [\"other\", \"g75\", \"g7\", \"g73\"]\n"
    )
}

/// The twin with accounts, a QOS and a maintenance reservation
/// (docs/emulation.md, "Fair share"): jobs charge their trace group's account,
/// multifactor priority and Fair Tree order the queue live as in the
/// simulator, the maintenance window of half the machine (15 s to 35 s after
/// the start) holds no job live, and every job starts within a second of its
/// simulated start.
#[test]
fn a_short_twin_run_with_accounts_qos_and_a_maintenance_starts_jobs_when_the_simulator_does() {
    let user = nix::unistd::User::from_uid(nix::unistd::geteuid()).unwrap().unwrap().name;
    let maint = "[[reservation]]\nname = \"maint\"\nstart = 15\nduration = 20\nnodes = \"sp[001-064]\"\nflags = [\"maint\"]\n";
    let Some((t, tmp)) = twin_on(&sp2_with_accounts(&user), 80, "0.05", Some(maint)) else { return };
    let run = tmp.path().join("run");
    let jobs = t["jobs"].as_u64().unwrap();
    assert!(jobs >= 70, "{t:#}");
    assert_eq!(t["live"]["jobs"].as_u64(), Some(jobs), "every job has its line in the log");
    // the accounts and the window change the schedule, and live follows it
    assert_eq!(t["sharing"]["associations"].as_u64(), Some(9), "{t:#}");
    assert!(t["sharing"]["moved"].as_u64().unwrap() * 4 >= jobs, "accounts and the window moved few starts: {t:#}");
    assert!(t["start_abs_median"].as_f64().unwrap() < 1.0, "{t:#}");
    assert!(t["within_1s"].as_u64().unwrap() * 100 >= jobs * 95, "{t:#}");
    // live, each job charged its group's account, and none ran on the
    // reserved nodes in the window (the accounting store's nodes, the twin's
    // live instants from the replay's start)
    let csv = std::fs::read_to_string(run.join("twin.csv")).unwrap();
    let live: std::collections::BTreeMap<String, (f64, f64)> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (format!("t{}", f[0]), (f[6].parse().unwrap(), f[7].parse().unwrap()))
        })
        .collect();
    let acct = Command::new(env!("CARGO_BIN_EXE_tessera")).args(["acct", "-X", "-P", "-o", "JobName,Account,NodeList", "--state-dir"]).arg(run.join("state")).output().unwrap();
    assert!(acct.status.success(), "{}", String::from_utf8_lossy(&acct.stderr));
    let text = String::from_utf8(acct.stdout).unwrap();
    let (mut accounts, mut on_reserved) = (std::collections::BTreeSet::new(), 0);
    for line in text.lines().skip(1) {
        let [name, account, nodes] = line.split('|').collect::<Vec<_>>()[..] else { panic!("{line}") };
        accounts.insert(account.to_string());
        let (s, e) = live[name];
        let reserved = tessera_core::hostlist::expand(nodes).unwrap().iter().any(|n| n.as_str() <= "sp064");
        if reserved {
            on_reserved += 1;
            assert!(e <= 15.5 || s >= 34.5, "{name} ran on {nodes} from {s} s to {e} s, in the maintenance window (15 s to 35 s)");
        }
    }
    assert!(on_reserved > 0, "no job ran on the reserved nodes outside the window either");
    assert_eq!(accounts.into_iter().collect::<Vec<_>>(), ["g7", "g73", "g75", "other"]);
}

/// What a preemptive twin run must show: it preempted, the median job (and
/// 95% of them) started within a second of its simulated start, and every
/// job was suspended as long as in the simulation, to the second.
fn assert_preemption_matches(t: &serde_json::Value) {
    let jobs = t["jobs"].as_u64().unwrap();
    assert!(t["suspended_sim"].as_u64().unwrap() > 0, "the run preempts nothing: {t:#}");
    assert!(t["start_abs_median"].as_f64().unwrap() < 1.0, "{t:#}");
    assert!(t["within_1s"].as_u64().unwrap() * 100 >= jobs * 95, "{t:#}");
    assert_eq!(t["suspended_within_1s"].as_u64(), Some(jobs), "{t:#}");
    assert_eq!(t["suspended_live"], t["suspended_sim"], "{t:#}");
}

/// Priority tiers with PreemptMode SUSPEND (examples/clusters/sdsc-sp2-tiers.toml,
/// the SP2's queues as partitions): jobs of higher tiers suspend running jobs
/// of lower ones, live as in the simulator (docs/emulation.md, "Preemption").
#[test]
fn a_short_twin_run_on_priority_tiers_suspends_as_the_simulator_does() {
    let tiers = include_str!("../../../../examples/clusters/sdsc-sp2-tiers.toml");
    let Some((t, _dir)) = twin_on(tiers, 80, "0.05", None) else { return };
    assert_preemption_matches(&t);
}

/// Gang scheduling: two jobs per processor, time slices of 2 s (about the
/// shrunk trace's scale), rotating live as in the simulator.
#[test]
fn a_short_twin_run_on_a_gang_partition_rotates_as_the_simulator_does() {
    let gang = include_str!("../../../../examples/clusters/sdsc-sp2-gang.toml").replace("time_slice = 600", "time_slice = 2");
    assert!(gang.contains("time_slice = 2"));
    let Some((t, _dir)) = twin_on(&gang, 60, "0.05", None) else { return };
    assert_preemption_matches(&t);
}

/// A dependent workload (SWF fields 17 and 18: each job after its preceding
/// one) submitted live with `--dependency=afterany` starts every job when the
/// simulator, replaying the same fields, starts it: the engine's dependency
/// layer decides for both.
#[test]
fn a_dependent_workload_runs_live_as_simulated() {
    let tmp = tempfile::tempdir().unwrap();
    let cluster = tmp.path().join("cluster.toml");
    std::fs::write(&cluster, "name = \"dep\"\n[[nodetype]]\nname = \"n\"\nnodes = \"d[1-2]\"\ncores = 4\n").unwrap();
    // job: submit, run time, processors, requested time, preceding job (think 0)
    let jobs: [(i64, i64, i64, i64, i64, i64); 6] = [
        (1, 0, 4, 8, 10, -1),
        (2, 0, 2, 4, 10, 1), // after 1 (4 s), though cores are free before
        (3, 1, 3, 4, 10, -1),
        (4, 1, 2, 8, 10, 2), // after 2; all 8 cores, once 3 has ended too
        (5, 2, 1, 2, 10, 9), // job 9 is not in the trace: no dependency
        (6, 3, 1, 2, 10, 4),
    ];
    let mut swf = String::from("; synthetic dependent workload\n");
    for (id, submit, run, procs, req, prev) in jobs {
        let think = if prev > 0 { 0 } else { -1 };
        swf += &format!("{id} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 1 1 -1 -1 -1 {prev} {think}\n");
    }
    let trace = tmp.path().join("dep.swf");
    std::fs::write(&trace, swf).unwrap();
    let _one = one_twin();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["twin", "--trace", trace.to_str().unwrap(), "--shrink", "100", "--format", "json", "--cluster", cluster.to_str().unwrap(), "--dir"])
        .arg(tmp.path().join("run"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(t["jobs"].as_u64(), Some(6), "{t:#}");
    assert_eq!(t["within_1s"].as_u64(), Some(6), "every job starts within a second of its simulated start: {t:#}");
    // and the simulation did hold them: (trace id, simulated start)
    let csv = std::fs::read_to_string(tmp.path().join("run/twin.csv")).unwrap();
    let sim: Vec<(u64, i64)> = csv.lines().skip(1).map(|l| {
        let f: Vec<&str> = l.split(',').collect();
        (f[0].parse().unwrap(), f[3].parse().unwrap())
    }).collect();
    // (job 5 waits behind job 4, whose reservation its 10 s limit would delay)
    assert_eq!(sim, vec![(1, 0), (2, 4), (3, 4), (4, 7), (5, 9), (6, 9)], "{csv}");
}

/// `tessera twin` on the PARM testbed cluster file with `args`: its JSON summary.
fn parm_twin(args: &[&str]) -> serde_json::Value {
    let cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/parm-testbed.toml");
    let tmp = tempfile::tempdir().unwrap();
    let _one = one_twin();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["twin", "--cluster", cluster, "--format", "json", "--dir"])
        .arg(tmp.path())
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// What a power-aware twin run must show: every job ran, live throughput
/// within 5% of the simulated, starts within a second, and the measured
/// power never over the budget for longer than one sampling interval.
fn assert_power_twin(t: &serde_json::Value, jobs: u64) {
    assert_eq!(t["jobs"].as_u64(), Some(jobs), "{t:#}");
    assert_eq!(t["live"]["jobs"].as_u64(), Some(jobs), "{t:#}");
    let (live, sim) = (t["throughput_live"].as_f64().unwrap(), t["throughput_sim"].as_f64().unwrap());
    assert!((live / sim - 1.0).abs() <= 0.05, "throughput live {live} against simulated {sim}: {t:#}");
    assert!(t["start_abs_p90"].as_f64().unwrap() < 1.0, "{t:#}");
    let p = &t["power"];
    assert!(p["samples"].as_u64().unwrap() > 10, "{t:#}");
    assert_eq!(p["budget_w"].as_f64(), Some(3300.0));
    assert!(p["max_allocated_w"].as_f64().unwrap() <= 3300.0 + 1e-6, "{t:#}");
    assert!(p["max_measured_w"].as_f64().unwrap() > 0.0, "{t:#}");
    assert!(p["longest_over_budget_s"].as_f64().unwrap() <= 2.0, "{t:#}");
}

/// The short form of the PARM paper's live experiment (scripts/parm-live):
/// one testbed job set under wSE at 1% of the paper's times, live and
/// simulated, then the power-unaware baseline (EASY on the nodes the budget
/// powers at full power), which PARM beats. (This set shrinks a job and, once
/// it has acknowledged, grows another with the nodes it gave up: the
/// decision is applied as made, as the simulator applies it.)
#[test]
fn the_parm_testbed_runs_live_as_simulated_and_beats_the_power_unaware_baseline() {
    let wse = parm_twin(&["--testbed", "SetL:2", "--shrink", "1", "--policy", "parm", "--parm-rule", "paper", "--no-expand-boots"]);
    assert_power_twin(&wse, 10);
    let base = parm_twin(&["--testbed", "SetL:2", "--shrink", "1", "--policy", "easy"]);
    assert_power_twin(&base, 10);
    let (w, b) = (wse["live"]["mean_response"].as_f64().unwrap(), base["live"]["mean_response"].as_f64().unwrap());
    assert!(b / w > 1.2, "wSE {w} s against the baseline's {b} s: {wse:#} {base:#}");
}

/// `tessera twin --policy parm` on a trace: every job gets its profile,
/// node range and scaling from the simulator's seeded rule (as `sim run
/// --policy parm`), runs live as `sleep-job --work` on the PARM testbed's
/// cluster file, and ends as simulated.
#[test]
fn a_trace_runs_live_under_parm_as_simulated() {
    let Some(dir) = tessera_workload::traces::shared_dir_or_skip("a_trace_runs_live_under_parm") else { return };
    let trace = dir.join("SDSC-SP2-1998-4.2-cln.swf.gz");
    let t = parm_twin(&["--trace", trace.to_str().unwrap(), "--max-jobs", "20", "--shrink", "0.1", "--policy", "parm"]);
    let jobs = t["jobs"].as_u64().unwrap();
    assert!(jobs >= 15, "{t:#}");
    assert_power_twin(&t, jobs);
    assert_eq!(t["within_1s"].as_u64(), Some(jobs), "{t:#}");
}
