//! The live contract, input by input: each test drives the engine by hand and
//! checks the effects and the final records.

use crate::env::TestEnv;
use tessera_core::{Effect, Engine, FinalState, Input, JobId, JobSpec, KillReason, NodeChange, Outcome, PendingReason, PolicyKind, Rejection};

fn kills(fx: &[Effect]) -> Vec<(u64, KillReason)> {
    fx.iter().filter_map(|e| if let Effect::Kill { job, reason } = e { Some((job.0, *reason)) } else { None }).collect()
}

fn rejection(fx: &[Effect]) -> Option<&Rejection> {
    fx.iter().find_map(|e| if let Effect::Rejected { reason, .. } = e { Some(reason) } else { None })
}

const TWO_NODES: &str = r#"
name = "two"
[[nodetype]]
name = "n"
nodes = "n[1-2]"
cores = 4
memory = "8G"
gpus = 2
[[partition]]
name = "batch"
nodetypes = ["n"]
default = true
"#;

#[test]
fn the_engine_kills_a_job_at_its_limit_and_asks_to_be_woken() {
    let mut env = TestEnv::new(PolicyKind::Easy, 4);
    env.submit(0, 1, 2, 100);
    let fx = env.take(0, Input::Pass);
    assert!(fx.iter().any(|e| matches!(e, Effect::Start { job: JobId(1), limit: Some(100), .. })), "{fx:?}");
    assert!(fx.contains(&Effect::WakeAt(100)), "a wake-up at the limit: {fx:?}");
    // nothing at 99; at 100 the pass kills it and starts nothing
    assert_eq!(env.pass(99), Vec::<u64>::new());
    let fx = env.take(100, Input::Pass);
    assert_eq!(kills(&fx), vec![(1, KillReason::TimeLimit)]);
    let r = env.complete_with(100, 1, Outcome::Signaled(15)).expect("it left");
    assert_eq!((r.state, r.start, r.end, r.limit), (FinalState::Timeout, Some(0), 100, Some(100)));
    assert_eq!(env.engine.jobs(), 0, "a finished job leaves the engine");
}

#[test]
fn the_limit_is_normalized_by_the_slowest_node() {
    let toml = r#"
name = "fast"
[reference]
hs06_per_core = 10
[[nodetype]]
name = "f"
nodes = "f1"
cores = 4
hs06_per_core = 20
[[partition]]
name = "p"
nodetypes = ["f"]
default = true
"#;
    let mut env = TestEnv::cluster(PolicyKind::Easy, toml);
    env.submit(0, 1, 4, 101);
    let fx = env.take(0, Input::Pass);
    assert!(fx.iter().any(|e| matches!(e, Effect::Start { limit: Some(51), .. })), "ceil(101 / 2) s on a node twice as fast: {fx:?}");
    assert!(fx.contains(&Effect::WakeAt(51)));
    let fx = env.take(51, Input::Pass);
    assert_eq!(kills(&fx), vec![(1, KillReason::TimeLimit)]);
    env.complete_with(51, 1, Outcome::Signaled(9));
}

#[test]
fn cancel_hold_release() {
    let mut env = TestEnv::new(PolicyKind::Fcfs, 4);
    env.submit(0, 1, 4, 100).submit(0, 2, 4, 100).submit(0, 3, 1, 100);
    assert_eq!(env.pass(0), vec![1]);
    // a pending job cancelled leaves at once
    let fx = env.take(1, Input::Cancel(JobId(3)));
    match &fx[..] {
        [Effect::Finished(r)] => assert_eq!((r.state, r.start, r.end), (FinalState::Cancelled, None, 1)),
        other => panic!("{other:?}"),
    }
    // a held job keeps its place but does not start
    env.input(2, Input::Hold(JobId(2)));
    assert_eq!(env.reason(2, 2), Some(PendingReason::Held));
    env.complete(10, 1);
    assert_eq!(env.pass(10), Vec::<u64>::new());
    env.input(11, Input::Release(JobId(2)));
    assert_eq!(env.pass(11), vec![2]);
    // a running job cancelled is killed, and ends when its completion comes
    let fx = env.take(12, Input::Cancel(JobId(2)));
    assert_eq!(kills(&fx), vec![(2, KillReason::Cancel)]);
    assert_eq!(env.engine.free(), 0, "it holds its cores until it is gone");
    let r = env.complete_with(13, 2, Outcome::Signaled(15)).unwrap();
    assert_eq!((r.state, r.start), (FinalState::Cancelled, Some(11)));
    assert_eq!(env.engine.free(), 4);
}

#[test]
fn wrong_inputs_get_typed_rejections_and_change_nothing() {
    let mut env = TestEnv::new(PolicyKind::Easy, 4);
    env.submit(0, 1, 2, 100);
    let cases: Vec<(Input, fn(&Rejection) -> bool)> = vec![
        (Input::Cancel(JobId(9)), |r| matches!(r, Rejection::UnknownJob(JobId(9)))),
        (Input::submit(JobSpec::new(JobId(1), 1, 10)), |r| matches!(r, Rejection::DuplicateJob(JobId(1)))),
        (Input::submit(JobSpec::new(JobId(2), 5, 10)), |r| matches!(r, Rejection::NeverFits { .. })),
        (Input::submit(JobSpec::new(JobId(2), 0, 10)), |r| matches!(r, Rejection::InvalidSpec { field: "procs", .. })),
        (Input::submit(JobSpec::new(JobId(2), 1, -1)), |r| matches!(r, Rejection::InvalidSpec { field: "estimate", .. })),
        (Input::submit(JobSpec::new(JobId(2), 1, i64::MAX)), |r| matches!(r, Rejection::InvalidSpec { field: "estimate", .. })),
        (Input::Release(JobId(1)), |r| matches!(r, Rejection::WrongState { state: "pending", .. })),
        (Input::Suspend(JobId(1)), |r| matches!(r, Rejection::WrongState { .. })),
        (Input::Requeue(JobId(1)), |r| matches!(r, Rejection::WrongState { .. })),
        (Input::Complete { job: JobId(1), outcome: Outcome::Exited(0) }, |r| matches!(r, Rejection::WrongState { .. })),
        (Input::Node { node: 7, change: NodeChange::Down, reason: "x".into() }, |r| matches!(r, Rejection::UnknownNode(7))),
    ];
    for (input, ok) in cases {
        let fx = env.take(5, input.clone());
        let r = rejection(&fx).unwrap_or_else(|| panic!("{input:?} was accepted: {fx:?}"));
        assert!(ok(r), "{input:?} rejected as {r:?}");
        assert_eq!(fx.len(), 1, "{fx:?}");
    }
    let fx = env.take(4, Input::Pass);
    assert!(matches!(rejection(&fx), Some(Rejection::TimeWentBack { now: 4, last: 5 })));
    assert_eq!(env.engine.jobs(), 1);
    assert_eq!(env.pass(5), vec![1]);
}

#[test]
fn suspension_by_an_operator_stops_the_limit() {
    let mut env = TestEnv::new(PolicyKind::Easy, 4);
    env.submit(0, 1, 4, 100).submit(0, 2, 1, 10);
    assert_eq!(env.pass(0), vec![1]);
    let fx = env.take(30, Input::Suspend(JobId(1)));
    assert!(fx.contains(&Effect::Suspend { job: JobId(1) }));
    // it keeps its cores: nothing else starts
    assert_eq!(env.pass(30), Vec::<u64>::new());
    let fx = env.take(50, Input::Resume(JobId(1)));
    assert!(fx.contains(&Effect::Resume { job: JobId(1) }));
    assert!(fx.contains(&Effect::WakeAt(120)), "70 s left after 20 s suspended: {fx:?}");
    let fx = env.take(120, Input::Pass);
    assert_eq!(kills(&fx), vec![(1, KillReason::TimeLimit)]);
    let r = env.complete_with(120, 1, Outcome::Signaled(9)).unwrap();
    assert_eq!((r.state, r.suspended_s), (FinalState::Timeout, 20));
    assert_eq!(env.pass(120), vec![2]);
}

#[test]
fn a_node_going_down_kills_its_jobs_and_requeues_those_that_asked() {
    let mut env = TestEnv::cluster(PolicyKind::Easy, TWO_NODES);
    env.submit_spec(0, JobSpec { requeue: true, ..JobSpec::new(JobId(1), 4, 1000) });
    env.submit(0, 2, 4, 1000);
    assert_eq!(env.pass(0), vec![1, 2]);
    let on_first = env.engine.allocation(JobId(1)).unwrap().parts[0].node;
    let fx = env.take(10, Input::Node { node: on_first, change: NodeChange::Down, reason: "not responding".into() });
    assert_eq!(kills(&fx), vec![(1, KillReason::NodeFailure)]);
    assert_eq!(env.engine.node_status(on_first).unwrap().reason, "not responding");
    // it asked for requeue: back in the queue, not finished
    assert_eq!(env.complete_with(11, 1, Outcome::NodeFailed), None);
    assert_eq!(env.engine.job(JobId(1)).unwrap().1.name(), "pending");
    // nothing may start on the down node; job 2 holds the other
    assert_eq!(env.pass(11), Vec::<u64>::new());
    env.input(20, Input::Node { node: on_first, change: NodeChange::Up, reason: String::new() });
    assert_eq!(env.pass(20), vec![1]);
    // a job that did not ask for requeue ends with NODE_FAIL
    let on_second = env.engine.allocation(JobId(2)).unwrap().parts[0].node;
    let fx = env.take(30, Input::Node { node: on_second, change: NodeChange::Down, reason: "power".into() });
    assert_eq!(kills(&fx), vec![(2, KillReason::NodeFailure)]);
    let r = env.complete_with(31, 2, Outcome::NodeFailed).unwrap();
    assert_eq!(r.state, FinalState::NodeFail);
    let r = env.complete_with(40, 1, Outcome::Exited(0)).unwrap();
    assert_eq!((r.state, r.requeues, r.start), (FinalState::Completed, 1, Some(20)));
}

#[test]
fn a_drained_node_finishes_its_jobs_and_takes_no_new_ones() {
    let mut env = TestEnv::cluster(PolicyKind::Conservative, TWO_NODES);
    env.submit(0, 1, 2, 100);
    assert_eq!(env.pass(0), vec![1]);
    let node = env.engine.allocation(JobId(1)).unwrap().parts[0].node;
    env.input(1, Input::Node { node, change: NodeChange::Drain, reason: "maintenance".into() });
    assert_eq!(env.engine.job(JobId(1)).unwrap().1.name(), "running", "draining kills nothing");
    env.submit(2, 2, 4, 100).submit(2, 3, 2, 100);
    // job 2 needs a whole node: only the other one takes jobs
    assert_eq!(env.pass(2), vec![2]);
    env.complete(50, 1);
    assert_eq!(env.pass(50), Vec::<u64>::new(), "the drained node stays empty");
    assert!(matches!(env.reason(50, 3), Some(PendingReason::ReservedFor { start: 102 })), "{:?}", env.reason(50, 3));
    env.input(60, Input::Node { node, change: NodeChange::Resume, reason: String::new() });
    assert_eq!(env.pass(60), vec![3]);
    env.complete(100, 2).complete(110, 3);
}

#[test]
fn gpus_are_allocated_per_node() {
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, TWO_NODES);
    env.submit_spec(0, JobSpec { gpus_per_node: 2, ..JobSpec::new(JobId(1), 1, 100) });
    env.submit_spec(0, JobSpec { gpus_per_node: 1, ..JobSpec::new(JobId(2), 1, 100) });
    env.submit_spec(0, JobSpec { gpus_per_node: 2, ..JobSpec::new(JobId(3), 1, 100) });
    let fx = env.take(0, Input::Pass);
    let started: Vec<(u64, u32)> = fx.iter().filter_map(|e| if let Effect::Start { job, alloc, .. } = e { Some((job.0, alloc.parts[0].gpus)) } else { None }).collect();
    assert_eq!(started, vec![(1, 2), (2, 1)], "job 3 waits for two free GPUs on one node");
    assert_eq!(env.engine.can_run(&JobSpec { gpus_per_node: 3, ..JobSpec::new(JobId(9), 1, 1) }, None).map_err(|r| matches!(r, Rejection::NeverFits { .. })), Err(true));
    env.complete(5, 1);
    assert_eq!(env.pass(5), vec![3]);
    env.complete(6, 2).complete(7, 3);
}

#[test]
fn a_snapshot_restored_and_replayed_gives_the_same_effects() {
    let inputs: Vec<(i64, Input)> = {
        let mut v = Vec::new();
        for i in 0..40u64 {
            let t = (i * 7) as i64;
            v.push((t, Input::submit(JobSpec::new(JobId(i), 1 + (i % 5) as u32, 30 + (i % 7) as i64 * 20))));
            v.push((t, Input::Pass));
            if i >= 5 {
                v.push((t + 3, Input::Complete { job: JobId(i - 5), outcome: Outcome::Exited(0) }));
                v.push((t + 3, Input::Pass));
            }
        }
        v
    };
    let run = |e: &mut Engine, from: usize, to: usize, out: &mut Vec<Effect>| {
        for (t, i) in &inputs[from..to] {
            e.handle(*t, i.clone(), out);
        }
    };
    for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
        let mut whole = Engine::new(policy, 8).unwrap();
        let mut fx_whole = Vec::new();
        run(&mut whole, 0, inputs.len(), &mut fx_whole);
        let cut = inputs.len() / 2;
        let mut first = Engine::new(policy, 8).unwrap();
        let mut fx = Vec::new();
        run(&mut first, 0, cut, &mut fx);
        let text = serde_json::to_string(&first.snapshot()).unwrap();
        drop(first);
        let mut restored = Engine::restore(serde_json::from_str(&text).unwrap());
        run(&mut restored, cut, inputs.len(), &mut fx);
        assert_eq!(fx, fx_whole, "{policy}: same effects");
        assert_eq!(serde_json::to_string(&restored.snapshot()).unwrap(), serde_json::to_string(&whole.snapshot()).unwrap(), "{policy}: same state");
    }
}
