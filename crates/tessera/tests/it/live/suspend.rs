//! Suspension live: on a cluster of priority tiers (PreemptMode=SUSPEND), a
//! high-tier job suspends the running sleep jobs of the lower tier through the
//! agents; they resume when it ends, their logs show the suspension, and the
//! accounting store does not charge the suspended time.

use super::{Live, BIN};
use tessera_proto::api::JobStateCode;
use tessera_sim::sleeplog::read_log;

const TIERS: &str = r#"
name = "tiers"

[[nodetype]]
name = "n"
nodes = "node[001-004]"
cores = 2

[[partition]]
name = "high"
nodes = "node[001-004]"
priority_tier = 1

[[partition]]
name = "low"
nodes = "node[001-004]"
priority_tier = 0
preempt_mode = "suspend"
default = true
"#;

#[test]
fn a_high_tier_job_suspends_sleep_jobs_which_resume_and_are_not_charged_the_pause() {
    let l = Live::start_on(2, 10, Some((TIERS, 4)));
    let log = l.dir.path().join("sleep.log");
    let sleep = |id: u64, runtime: u64| format!("exec {BIN} sleep-job --id {id} --runtime {runtime} --log {}", log.display());
    // two low jobs fill the 8 cores
    let low: Vec<u64> = (1..=2).map(|i| l.submit(&["-p", "low", "-n", "4", "-t", "1:00", "--wrap", &sleep(i, 6)])).collect();
    l.wait_for("the low jobs running", 20, |l| low.iter().all(|&j| l.job(j).is_some_and(|x| x.state == JobStateCode::Running)));
    // a signal before the sleep job has blocked its signals would stop it untrapped
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let high = l.submit(&["-p", "high", "-n", "8", "-t", "1:00", "--wrap", &sleep(3, 3)]);
    l.wait_for("the low jobs suspended and the high one running", 20, |l| {
        low.iter().all(|&j| l.job(j).is_some_and(|x| x.state == JobStateCode::Suspended)) && l.job(high).is_some_and(|x| x.state == JobStateCode::Running)
    });
    l.wait_for("every job completed", 40, |l| [low[0], low[1], high].iter().all(|&j| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed)));

    // accounting: the suspended seconds are recorded and not charged
    let o = l.cli(&["acct", "-P", "-o", "JobID,State,ElapsedRaw,Suspended,CPUTimeRAW,Start"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let acct = String::from_utf8_lossy(&o.stdout).to_string();
    let row = |j: u64| -> Vec<String> {
        let r = acct.lines().find(|x| x.starts_with(&format!("{j}|"))).unwrap_or_else(|| panic!("no row for {j}:\n{acct}"));
        r.split('|').map(str::to_string).collect()
    };
    for &j in &low {
        let f = row(j);
        assert_eq!(f[1], "COMPLETED", "{acct}");
        let elapsed: i64 = f[2].parse().unwrap();
        assert!((5..=7).contains(&elapsed), "charged its run, not its pause: {acct}");
        assert_ne!(f[3], "00:00:00", "the suspension is recorded: {acct}");
        assert_eq!(f[4], (elapsed * 4).to_string(), "{acct}");
    }

    // the sleep jobs' log: the low jobs were suspended while the high job ran,
    // and ran their whole runtime besides (counted, as a trace's runtime is,
    // from the start the controller recorded)
    let recs = read_log(&log).unwrap();
    assert_eq!(recs.len(), 3, "{recs:?}");
    let h = recs.iter().find(|r| r.id == 3).unwrap();
    assert!(h.suspensions.is_empty(), "{h:?}");
    for r in recs.iter().filter(|r| r.id != 3) {
        assert_eq!(r.suspensions.len(), 1, "one suspension: {r:?}");
        let s = &r.suspensions[0];
        assert!(s.suspend <= h.start && s.resume >= h.end - 0.1, "suspended while the high job ran: {r:?} {h:?}");
        // the high job runs 3 s from its recorded (whole-second) start: 2 to 3 s
        assert!(r.suspended() >= 1.8 && r.suspended() < 6.0, "{r:?}");
        let started = tessera_accounting::acct::parse_time(&row(low[r.id as usize - 1])[5]).unwrap() as f64;
        let ran = r.end - started - r.suspended();
        assert!((ran - 6.0).abs() < 0.3, "ran its 6 s besides the suspension: {ran} s, {r:?}");
    }

    // and the metrics from the store count the pause as waiting, not as work
    let o = l.cli(&["metrics", "--state-dir", l.state().to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(m["jobs_suspended"].as_u64(), Some(2), "{m}");
    let (mean_run, mean_susp) = (m["mean_run"].as_f64().unwrap(), m["mean_suspended"].as_f64().unwrap());
    assert!((mean_run - 5.0).abs() < 0.7, "(6 + 6 + 3) / 3 s of running: {m}");
    assert!(mean_susp >= 1.0 && mean_susp < 4.0, "two of three jobs suspended 2 to 3 s: {m}");
}

/// `tessera replay` with a shrink sweep against a running controller: one
/// directory per percentage, every job in its log, and the metrics of each.
#[test]
fn a_replay_sweep_runs_each_shrink_and_writes_its_log_and_metrics() {
    let l = Live::start(1, 10);
    let trace = l.dir.path().join("t.swf");
    // id submit wait run procs cpu mem reqprocs reqtime reqmem status uid gid exe queue partition prev think
    let rows: String = (1..=6).map(|i| format!("{i} {} -1 {} {} -1 -1 {} 10 -1 1 1 1 -1 -1 -1 -1 -1\n", i - 1, 1 + i % 2, 1 + i % 3, 1 + i % 3)).collect();
    std::fs::write(&trace, format!("; MaxProcs: 256\n{rows}")).unwrap();
    let out = l.dir.path().join("sweep");
    let o = l.cli(&["replay", "--trace", trace.to_str().unwrap(), "--shrink", "100:50:50", "--out", out.to_str().unwrap(), "--format", "json"]);
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stderr), l.logs());
    for pct in ["100", "50"] {
        let d = out.join(format!("shrink-{pct}"));
        let recs = read_log(&d.join("sleep.log")).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        assert_eq!(recs.len(), 6, "{recs:?}");
        let m: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("metrics.json")).unwrap()).unwrap();
        assert_eq!(m["metrics"]["jobs"].as_u64().or(m["jobs"].as_u64()), Some(6), "{m}");
        let csv = std::fs::read_to_string(d.join("jobs.csv")).unwrap();
        assert_eq!(csv.lines().count(), 7, "{csv}");
    }
    // at 50% the runtimes are halved (whole seconds, at least 1)
    let half = read_log(&out.join("shrink-50").join("sleep.log")).unwrap();
    assert!(half.iter().all(|r| r.runtime == 1.0), "{half:?}");
}
