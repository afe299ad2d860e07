//! Every route authenticates; users act on their own jobs, operators on all,
//! agents only as agents. Refused requests (401, 403) change nothing. Bad
//! bodies get a 400 naming the field, bad options a 400 naming the option.

use super::{Live, BIN};
use hyper::{Method, StatusCode};
use tessera_controller::auth::{Key, Role};
use tessera_controller::http::{PUBLIC_ROUTES, ROUTES};
use tessera_proto::api::*;
use tessera_proto::client::{Client, Target};

use tessera_proto::unix_now as now;

/// A request for each route, with a valid body where one is needed.
fn requests() -> Vec<(Method, String, Option<Vec<u8>>)> {
    let submit = serde_json::to_vec(&SubmitRequest { script: "#!/bin/sh\n#SBATCH --hold\ntrue\n".into(), options: vec![], workdir: "/tmp".into(), env: Default::default(), script_name: None, idempotency_key: None }).unwrap();
    let register = serde_json::to_vec(&RegisterRequest { agent: "intruder".into(), version: PROTOCOL_VERSION, nodes: vec![AgentNode { name: "node001".into(), cores: 8, memory_mb: 32768, gpus: 0, confinement: None }], jobs: vec![], power: vec![], steps: vec![], steps_ended: vec![] }).unwrap();
    let msg = serde_json::to_vec(&AgentMessage { agent: "agent1".into(), session: 1, ended: vec![], power: vec![], resized: vec![], steps: vec![] }).unwrap();
    // the cluster the live tests run, with one node fewer (node032 is idle)
    let smaller = include_str!("../../../../../examples/clusters/default.toml").replace("node[001-032]", "node[001-031]");
    let reconfigure = serde_json::to_vec(&ReconfigureRequest { toml: smaller, path: "smaller.toml".into() }).unwrap();
    ROUTES
        .iter()
        .filter(|r| !PUBLIC_ROUTES.contains(r))
        .map(|&(m, p)| {
            let path = p.replace("{id}", "1").replace("{name}", "node001").replace("{action}", if p.starts_with("/v1/jobs") { "cancel" } else { "drain" }).replace("{step}", "0");
            let body = match p {
                "/v1/jobs" if m == "POST" => Some(submit.clone()),
                "/v1/agent/register" => Some(register.clone()),
                "/v1/agent/poll" | "/v1/agent/report" => Some(msg.clone()),
                "/v1/cluster" if m == "POST" => Some(reconfigure.clone()),
                "/v1/cluster/budget" => Some(br#"{"watts": 1000}"#.to_vec()),
                "/v1/jobs/{id}/steps" => Some(br#"{"ntasks": 1, "argv": ["true"], "workdir": "/", "io": {"addrs": ["127.0.0.1"], "port": 1, "key": "k"}}"#.to_vec()),
                "/v1/jobs/{id}/steps/{step}/signal" => Some(br#"{"signal": 2}"#.to_vec()),
                "/v1/jobs/{id}/end" => Some(br#"{"code": 0}"#.to_vec()),
                "/v1/reservations" if m == "POST" => Some(br#"{"start": "now+1days", "duration": "60", "nodes": "node001", "flags": ["MAINT"]}"#.to_vec()),
                "/v1/accounts" if m == "POST" => Some(br#"{"words": ["add", "account", "x"]}"#.to_vec()),
                _ => None,
            };
            (m.parse().unwrap(), path, body)
        })
        .collect()
}

#[test]
fn every_route_refuses_the_unauthenticated_and_the_forbidden_and_changes_nothing() {
    let l = Live::start(1, 10);
    let key = Key::load(&l.state().join("cluster.key"), false).unwrap();
    // job 1 belongs to root (the test runs over the socket as the operator or its own uid)
    let job = l.submit(&["--hold", "--wrap", "true"]);
    assert_eq!(job, 1);
    let before = (l.jobs(), l.nodes());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tcp = Target::Tcp(format!("127.0.0.1:{}", l.port));
    let call = |token: Option<String>, m: &Method, p: &str, b: &Option<Vec<u8>>| -> (StatusCode, String) {
        let mut c = Client::new(tcp.clone(), token);
        let (s, body) = rt.block_on(c.raw(m.clone(), p, b.clone())).unwrap();
        (s, String::from_utf8_lossy(&body).to_string())
    };
    let reqs = requests();
    for (m, p, b) in &reqs {
        let (s, body) = call(None, m, p, b);
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{m} {p} without credentials: {body}");
        assert!(body.contains("authentication required"), "{body}");
        let (s, _) = call(Some("tsr1.operator.root.0.99999999999.00".into()), m, p, b);
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{m} {p} with a forged token");
        let expired = key.sign(Role::Operator, "root", 0, now() - 10);
        let (s, body) = call(Some(expired), m, p, b);
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{m} {p} with an expired token: {body}");
    }
    // the dashboard alone answers anyone, with a page of aggregates
    for (m, p) in PUBLIC_ROUTES {
        let (s, body) = call(None, &m.parse().unwrap(), p, &None);
        assert_eq!(s, StatusCode::OK, "{m} {p} without credentials");
        assert!(body.starts_with("<!DOCTYPE html>") && !body.contains("root"), "aggregates only: {body}");
    }
    let user = key.sign(Role::User, "bob", 4242, now() + 3600);
    let agent = key.sign(Role::Agent, "agentX", 0, now() + 3600);
    let operator = key.sign(Role::Operator, "admin", 0, now() + 3600);
    for (m, p, b) in &reqs {
        let (s, body) = call(Some(user.clone()), m, p, b);
        let want = match p.as_str() {
            "/v1/jobs" if *m == Method::POST => StatusCode::CREATED,
            "/v1/cluster" if *m == Method::POST => StatusCode::FORBIDDEN,
            "/v1/jobs" | "/v1/jobs/1" | "/v1/nodes" | "/v1/cluster" | "/v1/openapi.json" | "/metrics" => StatusCode::OK,
            "/v1/reservations" if *m == Method::GET => StatusCode::OK,
            // the default cluster has no accounts
            "/v1/shares" | "/v1/priorities" | "/v1/accounts" if *m == Method::GET => StatusCode::CONFLICT,
            // anyone may follow a step; job 1 has none
            "/v1/jobs/1/steps/0" => StatusCode::NOT_FOUND,
            _ => StatusCode::FORBIDDEN,
        };
        assert_eq!(s, want, "{m} {p} as user bob: {body}");
        let (s, body) = call(Some(agent.clone()), m, p, b);
        let want = match p.as_str() {
            "/v1/jobs" if *m == Method::POST => StatusCode::FORBIDDEN,
            "/v1/cluster" if *m == Method::POST => StatusCode::FORBIDDEN,
            "/v1/jobs/1/cancel" | "/v1/jobs/1/script" | "/v1/nodes/node001/drain" | "/v1/cluster/budget" => StatusCode::FORBIDDEN,
            "/v1/agent/register" => StatusCode::CONFLICT, // node001 is agent1's, which is alive
            "/v1/agent/poll" | "/v1/agent/report" => StatusCode::CONFLICT, // not agent1's session
            "/v1/jobs/1/steps" | "/v1/jobs/1/steps/0/signal" | "/v1/jobs/1/end" => StatusCode::FORBIDDEN,
            "/v1/jobs/1/steps/0" => StatusCode::NOT_FOUND,
            "/v1/shares" | "/v1/priorities" | "/v1/accounts" if *m == Method::GET => StatusCode::CONFLICT,
            "/v1/reservations" | "/v1/reservations/node001" | "/v1/accounts" if *m != Method::GET => StatusCode::FORBIDDEN,
            _ => StatusCode::OK,
        };
        assert_eq!(s, want, "{m} {p} as an agent: {body}");
    }
    // bob's own job: he may cancel it, not suspend it
    let mut bobs = Client::new(tcp.clone(), Some(user.clone()));
    let mine: Vec<JobInfo> = rt.block_on(bobs.call::<(), _>(Method::GET, "/v1/jobs", None)).unwrap();
    let bob_job = mine.iter().find(|j| j.user == "bob").expect("bob's submission").id;
    let (s, _) = call(Some(user.clone()), &Method::POST, &format!("/v1/jobs/{bob_job}/suspend"), &None);
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = call(Some(user.clone()), &Method::POST, &format!("/v1/jobs/{bob_job}/cancel"), &None);
    assert_eq!(s, StatusCode::OK);
    // nothing else changed: root's job still held, no node drained, no job of the agent
    let after = (l.jobs(), l.nodes());
    assert_eq!(after.0.iter().find(|j| j.id == job), before.0.iter().find(|j| j.id == job));
    assert_eq!(after.1, before.1);
    assert!(after.0.iter().all(|j| j.user == "root" || j.user == "bob"));
    // an operator token may act on anyone's job
    let (s, _) = call(Some(operator), &Method::POST, &format!("/v1/jobs/{job}/release"), &None);
    assert_eq!(s, StatusCode::OK);
}

#[test]
fn a_local_user_over_the_socket_acts_only_on_their_own_jobs() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to run a client as another uid");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let l = Live::start(1, 10);
    std::fs::set_permissions(l.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(l.state(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root_job = l.submit(&["--hold", "--wrap", "true"]);
    let as_nobody = |args: &[&str]| std::process::Command::new(BIN).args(args).current_dir("/").env("TESSERA_STATE_DIR", l.state()).uid(65534).gid(65534).output().unwrap();
    let o = as_nobody(&["job", "cancel", &root_job.to_string()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("403"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = as_nobody(&["node", "drain", "node001"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an operator"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = as_nobody(&["job", "submit", "--hold", "--wrap", "true", "-D", "/tmp", "--parsable"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mine: u64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    let j = l.job(mine).unwrap();
    assert_eq!((j.uid, j.user.as_str()), (65534, "nobody"));
    assert!(as_nobody(&["job", "cancel", &mine.to_string()]).status.success());
    assert_eq!(l.job(root_job).unwrap().state, JobStateCode::Pending);
}

#[test]
fn bad_requests_get_a_400_naming_the_field_or_option_and_store_nothing() {
    let l = Live::start(1, 10);
    let key = Key::load(&l.state().join("cluster.key"), false).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut c = Client::new(Target::Tcp(format!("127.0.0.1:{}", l.port)), Some(key.sign(Role::User, "carol", 5000, now() + 60)));
    let (s, body) = rt.block_on(c.raw(Method::POST, "/v1/jobs", Some(br#"{"options": []}"#.to_vec()))).unwrap();
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&body).contains("missing field `script`"), "{}", String::from_utf8_lossy(&body));
    let (s, body) = rt.block_on(c.raw(Method::POST, "/v1/jobs", Some(br#"{"script": "x", "workdir": "/tmp", "bogus": 1}"#.to_vec()))).unwrap();
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&body).contains("bogus"), "{}", String::from_utf8_lossy(&body));
    let (s, _) = rt.block_on(c.raw(Method::POST, "/v1/jobs", Some(b"not json".to_vec()))).unwrap();
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, body) = rt.block_on(c.raw(Method::GET, "/v1/jobs/abc", None)).unwrap();
    assert_eq!(s, StatusCode::BAD_REQUEST, "{}", String::from_utf8_lossy(&body));
    // a body over the limit: the API's JSON error, 413, naming the limit
    let big = format!(r#"{{"script": "{}", "workdir": "/tmp"}}"#, "x".repeat(3 << 20));
    let (s, body) = rt.block_on(c.raw(Method::POST, "/v1/jobs", Some(big.into_bytes()))).unwrap();
    assert_eq!(s, StatusCode::PAYLOAD_TOO_LARGE, "{}", String::from_utf8_lossy(&body));
    let e: tessera_proto::api::ErrorReply = serde_json::from_slice(&body).expect("a JSON error");
    assert!(e.error.contains("larger than the limit of 2 MiB"), "{}", e.error);
    // options, from the command line and from #SBATCH lines
    let cases: &[(&[&str], &str)] = &[
        (&["--wrap", "true", "-t", "1:61:00"], "--time"),
        (&["--wrap", "true", "-n", "0"], "--ntasks"),
        (&["--wrap", "true", "-n", "100000"], "--ntasks"),
        (&["--wrap", "true", "--gpus-per-node", "1"], "--gpus-per-node"),
        (&["--wrap", "true", "--mem", "1T"], "--mem"),
        (&["--wrap", "true", "--nodeset", "SOMEOF:FEATURE:x"], "--nodeset"),
        (&["--wrap", "true", "-p", "gpu"], "--partition"),
        (&["--wrap", "true", "-a", "0-5%0"], "--array"),
        (&["--wrap", "true", "-d", "afterok:999"], "--dependency"),
        (&["--wrap", "true", "--constraint", "ib"], "--constraint"),
    ];
    for (args, option) in cases {
        let o = l.cli(&[&["job", "submit"], *args].concat());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(option) && err.contains("expected"), "{args:?}: {err}");
    }
    std::fs::write(l.dir.path().join("bad.sh"), "#!/bin/sh\n#SBATCH -n 2\n#SBATCH --time=forever\necho\n").unwrap();
    let o = l.cli(&["job", "submit", "bad.sh"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 3") && err.contains("--time") && err.contains("forever"), "{err}");
    assert!(l.jobs().is_empty(), "nothing half-accepted is stored");
}
