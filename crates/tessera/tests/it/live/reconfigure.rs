//! A changed cluster file applied to a running controller (`tessera cluster
//! reconfigure`, as `scontrol reconfigure`): a running job keeps its node, a
//! removed idle node leaves, nodes an agent already presents come into service,
//! a change that would take a running job's node is refused, and all of it
//! survives a kill -9 of the controller, accounting included.

use super::{Live, BIN};
use std::process::{Command, Stdio};
use tessera_proto::api::JobStateCode;

fn cluster(a_nodes: &str, with_b: bool) -> String {
    let mut t = format!(
        "name = \"growing\"\n[[nodetype]]\nname = \"a\"\nnodes = \"{a_nodes}\"\nsockets = 1\ncores_per_socket = 4\nmemory = \"4G\"\n"
    );
    if with_b {
        // the implicit partition of a file without partitions is `all`
        t.push_str("[[nodetype]]\nname = \"b\"\nnodes = \"node[005-006]\"\nsockets = 1\ncores_per_socket = 8\nmemory = \"8G\"\n");
        t.push_str("[[partition]]\nname = \"all\"\nnodetypes = [\"a\", \"b\"]\ndefault = true\n[[partition]]\nname = \"big\"\nnodetypes = [\"b\"]\n");
    }
    t
}

fn out(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn a_changed_cluster_file_applies_to_a_running_controller_with_its_jobs_kept() {
    let v1 = cluster("node[001-004]", false);
    let mut l = Live::start_on(1, 10, Some((&v1, 4)));
    // the agent presents node[001-006] (its own file knows them all): the
    // controller's cluster has only node[001-004] and ignores the others
    let every = l.dir.path().join("every.toml");
    std::fs::write(&every, cluster("node[001-004]", true)).unwrap();
    l.kill9_agent(0);
    let agent = Command::new(BIN)
        .args(["agent", "--name", "agent1", "--controller", &format!("http://127.0.0.1:{}", l.port)])
        .args(["--key-file", l.state().join("cluster.key").to_str().unwrap(), "--nodes", "node[001-006]"])
        .args(["--cluster", every.to_str().unwrap(), "--state-dir", l.agent_state(0).to_str().unwrap()])
        .env("TESSERA_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(l.dir.path().join("agent1-every.log")).unwrap())
        .spawn()
        .unwrap();
    l.local.agents[0] = agent;
    let kept = l.submit(&["-n", "4", "--wrap", "sleep 20"]);
    l.wait_for("the job running", 30, |l| l.job(kept).is_some_and(|j| j.state == JobStateCode::Running));
    let on = l.job(kept).unwrap().nodelist;
    assert_eq!(on, "node001");
    // no partition `big` yet
    let o = l.cli(&["job", "submit", "-p", "big", "--wrap", "true"]);
    assert!(!o.status.success() && out(&o).contains("one of all"), "{}", out(&o));

    // a file that removes the node the job runs on is refused, naming both
    let bad = l.dir.path().join("bad.toml");
    std::fs::write(&bad, cluster("node[002-004]", true)).unwrap();
    let o = l.cli(&["cluster", "reconfigure", bad.to_str().unwrap()]);
    let said = out(&o);
    assert!(!o.status.success() && said.contains(&format!("job {kept} holds node node001")), "{said}");

    // node004 (idle) removed, node[005-006] (8 cores) added
    let v2 = l.dir.path().join("v2.toml");
    std::fs::write(&v2, cluster("node[001-003]", true)).unwrap();
    let o = l.cli(&["cluster", "reconfigure", v2.to_str().unwrap()]);
    let said = out(&o);
    assert!(o.status.success(), "{said}\n{}", l.logs());
    assert!(said.contains("nodes added: node[005-006]; removed: node004; changed: none"), "{said}");
    l.wait_for("the added nodes in service", 20, |l| {
        let names: Vec<(String, String)> = l.nodes().into_iter().map(|n| (n.name, n.state)).collect();
        names.iter().any(|(n, s)| n == "node005" && s == "idle") && !names.iter().any(|(n, _)| n == "node004")
    });
    let j = l.job(kept).unwrap();
    assert_eq!((j.state, j.nodelist), (JobStateCode::Running, on), "the running job keeps its node");
    let big = l.submit(&["-p", "big", "-n", "8", "--wrap", "sleep 1"]);
    l.wait_for("the 8-core job done", 30, |l| l.job(big).is_some_and(|j| j.state == JobStateCode::Completed));

    // a kill -9 of the controller: the state keeps the applied cluster
    // (the harness restarts it with the first file, which it ignores)
    l.kill9_controller();
    l.start_controller();
    let o = l.cli(&["nodes", "--format", "json"]);
    let nodes: Vec<tessera_proto::api::NodeInfo> = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["node001", "node002", "node003", "node005", "node006"]);
    l.wait_for("the kept job done", 60, |l| l.acct().iter().any(|(id, s)| *id == kept && s == "COMPLETED"));
    // accounting names each job's node as the cluster then had it
    let o = l.cli(&["acct", "-P", "-o", "JobIDRaw,NodeList,AllocCPUS"]);
    let table = out(&o);
    assert!(table.lines().any(|x| x == format!("{kept}|node001|4")), "{table}");
    assert!(table.lines().any(|x| x == format!("{big}|node005|8")), "{table}");
}
