//! `kill -9` of the controller and of agents, at random moments, repeatedly:
//! no acknowledged job is lost, every job is accounted exactly once, running
//! jobs are re-adopted; an agent that stops answering has its nodes marked
//! down and its jobs requeued or failed as they asked.

use super::Live;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tessera_proto::api::JobStateCode;

fn finished(s: JobStateCode) -> bool {
    !matches!(s, JobStateCode::Pending | JobStateCode::Running | JobStateCode::Suspended | JobStateCode::Completing)
}

/// Every acknowledged id appears once in the accounting store, in `state`.
fn accounted_once(l: &Live, acked: &[u64], secs: u64) {
    let t0 = Instant::now();
    loop {
        let rows = l.acct();
        let mut count: BTreeMap<u64, usize> = BTreeMap::new();
        for (id, _) in &rows {
            *count.entry(*id).or_default() += 1;
        }
        assert!(count.values().all(|&c| c == 1), "a job was recorded twice: {count:?}");
        assert!(count.keys().all(|id| acked.contains(id)), "a record for a job never acknowledged: {count:?} vs {acked:?}");
        if acked.iter().all(|id| count.contains_key(id)) {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(secs), "jobs never accounted: {:?}\n{}", acked.iter().filter(|id| !count.contains_key(id)).collect::<Vec<_>>(), l.logs());
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_controller_killed_at_random_moments_loses_no_job_and_writes_no_record_twice() {
    let mut l = Live::start(2, 30);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(10);
    let mut acked = Vec::new();
    for round in 0..4 {
        // submissions and completions in flight when the kill lands
        let n = rng.gen_range(5..15);
        for _ in 0..n {
            let ms = rng.gen_range(0..400);
            acked.push(l.submit(&["--wrap", &format!("sleep 0.{ms:03}"), "-n", &rng.gen_range(1..40).to_string()]));
        }
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..600)));
        l.kill9_controller();
        // the agents keep running jobs meanwhile
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..800)));
        l.start_controller();
        l.wait_for(&format!("round {round}: the queue after the restart"), 30, |l| {
            let jobs = l.jobs();
            // every acknowledged job is known (live, or ended and accounted)
            let acct: Vec<u64> = l.acct().into_iter().map(|r| r.0).collect();
            acked.iter().all(|id| jobs.iter().any(|j| j.id == *id) || acct.contains(id))
        });
    }
    accounted_once(&l, &acked, 60);
    let rows = l.acct();
    assert!(rows.iter().all(|(_, s)| s == "COMPLETED"), "every job completed: {rows:?}");
}

#[test]
fn a_running_job_survives_its_agent_killed_and_is_re_adopted_by_the_restarted_agent() {
    let mut l = Live::start(1, 30);
    let cwd = l.dir.path().to_path_buf();
    let long = l.submit(&["--wrap", "sleep 3; echo finished", "-o", "long.out"]);
    let short = l.submit(&["--wrap", "sleep 0.5; exit 7", "-o", "short.out"]);
    l.wait_for("both running", 20, |l| [long, short].iter().all(|&id| l.job(id).is_some_and(|j| j.state == JobStateCode::Running)));
    l.kill9_agent(0);
    // the short job ends while no agent watches it
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(l.job(long).unwrap().state, JobStateCode::Running, "the controller waits for the agent");
    l.start_agent(0);
    l.wait_for("both ended", 30, |l| [long, short].iter().all(|&id| l.job(id).is_some_and(|j| finished(j.state))));
    assert_eq!(l.job(long).unwrap().state, JobStateCode::Completed);
    assert_eq!(std::fs::read_to_string(cwd.join("long.out")).unwrap().trim(), "finished");
    let s = l.job(short).unwrap();
    assert_eq!((s.state, s.exit_code), (JobStateCode::Failed, Some(7)), "how it ended while the agent was away");
    accounted_once(&l, &[long, short], 10);
}

#[test]
fn agents_killed_at_random_moments_lose_no_job() {
    let mut l = Live::start(2, 30);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let mut acked = Vec::new();
    for _ in 0..3 {
        for _ in 0..rng.gen_range(4..10) {
            acked.push(l.submit(&["--wrap", &format!("sleep 0.{}", rng.gen_range(100..900)), "-n", &rng.gen_range(1..64).to_string()]));
        }
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..700)));
        let k = rng.gen_range(0..2);
        l.kill9_agent(k);
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..1500)));
        l.start_agent(k);
    }
    accounted_once(&l, &acked, 60);
    assert!(l.acct().iter().all(|(_, s)| s == "COMPLETED"), "{:?}", l.acct());
}

#[test]
fn an_agent_that_stops_answering_has_its_nodes_down_and_its_jobs_requeued_or_failed() {
    let mut l = Live::start(2, 2);
    // put both jobs on agent2's nodes
    assert!(l.cli(&["node", "drain", &l.agent_nodes(0)]).status.success());
    let requeue = l.submit(&["--wrap", "sleep 4", "--requeue", "-n", "8"]);
    let plain = l.submit(&["--wrap", "sleep 4", "-n", "8"]);
    l.wait_for("both running", 20, |l| [requeue, plain].iter().all(|&id| l.job(id).is_some_and(|j| j.state == JobStateCode::Running)));
    assert!(l.cli(&["node", "resume", &l.agent_nodes(0)]).status.success());
    l.kill9_agent(1);
    l.wait_for("agent2's nodes down", 20, |l| l.nodes().get(16..).is_some_and(|v| v.iter().all(|n| n.state == "down" && n.reason.contains("agent2 stopped answering"))));
    l.wait_for("the jobs handled", 20, |l| {
        l.job(plain).is_some_and(|j| j.state == JobStateCode::NodeFail) && l.job(requeue).is_some_and(|j| j.requeues == 1 || j.state == JobStateCode::Completed)
    });
    l.wait_for("the requeued job to complete", 30, |l| l.job(requeue).is_some_and(|j| j.state == JobStateCode::Completed));
    let ran_on = tessera_core::hostlist::expand(&l.job(requeue).unwrap().nodelist).unwrap();
    assert!(ran_on.iter().all(|n| n.as_str() <= "node016"), "the rerun used agent1's nodes: {ran_on:?}");
    // the agent returns: its nodes come back up, and the orphans of its old runs are killed
    l.start_agent(1);
    l.wait_for("agent2's nodes up", 20, |l| l.nodes().get(16..).is_some_and(|v| v.iter().all(|n| n.state == "idle")));
    accounted_once(&l, &[requeue, plain], 10);
}

/// A client that lost a submission's reply sends it again with the same
/// idempotency key, before and after a controller restart: it gets the jobs
/// the first one created, and no job is filed twice.
#[test]
fn a_submission_sent_again_with_its_key_files_no_second_job() {
    use tessera_proto::api::{SubmitReply, SubmitRequest};
    use tessera_proto::client::{Client, Target};
    let mut l = Live::start(1, 30);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let send = |l: &Live, key: Option<&str>, array: bool| -> Result<Vec<u64>, String> {
        let mut c = Client::new(Target::Unix(l.state().join("tessera.sock")), None);
        let mut options = vec![tessera_proto::api::OptionArg { option: "--hold".into(), value: String::new() }];
        if array {
            options.push(tessera_proto::api::OptionArg { option: "--array".into(), value: "0-2".into() });
        }
        let req = SubmitRequest { script: "#!/bin/sh\ntrue\n".into(), options, workdir: "/tmp".into(), idempotency_key: key.map(String::from), ..Default::default() };
        rt.block_on(c.call::<_, SubmitReply>(hyper::Method::POST, "/v1/jobs", Some(&req))).map(|r| r.jobs).map_err(|e| e.to_string())
    };
    let first = send(&l, Some("k-1"), false).unwrap();
    assert_eq!(send(&l, Some("k-1"), false).unwrap(), first, "the same key: the same job");
    let e = send(&l, Some("k-1"), true).unwrap_err();
    assert!(e.contains("names another submission"), "a used key on another request is refused: {e}");
    let other = send(&l, Some("k-2"), true).unwrap();
    assert_eq!(other.len(), 3);
    assert!(other.iter().all(|id| !first.contains(id)), "another key: other jobs");
    let unkeyed = (send(&l, None, false).unwrap(), send(&l, None, false).unwrap());
    assert_ne!(unkeyed.0, unkeyed.1, "no key: each submission is a job");
    l.kill9_controller();
    l.start_controller();
    assert_eq!(send(&l, Some("k-1"), false).unwrap(), first, "remembered across a restart (journal and snapshot)");
    assert_eq!(send(&l, Some("k-2"), true).unwrap(), other);
    assert_eq!(l.jobs().len(), 1 + 3 + 2, "{:?}", l.jobs().iter().map(|j| j.id).collect::<Vec<_>>());
    let e = send(&l, Some(&"x".repeat(129)), false).unwrap_err();
    assert!(e.contains("idempotency_key") && e.contains("128"), "{e}");
}

/// A job started on the nodes of an agent that was down (its launch waits in a
/// session that dies with the agent) and killed at its limit before the agent
/// came back: the returning agent does not hold it, so no end would ever be
/// reported. It ends TIMEOUT, accounted once, instead of staying COMPLETING
/// forever, as the long chaos run found it did.
#[test]
fn a_job_killed_before_its_lost_launch_ends_when_its_agent_returns() {
    let mut l = Live::start(1, 30);
    l.kill9_agent(0);
    let id = l.submit(&["--wrap", "sleep 30", "-t", "0:02"]);
    l.wait_for("the job started, then killed at its limit", 20, |l| l.job(id).is_some_and(|j| j.state == JobStateCode::Completing));
    l.start_agent(0);
    l.wait_for("the job ended", 20, |l| l.job(id).is_some_and(|j| finished(j.state)));
    assert_eq!(l.job(id).unwrap().state, JobStateCode::Timeout);
    accounted_once(&l, &[id], 10);
}

/// A job that exits 0 before its limit while the controller is down, whose end
/// reaches the restarted controller only after it has killed the job at that
/// limit, is recorded as its agent saw it: COMPLETED, ended before the limit.
/// The long chaos run recorded 8 such jobs as TIMEOUT with their whole limit.
#[test]
fn a_job_that_ended_before_its_limit_while_the_controller_was_down_is_completed() {
    let mut l = Live::start(1, 30);
    let id = l.submit(&["--wrap", "sleep 1", "-t", "0:03"]);
    l.wait_for("the job running", 20, |l| l.job(id).is_some_and(|j| j.state == JobStateCode::Running));
    l.kill9_controller();
    // the job ends at about 1 s; its limit passes at 3 s; the agent cannot report
    l.kill9_agent(0);
    std::thread::sleep(Duration::from_secs(5));
    l.start_controller();
    // the controller's first pass kills the job at its limit, then the agent comes back with its end
    std::thread::sleep(Duration::from_millis(1500));
    l.start_agent(0);
    l.wait_for("the job ended", 30, |l| l.job(id).is_some_and(|j| finished(j.state)));
    let j = l.job(id).unwrap();
    assert_eq!((j.state, j.exit_code), (JobStateCode::Completed, Some(0)), "{j:?}");
    assert!(j.elapsed_s < 3, "ended before its limit: {j:?}");
    accounted_once(&l, &[id], 10);
    assert_eq!(l.acct(), vec![(id, "COMPLETED".to_string())]);
}
