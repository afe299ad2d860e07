//! Every node-set option, each with a small cluster where it changes the outcome.

use crate::env::TestEnv;
use tessera_core::{Cluster, PendingReason, PolicyKind, SetAttribute, SetPolicy};

/// Four whole single-core nodes on two switches; a and c are slow (factor 1),
/// b and d fast (factor 2).
fn switches(extra: &str) -> String {
    format!(
        r#"
nodeset_delay = 100
{extra}

[[nodetype]]
name = "slowA"
nodes = "a1"
cores = 1
hs06_per_core = 10
speed = 1000
features = ["switchA"]

[[nodetype]]
name = "fastA"
nodes = "b1"
cores = 1
hs06_per_core = 20
speed = 2000
features = ["switchA"]

[[nodetype]]
name = "slowB"
nodes = "c1"
cores = 1
hs06_per_core = 10
speed = 1000
features = ["switchB"]

[[nodetype]]
name = "fastB"
nodes = "d1"
cores = 1
hs06_per_core = 20
speed = 2000
features = ["switchB"]

[[partition]]
name = "p"
nodes = "a1,b1,c1,d1"
allocation = "exclusive"
"#
    )
}

fn names(env: &TestEnv, c: &Cluster, id: u64) -> Vec<String> {
    env.placed(c, id).0
}

/// a1 and d1 busy; b1 (switchA) and c1 (switchB) free.
fn with_a1_d1_busy(env: &mut TestEnv) {
    env.submit(0, 100, 1, 1000).submit(0, 101, 1, 1000).submit(0, 102, 1, 1000).submit(0, 103, 1, 1000);
    assert_eq!(env.pass(0), vec![100, 101, 102, 103]);
    env.complete(5, 101).complete(5, 102); // frees b1 and c1
}

#[test]
fn oneof_feature_waits_for_a_whole_switch_and_says_so() {
    let c = Cluster::from_toml(&switches(""), "t").unwrap();
    // without a node set the job spans switches at once
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &switches(""));
    with_a1_d1_busy(&mut env);
    env.submit(5, 1, 2, 100);
    assert_eq!(env.pass(5), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["b1", "c1"]);
    // with ONEOF:FEATURE:switchA,switchB it waits, with a NodeSet reason
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &switches(""));
    with_a1_d1_busy(&mut env);
    env.submit_with_nodeset(5, 1, 2, 100, "ONEOF:FEATURE:switchA,switchB");
    assert_eq!(env.pass(5), Vec::<u64>::new());
    assert_eq!(env.reason(5, 1), Some(PendingReason::NodeSet { policy: SetPolicy::OneOf, attribute: SetAttribute::Feature }));
    env.complete(6, 100); // a1 frees: switchA is whole
    assert_eq!(env.pass(6), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["a1", "b1"]);
}

#[test]
fn slurm_matching_or_and_torque_syntax_are_oneof_feature() {
    for syntax in ["[switchA|switchB]", "nodeset=ONEOF:FEATURE:switchA:switchB"] {
        let mut env = TestEnv::cluster(PolicyKind::Fcfs, &switches(""));
        with_a1_d1_busy(&mut env);
        env.submit_with_nodeset(5, 1, 2, 100, syntax);
        assert_eq!(env.pass(5), Vec::<u64>::new(), "{syntax}");
    }
}

#[test]
fn isoptional_runs_outside_a_set_rather_than_wait() {
    let toml = switches("[nodeset]\npolicy = \"ONEOF\"\nattribute = \"FEATURE\"\noptional = true");
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &toml);
    with_a1_d1_busy(&mut env);
    env.submit(5, 1, 2, 100);
    assert_eq!(env.pass(5), vec![1]);
}

#[test]
fn site_default_applies_when_the_job_names_none() {
    let toml = switches("[nodeset]\npolicy = \"ONEOF\"\nattribute = \"FEATURE\"");
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &toml);
    with_a1_d1_busy(&mut env);
    env.submit(5, 1, 2, 100);
    assert_eq!(env.pass(5), Vec::<u64>::new());
}

#[test]
fn anyof_restricts_to_the_union_of_listed_sets() {
    let c = Cluster::from_toml(&switches(""), "t").unwrap();
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &switches(""));
    env.submit_with_nodeset(0, 1, 2, 100, "ANYOF:PROCSPEED:2000");
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["b1", "d1"]);
}

#[test]
fn firstof_takes_the_first_listed_set_that_fits() {
    let c = Cluster::from_toml(&switches(""), "t").unwrap();
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &switches(""));
    env.submit_with_nodeset(0, 1, 2, 100, "FIRSTOF:FEATURE:switchB,switchA");
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["c1", "d1"]);
}

#[test]
fn procspeed_sets_and_tolerance() {
    let c = Cluster::from_toml(&switches(""), "t").unwrap();
    // ONEOF:PROCSPEED: a 2-node job takes two nodes of one speed
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &switches(""));
    env.submit_with_nodeset(0, 1, 2, 100, "ONEOF:PROCSPEED");
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["a1", "c1"]);
    // a 3-node job never fits one speed; with TOLERANCE 1.0, 1000 and 2000 may mix
    let toml = switches("[nodeset]\npolicy = \"ONEOF\"\nattribute = \"PROCSPEED\"\ntolerance = 0.5");
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &toml);
    env.submit(0, 2, 3, 100);
    assert_eq!(env.pass(0), vec![2]);
    assert_eq!(env.engine.dropped_nodesets(), 1, "no 0.5-tolerant set has 3 nodes: the set is dropped");
    let toml = switches("[nodeset]\npolicy = \"ONEOF\"\nattribute = \"PROCSPEED\"\ntolerance = 1.0");
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &toml);
    env.submit(0, 3, 3, 100);
    assert_eq!(env.pass(0), vec![3]);
    assert_eq!(env.engine.dropped_nodesets(), 0, "(2000 - 1000) / 1000 <= 1.0");
}

#[test]
fn priority_types_choose_among_usable_sets() {
    let base = |priority: &str| switches(&format!("[nodeset]\npolicy = \"ONEOF\"\nattribute = \"FEATURE\"\npriority = \"{priority}\""));
    let c = Cluster::from_toml(&base("FIRSTFIT"), "t").unwrap();
    // one node busy on switchA (a1): switchA has 1 free, switchB 2 free
    let run = |priority: &str| {
        let mut env = TestEnv::cluster(PolicyKind::Fcfs, &base(priority));
        env.submit(0, 100, 1, 1000);
        assert_eq!(env.pass(0), vec![100]); // a1
        env.submit(0, 1, 1, 100);
        assert_eq!(env.pass(0), vec![1]);
        names(&env, &c, 1)
    };
    assert_eq!(run("FIRSTFIT"), vec!["b1"], "switchA is first");
    assert_eq!(run("BESTFIT"), vec!["b1"], "switchA has fewer free nodes");
    assert_eq!(run("WORSTFIT"), vec!["c1"], "switchB has more free nodes");
}

#[test]
fn bestresource_and_minloss_prefer_fast_and_homogeneous_sets() {
    let c = Cluster::from_toml(&switches(""), "t").unwrap();
    let speed = |priority: &str| switches(&format!("[nodeset]\npolicy = \"ONEOF\"\nattribute = \"PROCSPEED\"\npriority = \"{priority}\""));
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &speed("BESTRESOURCE"));
    env.submit(0, 1, 2, 100);
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["b1", "d1"], "the fastest set");
    // FEATURE sets mix speeds (a1 slow + b1 fast); MINLOSS prefers the set that
    // loses least: with b1 busy, switchA offers {a1} ... so make both sets mixed
    // and compare with FIRSTFIT on a job of one node
    let feat = |priority: &str| switches(&format!("[nodeset]\npolicy = \"ONEOF\"\nattribute = \"FEATURE\"\npriority = \"{priority}\""));
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &feat("MINLOSS"));
    env.submit(0, 100, 1, 1000); // a1 busy: switchA = {b1}, switchB = {c1, d1}
    assert_eq!(env.pass(0), vec![100]);
    env.submit(0, 1, 2, 100); // only switchB fits two nodes: c1 + d1, loss > 0
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["c1", "d1"]);
    // with both switches whole, MINLOSS and FIRSTFIT pick switchA for a 2-node job
    // (equal loss); for a 1-node job MINLOSS takes a zero-loss set in order
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &feat("MINLOSS"));
    env.submit(0, 2, 1, 100);
    assert_eq!(env.pass(0), vec![2]);
    assert_eq!(env.placed(&c, 2).1, 1.0);
}

#[test]
fn minloss_picks_the_homogeneous_set_over_a_mixed_one() {
    // sets by NETWORK: "mixed" = {slow, fast}, "even" = {fast, fast}
    let toml = r#"
[[nodetype]]
name = "slow"
nodes = "m1"
cores = 1
hs06_per_core = 10
network = "mixed"

[[nodetype]]
name = "fastmixed"
nodes = "m2"
cores = 1
hs06_per_core = 20
network = "mixed"

[[nodetype]]
name = "fasteven"
nodes = "e[1-2]"
cores = 1
hs06_per_core = 20
network = "even"

[[partition]]
name = "p"
nodes = "m[1-2],e[1-2]"
allocation = "exclusive"
"#;
    let c = Cluster::from_toml(toml, "t").unwrap();
    for (priority, want) in [("FIRSTFIT", vec!["m1", "m2"]), ("MINLOSS", vec!["e1", "e2"])] {
        let mut env = TestEnv::cluster(PolicyKind::Fcfs, toml);
        let spec = format!("ONEOF:NETWORK:mixed,even");
        let mut ns = tessera_core::NodeSetSpec::parse_job(&spec).unwrap();
        ns.priority = priority.parse().unwrap();
        env.submit_full(0, tessera_core::JobSpec::new(tessera_core::JobId(1), 2, 100), Some(ns));
        assert_eq!(env.pass(0), vec![1]);
        assert_eq!(names(&env, &c, 1), want, "{priority}");
    }
}

#[test]
fn affinity_avoids_sets_with_negative_affinity() {
    let toml = switches("[nodeset]\npolicy = \"ONEOF\"\nattribute = \"FEATURE\"\npriority = \"AFFINITY\"").replace("name = \"slowA\"", "name = \"slowA\"\naffinity = \"negative\"");
    let c = Cluster::from_toml(&toml, "t").unwrap();
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &toml);
    env.submit(0, 1, 1, 100);
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["c1"], "switchA holds a1, which has negative affinity");
}

#[test]
fn spanevenly_spreads_a_job_too_big_for_any_set() {
    let c = Cluster::from_toml(&switches(""), "t").unwrap();
    let toml = switches("[nodeset]\npolicy = \"ONEOF\"\nattribute = \"FEATURE\"\nplus = \"SPANEVENLY\"");
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &toml);
    env.submit(0, 1, 4, 100);
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["a1", "b1", "c1", "d1"]);
    assert_eq!(env.engine.dropped_nodesets(), 0);
    // and a 2-node job with one free node per switch spans 1 + 1 at once
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &toml);
    with_a1_d1_busy(&mut env);
    env.submit(5, 2, 2, 100);
    assert_eq!(env.pass(5), vec![2]);
}

#[test]
fn delay_waits_for_one_set_up_to_nodesetdelay_then_spans() {
    let toml = switches("[nodeset]\npolicy = \"ONEOF\"\nattribute = \"FEATURE\"\nplus = \"DELAY\"");
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, &toml);
    with_a1_d1_busy(&mut env);
    env.submit(5, 1, 2, 100);
    assert_eq!(env.pass(5), Vec::<u64>::new());
    assert_eq!(env.pass(104), Vec::<u64>::new(), "99 s waited < NODESETDELAY 100");
    assert_eq!(env.pass(105), vec![1], "100 s waited: span");
}

#[test]
fn nested_sets_are_tried_smallest_first() {
    // blade (2 nodes) < quad (4 nodes): a 2-node job takes a blade, a 3-node job the quad
    let toml = r#"
[[nodetype]]
name = "b1"
nodes = "n[1-2]"
cores = 1
features = ["blade1", "quad1"]

[[nodetype]]
name = "b2"
nodes = "n[3-4]"
cores = 1
features = ["blade2", "quad1"]

[[partition]]
name = "p"
nodes = "n[1-4]"
allocation = "exclusive"
"#;
    let c = Cluster::from_toml(toml, "t").unwrap();
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, toml);
    env.submit(0, 7, 1, 1000); // n1 busy: blade1 has one node left
    assert_eq!(env.pass(0), vec![7]);
    env.submit_with_nodeset(0, 1, 2, 100, "ONEOF:FEATURE:blade1,blade2,quad1");
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["n3", "n4"], "blade2, not the quad");
    env.complete(1, 1);
    env.submit_with_nodeset(1, 2, 3, 100, "ONEOF:FEATURE:blade1,blade2,quad1");
    assert_eq!(env.pass(1), vec![2]);
    assert_eq!(names(&env, &c, 2), vec!["n2", "n3", "n4"], "only quad1 holds 3");
}

#[test]
fn easy_backfills_around_a_head_waiting_for_a_set() {
    let mut env = TestEnv::cluster(PolicyKind::Easy, &switches(""));
    with_a1_d1_busy(&mut env);
    env.submit_with_nodeset(5, 1, 2, 100, "ONEOF:FEATURE:switchA,switchB")
        .submit(5, 2, 1, 10);
    // the head waits for a whole switch: d1 (fast: 1000 reference s = 500 s) frees
    // switchB at 500, its shadow; job 2 ends long before, on a free node
    assert_eq!(env.pass(5), vec![2]);
    assert_eq!(env.engine.head_reservation(5).map(|h| h.1), Some(500));
}

#[test]
fn memory_sets_and_partition_defaults() {
    // two memory sizes; the partition's default node set keeps jobs on one size
    let toml = r#"
[[nodetype]]
name = "small"
nodes = "s[1-2]"
cores = 1
memory = "4G"

[[nodetype]]
name = "big"
nodes = "b[1-2]"
cores = 1
memory = "16G"

[[partition]]
name = "p"
nodes = "s1,b1,s2,b2"
allocation = "exclusive"
nodeset = "ONEOF:MEMORY"
"#;
    let c = Cluster::from_toml(toml, "t").unwrap();
    let mut env = TestEnv::cluster(PolicyKind::Fcfs, toml);
    env.submit(0, 1, 2, 100);
    assert_eq!(env.pass(0), vec![1]);
    assert_eq!(names(&env, &c, 1), vec!["s1", "s2"], "the 4 GiB set, not s1 + b1 in node order");
    // a job's own request overrides the partition default
    env.submit_with_nodeset(0, 2, 1, 100, "ANYOF:MEMORY:16384");
    assert_eq!(env.pass(0), vec![2]);
    assert_eq!(names(&env, &c, 2), vec!["b1"]);
}
