//! What a queued job waits for besides resources, decided by the engine for
//! every driver: dependencies (afterany, afterok, afternotok, singleton, a
//! trace's think time), array throttles, begin times and holds.

use crate::env::TestEnv;
use tessera_core::{After, AfterKind, Effect, Engine, FinalState, Input, JobId, JobSpec, Outcome, PendingReason, PolicyKind, Rejection, Throttle};

fn after(kind: AfterKind, job: u64, delay: i64) -> After {
    After { kind, job: JobId(job), delay }
}

fn submit(env: &mut TestEnv, t: i64, spec: JobSpec, after: Vec<After>) -> Vec<Effect> {
    env.take(t, Input::submission(spec, None, after, Default::default()))
}

fn finished(fx: &[Effect]) -> Vec<(u64, FinalState)> {
    fx.iter().filter_map(|e| if let Effect::Finished(r) = e { Some((r.spec.id.0, r.state)) } else { None }).collect()
}

#[test]
fn afterok_waits_for_success_and_is_cancelled_by_failure() {
    let mut env = TestEnv::new(PolicyKind::Fcfs, 8);
    env.submit(0, 1, 2, 100).submit(0, 2, 2, 100);
    assert_eq!(env.pass(0), vec![1, 2]);
    submit(&mut env, 1, JobSpec::new(JobId(3), 2, 100), vec![after(AfterKind::Ok, 1, 0)]);
    submit(&mut env, 1, JobSpec::new(JobId(4), 2, 100), vec![after(AfterKind::Ok, 2, 0)]);
    submit(&mut env, 1, JobSpec::new(JobId(5), 2, 100), vec![after(AfterKind::NotOk, 2, 0)]);
    assert_eq!(env.pass(1), Vec::<u64>::new(), "free cores, but every dependency is unmet");
    assert_eq!(env.reason(1, 3), Some(PendingReason::Dependency));
    assert_eq!(env.engine.waits_for(JobId(3)), &[after(AfterKind::Ok, 1, 0)]);
    // job 1 succeeds: 3 may start; job 2 fails: 4 can never start, 5 may
    env.complete(10, 1);
    let fx = env.take(10, Input::Complete { job: JobId(2), outcome: Outcome::Exited(1) });
    assert_eq!(finished(&fx), vec![(2, FinalState::Failed), (4, FinalState::Cancelled)], "{fx:?}");
    assert_eq!(env.pass(10), vec![3, 5]);
}

#[test]
fn afterany_with_a_delay_waits_for_the_think_time() {
    let mut env = TestEnv::new(PolicyKind::Easy, 8);
    env.submit(0, 1, 8, 100);
    assert_eq!(env.pass(0), vec![1]);
    submit(&mut env, 5, JobSpec::new(JobId(2), 1, 100), vec![after(AfterKind::Any, 1, 30)]);
    env.pass(5);
    let fx = env.take(50, Input::Complete { job: JobId(1), outcome: Outcome::Signaled(9) });
    assert!(fx.contains(&Effect::WakeAt(80)), "a wake-up when the delay runs out: {fx:?}");
    assert_eq!(env.pass(50), Vec::<u64>::new());
    assert_eq!(env.reason(50, 2), Some(PendingReason::BeginTime { at: 80 }));
    assert_eq!(env.pass(79), Vec::<u64>::new());
    assert_eq!(env.pass(80), vec![2]);
}

#[test]
fn a_job_that_ended_at_the_same_instant_still_counts_and_others_are_refused() {
    let mut env = TestEnv::new(PolicyKind::Fcfs, 4);
    env.submit(0, 1, 1, 100);
    assert_eq!(env.pass(0), vec![1]);
    env.complete(7, 1);
    // job 1 left the engine at 7: a submission at 7 may still name it
    let fx = submit(&mut env, 7, JobSpec::new(JobId(2), 1, 10), vec![after(AfterKind::NotOk, 1, 0)]);
    assert_eq!(finished(&fx), vec![(2, FinalState::Cancelled)], "its dependency can never be met: {fx:?}");
    let fx = submit(&mut env, 7, JobSpec::new(JobId(3), 1, 10), vec![after(AfterKind::Ok, 1, 0)]);
    assert!(finished(&fx).is_empty(), "{fx:?}");
    assert_eq!(env.pass(7), vec![3]);
    // later, or a job never seen, or itself: refused, nothing changes
    for (t, a) in [(8, after(AfterKind::Any, 1, 0)), (8, after(AfterKind::Any, 99, 0)), (8, after(AfterKind::Any, 4, 0))] {
        let fx = submit(&mut env, t, JobSpec::new(JobId(4), 1, 10), vec![a]);
        assert!(matches!(fx.as_slice(), [Effect::Rejected { reason: Rejection::InvalidSpec { field: "after", .. }, .. }]), "{fx:?}");
    }
    assert_eq!(env.engine.jobs(), 1);
}

#[test]
fn a_cancelled_chain_cancels_its_dependents_in_turn() {
    let mut env = TestEnv::new(PolicyKind::Fcfs, 1);
    env.submit(0, 1, 1, 100);
    assert_eq!(env.pass(0), vec![1]);
    submit(&mut env, 0, JobSpec::new(JobId(2), 1, 10), vec![after(AfterKind::Ok, 1, 0)]);
    submit(&mut env, 0, JobSpec::new(JobId(3), 1, 10), vec![after(AfterKind::Ok, 2, 0)]);
    submit(&mut env, 0, JobSpec::new(JobId(4), 1, 10), vec![after(AfterKind::Any, 2, 0)]);
    let fx = env.take(5, Input::Cancel(JobId(1)));
    assert!(matches!(fx.as_slice(), [Effect::Kill { .. }, ..]), "{fx:?}");
    let fx = env.take(5, Input::Complete { job: JobId(1), outcome: Outcome::Signaled(15) });
    // 2 waited for 1's success: cancelled; 3 waited for 2's success: cancelled;
    // 4 waited for 2's end, however: it may start
    assert_eq!(finished(&fx), vec![(1, FinalState::Cancelled), (2, FinalState::Cancelled), (3, FinalState::Cancelled)]);
    assert_eq!(env.pass(5), vec![4]);
}

#[test]
fn an_array_throttle_lets_n_tasks_through_in_order() {
    let mut env = TestEnv::new(PolicyKind::Fcfs, 16);
    let th = Some(Throttle { array: 10, limit: 2 });
    for id in 10..14 {
        env.submit_spec(0, JobSpec { throttle: th, ..JobSpec::new(JobId(id), 1, 100) });
    }
    assert_eq!(env.pass(0), vec![10, 11]);
    assert_eq!(env.reason(0, 12), Some(PendingReason::ArrayLimit));
    env.complete(5, 11);
    assert_eq!(env.pass(5), vec![12]);
    let fx = env.take(5, Input::Cancel(JobId(13)));
    assert_eq!(finished(&fx), vec![(13, FinalState::Cancelled)]);
    env.complete(6, 10);
    assert_eq!(env.pass(6), Vec::<u64>::new(), "the last task was cancelled while it waited");
    assert_eq!(env.engine.queued(), 0);
}

#[test]
fn singleton_jobs_of_one_key_run_one_at_a_time_in_submission_order() {
    let mut env = TestEnv::new(PolicyKind::Fcfs, 16);
    for id in 1..4 {
        env.submit_spec(id as i64, JobSpec { singleton: Some(7), ..JobSpec::new(JobId(id), 1, 100) });
    }
    env.submit_spec(3, JobSpec { singleton: Some(8), ..JobSpec::new(JobId(4), 1, 100) });
    assert_eq!(env.pass(3), vec![1, 4]);
    assert_eq!(env.reason(3, 2), Some(PendingReason::Dependency));
    env.complete(10, 1);
    assert_eq!(env.pass(10), vec![2]);
    env.complete(11, 2);
    assert_eq!(env.pass(11), vec![3]);
}

#[test]
fn a_begin_time_holds_a_job_until_then_and_holds_compose() {
    let mut env = TestEnv::new(PolicyKind::Fcfs, 4);
    let fx = env.take(0, Input::submit(JobSpec { begin: Some(50), ..JobSpec::new(JobId(1), 1, 10) }));
    assert_eq!(fx, vec![Effect::WakeAt(50)]);
    assert_eq!(env.reason(0, 1), Some(PendingReason::BeginTime { at: 50 }));
    // the user's hold comes first, and outlives the begin time
    env.input(10, Input::Hold(JobId(1)));
    assert_eq!(env.reason(10, 1), Some(PendingReason::Held));
    assert_eq!(env.pass(50), Vec::<u64>::new());
    env.input(60, Input::Release(JobId(1)));
    assert_eq!(env.pass(60), vec![1]);
    // a release of a job its user does not hold is refused
    env.submit_spec(61, JobSpec { begin: Some(100), ..JobSpec::new(JobId(2), 1, 10) });
    let fx = env.take(61, Input::Release(JobId(2)));
    assert!(matches!(fx.as_slice(), [Effect::Rejected { .. }]), "{fx:?}");
}

#[test]
fn a_restored_snapshot_keeps_every_gate() {
    let mut env = TestEnv::new(PolicyKind::Easy, 8);
    env.submit(0, 0, 1, 50);
    for i in 1..4u64 {
        submit(&mut env, 0, JobSpec::new(JobId(i), 1, 50), vec![after(AfterKind::Any, i - 1, 5)]);
    }
    env.submit_spec(0, JobSpec { throttle: Some(Throttle { array: 9, limit: 1 }), ..JobSpec::new(JobId(9), 1, 10) });
    env.submit_spec(0, JobSpec { throttle: Some(Throttle { array: 9, limit: 1 }), ..JobSpec::new(JobId(10), 1, 10) });
    let mut restored = Engine::restore(env.engine.snapshot());
    let script = [
        (0, Input::Pass),
        (10, Input::Complete { job: JobId(9), outcome: Outcome::Exited(0) }),
        (10, Input::Pass),
        (40, Input::Complete { job: JobId(0), outcome: Outcome::Exited(0) }),
        (44, Input::Pass),
        (45, Input::Pass),
    ];
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    for (t, input) in script {
        env.engine.handle(t, input.clone(), &mut fa);
        restored.handle(t, input, &mut fb);
    }
    assert_eq!(fa, fb, "the restored engine decides as the original");
    assert!(fa.iter().any(|e| matches!(e, Effect::Start { job: JobId(10), .. })), "{fa:?}");
    assert!(fa.iter().any(|e| matches!(e, Effect::Start { job: JobId(1), .. })), "job 1 starts at 45, 5 s after job 0 ended: {fa:?}");
}
