//! The devices control (cgroup v1): a job may open only its own GPUs' device
//! files. Two character devices stand for a node's GPUs (major 240, a range
//! no driver holds: opening an allowed one fails with ENXIO, a denied one
//! with EPERM), given to the agent with `--gpu-devices`.

use super::*;
use tessera_proto::api::{Control, JobStateCode};

#[test]
fn a_job_opens_only_its_own_gpus_device_files() {
    if !nix::unistd::geteuid().is_root() || !Path::new("/sys/fs/cgroup/devices").is_dir() {
        eprintln!("skipped: needs root and the v1 devices controller");
        return;
    }
    let cluster = "name = \"gpus\"\n[[nodetype]]\nname = \"g\"\nnodes = \"node001\"\ncores = 4\ngpus = 2\nmemory = \"1G\"\n[[partition]]\nname = \"batch\"\nnodetypes = [\"g\"]\ndefault = true\n";
    let mut l = Live::start_on(1, 30, Some((cluster, 1)));
    let dev = l.dir.path().join("dev");
    std::fs::create_dir(&dev).unwrap();
    for k in 0..2 {
        let o = Command::new("mknod").arg(dev.join(format!("gpu{k}"))).args(["c", "240", &k.to_string()]).output().unwrap();
        assert!(o.status.success(), "mknod: {}", String::from_utf8_lossy(&o.stderr));
    }
    l.kill9_agent(0);
    let list = format!("{},{}", dev.join("gpu0").display(), dev.join("gpu1").display());
    l.local.restart_agent_with(0, &["--gpu-devices".into(), list]).unwrap();
    l.wait_for("the node confined with devices", 30, |l| l.nodes().iter().all(|n| n.state == "idle" && n.confinement.as_ref().is_some_and(|c| c.controls.contains(&Control::Devices))));
    let script = format!("for d in {0}/gpu0 {0}/gpu1; do (exec 3<$d) 2>&1 | sed \"s|.*: |$d: |\"; done; echo cuda=$CUDA_VISIBLE_DEVICES", dev.display());
    let j = l.submit(&["--gpus-per-node", "1", "-o", "gpu.out", "--wrap", &script]);
    l.wait_for("it ends", 30, |l| l.job(j).is_some_and(|x| x.state == JobStateCode::Completed));
    let out = std::fs::read_to_string(l.dir.path().join("gpu.out")).unwrap();
    let gpu0 = format!("{}/gpu0: No such device or address", dev.display());
    let gpu1 = format!("{}/gpu1: Operation not permitted", dev.display());
    assert!(out.contains(&gpu0) && out.contains(&gpu1), "its GPU (0) reaches the driver, the other is denied:\n{out}");
    assert!(out.contains("cuda=0\n"), "{out}");
}
