//! Nodes of different speeds: a job runs and is limited at its slowest node's pace,
//! and backfilling plans with the speed of the nodes it considers.

use crate::env::TestEnv;
use tessera_core::{scaled, Cluster, PolicyKind};

/// Two single-core nodes: `slow` (10 HS06/core, factor 1) then `fast` (20, factor 2).
const TWO_SPEEDS: &str = r#"
[reference]
nodetype = "slow"

[[nodetype]]
name = "slow"
nodes = "s1"
cores = 1
hs06_per_core = 10

[[nodetype]]
name = "fast"
nodes = "f1"
cores = 1
hs06_per_core = 20
"#;

#[test]
fn factors_come_from_benchmarks_over_the_reference() {
    let c = Cluster::from_toml(TWO_SPEEDS, "t.toml").unwrap();
    assert_eq!(c.node_types[0].factor, 1.0);
    assert_eq!(c.node_types[1].factor, 2.0);
    assert_eq!(scaled(100, 2.0), 50);
}

#[test]
fn a_parallel_job_runs_at_its_slowest_node() {
    let c = Cluster::from_toml(TWO_SPEEDS, "t.toml").unwrap();
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, TWO_SPEEDS);
    env.submit(0, 1, 2, 100);
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(env.placed(&c, 1), (vec!["s1".to_string(), "f1".to_string()], 1.0));
    // a one-core job on the fast node alone runs at factor 2
    env.complete(100, 1);
    env.submit(100, 2, 1, 100).submit(100, 3, 1, 100);
    assert_eq!(env.pass(100), vec![2, 3]);
    assert_eq!(env.placed(&c, 3), (vec!["f1".to_string()], 2.0));
}

/// EASY on nodes: the head needs both nodes; the slow node is busy until 100, so
/// the shadow is 100 and no resource is extra. A 150-reference-second job fits
/// before the shadow only because the free node is fast (150 / 2 = 75 s).
#[test]
fn backfilling_knows_fast_nodes_finish_sooner() {
    let mut env = TestEnv::cluster(PolicyKind::Easy, TWO_SPEEDS);
    env.submit(0, 1, 1, 100);
    assert_eq!(env.pass(0), vec![1]); // on s1 (first fit)
    env.submit(0, 2, 1, 1000); // on f1
    assert_eq!(env.pass(0), vec![2]);
    env.complete(10, 2);
    env.submit(10, 3, 2, 50) // head: both nodes, shadow 100
        .submit(10, 4, 1, 190) // 95 s on f1: ends at 105 > 100, waits
        .submit(10, 5, 1, 150); // 75 s on f1: ends at 85 <= 100, starts
    assert_eq!(env.pass(10), vec![5]);
    assert_eq!(env.engine.head_reservation(10).map(|h| h.1), Some(100));
}

/// Conservative on nodes gives the same answer, and reserves the head.
#[test]
fn conservative_on_nodes_uses_node_speeds() {
    let mut env = TestEnv::cluster(PolicyKind::Conservative, TWO_SPEEDS);
    env.submit(0, 1, 1, 100);
    assert_eq!(env.pass(0), vec![1]);
    env.submit(0, 2, 1, 1000);
    assert_eq!(env.pass(0), vec![2]);
    env.complete(10, 2);
    env.submit(10, 3, 2, 50).submit(10, 4, 1, 190).submit(10, 5, 1, 150);
    assert_eq!(env.pass(10), vec![5]);
    assert_eq!(env.reason(10, 3), Some(tessera_core::PendingReason::ReservedFor { start: 100 }));
    assert_eq!(env.reason(10, 4), Some(tessera_core::PendingReason::ReservedFor { start: 150 }));
}

/// Whole nodes: SWF processors map to nodes by the partition's cores per node,
/// and memory per processor limits what a shared node can take.
#[test]
fn exclusive_and_shared_partitions_and_memory() {
    let toml = r#"
[[nodetype]]
name = "n"
nodes = "n[1-4]"
cores = 4
memory = "8G"

[[partition]]
name = "whole"
nodes = "n[1-2]"
allocation = "exclusive"
default = true

[[partition]]
name = "shared"
nodes = "n[3-4]"
"#;
    let c = Cluster::from_toml(toml, "t.toml").unwrap();
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, toml);
    // 5 processors = 2 whole nodes in the exclusive partition
    env.submit(0, 1, 5, 100);
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(env.placed(&c, 1).0, vec!["n1", "n2"]);
    // shared: 3 cores at 3 GiB each fit one per node (8 GiB / 3 GiB = 2 cores per node)...
    let spec = |id, procs, mem| tessera_core::JobSpec {
        partition: Some(1),
        mem_per_proc_mb: mem,
        ..tessera_core::JobSpec::new(tessera_core::JobId(id), procs, 100)
    };
    env.submit_spec(0, spec(2, 3, 3072));
    assert_eq!(env.pass(0), vec![2]);
    assert_eq!(env.placed(&c, 2).0, vec!["n3", "n4"]);
    // ...leaving n3 with 2 cores / 2 GiB and n4 with 3 cores / 5 GiB: 4 cores at
    // 2 GiB do not fit (1 + 2 cores)
    env.submit_spec(0, spec(3, 4, 2048));
    assert_eq!(env.pass(0), Vec::<u64>::new());
    // a job asking more memory per core than any node has can never run
    assert!(env.engine.can_run(&spec(9, 1, 9000), None).is_err());
}

