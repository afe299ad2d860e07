//! Across hosts: the controller and two agents each in a network namespace of
//! their own, joined by veth pairs with addresses of this test's own; nothing
//! may assume one host. Needs root and `ip` (iproute2); elsewhere it says so and
//! passes, except under `.ci/run` (TESSERA_REQUIRE_NETNS=1).

use super::BIN;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tessera_proto::api::{JobInfo, JobStateCode};

pub(super) struct Net {
    pub(super) names: Vec<String>,
    pub(super) children: Vec<Child>,
}

pub(super) fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("run ip");
    assert!(o.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

impl Drop for Net {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

fn usable() -> bool {
    let root = nix::unistd::geteuid().is_root();
    let has_ip = Command::new("ip").arg("-V").output().is_ok_and(|o| o.status.success());
    if !(root && has_ip) {
        assert!(std::env::var("TESSERA_REQUIRE_NETNS").is_err(), "the netns test needs root and iproute2 here");
        eprintln!("SKIPPED: network namespaces need root and iproute2");
        return false;
    }
    true
}

#[test]
fn a_controller_and_two_agents_in_separate_network_namespaces_run_a_job() {
    if !usable() {
        return;
    }
    let tag = std::process::id() % 10000;
    let ns = |x: &str| format!("tsr{tag}{x}");
    let mut net = Net { names: vec![ns("c"), ns("a"), ns("b")], children: Vec::new() };
    for n in &net.names {
        ip(&["netns", "add", n]);
        ip(&["netns", "exec", n, "ip", "link", "set", "lo", "up"]);
    }
    // controller <-> agent a on 10.213.1.0/30, controller <-> agent b on 10.213.2.0/30
    for (k, peer) in [(1, ns("a")), (2, ns("b"))] {
        let (vc, va) = (format!("tc{tag}{k}"), format!("ta{tag}{k}"));
        ip(&["link", "add", &vc, "type", "veth", "peer", "name", &va]);
        ip(&["link", "set", &vc, "netns", &ns("c")]);
        ip(&["link", "set", &va, "netns", &peer]);
        ip(&["netns", "exec", &ns("c"), "ip", "addr", "add", &format!("10.213.{k}.1/30"), "dev", &vc]);
        ip(&["netns", "exec", &peer, "ip", "addr", "add", &format!("10.213.{k}.2/30"), "dev", &va]);
        ip(&["netns", "exec", &ns("c"), "ip", "link", "set", &vc, "up"]);
        ip(&["netns", "exec", &peer, "ip", "link", "set", &va, "up"]);
    }
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let log = |name: &str| std::fs::File::create(dir.path().join(name)).unwrap();
    net.children.push(
        Command::new("ip")
            .args(["netns", "exec", &ns("c"), BIN, "controller", "--state-dir", state.to_str().unwrap(), "--listen", "0.0.0.0:6817", "--heartbeat-timeout", "10"])
            .stdout(Stdio::null())
            .stderr(log("controller.log"))
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    while !state.join("controller.json").exists() {
        assert!(t0.elapsed() < Duration::from_secs(30), "controller did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    for (k, peer, nodes) in [(1, ns("a"), "node[001-016]"), (2, ns("b"), "node[017-032]")] {
        net.children.push(
            Command::new("ip")
                .args(["netns", "exec", &peer, BIN, "agent", "--name", &format!("host{k}"), "--controller", &format!("http://10.213.{k}.1:6817")])
                .args(["--key-file", state.join("cluster.key").to_str().unwrap(), "--nodes", nodes, "--default-cluster"])
                .args(["--state-dir", dir.path().join(format!("agent{k}")).to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(log(&format!("agent{k}.log")))
                .spawn()
                .unwrap(),
        );
    }
    // the agent in b cannot reach a's address: the namespaces are separate
    let o = Command::new("ip").args(["netns", "exec", &ns("b"), "ip", "route", "get", "10.213.1.1"]).output().unwrap();
    assert!(!o.status.success(), "namespace b has no route to a's link");
    let cli = |args: &[&str]| Command::new(BIN).args(args).current_dir(dir.path()).env("TESSERA_STATE_DIR", &state).env_remove("TESSERA_CONTROLLER").output().unwrap();
    let logs = || ["controller.log", "agent1.log", "agent2.log"].iter().map(|f| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default()).collect::<Vec<_>>().join("\n---\n");
    let t0 = Instant::now();
    loop {
        let nodes: Vec<tessera_proto::api::NodeInfo> = serde_json::from_slice(&cli(&["nodes", "--format", "json"]).stdout).unwrap_or_default();
        if nodes.len() == 32 && nodes.iter().all(|n| n.state == "idle") {
            assert_eq!(nodes[0].agent.as_deref(), Some("host1"));
            assert_eq!(nodes[31].agent.as_deref(), Some("host2"));
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "agents did not register across namespaces:\n{}", logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    // a job spanning both agents' nodes (whole partition) runs on the first node's host
    let o = cli(&["job", "submit", "--parsable", "-n", "256", "--wrap", "echo on $SLURMD_NODENAME of $SLURM_JOB_NODELIST", "-o", "span.out"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let id: u64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let t0 = Instant::now();
    loop {
        let jobs: Vec<JobInfo> = serde_json::from_slice(&cli(&["queue", "--all", "--format", "json"]).stdout).unwrap_or_default();
        if jobs.iter().any(|j| j.id == id && j.state == JobStateCode::Completed) {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "the job did not complete:\n{}", logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("span.out")).unwrap().trim(), "on node001 of node[001-032]");
}
