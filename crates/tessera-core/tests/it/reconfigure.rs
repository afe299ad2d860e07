//! A cluster changed under a running engine (`Input::Reconfigure`): nodes and
//! partitions matched by name keep their jobs, added nodes take new ones, and a
//! change that would take a job's place is refused with the engine unchanged.

use crate::env::TestEnv;
use proptest::prelude::*;
use tessera_core::{
    Cluster, Effect, Engine, Input, JobId, JobSpec, NodeChange, PolicyKind, Reconfiguration,
    Rejection, Time,
};

/// Two generations with memory, a shared partition over all nodes and an
/// exclusive one over the new nodes.
const SITE: &str = r#"
[reference]
nodetype = "old"

[[nodetype]]
name = "old"
nodes = "a[1-3]"
cores = 4
memory = "8G"
hs06_per_core = 10

[[nodetype]]
name = "new"
nodes = "b[1-2]"
cores = 8
memory = "16G"
hs06_per_core = 15

[[partition]]
name = "all"
nodes = "a[1-3],b[1-2]"
default = true

[[partition]]
name = "whole"
nodes = "b[1-2]"
allocation = "exclusive"
"#;

fn cluster(toml: &str) -> Cluster {
    Cluster::from_toml(toml, "site.toml").unwrap()
}

fn reconfigure(env: &mut TestEnv, t: Time, old: &Cluster, new: &Cluster) -> Vec<Effect> {
    let r = Reconfiguration::between(old, new.clone());
    env.take(t, Input::Reconfigure(Box::new(r)))
        .into_iter()
        .filter(|e| !matches!(e, Effect::WakeAt(_)))
        .collect()
}

fn refusal(fx: &[Effect]) -> String {
    match fx {
        [Effect::Rejected {
            reason: Rejection::CannotReconfigure(why),
            ..
        }] => why.clone(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn spec(id: u64, procs: u32, est: Time, part: Option<u16>, mem: u64) -> JobSpec {
    JobSpec {
        partition: part,
        mem_per_proc_mb: mem,
        ..JobSpec::new(JobId(id), procs, est)
    }
}

/// Nodes listed in another order, one added, one changed: running jobs stay on
/// the nodes they run on (by name), the queue keeps its order, the added node
/// takes the job that was waiting for room, and limits stay as they started.
#[test]
fn running_jobs_keep_their_nodes_by_name_and_an_added_node_takes_the_queue() {
    let old = cluster(SITE);
    let mut env = TestEnv::cluster(PolicyKind::Easy, SITE);
    // 12 cores on a1..a3, then 16 on b1, b2: all 28 in use
    env.submit(0, 1, 12, 100).submit(0, 2, 16, 100);
    assert_eq!(env.pass(0), vec![1, 2]);
    assert_eq!(env.placed(&old, 1).0, vec!["a1", "a2", "a3"]);
    assert_eq!(env.placed(&old, 2), (vec!["b1".to_string(), "b2".to_string()], 1.5));
    // waiting: 8 cores, then 2
    env.submit(5, 3, 8, 50).submit(5, 4, 2, 50);
    assert_eq!(env.pass(5), Vec::<u64>::new());
    // the a nodes in another order, b before a in the partition, c1 (8 cores)
    // added, and the b nodes benchmarked anew (factor 2 for jobs that start
    // from now on)
    let bigger = SITE
        .replace("nodes = \"a[1-3]\"", "nodes = \"a[3,1,2]\"")
        .replace("nodes = \"a[1-3],b[1-2]\"", "nodes = \"b[1-2],a[1-3],c1\"")
        .replace("hs06_per_core = 15", "hs06_per_core = 20")
        + "\n[[nodetype]]\nname = \"extra\"\nnodes = \"c1\"\ncores = 8\nmemory = \"16G\"\nhs06_per_core = 10\n";
    let new = cluster(&bigger);
    assert_eq!(new.nodes[0].name, "a3", "the test reorders nodes");
    assert!(reconfigure(&mut env, 10, &old, &new).is_empty());
    assert_eq!(env.placed(&new, 1).0, vec!["a1", "a2", "a3"]);
    assert_eq!(env.placed(&new, 2), (vec!["b1".to_string(), "b2".to_string()], 1.5));
    // the head (8 cores) fits on c1 alone; the 2-core job has nowhere left
    assert_eq!(env.pass(10), vec![3]);
    assert_eq!(env.placed(&new, 3).0, vec!["c1"]);
    // job 2 keeps the limit it started with (100 reference seconds at 1.5)
    let r = env.complete_with(20, 2, tessera_core::Outcome::Exited(0)).unwrap();
    assert_eq!(r.limit, Some(tessera_core::scaled(100, 1.5)));
    // job 4 goes to the first free node of the new order: b1, now at factor 2
    assert_eq!(env.pass(20), vec![4]);
    assert_eq!(env.placed(&new, 4), (vec!["b1".to_string()], 2.0));
    env.engine.sanity_check();
}

/// Every refusal names the job or node in the way, and leaves the engine
/// exactly as it was.
#[test]
fn a_change_that_would_take_a_jobs_place_is_refused_and_changes_nothing() {
    let old = cluster(SITE);
    let mut env = TestEnv::cluster(PolicyKind::Conservative, SITE);
    env.submit(0, 1, 4, 100); // a1
    env.submit_spec(0, spec(2, 8, 100, Some(1), 0)); // whole: b1
    env.submit_spec(0, spec(3, 8, 100, Some(1), 0)); // whole: b2
    assert_eq!(env.pass(0), vec![1, 2, 3]);
    let before = serde_json::to_string(&env.engine.snapshot()).unwrap();
    let cases = [
        // b2 removed while job 2 holds it
        (SITE.replace("b[1-2]", "b1"), "job 3 holds node b2"),
        // b nodes shrink under job 2's cores
        (SITE.replace("cores = 8", "cores = 4"), "node b1 would have 4 cores"),
        // the partition of job 2 goes away
        (SITE.replace("name = \"whole\"", "name = \"entire\""), "job 2 is in partition whole"),
    ];
    for (toml, says) in cases {
        let why = refusal(&reconfigure(&mut env, 0, &old, &cluster(&toml)));
        assert!(why.contains(says), "{why:?} should say {says:?}");
        let after = serde_json::to_string(&env.engine.snapshot()).unwrap();
        assert!(after == before, "the refused change altered the engine");
    }
    env.engine.sanity_check();
}

/// A queued job that the new cluster could never run keeps the change out
/// (the operator cancels it first, or keeps the nodes it needs).
#[test]
fn a_queued_job_the_new_cluster_could_never_run_is_named() {
    let old = cluster(SITE);
    let mut env = TestEnv::cluster(PolicyKind::Easy, SITE);
    env.submit(0, 1, 28, 100);
    env.submit_spec(0, JobSpec { hold: true, ..JobSpec::new(JobId(7), 20, 100) });
    assert_eq!(env.pass(0), vec![1]);
    // the shared partition loses the b nodes: neither job fits in 12 cores
    let smaller = SITE.replace("a[1-3],b[1-2]", "a[1-3]");
    let why = refusal(&reconfigure(&mut env, 1, &old, &cluster(&smaller)));
    assert!(why.contains("job 1 could never run on the new cluster"), "{why}");
    env.complete(50, 1);
    let _ = env.pass(50);
    let why = refusal(&reconfigure(&mut env, 60, &old, &cluster(&smaller)));
    assert!(why.contains("job 7 could never run on the new cluster"), "{why}");
}

/// Node states survive (a drained node stays drained, by name); a job parked
/// by a higher tier keeps its claim and resumes when the preemptor ends.
#[test]
fn drains_and_preempted_jobs_survive_a_reconfigure() {
    let tiers = r#"
[[nodetype]]
name = "n"
nodes = "n[1-2]"
cores = 4

[[partition]]
name = "low"
nodes = "n[1-2]"
default = true
priority_tier = 1
preempt_mode = "suspend"

[[partition]]
name = "high"
nodes = "n[1-2]"
priority_tier = 2
"#;
    let old = cluster(tiers);
    let mut env = TestEnv::cluster(PolicyKind::Easy, tiers);
    env.input(
        0,
        Input::Node {
            node: 1,
            change: NodeChange::Drain,
            reason: "bios".into(),
        },
    );
    env.submit(0, 1, 4, 100);
    assert_eq!(env.pass(0), vec![1]);
    env.submit_spec(1, spec(2, 4, 10, Some(1), 0));
    let fx = env.take(1, Input::Pass);
    assert!(fx.iter().any(|e| matches!(e, Effect::Suspend { job } if job.0 == 1)), "{fx:?}");
    assert!(fx.iter().any(|e| matches!(e, Effect::Start { job, .. } if job.0 == 2)), "{fx:?}");
    // the nodes listed the other way round
    let new = cluster(&tiers.replace("nodes = \"n[1-2]\"\ncores", "nodes = \"n2,n1\"\ncores"));
    assert_eq!(new.nodes[0].name, "n2");
    let fx = reconfigure(&mut env, 2, &old, &new);
    assert!(fx.is_empty(), "{fx:?}");
    let drained = env.engine.node_status(0).unwrap();
    assert!(drained.drain && drained.reason == "bios", "{drained:?}");
    assert!(!env.engine.node_status(1).unwrap().drain);
    // job 2 ends: job 1 resumes on n1
    let mut fx = env.take(
        11,
        Input::Complete {
            job: JobId(2),
            outcome: tessera_core::Outcome::Exited(0),
        },
    );
    assert!(fx.iter().any(|e| matches!(e, Effect::Finished(_))));
    fx.extend(env.take(11, Input::Pass));
    assert!(fx.iter().any(|e| matches!(e, Effect::Resume { job } if job.0 == 1)), "{fx:?}");
    assert_eq!(env.placed(&new, 1).0, vec!["n1"]);
}

/// A job: submit time, processors, estimate, runtime, partition, memory per core.
type Job = (Time, u32, Time, Time, u16, u64);

fn arb_jobs() -> impl Strategy<Value = Vec<Job>> {
    let job = (0i64..80, 1u32..=16, 1i64..60, prop::bool::ANY, prop::sample::select(vec![0u64, 512, 1500]))
        .prop_flat_map(|(s, p, e, whole, mem)| {
            let (part, mem) = if whole { (1u16, 0) } else { (0, mem) };
            (Just(s), Just(p), Just(e), 1i64..=e, Just(part), Just(mem))
        });
    prop::collection::vec(job, 1..40)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, .. ProptestConfig::default() })]

    /// The cluster reconfigured to itself at any instant schedules exactly as
    /// if nothing happened: the engine rebuilt on the cluster (what is free,
    /// booked and running, the queue and its needs) is the engine it was.
    #[test]
    fn reconfiguring_to_the_same_cluster_changes_no_start(jobs in arb_jobs(), at in 0i64..120) {
        let c = cluster(SITE);
        let specs: Vec<_> = jobs
            .iter()
            .enumerate()
            .map(|(i, &(s, p, e, run, part, mem))| (s, spec(i as u64, p, e, Some(part), mem), run))
            .filter(|(_, s, _)| Engine::with_cluster(PolicyKind::Easy, &c).unwrap().can_run(s, None).is_ok())
            .collect();
        for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let plain = crate::env::replay(Engine::with_cluster(policy, &c).unwrap(), &specs);
            let mut done = false;
            let with = crate::env::replay_with(Engine::with_cluster(policy, &c).unwrap(), &specs, |now| {
                if now >= at && !done {
                    done = true;
                    // the replay panics on any effect but starts, ends and wake-ups
                    return vec![Input::Reconfigure(Box::new(Reconfiguration::between(&c, c.clone())))];
                }
                Vec::new()
            });
            prop_assert_eq!(&with, &plain, "{} reconfigured at {}", policy, at);
        }
    }
}
