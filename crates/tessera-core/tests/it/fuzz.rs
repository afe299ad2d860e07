//! Any sequence of inputs, valid or not, with extreme values, leaves the engine
//! consistent (`sanity_check` after every input), loses no job, and answers every
//! input it cannot apply with a typed rejection rather than a panic.

use proptest::prelude::*;
use std::collections::BTreeSet;
use tessera_core::{
    Cluster, Effect, Engine, Input, JobId, JobSpec, NodeChange, Outcome, PolicyKind, Time, MAX_TIME,
};

/// Two partitions of tiers 1 (suspendable) and 2 over three nodes, a gang
/// partition on a fourth, memory and GPUs.
const MIXED: &str = r#"
time_slice = 7
[[nodetype]]
name = "a"
nodes = "a[1-3]"
cores = 4
memory = "8G"
gpus = 1
[[nodetype]]
name = "g"
nodes = "g1"
cores = 2
[[partition]]
name = "low"
nodes = "a[1-3]"
default = true
preempt_mode = "suspend"
[[partition]]
name = "high"
nodes = "a[1-2]"
priority_tier = 2
allocation = "exclusive"
[[partition]]
name = "gang"
nodes = "g1"
preempt_mode = "gang"
oversubscribe = 3
"#;

fn time_step() -> impl Strategy<Value = Time> {
    prop_oneof![8 => 0..30i64, 1 => Just(-5i64), 1 => Just(MAX_TIME), 1 => Just(i64::MAX / 2)]
}

fn spec() -> impl Strategy<Value = JobSpec> {
    (
        0..12u64,
        prop_oneof![6 => 1..6u32, 1 => Just(0u32), 1 => Just(u32::MAX), 1 => 6..20u32],
        prop_oneof![6 => 0..40i64, 1 => Just(-1i64), 1 => Just(MAX_TIME), 1 => Just(i64::MAX)],
        prop_oneof![3 => Just(None), 1 => (0..4u16).prop_map(Some)],
        prop_oneof![4 => Just(0u64), 1 => 1..5000u64, 1 => Just(u64::MAX)],
        prop_oneof![4 => Just(0u32), 1 => 1..3u32],
        any::<bool>(),
        prop_oneof![5 => Just(false), 1 => Just(true)],
    )
        .prop_map(
            |(id, procs, est, partition, mem, gpus, requeue, hold)| JobSpec {
                partition,
                mem_per_proc_mb: mem,
                gpus_per_node: gpus,
                requeue,
                hold,
                ..JobSpec::new(JobId(id), procs, est)
            },
        )
}

fn input() -> impl Strategy<Value = Input> {
    let id = || (0..12u64).prop_map(JobId);
    prop_oneof![
        6 => spec().prop_map(Input::submit),
        6 => Just(Input::Pass),
        1 => id().prop_map(Input::Cancel),
        1 => id().prop_map(Input::Hold),
        1 => id().prop_map(Input::Release),
        1 => id().prop_map(Input::Suspend),
        1 => id().prop_map(Input::Resume),
        1 => id().prop_map(Input::Requeue),
        4 => (id(), prop_oneof![Just(Outcome::Exited(0)), Just(Outcome::Exited(3)), Just(Outcome::Signaled(9)), Just(Outcome::NodeFailed)])
            .prop_map(|(job, outcome)| Input::Complete { job, outcome }),
        1 => (0..6u32, prop_oneof![Just(NodeChange::Down), Just(NodeChange::Up), Just(NodeChange::Drain), Just(NodeChange::Resume)])
            .prop_map(|(node, change)| Input::Node { node, change, reason: "test".into() }),
    ]
}

/// Drive `engine` through `steps`; check the invariants after each input.
fn drive(mut engine: Engine, steps: Vec<(Time, Input)>) {
    let mut now: Time = 0;
    let mut live: BTreeSet<JobId> = BTreeSet::new();
    let mut fx = Vec::new();
    for (dt, input) in steps {
        // mostly forward; sometimes backwards or far beyond the engine's range
        let t = match dt {
            -5 => now - 5,
            d if d >= MAX_TIME => d,
            d => now + d,
        };
        let submitted = if let Input::Submit(s) = &input {
            Some(s.spec.id)
        } else {
            None
        };
        engine.handle(t, input, &mut fx);
        engine.sanity_check();
        let rejected = fx.iter().any(|e| matches!(e, Effect::Rejected { .. }));
        if let (Some(id), false) = (submitted, rejected) {
            assert!(live.insert(id), "job {id} accepted twice");
        }
        for e in fx.drain(..) {
            match e {
                Effect::Finished(r) => assert!(
                    live.remove(&r.spec.id),
                    "job {} finished but was not live",
                    r.spec.id
                ),
                Effect::Start { limit, alloc, .. } => {
                    assert!(limit.is_none_or(|l| (0..=4 * MAX_TIME).contains(&l)));
                    assert!(alloc
                        .parts
                        .iter()
                        .all(|p| p.cores > 0 || p.gpus > 0 || p.mem > 0));
                }
                Effect::WakeAt(w) => {
                    assert!(w <= MAX_TIME, "a wake-up beyond the engine's clock: {w}")
                }
                _ => {}
            }
        }
        if (-MAX_TIME..=MAX_TIME).contains(&t) && t >= now {
            now = t;
        }
        assert_eq!(
            engine.jobs(),
            live.len(),
            "the engine lost or invented a job"
        );
        for id in &live {
            assert!(
                engine.job(*id).is_some(),
                "job {id} is live but unknown to the engine"
            );
        }
    }
    // a snapshot restores to the same state
    let restored = Engine::restore(engine.snapshot());
    restored.sanity_check();
    assert_eq!(restored.jobs(), engine.jobs());
}

fn steps() -> impl Strategy<Value = Vec<(Time, Input)>> {
    prop::collection::vec((time_step(), input()), 1..80)
}

proptest! {
    // CI runs 256 cases; the long check is TESSERA_FUZZ_CASES=20000
    #![proptest_config(ProptestConfig { cases: std::env::var("TESSERA_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256), ..ProptestConfig::default() })]

    #[test]
    fn any_inputs_on_a_pool_leave_the_engine_consistent(policy in prop_oneof![Just(PolicyKind::Fcfs), Just(PolicyKind::Easy), Just(PolicyKind::Conservative)], steps in steps()) {
        drive(Engine::new(policy, 8).unwrap(), steps);
    }

    /// Five nodes of two cores in one shared partition: the engine counts cores
    /// over the nodes that take jobs, as nodes go down, drain and come back.
    #[test]
    fn any_inputs_on_interchangeable_nodes_leave_the_engine_consistent(policy in prop_oneof![Just(PolicyKind::Fcfs), Just(PolicyKind::Easy), Just(PolicyKind::Conservative)], steps in steps()) {
        let c = Cluster::from_toml("[[nodetype]]\nname = \"n\"\ncount = 5\ncores = 2\n", "five.toml").unwrap();
        drive(Engine::with_cluster(policy, &c).unwrap(), steps);
    }

    #[test]
    fn any_inputs_on_tiers_and_gangs_leave_the_engine_consistent(policy in prop_oneof![Just(PolicyKind::Fcfs), Just(PolicyKind::Easy), Just(PolicyKind::Conservative)], steps in steps()) {
        let c = Cluster::from_toml(MIXED, "mixed.toml").unwrap();
        drive(Engine::with_cluster(policy, &c).unwrap(), steps);
    }
}
