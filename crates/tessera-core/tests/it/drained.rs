//! Nodes out of service take nothing: a machine with drained nodes schedules
//! exactly as the machine without them, for every policy, and a drained node's
//! cores, idle or given back by the jobs that finish there, are never offered.

use crate::env::TestEnv;
use proptest::prelude::*;
use std::collections::BTreeMap;
use tessera_core::{Cluster, Engine, Input, JobId, JobSpec, NodeChange, PolicyKind, Time};

/// A job: submit time, processors, estimate, runtime (at most the estimate).
type Job = (Time, u32, Time, Time);

fn nodes(count: u32, cores: u32) -> String {
    format!("[[nodetype]]\nname = \"n\"\ncount = {count}\ncores = {cores}\n")
}

/// Each job's start on the cluster with `drained` nodes drained at 0.
fn replay(toml: &str, drained: &[u32], policy: PolicyKind, jobs: &[Job]) -> BTreeMap<u64, Time> {
    let c = Cluster::from_toml(toml, "drained.toml").unwrap();
    let mut e = Engine::with_cluster(policy, &c).unwrap();
    let mut fx = Vec::new();
    for &node in drained {
        e.handle(
            0,
            Input::Node {
                node,
                change: NodeChange::Drain,
                reason: "test".into(),
            },
            &mut fx,
        );
    }
    let jobs: Vec<_> = jobs
        .iter()
        .enumerate()
        .map(|(i, &(submit, procs, est, run))| {
            (submit, JobSpec::new(JobId(i as u64), procs, est), run)
        })
        .collect();
    crate::env::replay(e, &jobs)
}

fn arb_case() -> impl Strategy<Value = (u32, u32, Vec<u32>, Vec<Job>)> {
    (1u32..=5, 1u32..=4, 1u32..=3).prop_flat_map(|(up, cores, down)| {
        let total = up + down;
        let drained = prop::sample::subsequence((0..total).collect::<Vec<_>>(), down as usize);
        let job = (0i64..60, 1u32..=up * cores, 1i64..40)
            .prop_flat_map(|(s, p, e)| (Just(s), Just(p), Just(e), 1i64..=e));
        (
            Just(up),
            Just(cores),
            drained,
            prop::collection::vec(job, 1..40),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn drained_nodes_schedule_as_if_they_were_not_there((up, cores, drained, jobs) in arb_case()) {
        let total = up + drained.len() as u32;
        for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let without = replay(&nodes(up, cores), &[], policy, &jobs);
            let with = replay(&nodes(total, cores), &drained, policy, &jobs);
            prop_assert_eq!(&with, &without, "{} with nodes {:?} of {} drained", policy, drained, total);
        }
    }
}

/// A node drained under a running job: the job finishes, its cores are not
/// offered to the queue, and a job that fits only with them waits (EASY would
/// otherwise have backfilled it, and placement would have failed).
#[test]
fn a_drained_node_gives_nothing_back() {
    for policy in [PolicyKind::Easy, PolicyKind::Conservative] {
        let mut env = TestEnv::cluster(policy, &nodes(2, 4));
        env.submit(0, 1, 4, 100).submit(0, 2, 2, 50);
        assert_eq!(env.pass(0), vec![1, 2]);
        assert_eq!(env.engine.free(), 2);
        let on = |env: &TestEnv, id| match env.engine.allocation(JobId(id)) {
            Some(a) => a.parts[0].node,
            None => panic!("job {id} holds nothing"),
        };
        let (n1, n2) = (on(&env, 1), on(&env, 2));
        assert_ne!(n1, n2);
        env.input(
            1,
            Input::Node {
                node: n1,
                change: NodeChange::Drain,
                reason: "maintenance".into(),
            },
        );
        assert_eq!(
            env.engine.free(),
            2,
            "{policy}: the drained node had nothing free"
        );
        // the head needs 4 cores: only node n2's, when job 2 ends at 50
        env.submit(2, 3, 4, 10).submit(2, 4, 2, 5);
        assert_eq!(
            env.pass(2),
            vec![4],
            "{policy}: job 4 ends before the head's reservation"
        );
        env.complete(7, 4);
        env.complete(10, 1);
        assert_eq!(
            env.engine.free(),
            2,
            "{policy}: job 1's cores stay on the drained node"
        );
        assert_eq!(env.pass(10), Vec::<u64>::new());
        env.complete(50, 2);
        assert_eq!(env.pass(50), vec![3]);
        assert_eq!(on(&env, 3), n2);
        env.complete(60, 3);
        env.input(
            61,
            Input::Node {
                node: n1,
                change: NodeChange::Resume,
                reason: String::new(),
            },
        );
        assert_eq!(env.engine.free(), 8, "{policy}: the node is back");
    }
}
