//! The controller's state is a function of its journal: the same batches applied
//! to a snapshot restored from JSON give the same jobs, allocations and actions.

use tessera_controller::request::validate;
use tessera_controller::state::{Action, Event, State};
use tessera_core::{Cluster, Engine, JobId, PolicyKind};
use tessera_proto::api::JobExit;

fn cluster() -> Cluster {
    Cluster::from_toml(include_str!("../../../../examples/clusters/default.toml"), "default.toml").unwrap()
}

fn submit(c: &Cluster, first: u64, opts: &[(&str, &str)]) -> Event {
    Event::Submit { first, user: "u".into(), uid: 1000, gid: 1000, req: Box::new(validate(&crate::request(opts), c, 3600).unwrap()) }
}

fn ended(job: u64, code: i32) -> Event {
    Event::Ended(JobExit { job, attempt: 1, code: Some(code), signal: None, cpu_s: 1.0, start: 0, end: 0, limit_hit: false, failure: None, usage: None })
}

/// What must agree: each job's engine state, allocation and attempt.
fn view(s: &State) -> String {
    let mut out = String::new();
    for (id, m) in &s.ledger.jobs {
        let st = s.engine().job(JobId(*id)).map(|(_, st)| format!("{st:?}"));
        let alloc = s.engine().allocation(JobId(*id)).map(|a| a.parts.iter().map(|p| (p.node, p.cores)).collect::<Vec<_>>());
        out += &format!("{id} {st:?} {alloc:?} attempt {} reason {:?} waits {:?}\n", m.attempt, s.engine().pending_reason(s.ledger.now, JobId(*id)), s.engine().waits_for(JobId(*id)));
    }
    out += &format!("outcomes {:?}\nnext {}\n", s.ledger.outcomes, s.ledger.next_id);
    out
}

fn actions(a: &[Action]) -> Vec<String> {
    a.iter()
        .map(|x| match x {
            Action::Record(r) => format!("record {} {:?}", r.job_id, r.state),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_restored_snapshot_replays_the_journal_to_the_same_state_and_actions() {
    let mut c = cluster();
    let engine = Engine::with_cluster(PolicyKind::Easy, &c).unwrap();
    let mut s = State::new(engine, &c, 1_000, 5);
    let nodes: Vec<u32> = (0..32).collect();
    let batches: Vec<(i64, Vec<Event>)> = vec![
        (1_000, vec![Event::AgentUp { agent: "a".into(), nodes: nodes.clone() }]),
        (1_001, vec![submit(&c, 1, &[("-n", "200")]), submit(&c, 2, &[("-n", "100")]), submit(&c, 3, &[("-n", "8"), ("-d", "afterok:1")])]),
        (1_002, vec![submit(&c, 4, &[("-n", "16"), ("--array", "0-3%2")])]),
        (1_005, vec![ended(1, 0), Event::Hold(2)]),
        (1_006, vec![Event::Release(2), ended(4, 0)]),
        (1_007, vec![Event::AgentLost { agent: "a".into() }]),
        (1_010, vec![Event::AgentUp { agent: "a".into(), nodes }, Event::Cancel(2)]),
    ];
    let mut all = Vec::new();
    let mut out = Vec::new();
    let split = 3;
    let mut snapshot = None;
    for (k, (now, evs)) in batches.iter().enumerate() {
        if k == split {
            snapshot = Some(serde_json::to_string(&s).unwrap());
        }
        out.clear();
        s.apply(&mut c, *now, evs, &mut out);
        all.push(actions(&out));
        s.engine().sanity_check();
    }
    let mut r: State = serde_json::from_str(&snapshot.unwrap()).unwrap();
    for (k, (now, evs)) in batches.iter().enumerate().skip(split) {
        out.clear();
        r.apply(&mut c, *now, evs, &mut out);
        assert_eq!(actions(&out), all[k], "batch {k} gives the same actions");
    }
    assert_eq!(view(&r), view(&s));
    // the run exercised what it claims: a dependency released, array tasks throttled, a requeue-free loss
    assert!(all.iter().flatten().any(|a| a.starts_with("Launch") && a.contains("job: 3,")), "{all:#?}");
    assert!(all.iter().flatten().any(|a| a == "record 1 Completed"));
    assert!(all.iter().flatten().any(|a| a.contains("NodeFail")), "{all:#?}");
}

/// A finished job's outcome (for dependencies) is forgotten with its listing,
/// DONE_KEEP_S after it ends: the state does not grow with every job it ran
/// (a one-hour soak at 1,000 jobs a minute showed the controller growing by
/// the outcomes it kept).
#[test]
fn finished_jobs_are_forgotten_after_they_stop_being_listed() {
    let mut c = cluster();
    let mut s = State::new(Engine::with_cluster(PolicyKind::Easy, &c).unwrap(), &c, 1_000, 5);
    let mut out = Vec::new();
    s.apply(&mut c, 1_000, &[Event::AgentUp { agent: "a".into(), nodes: (0..32).collect() }], &mut out);
    let first = submit(&c, 1, &[("-n", "8")]);
    s.apply(&mut c, 1_001, &[first], &mut out);
    s.apply(&mut c, 1_002, &[ended(1, 0)], &mut out);
    assert_eq!((s.ledger.outcomes.get(&1), s.ledger.done.contains_key(&1)), (Some(&true), true));
    s.apply(&mut c, 1_002 + tessera_controller::state::DONE_KEEP_S - 1, &[], &mut out);
    assert!(s.ledger.outcomes.contains_key(&1), "still listed");
    s.apply(&mut c, 1_002 + tessera_controller::state::DONE_KEEP_S, &[], &mut out);
    assert!(s.ledger.outcomes.is_empty() && s.ledger.done.is_empty(), "forgotten: {:?}", s.ledger.outcomes);
}

/// A changed cluster file is an event like any other: replayed over a snapshot
/// taken before it, on the cluster that snapshot ran, it gives the same state
/// and actions, and the state then runs (and names) the new cluster. Nodes
/// are matched by name: the running job keeps its node though the file lists
/// the nodes in another order, and the added node is down until an agent
/// presents it.
#[test]
fn a_reconfigure_replays_over_a_snapshot_taken_before_it() {
    let text = include_str!("../../../../examples/clusters/default.toml");
    let grown = text.replace("node[001-032]", "node[017-032],node[001-016],node033");
    assert_ne!(grown, text, "the test edits the node list");
    let mut c = cluster();
    let before = c.clone();
    let mut s = State::new(Engine::with_cluster(PolicyKind::Easy, &c).unwrap(), &c, 1_000, 5);
    let batches: Vec<(i64, Vec<Event>)> = vec![
        (1_000, vec![Event::AgentUp { agent: "a".into(), nodes: (0..32).collect() }]),
        (1_001, vec![submit(&c, 1, &[("-n", "8")]), submit(&c, 2, &[("-n", "256")])]),
        (1_002, vec![Event::Reconfigure { toml: grown.clone(), path: "grown.toml".into() }]),
        (1_003, vec![ended(1, 0)]),
    ];
    let mut all = Vec::new();
    let mut out = Vec::new();
    let snapshot = serde_json::to_string(&s).unwrap();
    for (now, evs) in &batches {
        out.clear();
        s.apply(&mut c, *now, evs, &mut out);
        all.push(actions(&out));
        s.engine().sanity_check();
    }
    assert_eq!(c.nodes.len(), 33);
    assert_eq!(s.ledger.cluster_file.as_ref().map(|f| f.1.as_str()), Some("grown.toml"));
    let info = s.job_info(&c, 1).or_else(|| s.ledger.done.get(&1).map(|d| d.info.clone())).unwrap();
    assert_eq!(info.nodelist, "node001", "job 1 stays on node001, now listed 17th");
    assert_eq!(s.engine().node_status(32).map(|n| n.up), Some(false), "node033 waits for an agent");
    let mut r: State = serde_json::from_str(&snapshot).unwrap();
    let mut rc = before;
    for (k, (now, evs)) in batches.iter().enumerate() {
        out.clear();
        r.apply(&mut rc, *now, evs, &mut out);
        assert_eq!(actions(&out), all[k], "batch {k} gives the same actions");
    }
    assert_eq!(view(&r), view(&s));
    assert_eq!(rc, c);
}

/// The batches of a second's gathering window are applied without a pass
/// (`Event::PassLater`): the second's pass, once the window ends, sees every
/// one of them, as the simulator's pass sees all of an instant's events.
#[test]
fn batches_of_the_gathering_window_wait_for_the_seconds_pass() {
    let mut c = cluster();
    let mut s = State::new(Engine::with_cluster(PolicyKind::Easy, &c).unwrap(), &c, 1_000, 5);
    let mut out = Vec::new();
    s.apply(&mut c, 1_000, &[Event::AgentUp { agent: "a".into(), nodes: (0..32).collect() }], &mut out);
    for (id, n) in [(1, "8"), (2, "16")] {
        let ev = submit(&c, id, &[("-n", n)]);
        out.clear();
        s.apply(&mut c, 1_001, &[ev, Event::PassLater], &mut out);
        assert!(out.is_empty(), "no pass, so nothing starts: {:?}", actions(&out));
    }
    s.apply(&mut c, 1_001, &[], &mut out);
    let launched: Vec<String> = actions(&out).into_iter().filter(|a| a.starts_with("Launch")).collect();
    assert_eq!(launched.len(), 2, "one pass starts both: {launched:?}");
}

/// A job suspended by a higher tier gives its cores back: its accounting
/// record says when (`released`), so the bills charge its cores only while it
/// held them. An operator's suspension keeps the cores, and is not listed.
#[test]
fn a_preempted_jobs_record_says_when_it_held_no_cores() {
    let text = "[[nodetype]]\nname = \"n\"\nnodes = \"n1\"\ncores = 4\n\
                [[partition]]\nname = \"low\"\nnodes = \"n1\"\ndefault = true\npriority_tier = 1\npreempt_mode = \"suspend\"\n\
                [[partition]]\nname = \"high\"\nnodes = \"n1\"\npriority_tier = 2\n";
    let mut c = Cluster::from_toml(text, "tiers.toml").unwrap();
    let mut s = State::new(Engine::with_cluster(PolicyKind::Easy, &c).unwrap(), &c, 1_000, 5);
    let mut out = Vec::new();
    s.apply(&mut c, 1_000, &[Event::AgentUp { agent: "a".into(), nodes: vec![0] }], &mut out);
    let low = submit(&c, 1, &[("-n", "4")]);
    s.apply(&mut c, 1_000, &[low], &mut out);
    let high = submit(&c, 2, &[("-n", "4"), ("-p", "high")]);
    out.clear();
    s.apply(&mut c, 1_010, &[high], &mut out);
    assert!(actions(&out).iter().any(|a| a.starts_with("Suspend") && a.contains("job: 1,")), "{:?}", actions(&out));
    s.apply(&mut c, 1_020, &[Event::Ended(JobExit { job: 2, attempt: 1, code: Some(0), signal: None, cpu_s: 1.0, start: 1_010, end: 1_020, limit_hit: false, failure: None, usage: None })], &mut out);
    s.apply(&mut c, 1_030, &[Event::Suspend(1)], &mut out);
    s.apply(&mut c, 1_035, &[Event::Resume(1)], &mut out);
    out.clear();
    s.apply(&mut c, 1_040, &[ended(1, 0)], &mut out);
    let rec = out.iter().find_map(|a| match a {
        Action::Record(r) if r.job_id == 1 => Some(r.clone()),
        _ => None,
    });
    let rec = rec.expect("job 1's record");
    assert_eq!(rec.released, vec![(1_010, 1_020)], "the preemption, not the operator's suspension");
    assert_eq!(rec.suspended_s, 15);
}
