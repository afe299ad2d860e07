//! Jobs confined in cgroups (this machine mounts the v1 controllers, and the
//! tests run as root): a job over its memory ends OUT_OF_MEMORY, nothing it
//! starts outlives it, a suspended job is frozen, a job on a real node runs
//! on the cores it was given, and a node whose cgroups cannot be made is
//! drained with the reason.

use super::*;
use tessera_proto::api::{Control, JobStateCode};

/// The v1 `ctl` cgroup directory of the first process whose command line
/// holds `marker` (the job's: a reused slot's, `tessera/AGENT-HASH/slot_N`).
fn cgroup_of(ctl: &str, marker: &str) -> Option<PathBuf> {
    let pid = *processes_with(marker).first()?;
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, c, p) = (f.next()?, f.next()?, f.next()?);
        (c.split(',').any(|x| x == ctl)).then(|| p.to_string())
    })?;
    Some(PathBuf::from("/sys/fs/cgroup").join(ctl).join(path.trim_start_matches('/')))
}

fn cpu_s(dir: &Path) -> f64 {
    std::fs::read_to_string(dir.join("cpuacct.usage")).map_or(0.0, |s| s.trim().parse::<f64>().unwrap_or(0.0) / 1e9)
}

/// Processes whose command line contains `marker`.
pub(super) fn processes_with(marker: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmd).replace('\0', " ").contains(marker).then_some(pid)
        })
        .collect()
}

fn v1_available() -> bool {
    let ok = nix::unistd::geteuid().is_root() && Path::new("/sys/fs/cgroup/freezer").is_dir() && Path::new("/sys/fs/cgroup/memory").is_dir();
    if !ok {
        eprintln!("skipped: needs root and the v1 freezer and memory controllers");
    }
    ok
}

#[test]
fn a_job_over_its_memory_ends_out_of_memory_and_its_steps_are_accounted() {
    if !v1_available() {
        return;
    }
    let l = Live::start(1, 30);
    assert!(l.nodes().iter().all(|n| n.confinement.as_ref().is_some_and(|c| c.version == 1 && c.controls.contains(&Control::Memory) && !c.controls.contains(&Control::Cpuset))), "emulated nodes are confined without a cpuset: {:?}", l.nodes());
    // dd's 256 MiB buffer, filled by its read, in a job given 64 MiB
    let j = l.submit(&["--mem", "64M", "--wrap", "dd if=/dev/zero of=/dev/null bs=256M count=1", "-o", "oom.out"]);
    let ok = l.submit(&["--wrap", "echo fine"]);
    l.wait_for("both ended", 30, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::OutOfMemory) && l.job(ok).is_some_and(|x| x.state == JobStateCode::Completed));
    let o = l.cli(&["acct", "-P", "-o", "JobID,JobName,State,MaxRSS,TotalCPU"]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|r| r.split('|').collect()).collect();
    let row = |id: &str| rows.iter().find(|r| r[0] == id).unwrap_or_else(|| panic!("no row {id}:\n{text}"));
    assert_eq!(row(&j.to_string())[2], "OUT_OF_MEMORY", "{text}");
    assert_eq!(row(&format!("{j}.batch"))[1..3], ["batch", "OUT_OF_MEMORY"], "{text}");
    // its peak is the limit it hit: 64 MiB (sacct's units)
    assert!(row(&format!("{j}.batch"))[3].ends_with('M') && row(&format!("{j}.batch"))[3].trim_end_matches('M').parse::<f64>().unwrap() >= 60.0, "{text}");
    assert_eq!(row(&ok.to_string())[2], "COMPLETED", "{text}");
    assert_eq!(row(&format!("{ok}.batch"))[2], "COMPLETED", "{text}");
    // the slots' cgroups are reused: a job given more memory, then less, in turn
    for mem in ["1G", "32M", "2G"] {
        let k = l.submit(&["--mem", mem, "--wrap", "true"]);
        l.wait_for("it completes", 30, |l| l.job(k).is_some_and(|x| x.state == JobStateCode::Completed));
    }
    assert!(l.nodes().iter().all(|n| n.state == "idle"), "no node drained: {:?}", l.nodes());
    // -X: jobs only
    let x = String::from_utf8_lossy(&l.cli(&["acct", "-X", "-P", "-o", "JobID"]).stdout).to_string();
    assert!(!x.contains(".batch") && x.lines().count() == 6, "{x}");
}

#[test]
fn nothing_a_job_starts_outlives_it_and_a_frozen_job_uses_no_cpu() {
    if !v1_available() {
        return;
    }
    let l = Live::start(1, 30);
    // a process that leaves the job's session and process group
    let ended = l.submit(&["--wrap", "setsid sh -c 'sleep 987651 &'; (sleep 987652 &); sleep 1"]);
    l.wait_for("the job to complete", 30, |l| l.job(ended).is_some_and(|x| x.state == JobStateCode::Completed));
    assert!(processes_with("sleep 98765").is_empty(), "left behind: {:?}", processes_with("sleep 98765"));
    // the same, cancelled
    let c = l.submit(&["--wrap", "setsid sh -c 'sleep 987653 &'; sleep 600"]);
    l.wait_for("the forked sleep", 30, |_| !processes_with("sleep 987653").is_empty());
    assert!(l.cli(&["job", "cancel", &c.to_string()]).status.success());
    l.wait_for("the job cancelled", 30, |l| l.job(c).is_some_and(|x| x.state == JobStateCode::Cancelled));
    assert!(processes_with("sleep 98765").is_empty(), "left behind: {:?}", processes_with("sleep 98765"));
    // a busy job, frozen: its cgroup counts no CPU while it is
    let b = l.submit(&["--wrap", "exec sh -c ': busy987; while :; do :; done'"]);
    l.wait_for("running", 30, |_| cgroup_of("cpuacct", "busy987").is_some());
    let cpu = cgroup_of("cpuacct", "busy987").unwrap();
    let freezer = cgroup_of("freezer", "busy987").unwrap();
    l.wait_for("it burns CPU", 30, |_| cpu_s(&cpu) > 0.2);
    assert!(l.cli(&["job", "suspend", &b.to_string()]).status.success());
    l.wait_for("frozen", 30, |_| std::fs::read_to_string(freezer.join("freezer.state")).is_ok_and(|s| s.trim() == "FROZEN"));
    let before = cpu_s(&cpu);
    std::thread::sleep(Duration::from_millis(1500));
    let during = cpu_s(&cpu) - before;
    assert!(during < 0.01, "a frozen job used {during} s of CPU in 1.5 s");
    assert!(l.cli(&["job", "resume", &b.to_string()]).status.success());
    l.wait_for("it burns CPU again", 30, |_| cpu_s(&cpu) > before + 0.2);
    assert!(l.cli(&["job", "cancel", &b.to_string()]).status.success());
    l.wait_for("cancelled", 30, |l| l.job(b).is_some_and(|x| x.state == JobStateCode::Cancelled));
}

/// An agent presenting this machine as `node001` (its resources detected,
/// not a cluster file's), in place of the local cluster's emulated agent 1.
struct RealAgent(std::process::Child);

impl Drop for RealAgent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn real_agent(l: &mut Live, spool: &Path) -> RealAgent {
    l.kill9_agent(0);
    let log = std::fs::File::create(l.dir.path().join("real-agent.log")).unwrap();
    let child = Command::new(BIN)
        .args(["agent", "--name", "agent1", "--nodes", "node001", "--controller", &format!("http://127.0.0.1:{}", l.port), "--key-file"])
        .arg(l.state().join("cluster.key"))
        .arg("--state-dir")
        .arg(spool)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    RealAgent(child)
}

#[test]
fn a_job_on_a_real_node_runs_on_the_cores_it_was_given() {
    if !v1_available() || !Path::new("/sys/fs/cgroup/cpuset").is_dir() {
        return;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores < 2 {
        eprintln!("skipped: needs two cores");
        return;
    }
    let cluster = format!("name = \"real\"\n[[nodetype]]\nname = \"host\"\nnodes = \"node001\"\ncores = {cores}\nmemory = \"512M\"\n[[partition]]\nname = \"batch\"\nnodetypes = [\"host\"]\ndefault = true\n");
    let mut l = Live::start_on(1, 30, Some((&cluster, 1)));
    let spool = l.dir.path().join("real1");
    let _agent = real_agent(&mut l, &spool);
    l.wait_for("the real node", 30, |l| l.nodes().iter().any(|n| n.state == "idle" && n.confinement.as_ref().is_some_and(|c| c.controls.contains(&Control::Cpuset))));
    // one core asked, four busy processes started
    let j = l.submit(&["-n", "1", "--wrap", "exec sh -c ': busy988; for i in 1 2 3 4; do (while :; do :; done) & done; sleep 6'"]);
    l.wait_for("running", 30, |_| cgroup_of("cpuacct", "busy988").is_some());
    let cpu = cgroup_of("cpuacct", "busy988").unwrap();
    let cpus = std::fs::read_to_string(cgroup_of("cpuset", "busy988").unwrap().join("cpuset.cpus")).unwrap();
    assert_eq!(tessera_agent::cgroup::parse_cpu_list(&cpus).map(|c| c.len()), Some(1), "one host cpu: {cpus}");
    l.wait_for("the busy processes", 30, |_| cpu_s(&cpu) > 0.5);
    let (c0, t0) = (cpu_s(&cpu), Instant::now());
    std::thread::sleep(Duration::from_secs(2));
    let used = (cpu_s(&cpu) - c0) / t0.elapsed().as_secs_f64();
    assert!(used <= 1.1, "a one-core job used {used:.2} cores");
    // the lower bound only shows the job was measured running: the other
    // tests share this machine's cores, so its one core may be half taken
    assert!(used > 0.1, "it did run: {used:.2} cores");
    l.wait_for("it ends", 30, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed));
}

#[test]
fn a_node_whose_cgroups_cannot_be_made_fails_the_launch_and_is_drained_with_the_reason() {
    if !v1_available() {
        return;
    }
    let cluster = "name = \"two\"\n[[nodetype]]\nname = \"std\"\nnodes = \"node[001-002]\"\ncores = 2\nmemory = \"1G\"\n[[partition]]\nname = \"batch\"\nnodetypes = [\"std\"]\ndefault = true\n";
    let l = Live::start_on(1, 30, Some((cluster, 2)));
    l.wait_for("idle", 30, |l| l.nodes().iter().all(|n| n.state == "idle"));
    // the agent's freezer directory taken away underneath it
    let base = PathBuf::from("/sys/fs/cgroup/freezer/tessera").join(tessera_agent::cgroup::base_name("agent1", &l.agent_state(0)));
    std::fs::remove_dir(&base).unwrap();
    let j = l.submit(&["--wrap", "echo never"]);
    l.wait_for("the launch failed", 30, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::Failed));
    let info = l.job(j).unwrap();
    assert_eq!(info.reason, "LaunchFailed", "{info:?}");
    assert!(info.reason_detail.contains("cgroup"), "{info:?}");
    l.wait_for("its node drained", 30, |l| l.nodes().iter().any(|n| n.state == "drain" && n.reason.contains("cgroup")));
}
