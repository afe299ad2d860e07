//! The pass's shortcuts (a job at least as large as one that could not be placed
//! is not tried again in the same pass; conservative's aggregate bounds, its
//! timeline's cursor and its skipped passes) change no schedule: on random
//! heterogeneous clusters with memory and node sets, every policy starts every
//! job at the same instant as an engine that tries every job.

use crate::env::replay;
use proptest::prelude::*;
use tessera_core::{Cluster, Engine, JobId, JobSpec, PolicyKind, Time};

/// 1-3 node types of 1-4 nodes, 1-4 cores, factor 1 or 1.5, memory not tracked
/// or 256-512 MiB per core (at least 512 MiB); a shared or exclusive partition;
/// perhaps a site node set by processor speed (any policy, priority, plus,
/// optional or not).
/// Jobs ask for no memory or 128-512 MiB per processor (so memory, not cores,
/// often binds), and for no more processors than the machine can ever hold.
pub fn arb_case() -> impl Strategy<Value = (String, Vec<(Time, JobSpec, Time)>)> {
    let ntype = (1u32..=4, 1u32..=4, any::<bool>(), 0u64..=2);
    let nodeset = prop::option::of((0usize..3, 0usize..3, 0usize..3, any::<bool>()));
    (prop::collection::vec(ntype, 1..=3), any::<bool>(), nodeset).prop_flat_map(|(types, exclusive, nodeset)| {
        let mut toml = String::from("nodeset_delay = 20\n");
        // per node type: count, cores, memory (MiB, 0: not tracked)
        let mut shapes = Vec::new();
        for (k, &(count, cores, fast, per_core)) in types.iter().enumerate() {
            let mem = if per_core > 0 { (cores as u64 * 256 * per_core).max(512) } else { 0 };
            let memory = if mem > 0 { format!("memory = \"{mem}M\"\n") } else { String::new() };
            toml += &format!("[[nodetype]]\nname = \"t{k}\"\ncount = {count}\ncores = {cores}\nhs06_per_core = {}\n{memory}\n", if fast { 15.0 } else { 10.0 });
            shapes.push((count, cores, mem));
        }
        let names: Vec<String> = (0..types.len()).map(|k| format!("\"t{k}\"")).collect();
        toml += &format!(
            "[[partition]]\nname = \"p\"\nnodetypes = [{}]\nallocation = \"{}\"\ncores_per_node = 1\n",
            names.join(", "),
            if exclusive { "exclusive" } else { "shared" }
        );
        if let Some((policy, priority, plus, optional)) = nodeset {
            toml += &format!(
                "[nodeset]\npolicy = \"{}\"\nattribute = \"PROCSPEED\"\npriority = \"{}\"\nplus = \"{}\"\noptional = {optional}\n",
                ["ONEOF", "ANYOF", "FIRSTOF"][policy],
                ["FIRSTFIT", "BESTFIT", "MINLOSS"][priority],
                ["NONE", "DELAY", "SPANEVENLY"][plus]
            );
        }
        // the most processors a job of `m` MiB each can ever get
        let most = move |m: u64| -> u32 {
            shapes
                .iter()
                .map(|&(count, cores, mem)| count * if exclusive { 1 } else if mem == 0 || m == 0 { cores } else { cores.min((mem / m) as u32) })
                .sum()
        };
        let job = (0i64..60, 1u32..=16, 1i64..40, prop::option::of(128u64..=512)).prop_flat_map(|(s, p, e, m)| (Just(s), Just(p), Just(e), Just(m), 1i64..=e));
        (Just(toml), prop::collection::vec(job, 1..40)).prop_map(move |(toml, jobs)| {
            let jobs = jobs
                .into_iter()
                .enumerate()
                .map(|(i, (s, p, e, m, r))| {
                    let m = m.unwrap_or(0);
                    (s, JobSpec { mem_per_proc_mb: m, ..JobSpec::new(JobId(i as u64), p.min(most(m)), e) }, r)
                })
                .collect();
            (toml, jobs)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn shortcuts_change_no_schedule((toml, jobs) in arb_case()) {
        let c = Cluster::from_toml(&toml, "shortcuts.toml").unwrap();
        for policy in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let fast = replay(Engine::with_cluster(policy, &c).unwrap(), &jobs);
            let every = replay(Engine::with_cluster(policy, &c).unwrap().without_shortcuts(), &jobs);
            prop_assert_eq!(fast, every, "{}", policy);
        }
    }
}
