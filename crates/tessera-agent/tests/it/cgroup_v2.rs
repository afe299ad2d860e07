//! The cgroup v2 side, on this machine's unified hierarchy
//! (`/sys/fs/cgroup/unified`: cgroup2 with no controller enabled, the v1
//! controllers being mounted elsewhere). What v2 always has works there: a
//! job's processes are tracked, frozen, counted (`cpu.stat`) and killed
//! (`cgroup.kill`) through its cgroup; the controls its controllers would give
//! are missing, and `cgroup` mode would refuse to start with the reason.

use std::path::Path;
use std::time::{Duration, Instant};
use tessera_agent::cgroup::{Hierarchy, Limits};
use tessera_proto::api::Control;

fn wait(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_job_is_tracked_frozen_counted_and_killed_through_its_v2_cgroup() {
    let root = Path::new("/sys/fs/cgroup/unified");
    if !nix::unistd::geteuid().is_root() || !root.join("cgroup.controllers").exists() {
        eprintln!("skipped: needs root and a cgroup2 mount at /sys/fs/cgroup/unified");
        return;
    }
    let agent = format!("v2test-{}", std::process::id());
    let h = Hierarchy::v2_at(root, &agent).unwrap();
    assert_eq!(h.version(), 2);
    let offered = std::fs::read_to_string(root.join("cgroup.controllers")).unwrap();
    if !offered.split_whitespace().any(|c| c == "memory") {
        // what a node needs and this hierarchy lacks: `--cgroup cgroup` says so
        assert!(h.missing(true).contains(&Control::Memory), "{:?}", h.missing(true));
        assert!(!h.confinement(true, false).controls.contains(&Control::Memory));
    }
    assert!(h.confinement(true, false).controls.contains(&Control::Freezer));
    let cg = h.job(7, 1);
    cg.create(&Limits::default()).unwrap();
    let enter = cg.enter_batch().unwrap();
    assert_eq!(enter.len(), 1, "one hierarchy");
    // a busy process, which starts another in a session of its own once it
    // is in the cgroup
    let mut child = std::process::Command::new("sh").args(["-c", "sleep 0.3; setsid sh -c 'while :; do :; done' & while :; do :; done"]).spawn().unwrap();
    std::fs::write(&enter[0], child.id().to_string()).unwrap();
    wait("both in the cgroup", || cg.pids().len() >= 2);
    wait("it burns CPU", || cg.usage(None).cpu_s > 0.1);
    cg.freeze(true).unwrap();
    wait("frozen", || cg.frozen());
    let before = cg.usage(None).cpu_s;
    std::thread::sleep(Duration::from_millis(500));
    assert!(cg.usage(None).cpu_s - before < 0.01, "a frozen job uses no CPU");
    cg.kill();
    wait("every process gone", || cg.empty());
    let _ = child.wait();
    assert!(cg.remove(), "the cgroup is removed once empty");
    let _ = std::fs::remove_dir(root.join("tessera").join(&agent));
}

/// On v2 a job's cgroup denies the device files of the GPUs it was not given
/// with an eBPF program (v2 has no devices.deny).
#[test]
fn a_v2_cgroup_denies_the_devices_it_is_told_to() {
    let root = Path::new("/sys/fs/cgroup/unified");
    if !nix::unistd::geteuid().is_root() || !root.join("cgroup.controllers").exists() {
        eprintln!("skipped: needs root and a cgroup2 mount at /sys/fs/cgroup/unified");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for k in 0..2 {
        let o = std::process::Command::new("mknod").arg(dir.path().join(format!("gpu{k}"))).args(["c", "240", &k.to_string()]).output().unwrap();
        assert!(o.status.success(), "mknod: {}", String::from_utf8_lossy(&o.stderr));
    }
    let agent = format!("v2dev-{}", std::process::id());
    let h = Hierarchy::v2_at(root, &agent).unwrap();
    let cg = h.job(8, 1);
    let gpu1 = tessera_agent::cgroup::device_numbers(&dir.path().join("gpu1")).unwrap();
    cg.create(&Limits { deny: vec![gpu1], ..Limits::default() }).unwrap();
    let enter = cg.enter_batch().unwrap();
    let out = dir.path().join("out");
    let script = format!("sleep 0.3; for d in {0}/gpu0 {0}/gpu1; do (exec 3<$d) 2>> {1}; done", dir.path().display(), out.display());
    let mut child = std::process::Command::new("sh").args(["-c", &script]).spawn().unwrap();
    std::fs::write(&enter[0], child.id().to_string()).unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("gpu0: No such device or address"), "gpu0 reaches the (absent) driver: {text}");
    assert!(text.contains("gpu1: Operation not permitted"), "gpu1 is denied: {text}");
    wait("empty", || cg.empty());
    assert!(cg.remove());
    let _ = std::fs::remove_dir(root.join("tessera").join(&agent));
}

