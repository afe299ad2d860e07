//! MPI across hosts: a controller and two agents, each agent in a network
//! namespace and a UTS namespace of its own (hosts `hosta` and `hostb`,
//! routed through the controller's namespace), run Debian's MPICH ring and
//! allreduce over 2 nodes × 2 ranks started by `tessera run`, which serves
//! the ranks PMI-1. Needs root, iproute2, unshare and mpicc; elsewhere it
//! says so and passes, except under `.ci/run` (TESSERA_REQUIRE_MPI=1).

use super::BIN;
use super::netns::{ip, Net};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tessera_proto::api::{JobInfo, JobStateCode};

const RING: &str = r#"#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int rank, size, token, sum;
    char host[256];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    if (rank == 0) {
        token = 1;
        MPI_Send(&token, 1, MPI_INT, 1 % size, 0, MPI_COMM_WORLD);
        MPI_Recv(&token, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        token += 1;
        MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 0, MPI_COMM_WORLD);
    }
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s: ring %d allreduce %d\n", rank, size, host, token, sum);
    MPI_Finalize();
    return 0;
}
"#;

fn usable() -> bool {
    let root = nix::unistd::geteuid().is_root();
    let has = |c: &str, a: &str| Command::new(c).arg(a).output().is_ok_and(|o| o.status.success());
    if !(root && has("ip", "-V") && has("unshare", "--version") && has("mpicc", "-show")) {
        assert!(std::env::var("TESSERA_REQUIRE_MPI").is_err(), "the MPI test needs root, iproute2, unshare and mpicc (Debian's mpich and libmpich-dev) here");
        eprintln!("SKIPPED: the MPI test needs root, iproute2, unshare and mpicc");
        return false;
    }
    true
}

#[test]
fn an_mpi_ring_runs_across_two_agents_in_separate_namespaces_through_tessera_run() {
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ring.c"), RING).unwrap();
    let o = Command::new("mpicc").args(["-o", "ring", "ring.c"]).current_dir(dir.path()).output().unwrap();
    assert!(o.status.success(), "mpicc: {}", String::from_utf8_lossy(&o.stderr));
    let tag = std::process::id() % 10000;
    let ns = |x: &str| format!("tsm{tag}{x}");
    let mut net = Net { names: vec![ns("c"), ns("a"), ns("b")], children: Vec::new() };
    for n in &net.names {
        ip(&["netns", "add", n]);
        ip(&["netns", "exec", n, "ip", "link", "set", "lo", "up"]);
    }
    // controller <-> a on 10.214.1.0/30, controller <-> b on 10.214.2.0/30;
    // the controller's namespace routes between a and b
    for (k, peer) in [(1, ns("a")), (2, ns("b"))] {
        let (vc, va) = (format!("mc{tag}{k}"), format!("ma{tag}{k}"));
        ip(&["link", "add", &vc, "type", "veth", "peer", "name", &va]);
        ip(&["link", "set", &vc, "netns", &ns("c")]);
        ip(&["link", "set", &va, "netns", &peer]);
        ip(&["netns", "exec", &ns("c"), "ip", "addr", "add", &format!("10.214.{k}.1/30"), "dev", &vc]);
        ip(&["netns", "exec", &peer, "ip", "addr", "add", &format!("10.214.{k}.2/30"), "dev", &va]);
        ip(&["netns", "exec", &ns("c"), "ip", "link", "set", &vc, "up"]);
        ip(&["netns", "exec", &peer, "ip", "link", "set", &va, "up"]);
        ip(&["netns", "exec", &peer, "ip", "route", "add", "default", "via", &format!("10.214.{k}.1")]);
    }
    ip(&["netns", "exec", &ns("c"), "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    let cluster = dir.path().join("cluster.toml");
    std::fs::write(&cluster, "name = \"two-hosts\"\n[[nodetype]]\nname = \"h\"\nnodes = \"node[001-002]\"\ncores = 2\nmemory = \"2G\"\n[[partition]]\nname = \"batch\"\nnodetypes = [\"h\"]\ndefault = true\n").unwrap();
    let state = dir.path().join("state");
    let log = |name: &str| std::fs::File::create(dir.path().join(name)).unwrap();
    net.children.push(
        Command::new("ip")
            .args(["netns", "exec", &ns("c"), BIN, "controller", "--state-dir", state.to_str().unwrap(), "--listen", "0.0.0.0:6818", "--heartbeat-timeout", "10", "--cluster", cluster.to_str().unwrap()])
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
    for (k, peer, node, host) in [(1, ns("a"), "node001", "hosta"), (2, ns("b"), "node002", "hostb")] {
        let agent = format!(
            "hostname {host} && exec {BIN} agent --name {host} --controller http://10.214.{k}.1:6818 --key-file {} --nodes {node} --cluster {} --state-dir {}",
            state.join("cluster.key").display(),
            cluster.display(),
            dir.path().join(format!("agent{k}")).display()
        );
        net.children.push(Command::new("ip").args(["netns", "exec", &peer, "unshare", "--uts", "sh", "-c", &agent]).stdout(Stdio::null()).stderr(log(&format!("agent{k}.log"))).spawn().unwrap());
    }
    let cli = |args: &[&str]| Command::new(BIN).args(args).current_dir(dir.path()).env("TESSERA_STATE_DIR", &state).env_remove("TESSERA_CONTROLLER").output().unwrap();
    let logs = || ["controller.log", "agent1.log", "agent2.log", "mpi.out"].iter().map(|f| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default()).collect::<Vec<_>>().join("\n---\n");
    let t0 = Instant::now();
    loop {
        let nodes: Vec<tessera_proto::api::NodeInfo> = serde_json::from_slice(&cli(&["nodes", "--format", "json"]).stdout).unwrap_or_default();
        if nodes.len() == 2 && nodes.iter().all(|n| n.state == "idle") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "agents did not register:\n{}", logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    let script = format!("#!/bin/sh\n{BIN} run -n 4 -N 2 --label hostname\n{BIN} run -n 4 -N 2 ./ring\n");
    std::fs::write(dir.path().join("mpi.sh"), script).unwrap();
    let o = cli(&["job", "submit", "--parsable", "-N", "2", "-n", "4", "-t", "2", "mpi.sh", "-o", "mpi.out"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let id: u64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let t0 = Instant::now();
    loop {
        let jobs: Vec<JobInfo> = serde_json::from_slice(&cli(&["queue", "--all", "--format", "json"]).stdout).unwrap_or_default();
        match jobs.iter().find(|j| j.id == id).map(|j| j.state) {
            Some(JobStateCode::Completed) => break,
            Some(JobStateCode::Pending | JobStateCode::Running | JobStateCode::Completing) | None => {}
            Some(s) => panic!("the job ended {s:?}:\n{}", logs()),
        }
        assert!(t0.elapsed() < Duration::from_secs(90), "the job did not complete:\n{}", logs());
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = std::fs::read_to_string(dir.path().join("mpi.out")).unwrap();
    // hostname: four lines from two hosts
    let mut hosts: Vec<&str> = out.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit()) && l.contains(": host")).collect();
    hosts.sort_unstable();
    assert_eq!(hosts, ["0: hosta", "1: hosta", "2: hostb", "3: hostb"], "{}", logs());
    // every rank went round the ring and summed the ranks (0+1+2+3)
    let mut ranks: Vec<&str> = out.lines().filter(|l| l.starts_with("rank ")).collect();
    ranks.sort_unstable();
    assert_eq!(ranks, ["rank 0 of 4 on hosta: ring 4 allreduce 6", "rank 1 of 4 on hosta: ring 2 allreduce 6", "rank 2 of 4 on hostb: ring 3 allreduce 6", "rank 3 of 4 on hostb: ring 4 allreduce 6"], "{}", logs());
    // the steps' accounting
    let o = cli(&["acct", "-P", "-o", "JobID,JobName,State,ExitCode,NodeList,NTasks"]);
    let acct = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(acct.lines().any(|r| r == format!("{id}.1|ring|COMPLETED|0:0|node[001-002]|4")), "{acct}");
    assert!(acct.lines().any(|r| r == format!("{id}.0|hostname|COMPLETED|0:0|node[001-002]|4")), "{acct}");
}
