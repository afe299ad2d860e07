//! A power budget under a queue policy: every busy node runs at full power, so
//! only the nodes the budget powers take jobs. A budget that powers k of n
//! identical nodes schedules exactly as k nodes without one (the simulator's
//! fixed-cap mode), jobs that wait for power say so, and a node that leaves
//! gives its power to another only once its jobs are gone.

use crate::env::TestEnv;
use proptest::prelude::*;
use tessera_core::{Cluster, Engine, Input, JobId, JobSpec, NodeChange, PendingReason, PolicyKind, Rejection, Time};

/// A job: submit time, processors, estimate, runtime (at most the estimate).
type Job = (Time, u32, Time, Time);

/// `count` nodes of `cores` cores; with `budget_w`, a busy node draws 116 W
/// (60 W CPU + 18 W memory + 38 W base, the PARM testbed's) and an idle one
/// `idle_w`.
fn cluster(count: u32, cores: u32, budget_w: Option<f64>, idle_w: f64, exclusive: bool) -> String {
    let mut t = String::new();
    if let Some(w) = budget_w {
        t += &format!("power_budget_w = {w}\n\n");
    }
    t += &format!("[[nodetype]]\nname = \"n\"\ncount = {count}\ncores = {cores}\n");
    if budget_w.is_some() {
        t += &format!("base_power_w = 38\nmemory_power_w = 18\ncpu_max_power_w = 60\ncpu_cap_levels_w = [30, 60]\nidle_power_w = {idle_w}\n");
    }
    if exclusive {
        t += "\n[[partition]]\nname = \"p\"\nnodetypes = [\"n\"]\nallocation = \"exclusive\"\n";
    }
    t
}

fn replay(toml: &str, policy: PolicyKind, jobs: &[Job]) -> std::collections::BTreeMap<u64, Time> {
    let c = Cluster::from_toml(toml, "budget.toml").unwrap();
    let e = Engine::with_cluster(policy, &c).unwrap();
    let jobs: Vec<_> = jobs.iter().enumerate().map(|(i, &(submit, procs, est, run))| (submit, JobSpec::new(JobId(i as u64), procs, est), run)).collect();
    crate::env::replay(e, &jobs)
}

fn arb_case() -> impl Strategy<Value = (u32, u32, u32, bool, Vec<Job>)> {
    (1u32..=5, 1u32..=4, 1u32..=3, any::<bool>()).prop_flat_map(|(up, cores, off, exclusive)| {
        let job = (0i64..60, 1u32..=up * cores, 1i64..40).prop_flat_map(|(s, p, e)| (Just(s), Just(p), Just(e), 1i64..=e));
        (Just(up), Just(cores), Just(off), Just(exclusive), prop::collection::vec(job, 1..40))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn a_budget_that_powers_k_nodes_schedules_as_k_nodes((up, cores, off, exclusive, jobs) in arb_case()) {
        let total = up + off;
        // k nodes at 116 W, and a little to spare (less than one more node)
        let budget = up as f64 * 116.0 + 50.0;
        for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let without = replay(&cluster(up, cores, None, 0.0, exclusive), policy, &jobs);
            let with = replay(&cluster(total, cores, Some(budget), 0.0, exclusive), policy, &jobs);
            prop_assert_eq!(&with, &without, "{} on {} nodes, {} powered", policy, total, up);
        }
    }
}

#[test]
fn a_job_waiting_for_power_says_so_and_one_that_never_fits_is_refused() {
    // 38 nodes, 3,300 W: 28 at full power (3,248 W), 52 W to spare
    let toml = cluster(38, 8, Some(3300.0), 0.0, true);
    let mut env = TestEnv::cluster(PolicyKind::Easy, &toml);
    for id in 1..=29 {
        env.submit(0, id, 8, 100);
    }
    assert_eq!(env.pass(0).len(), 28, "the budget powers 28 nodes");
    assert_eq!(env.reason(0, 29), Some(PendingReason::PowerBudget { needed_w: 116, free_w: 52 }));
    // 29 nodes can never run at once
    let fx = env.take(1, Input::submit(JobSpec::new(JobId(100), 29 * 8, 100)));
    let why = fx.iter().find_map(|e| match e {
        tessera_core::Effect::Rejected { reason: r @ Rejection::NeverFits { .. }, .. } => Some(r.to_string()),
        _ => None,
    });
    assert!(why.as_deref().is_some_and(|w| w.contains("power budget")), "{fx:?}");
    let fx = env.take(1, Input::submit(JobSpec::new(JobId(101), 28 * 8, 100)));
    assert!(!fx.iter().any(|e| matches!(e, tessera_core::Effect::Rejected { .. })), "28 nodes fit: {fx:?}");
}

#[test]
fn idle_nodes_count_their_idle_power() {
    // 10 nodes idle at 20 W: 200 W; each busy one adds 96 W: 1,000 W powers 8
    let toml = cluster(10, 4, Some(1000.0), 20.0, true);
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &toml);
    for id in 1..=10 {
        env.submit(0, id, 4, 100);
    }
    assert_eq!(env.pass(0).len(), 8);
    assert_eq!(env.reason(0, 9), Some(PendingReason::PowerBudget { needed_w: 96, free_w: 32 }));
}

#[test]
fn a_node_down_gives_its_power_away_only_once_its_job_has_left() {
    let toml = cluster(4, 4, Some(2.0 * 116.0 + 10.0), 0.0, true);
    let mut env = TestEnv::cluster(PolicyKind::Easy, &toml);
    env.submit(0, 1, 4, 100).submit(0, 2, 4, 100).submit(0, 3, 4, 100);
    assert_eq!(env.pass(0), vec![1, 2]);
    let c = Cluster::from_toml(&toml, "b.toml").unwrap();
    assert_eq!(env.placed(&c, 1).0, vec![c.nodes[0].name.clone()]);
    // node 0 (job 1's) goes down: job 1 is killed, but until its end is
    // reported it may still draw, so job 3 waits
    let fx = env.take(10, Input::Node { node: 0, change: NodeChange::Down, reason: "test".into() });
    assert!(fx.iter().any(|e| matches!(e, tessera_core::Effect::Kill { job: JobId(1), .. })), "{fx:?}");
    assert!(env.pass(10).is_empty(), "job 1's node still counts busy");
    assert!(matches!(env.reason(10, 3), Some(PendingReason::PowerBudget { .. })));
    env.complete(11, 1);
    assert_eq!(env.pass(11), vec![3], "job 1 has left: its power goes to another node");
}

#[test]
fn the_budget_changes_live_but_never_below_what_runs() {
    let toml = cluster(6, 4, Some(2.0 * 116.0), 0.0, true);
    let mut env = TestEnv::cluster(PolicyKind::Conservative, &toml);
    for id in 1..=4 {
        env.submit(0, id, 4, 100);
    }
    assert_eq!(env.pass(0), vec![1, 2]);
    let fx = env.take(1, Input::SetBudget { watts: 200.0 });
    assert!(fx.iter().any(|e| matches!(e, tessera_core::Effect::Rejected { reason: Rejection::BudgetTooLow { needed_w: 232, .. }, .. })), "{fx:?}");
    env.input(2, Input::SetBudget { watts: 4.0 * 116.0 });
    assert_eq!(env.pass(2), vec![3, 4], "a higher budget powers two more nodes");
}

#[test]
fn a_cap_ceiling_holds_a_queue_policys_job_and_is_said() {
    let toml = cluster(4, 4, Some(4.0 * 116.0), 0.0, true);
    let mut env = TestEnv::cluster(PolicyKind::Easy, &toml);
    env.submit(0, 1, 8, 100);
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(env.engine.power_config(JobId(1)), Some((2, 60.0)), "full power");
    assert_eq!(env.engine.cap_floor(JobId(1)), Some(30.0));
    let fx = env.take(5, Input::CapCeiling { job: JobId(1), cap_w: 45.0 });
    assert!(fx.iter().any(|e| matches!(e, tessera_core::Effect::Configure { job: JobId(1), nodes: 2, cap_w, .. } if *cap_w == 45.0)), "{fx:?}");
    assert_eq!(env.engine.power_config(JobId(1)), Some((2, 45.0)));
    env.take(6, Input::CapCeiling { job: JobId(1), cap_w: 10.0 });
    assert_eq!(env.engine.power_config(JobId(1)), Some((2, 30.0)), "never below the lowest level");
    // without a budget there is nothing to cap
    let mut plain = TestEnv::cluster(PolicyKind::Easy, &cluster(4, 4, None, 0.0, true));
    plain.submit(0, 1, 8, 100);
    plain.pass(0);
    let fx = plain.take(5, Input::CapCeiling { job: JobId(1), cap_w: 45.0 });
    assert!(fx.iter().any(|e| matches!(e, tessera_core::Effect::Rejected { reason: Rejection::Unsupported { .. }, .. })), "{fx:?}");
}

#[test]
fn a_node_whose_power_domain_failed_counts_at_its_maximum() {
    // 4 nodes, 3 × 116 W: three powered; a faulted node takes one's power
    let toml = cluster(4, 4, Some(3.0 * 116.0), 0.0, true);
    let mut env = TestEnv::cluster(PolicyKind::Easy, &toml);
    env.input(0, Input::Node { node: 3, change: NodeChange::PowerFault, reason: "power: unreadable".into() });
    for id in 1..=3 {
        env.submit(0, id, 4, 100);
    }
    assert_eq!(env.pass(0), vec![1, 2], "the faulted node counts 116 W though it runs nothing");
    assert!(matches!(env.reason(0, 3), Some(PendingReason::PowerBudget { .. })));
    assert_eq!(env.engine.node_status(3).map(|s| (s.drain, s.power_fault)), Some((true, true)));
    // an operator resumes it: its power is counted as it runs again
    env.input(1, Input::Node { node: 3, change: NodeChange::Resume, reason: String::new() });
    assert_eq!(env.pass(1), vec![3]);
}
