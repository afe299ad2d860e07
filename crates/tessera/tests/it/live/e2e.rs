//! A user's session: `tessera up`, a script submitted, its reason while it
//! waits, where it ran, its output and environment, its accounting record; and
//! the operations on jobs and nodes.

use super::{Live, BIN};
use std::process::Command;
use std::time::Duration;
use tessera_proto::api::JobStateCode;

#[test]
fn up_then_a_script_runs_on_its_nodes_waits_with_its_reason_and_is_accounted() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("tessera-state");
    let run = |args: &[&str]| Command::new(BIN).args(args).current_dir(dir.path()).env_remove("TESSERA_STATE_DIR").env_remove("TESSERA_CONTROLLER").output().unwrap();
    let up = run(&["up", "--detach"]);
    assert!(up.status.success(), "tessera up: {}", String::from_utf8_lossy(&up.stderr));
    let _down = super::Down(&state);
    assert!(String::from_utf8_lossy(&up.stdout).contains("256 cores"));
    // a job that takes the whole machine for a while, then one that must wait
    std::fs::write(
        dir.path().join("big.sh"),
        "#!/bin/sh\n#SBATCH -n 256\n#SBATCH -t 1\n#SBATCH -J big\nsleep 3\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("job.sh"),
        "#!/bin/bash\n#SBATCH -J probe\n#SBATCH -n 12\n#SBATCH -t 2\n#SBATCH -o probe-%j.txt\necho \"id=$SLURM_JOB_ID tid=$TESSERA_JOB_ID nodes=$SLURM_JOB_NODELIST tnodes=$TESSERA_NODELIST ntasks=$SLURM_NTASKS tntasks=$TESSERA_NTASKS pwd=$PWD\"\n",
    )
    .unwrap();
    let out = run(&["job", "submit", "big.sh"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Submitted batch job 1", "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["job", "submit", "job.sh"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Submitted batch job 2");
    // the pass after a submission comes at the end of its second's gathering
    // window: until then the job is eligible (reason None)
    let t0 = std::time::Instant::now();
    let q = loop {
        let q = String::from_utf8_lossy(&run(&["queue"]).stdout).to_string();
        if q.contains("(Resources)") || t0.elapsed() > Duration::from_secs(5) {
            break q;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let header = q.lines().next().unwrap();
    assert_eq!(header.split_whitespace().collect::<Vec<_>>(), ["JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)"]);
    let line2 = q.lines().find(|l| l.trim_start().starts_with("2 ")).unwrap_or_else(|| panic!("job 2 in\n{q}"));
    assert!(line2.contains(" PD ") && line2.contains("(Resources)"), "the waiting job shows the engine's reason:\n{q}");
    // it runs once the big job ends, and its record appears
    let t0 = std::time::Instant::now();
    let file = dir.path().join("probe-2.txt");
    loop {
        let acct = String::from_utf8_lossy(&run(&["acct", "--state-dir", state.to_str().unwrap(), "-P", "-o", "JobID,JobName,State,ExitCode,AllocCPUS,NodeList,NormElapsed"]).stdout).to_string();
        if acct.lines().any(|l| l.starts_with("2|")) {
            let row = acct.lines().find(|l| l.starts_with("2|")).unwrap();
            let f: Vec<&str> = row.split('|').collect();
            assert_eq!(&f[1..5], ["probe", "COMPLETED", "0:0", "12"], "{acct}");
            let text = std::fs::read_to_string(&file).unwrap();
            let nodes = f[5];
            assert!(text.contains(&format!("nodes={nodes} tnodes={nodes} ")), "the job ran on the nodes the accounting names: {text} vs {row}");
            assert!(text.contains("id=2 tid=2 ") && text.contains("ntasks=12 tntasks=12 "), "{text}");
            assert!(text.contains(&format!("pwd={}", dir.path().canonicalize().unwrap().display())), "{text}");
            assert!(acct.lines().any(|l| l.starts_with("1|big|COMPLETED")), "{acct}");
            break;
        }
        assert!(t0.elapsed().as_secs() < 30, "job 2 never finished:\n{acct}\n{}", String::from_utf8_lossy(&run(&["queue", "--all"]).stdout));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert!(run(&["down"]).status.success());
    assert!(!state.join("up.json").exists());
}

#[test]
fn jobs_are_held_released_cancelled_suspended_resumed_and_requeued() {
    let l = Live::start(1, 10);
    let cwd = l.dir.path();
    // hold, release
    let a = l.submit(&["--hold", "--wrap", "echo a", "-J", "held"]);
    assert_eq!(l.job(a).unwrap().reason, "JobHeldUser");
    assert!(l.cli(&["job", "release", &a.to_string()]).status.success());
    l.wait_for("the released job to complete", 20, |l| l.job(a).is_some_and(|j| j.state == JobStateCode::Completed));
    // suspend: the job, which asked for it, sees SIGTSTP before the freezer;
    // resume; its run time does not count the pause
    let script = cwd.join("s.sh");
    std::fs::write(&script, "#!/bin/bash\n#SBATCH --suspend-tstp\ntrap 'echo tstp' TSTP\necho ready\nfor i in 1 2 3 4 5 6 7 8; do sleep 0.5; done\necho end\n").unwrap();
    let s = l.submit(&[script.to_str().unwrap(), "-o", "s.out"]);
    l.wait_for("running", 20, |l| l.job(s).is_some_and(|j| j.state == JobStateCode::Running));
    // a signal that comes before the script has set its trap stops it untrapped:
    // wait until it has
    let out = cwd.join("s.out");
    l.wait_for("the trap set", 20, |_| std::fs::read_to_string(&out).is_ok_and(|o| o.contains("ready")));
    assert!(l.cli(&["job", "suspend", &s.to_string()]).status.success());
    assert_eq!(l.job(s).unwrap().state, JobStateCode::Suspended);
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert!(l.cli(&["job", "resume", &s.to_string()]).status.success());
    l.wait_for("the resumed job to complete", 30, |l| l.job(s).is_some_and(|j| j.state == JobStateCode::Completed));
    let out = std::fs::read_to_string(cwd.join("s.out")).unwrap();
    assert!(out.contains("tstp") && out.contains("end"), "{out}");
    // cancel a running job: SIGTERM, then it ends CANCELLED
    let c = l.submit(&["--wrap", "sleep 60"]);
    l.wait_for("running", 20, |l| l.job(c).is_some_and(|j| j.state == JobStateCode::Running));
    assert!(l.cli(&["job", "cancel", &c.to_string()]).status.success());
    l.wait_for("cancelled", 20, |l| l.job(c).is_some_and(|j| j.state == JobStateCode::Cancelled));
    // requeue: it runs again (its output says so) and is accounted once
    let r = l.submit(&["--wrap", "echo run $SLURM_RESTART_COUNT; sleep 2", "-o", "r.out", "--requeue"]);
    l.wait_for("running", 20, |l| l.job(r).is_some_and(|j| j.state == JobStateCode::Running));
    assert!(l.cli(&["job", "requeue", &r.to_string()]).status.success());
    l.wait_for("the requeued job to complete", 30, |l| l.job(r).is_some_and(|j| j.state == JobStateCode::Completed));
    assert_eq!(l.job(r).unwrap().requeues, 1);
    assert_eq!(std::fs::read_to_string(cwd.join("r.out")).unwrap().trim(), "run 1");
    // a limit of 2 s ends the job TIMEOUT
    let t = l.submit(&["--wrap", "sleep 30", "-t", "0:02"]);
    l.wait_for("timeout", 20, |l| l.job(t).is_some_and(|j| j.state == JobStateCode::Timeout));
    // dependencies and arrays
    let first = l.submit(&["--wrap", "exit 3", "--hold"]);
    let after_ok = l.submit(&["--wrap", "true", "-d", &format!("afterok:{first}")]);
    let after_not = l.submit(&["--wrap", "true", "-d", &format!("afternotok:{first}")]);
    assert_eq!(l.job(after_ok).unwrap().reason, "Dependency");
    assert!(l.cli(&["job", "release", &first.to_string()]).status.success());
    l.wait_for("dependencies resolved", 20, |l| {
        l.job(after_ok).is_some_and(|j| j.state == JobStateCode::Cancelled) && l.job(after_not).is_some_and(|j| j.state == JobStateCode::Completed)
    });
    let arr = l.submit(&["--wrap", "echo $SLURM_ARRAY_TASK_ID", "-a", "1-4%2", "-o", "arr-%a.out"]);
    l.wait_for("the array's tasks", 20, |l| (arr..arr + 4).all(|id| l.job(id).is_some_and(|j| j.state == JobStateCode::Completed)));
    assert_eq!(std::fs::read_to_string(cwd.join("arr-3.out")).unwrap().trim(), "3");
    // accounting: every job once
    let acct = l.acct();
    let mut ids: Vec<u64> = acct.iter().map(|r| r.0).collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "no job is recorded twice: {acct:?}");
    assert!(acct.contains(&(t, "TIMEOUT".into())) && acct.contains(&(c, "CANCELLED".into())) && acct.contains(&(first, "FAILED".into())), "{acct:?}");
    // as sacct shows them: a job ended by SIGTERM at its limit is 0:15, an
    // array task is ARRAY_TASK
    let rows = String::from_utf8_lossy(&l.cli(&["acct", "-P", "-o", "JobID,JobIDRaw,State,ExitCode"]).stdout).to_string();
    assert!(rows.lines().any(|r| r == format!("{t}|{t}|TIMEOUT|0:15")), "{rows}");
    assert!(rows.lines().any(|r| r == format!("{first}|{first}|FAILED|3:0")), "{rows}");
    assert!(rows.lines().any(|r| r == format!("{arr}_3|{}|COMPLETED|0:0", arr + 2)), "{rows}");
}

#[test]
fn nodes_are_drained_and_resumed_and_shown_with_their_reason() {
    let l = Live::start(2, 10);
    let o = l.cli(&["node", "drain", "node[001-002]", "--reason", "maintenance"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let nodes = l.nodes();
    assert_eq!(nodes[0].state, "drain");
    assert_eq!(nodes[0].reason, "maintenance");
    let table = String::from_utf8_lossy(&l.cli(&["nodes"]).stdout).to_string();
    assert!(table.contains("drain") && table.contains("node[001-002]") && table.contains("node[003-032]"), "{table}");
    assert!(l.cli(&["node", "resume", "node[001-002]"]).status.success());
    assert_eq!(l.nodes()[0].state, "idle");
    let o = l.cli(&["node", "drain", "node999"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("no node node999"));
}
