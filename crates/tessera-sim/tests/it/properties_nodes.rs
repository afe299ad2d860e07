//! Properties of the node engine over random heterogeneous clusters and traces.

use crate::common::rec;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use tessera_core::{scaled, Cluster, Effect, Input, JobState, NodeSetSpec, PolicyKind, SetPlus};
use tessera_sim::{prepare_on, simulate, simulate_observed, Machine};
use tessera_workload::swf::SwfRecord;

#[derive(Debug, Clone)]
struct Setup {
    toml: String,
    nodeset: Option<String>,
    recs: Vec<SwfRecord>,
}

/// 1-4 node types of 1-3 nodes, 1-4 cores, factors 1 / 1.5 / 2, on two switches,
/// memory not tracked or 1-2 GiB per core; an exclusive or shared partition; an
/// optional node-set request for every job; jobs asking for no memory or for
/// 256-1024 MiB per processor.
fn arb_setup() -> impl Strategy<Value = Setup> {
    let ntype = (1u32..=3, 1u32..=4, 0usize..3, 0usize..2, 0u32..=2);
    (prop::collection::vec(ntype, 1..=4), any::<bool>(), 0usize..6).prop_flat_map(|(types, exclusive, ns)| {
        let mut toml = String::new();
        let mut names = Vec::new();
        let mut max_procs = 0u32;
        for (k, (count, cores, speed, switch, gib)) in types.iter().enumerate() {
            let hs = [10.0, 15.0, 20.0][*speed];
            let memory = if *gib > 0 { format!("memory = \"{}G\"\n", cores * gib) } else { String::new() };
            toml += &format!(
                "[[nodetype]]\nname = \"t{k}\"\nnodes = \"t{k}n[1-{count}]\"\ncores = {cores}\nhs06_per_core = {hs}\nspeed = {}\nfeatures = [\"switch{}\"]\n{memory}\n",
                [1000, 1500, 2000][*speed],
                ["A", "B"][*switch]
            );
            names.push(format!("t{k}n[1-{count}]"));
            max_procs += count * if exclusive { 1 } else { *cores };
        }
        toml += &format!(
            "[[partition]]\nname = \"p\"\nnodes = \"{}\"\nallocation = \"{}\"\ncores_per_node = 1\n",
            names.join(","),
            if exclusive { "exclusive" } else { "shared" }
        );
        let nodeset = [None, Some("ONEOF:FEATURE"), Some("ONEOF:PROCSPEED"), Some("ANYOF:FEATURE:switchA,switchB"), Some("FIRSTOF:FEATURE:switchB,switchA"), Some("ONEOF:PROCSPEED")][ns].map(String::from);
        let job = (0i64..50, 0i64..40, 1i64..=(max_procs as i64), prop::option::of(1i64..50), prop::option::of(256i64..=1024));
        (Just(toml), Just(nodeset), prop::collection::vec(job, 1..30)).prop_map(|(toml, nodeset, jobs)| {
            let recs = jobs
                .into_iter()
                .enumerate()
                .map(|(i, (s, r, p, e, mem))| SwfRecord { requested_memory: mem.map_or(-1, |m| m * 1024), ..rec(i as i64 + 1, s, r, p, e.unwrap_or(-1)) })
                .collect();
            Setup { toml, nodeset, recs }
        })
    })
}

fn machine(s: &Setup, optional: bool) -> Machine {
    let cluster = Arc::new(Cluster::from_toml(&s.toml, "prop.toml").unwrap());
    let nodeset = s.nodeset.as_deref().map(|t| {
        let mut spec = NodeSetSpec::parse_job(t).unwrap();
        spec.optional = optional;
        spec
    });
    Machine::Cluster {
        cluster,
        partition: None,
        nodeset,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// Every job runs at the pace of its slowest node, for min(runtime, estimate)
    /// reference seconds, never before it was submitted, and no node ever holds more
    /// cores than it has.
    #[test]
    fn jobs_run_at_their_slowest_node_without_overcommit(s in arb_setup(), opt in any::<bool>()) {
        let m = machine(&s, opt);
        let Machine::Cluster { cluster, .. } = &m else { unreachable!() };
        let cluster = cluster.clone();
        for p in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let w = prepare_on(&s.recs, m.clone());
            let o = simulate(&w, p);
            let mut per_node: BTreeMap<(u32, i64), i64> = BTreeMap::new();
            for (i, j) in w.jobs.iter().enumerate() {
                let parts: Vec<_> = o.alloc.get(i).unwrap().collect();
                prop_assert!(o.start[i] >= j.submit);
                let slowest = parts.iter().map(|q| cluster.type_of(q.node as usize).factor).fold(f64::INFINITY, f64::min);
                prop_assert_eq!(o.factor_of(i), slowest);
                prop_assert_eq!(o.end[i] - o.start[i], scaled(j.runtime.min(j.estimate), slowest), "{} job {}", p, j.id);
                if o.end[i] > o.start[i] {
                    for q in &parts {
                        *per_node.entry((q.node, o.start[i])).or_default() += q.cores as i64;
                        *per_node.entry((q.node, o.end[i])).or_default() -= q.cores as i64;
                    }
                }
            }
            let mut used: BTreeMap<u32, i64> = BTreeMap::new();
            for ((node, t), d) in per_node {
                let u = used.entry(node).or_default();
                *u += d;
                prop_assert!(*u <= cluster.nodes[node as usize].cores as i64, "{} node {} over-committed at {}", p, node, t);
            }
        }
    }

    /// Without ISOPTIONAL, a ONEOF / FIRSTOF job that was not dropped runs inside one
    /// set: all its nodes share the attribute value.
    #[test]
    fn oneof_jobs_stay_inside_one_set(s in arb_setup()) {
        prop_assume!(s.nodeset.as_deref().is_some_and(|n| n.starts_with("ONEOF") || n.starts_with("FIRSTOF")));
        let m = machine(&s, false);
        let Machine::Cluster { cluster, .. } = &m else { unreachable!() };
        let cluster = cluster.clone();
        let by_speed = s.nodeset.as_deref().unwrap().contains("PROCSPEED");
        for p in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let w = prepare_on(&s.recs, m.clone());
            let o = simulate(&w, p);
            if o.dropped_nodesets > 0 {
                continue;
            }
            for parts in o.alloc.iter().flatten() {
                let parts: Vec<_> = parts.collect();
                let key = |n: u32| {
                    let t = cluster.type_of(n as usize);
                    if by_speed { t.speed.to_string() } else { t.features[0].clone() }
                };
                let first = key(parts[0].node);
                prop_assert!(parts.iter().all(|q| key(q.node) == first), "{} spans sets: {:?}", p, parts);
            }
        }
    }

    /// EASY on nodes never starts the head later than its shadow time.
    #[test]
    fn easy_on_nodes_keeps_the_head_reservation(s in arb_setup(), opt in any::<bool>()) {
        let w = prepare_on(&s.recs, machine(&s, opt));
        let mut promised: BTreeMap<u64, i64> = BTreeMap::new();
        let o = simulate_observed(&w, PolicyKind::Easy, |e, now| {
            if let Some((head, shadow)) = e.head_reservation(now) {
                let p = promised.entry(head.0).or_insert(shadow);
                *p = (*p).min(shadow);
            }
        });
        for (job, shadow) in promised {
            prop_assert!(o.start[job as usize] <= shadow);
        }
    }

    /// A pass is idempotent: a second pass at the same instant, with nothing
    /// changed in between, starts, kills or suspends nothing (a live controller
    /// may run passes whenever it likes). The one exception is asked for: a job
    /// started with a limit of 0 s runs out at once, and the engine wakes itself
    /// at that same instant to kill it.
    #[test]
    fn a_second_pass_at_the_same_instant_does_nothing(
        s in arb_setup(),
        opt in any::<bool>(),
        delay in any::<bool>(),
        policy in prop_oneof![Just(PolicyKind::Fcfs), Just(PolicyKind::Easy), Just(PolicyKind::Conservative)],
    ) {
        let mut m = machine(&s, opt);
        if let (true, Machine::Cluster { nodeset: Some(ns), .. }) = (delay, &mut m) {
            ns.plus = SetPlus::Delay;
        }
        let w = prepare_on(&s.recs, m);
        simulate_observed(&w, policy, |e, now| {
            // on a copy: the observer reads the engine the simulator drives
            let (e, mut fx) = (&mut e.clone(), Vec::new());
            e.handle(now, Input::Pass, &mut fx);
            fx.retain(|x| match x {
                Effect::WakeAt(_) => false,
                Effect::Kill { job, .. } => !matches!(e.job(*job), Some((spec, JobState::Ending { start, .. })) if start == now && spec.estimate == 0),
                _ => true,
            });
            assert!(fx.is_empty(), "{policy}: a second pass at {now} did {fx:?}");
        });
    }
}
