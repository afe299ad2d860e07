//! Job steps: `tessera run` inside a batch script starts tasks across the
//! job's nodes through their agents, with Slurm's task variables, labelled
//! output, the worst exit, a refusal with the numbers when it asks for more
//! than the allocation holds, and steps in the accounting.

use super::*;
use tessera_proto::api::{JobInfo, JobStateCode};

#[test]
fn tessera_run_starts_tasks_across_the_jobs_nodes_and_the_steps_are_accounted() {
    let l = Live::start(2, 30);
    let script = format!(
        "#!/bin/sh\n{bin} run -n 4 -N 2 --label sh -c 'echo $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $SLURM_NTASKS $SLURM_STEP_ID $TESSERA_PROCID $SLURMD_NODENAME'\n\
         {bin} run -n 2 -N 2 sh -c 'exit $((SLURM_PROCID + 3))'\necho second=$?\n{bin} run -n 17 true\necho third=$?\n",
        bin = BIN
    );
    std::fs::write(l.dir.path().join("steps.sh"), script).unwrap();
    let j = l.submit(&["-N", "2", "-n", "16", "steps.sh", "-o", "steps.out"]);
    l.wait_for("the job to end", 60, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed));
    let out = std::fs::read_to_string(l.dir.path().join("steps.out")).unwrap();
    // four labelled lines from two nodes, each task with its own ids
    let mut rows: Vec<&str> = out.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit()) && l.contains(": ")).collect();
    rows.sort_unstable();
    assert_eq!(rows, ["0: 0 0 0 4 0 0 node001", "1: 1 1 0 4 0 1 node001", "2: 2 0 1 4 0 2 node002", "3: 3 1 1 4 0 3 node002"], "{out}");
    // the worst exit: task 1's 4
    assert!(out.contains("second=4"), "{out}");
    // more than the allocation holds: refused with the numbers
    assert!(out.contains("17 tasks × 1 cores = 17 cores: the allocation holds 16 cores on 2 nodes") && out.contains("third=1"), "{out}");
    let o = l.cli(&["acct", "-P", "-o", "JobID,JobName,State,ExitCode,NodeList,NTasks"]);
    let acct = String::from_utf8_lossy(&o.stdout).to_string();
    let rows: Vec<&str> = acct.lines().skip(1).collect();
    assert_eq!(
        rows,
        [
            format!("{j}|steps.sh|COMPLETED|0:0|node[001-002]|16"),
            format!("{j}.batch|batch|COMPLETED|0:0|node001|1"),
            format!("{j}.0|sh|COMPLETED|0:0|node[001-002]|4"),
            format!("{j}.1|sh|FAILED|4:0|node[001-002]|2"),
        ],
        "{acct}"
    );
}

#[test]
fn a_step_whose_node_fails_ends_node_fail() {
    let mut l = Live::start(2, 3);
    // 136 cores: node001-016 (agent 1) and node017 (agent 2)
    std::fs::write(l.dir.path().join("long.sh"), format!("#!/bin/sh\n{BIN} run -n 17 -N 17 sleep 600\n")).unwrap();
    let j = l.submit(&["-n", "136", "long.sh"]);
    l.wait_for("the step running on both agents", 60, |l| {
        let o = l.cli(&["job", "show", &j.to_string()]);
        o.status.success() && std::fs::read_dir(l.agent_state(1).join("jobs")).is_ok_and(|d| d.count() > 0)
    });
    std::thread::sleep(Duration::from_millis(500));
    l.kill9_agent(1);
    l.wait_for("the job to end NODE_FAIL", 60, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::NodeFail));
    let o = l.cli(&["acct", "-P", "-o", "JobID,State"]);
    let acct = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(acct.lines().any(|r| r == format!("{j}.0|NODE_FAIL")), "{acct}");
    assert!(acct.lines().any(|r| r == format!("{j}|NODE_FAIL")), "{acct}");
}

#[test]
fn tessera_run_outside_a_job_and_salloc_make_an_allocation_that_ends_with_their_command() {
    let l = Live::start(1, 30);
    // srun without a job: an allocation for the step, ended with its code
    let o = l.cli(&["run", "-n", "4", "--label", "sh", "-c", "echo task $SLURM_PROCID of $SLURM_NTASKS in $SLURM_JOB_ID"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut lines: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect();
    lines.sort();
    assert_eq!(lines, ["0: task 0 of 4 in 1", "1: task 1 of 4 in 1", "2: task 2 of 4 in 1", "3: task 3 of 4 in 1"], "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("job 1 has been allocated resources"));
    // salloc: its command runs here with the job's variables, steps in it
    let o = l.cli(&["salloc", "-n", "2", "sh", "-c", &format!("{BIN} run -n 2 true && echo in $SLURM_JOB_ID of $SLURM_NTASKS; exit 3")]);
    assert_eq!(o.status.code(), Some(3), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "in 2 of 2");
    assert!(String::from_utf8_lossy(&o.stderr).contains("salloc: Granted job allocation 2"));
    let acct = String::from_utf8_lossy(&l.cli(&["acct", "-P", "-o", "JobID,JobName,State,ExitCode,NTasks"]).stdout).to_string();
    let rows: Vec<&str> = acct.lines().skip(1).collect();
    assert_eq!(rows, ["1|sh|COMPLETED|0:0|4", "1.0|sh|COMPLETED|0:0|4", "2|interactive|FAILED|3:0|2", "2.0|true|COMPLETED|0:0|2"], "{acct}");
    // without a controller: how to start one
    let o = Command::new(BIN).args(["run", "true"]).current_dir(l.dir.path()).env_remove("TESSERA_STATE_DIR").env_remove("TESSERA_CONTROLLER").output().unwrap();
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("start one with `tessera up"), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Allocation options as Slurm users type them: `-N` alone is one task per
/// node, `-N` with `-n` spreads the tasks, `-c` keeps a task's cores on one
/// node, `--exclusive` takes whole nodes, `-w` names nodes and `-x` keeps
/// off them, on a partition of mixed node types too.
#[test]
fn allocation_options_follow_slurms_semantics() {
    let mixed = "name = \"mixed\"\n[[nodetype]]\nname = \"big\"\nnodes = \"node[001-002]\"\ncores = 8\n[[nodetype]]\nname = \"small\"\nnodes = \"node[003-004]\"\ncores = 4\n[[partition]]\nname = \"batch\"\nnodetypes = [\"big\", \"small\"]\ndefault = true\n";
    let l = Live::start_on(1, 30, Some((mixed, 4)));
    let started = |args: &[&str]| -> JobInfo {
        let j = l.submit(&[args, &["--hold", "--wrap", "sleep 30"]].concat());
        assert!(l.cli(&["job", "release", &j.to_string()]).status.success());
        l.wait_for("it runs", 30, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::Running));
        let info = l.job(j).unwrap();
        assert!(l.cli(&["job", "cancel", &j.to_string()]).status.success());
        l.wait_for("it ends", 30, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::Cancelled));
        info
    };
    // -N 1 alone: one task, one core
    let j = started(&["-N", "1"]);
    assert_eq!((j.procs, j.nodes), (1, 1));
    // -N 2 -n 4 on the mixed partition: two nodes
    let j = started(&["-N", "2", "-n", "4"]);
    assert_eq!((j.procs, j.nodes, j.nodelist.as_str()), (4, 2, "node[001-002]"));
    // -N 3 alone: three tasks, one on each of three nodes
    let j = started(&["-N", "3"]);
    assert_eq!((j.procs, j.nodes), (3, 3));
    // -c 4 -n 3: a task's four cores on one node
    let j = started(&["-n", "3", "-c", "4"]);
    assert_eq!((j.procs, j.nodes), (12, 2));
    // -w names the node, -x keeps off the others
    assert_eq!(started(&["-w", "node004"]).nodelist, "node004");
    assert_eq!(started(&["-x", "node[001-003]", "-n", "2"]).nodelist, "node004");
    // --exclusive: the whole node, shared with no one
    let e = l.submit(&["--exclusive", "-w", "node003", "--wrap", "sleep 30"]);
    l.wait_for("it runs", 30, |l| l.job(e).is_some_and(|x| x.state == JobStateCode::Running));
    let other = l.submit(&["-w", "node003", "--wrap", "true"]);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(l.job(other).unwrap().state, JobStateCode::Pending, "node003 is the exclusive job's alone");
    let nodes = l.nodes();
    assert_eq!(nodes.iter().find(|n| n.name == "node003").map(|n| n.alloc_cores), Some(4));
    // refused with the numbers
    let o = l.cli(&["job", "submit", "-N", "3", "-n", "2", "--wrap", "true"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("each node runs one task at least"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = l.cli(&["job", "submit", "-w", "node009", "--wrap", "true"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("`node009` is not"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = l.cli(&["job", "submit", "-N", "2", "-w", "node[001-003]", "--wrap", "true"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("at least the 3 nodes of -w"), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The v1 freezer state of process `pid`'s cgroup.
fn freezer_state(pid: i32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = text.lines().find_map(|l| l.split(':').nth(2).filter(|_| l.split(':').nth(1) == Some("freezer")))?;
    std::fs::read_to_string(PathBuf::from("/sys/fs/cgroup/freezer").join(path.trim_start_matches('/')).join("freezer.state")).ok().map(|s| s.trim().to_string())
}

#[test]
fn a_suspended_job_freezes_its_steps_on_every_node() {
    if !nix::unistd::geteuid().is_root() || !Path::new("/sys/fs/cgroup/freezer").is_dir() {
        eprintln!("skipped: needs root and the v1 freezer");
        return;
    }
    let l = Live::start(2, 30);
    // 136 cores: node001-016 (agent 1) and node017 (agent 2)
    // the tasks' command line: a marker of this run, the shell staying (its
    // last command a builtin) so that it keeps it
    let marker = format!("frz{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos());
    std::fs::write(l.dir.path().join("frz.sh"), format!("#!/bin/sh\n{BIN} run -n 17 -N 17 sh -c 'sleep 600; : {marker}'\n")).unwrap();
    let j = l.submit(&["-n", "136", "frz.sh"]);
    // the tasks' shells (not the client, whose command line holds theirs)
    let tasks_now = || -> Vec<i32> {
        super::cgroups::processes_with(&marker).into_iter().filter(|p| std::fs::read(format!("/proc/{p}/cmdline")).is_ok_and(|c| c.starts_with(b"sh\0"))).collect()
    };
    l.wait_for("the step's 17 tasks", 30, |_| tasks_now().len() == 17);
    let tasks = tasks_now();
    assert!(l.cli(&["job", "suspend", &j.to_string()]).status.success());
    l.wait_for("every task frozen, on both agents", 30, |_| tasks.iter().all(|&p| freezer_state(p).as_deref() == Some("FROZEN")));
    assert!(l.cli(&["job", "resume", &j.to_string()]).status.success());
    l.wait_for("every task thawed", 30, |_| tasks.iter().all(|&p| freezer_state(p).as_deref() == Some("THAWED")));
    assert!(l.cli(&["job", "cancel", &j.to_string()]).status.success());
    l.wait_for("cancelled, nothing left", 30, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::Cancelled) && tasks_now().is_empty());
}
