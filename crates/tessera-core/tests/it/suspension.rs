//! Suspension by priority tier (PreemptMode SUSPEND) and gang time-slicing
//! (PreemptMode GANG), worked by hand.

use crate::env::TestEnv;
use tessera_core::{Effect, FinalState, Input, JobId, JobSpec, Outcome, PolicyKind, Time};

/// One node of 8 cores in two partitions: `low` (tier 1, suspendable) and
/// `high` (tier 2).
const TIERS: &str = r#"
[[nodetype]]
name = "n"
nodes = "n1"
cores = 8
[[partition]]
name = "low"
nodes = "n1"
default = true
priority_tier = 1
preempt_mode = "suspend"
[[partition]]
name = "high"
nodes = "n1"
priority_tier = 2
"#;

/// One node of 4 cores shared by a gang partition: two jobs per core, 10 s slices.
const GANG: &str = r#"
time_slice = 10
[[nodetype]]
name = "n"
nodes = "n1"
cores = 4
[[partition]]
name = "gang"
nodes = "n1"
preempt_mode = "gang"
oversubscribe = 2
"#;

fn job(id: u64, part: u16, procs: u32, est: Time) -> JobSpec {
    JobSpec { partition: Some(part), ..JobSpec::new(JobId(id), procs, est) }
}

/// The effects other than wake-ups, in order, as short strings.
fn acts(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Start { job, .. } => Some(format!("start {job}")),
            Effect::Suspend { job } => Some(format!("suspend {job}")),
            Effect::Resume { job } => Some(format!("resume {job}")),
            Effect::Kill { job, .. } => Some(format!("kill {job}")),
            Effect::Finished(r) => Some(format!("finished {}", r.spec.id)),
            Effect::WakeAt(_) => None,
            other => Some(format!("{other:?}")),
        })
        .collect()
}

fn wake(fx: &[Effect]) -> Option<Time> {
    fx.iter().rev().find_map(|e| if let Effect::WakeAt(t) = e { Some(*t) } else { None })
}

#[test]
fn a_higher_tier_suspends_a_lower_one_which_resumes_with_its_limit_intact() {
    for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
        let mut env = TestEnv::cluster(policy, TIERS);
        env.submit_spec(0, job(1, 0, 6, 100));
        assert_eq!(env.pass(0), vec![1]);
        // a low job waits behind; the high job needs 4 cores, only 2 are free
        env.submit_spec(10, job(2, 0, 4, 10));
        env.submit_spec(10, job(3, 1, 4, 50));
        let fx = env.take(10, Input::Pass);
        assert_eq!(acts(&fx), ["suspend 1", "start 3"], "{policy}");
        // job 1 took back the 4 cores job 3 left: job 2 (low) cannot use them
        assert_eq!(env.pass(20), Vec::<u64>::new(), "{policy}");
        // job 3 ends: job 1 has all its cores again before job 2 is considered
        env.complete(60, 3);
        let fx = env.take(60, Input::Pass);
        assert_eq!(acts(&fx), ["resume 1"], "{policy}");
        // 10 s run before, 50 s suspended: its limit now runs out at 60 + 90
        assert_eq!(wake(&fx), Some(150), "{policy}");
        let fx = env.take(150, Input::Pass);
        assert_eq!(acts(&fx), ["kill 1"], "{policy}");
        let r = env.complete_with(150, 1, Outcome::Signaled(9)).unwrap();
        assert_eq!((r.state, r.start, r.suspended_s), (FinalState::Timeout, Some(0), 50), "{policy}");
        assert_eq!(r.alloc.unwrap().parts[0].cores, 6, "the record keeps the whole allocation");
        assert_eq!(env.pass(150), vec![2], "{policy}");
        env.complete(160, 2);
    }
}

#[test]
fn preemption_takes_suspended_jobs_first_then_the_youngest_and_only_what_it_needs() {
    let mut env = TestEnv::cluster(PolicyKind::Easy, TIERS);
    env.submit_spec(0, job(1, 0, 3, 1000));
    env.submit_spec(0, job(2, 0, 3, 1000));
    assert_eq!(env.pass(0), vec![1, 2]);
    env.submit_spec(5, job(3, 0, 2, 1000));
    assert_eq!(env.pass(5), vec![3]);
    // 4 cores: 0 free; the youngest low job (3, 2 cores) and then job 2 (3 cores)
    env.submit_spec(10, job(4, 1, 4, 100));
    let fx = env.take(10, Input::Pass);
    assert_eq!(acts(&fx), ["suspend 3", "suspend 2", "start 4"]);
    // a job of the high tier that does not fit even with every low job suspended
    // suspends nothing
    env.submit_spec(11, job(5, 1, 8, 100));
    assert_eq!(acts(&env.take(11, Input::Pass)), Vec::<String>::new());
    // job 4 ends; job 5 (high) now fits by taking the suspended jobs' cores and
    // suspending job 1: high tiers come before parked low jobs
    env.complete(20, 4);
    let fx = env.take(20, Input::Pass);
    assert_eq!(acts(&fx), ["suspend 1", "start 5"]);
    env.complete(30, 5);
    // the parked jobs resume, the first suspended first (then by job id)
    let fx = env.take(30, Input::Pass);
    assert_eq!(acts(&fx), ["resume 2", "resume 3", "resume 1"]);
    for j in [1, 2, 3] {
        env.complete(2000, j);
    }
}

#[test]
fn gang_jobs_take_turns_every_time_slice() {
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, GANG);
    env.submit_spec(0, job(1, 0, 4, 100));
    env.submit_spec(0, job(2, 0, 4, 100));
    let fx = env.take(0, Input::Pass);
    // both are allocated (two jobs per core); job 2 waits for its slice
    assert_eq!(acts(&fx), ["start 1", "start 2", "suspend 2"]);
    assert_eq!(wake(&fx), Some(10));
    // a third job does not fit: every core is allocated twice
    env.submit_spec(5, job(3, 0, 4, 100));
    assert!(acts(&env.take(5, Input::Pass)).is_empty());
    let fx = env.take(10, Input::Pass);
    assert_eq!(acts(&fx), ["suspend 1", "resume 2"]);
    assert_eq!(wake(&fx), Some(20));
    let fx = env.take(20, Input::Pass);
    assert_eq!(acts(&fx), ["suspend 2", "resume 1"]);
    // job 1 finishes 5 s into its second slice: job 2 resumes at once and job 3
    // is allocated, suspended until job 2's slice is over
    let r = env.complete_with(25, 1, Outcome::Exited(0)).unwrap();
    assert_eq!((r.start, r.end, r.suspended_s), (Some(0), 25, 10));
    let fx = env.take(25, Input::Pass);
    assert_eq!(acts(&fx), ["resume 2", "start 3", "suspend 3"]);
    assert_eq!(wake(&fx), Some(35));
    let fx = env.take(35, Input::Pass);
    assert_eq!(acts(&fx), ["suspend 2", "resume 3"]);
    // job 3 waited 25..35 for its slice
    let r = env.complete_with(40, 3, Outcome::Exited(0)).unwrap();
    assert_eq!(r.suspended_s, 10);
    let fx = env.take(40, Input::Pass);
    assert_eq!(acts(&fx), ["resume 2"]);
    // job 2 ran 10..20, 25..35 and 40..50; it waited 0..10, 20..25 and 35..40
    let r = env.complete_with(50, 2, Outcome::Exited(0)).unwrap();
    assert_eq!(r.suspended_s, 10 + 5 + 5);
}
