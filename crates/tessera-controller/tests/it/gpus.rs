//! Live GPU jobs: `--gpus`/`--gpus-per-node`, or the partition's
//! `default_gpus_per_node`, reach the allocation and the accounting record.

use tessera_controller::request::validate;
use tessera_controller::state::{Action, Event, State};
use tessera_core::{Cluster, Engine, PolicyKind};
use crate::request;
use tessera_proto::api::JobExit;

const CLUSTER: &str = r#"
[[nodetype]]
name = "g"
nodes = "g[1-2]"
cores = 8
memory = "64G"
gpus = 4

[[partition]]
name = "gpu"
nodetypes = ["g"]
default_gpus_per_node = 1
"#;

#[test]
fn gpu_requests_reach_the_allocation_and_the_record() {
    let mut c = Cluster::from_toml(CLUSTER, "gpu.toml").unwrap();
    let cases: [(&[(&str, &str)], u32, u32); 4] = [
        // (options, GPUs per node, nodes)
        (&[("-n", "2")], 1, 1),
        (&[("-n", "2"), ("--gpus-per-node", "3")], 3, 1),
        (&[("-N", "2"), ("--gpus", "4")], 2, 2),
        (&[("-n", "2"), ("--gpus-per-node", "0")], 0, 1),
    ];
    for (opts, per_node, _) in cases {
        assert_eq!(validate(&request(opts), &c, 3600).unwrap().gpus_per_node, per_node, "{opts:?}");
    }
    let e = validate(&request(&[("-n", "2"), ("--gpus-per-node", "5")]), &c, 3600).unwrap_err().to_string();
    assert!(e.contains("--gpus-per-node") && e.contains("5"), "{e}");

    let mut s = State::new(Engine::with_cluster(PolicyKind::Fcfs, &c).unwrap(), &c, 0, 5);
    let mut out = Vec::new();
    s.apply(&mut c, 0, &[Event::AgentUp { agent: "a".into(), nodes: vec![0, 1] }], &mut out);
    for (k, (opts, _, _)) in cases.iter().enumerate() {
        let req = Box::new(validate(&request(opts), &c, 3600).unwrap());
        // one at a time, so that each runs whatever the others hold
        s.apply(&mut c, 10 * k as i64 + 1, &[Event::Submit { first: k as u64 + 1, user: "u".into(), uid: 1000, gid: 1000, req }], &mut out);
        let exit = JobExit { job: k as u64 + 1, attempt: 1, code: Some(0), signal: None, cpu_s: 1.0, start: 10 * k as i64 + 1, end: 10 * k as i64 + 5, limit_hit: false, failure: None, usage: None };
        s.apply(&mut c, 10 * k as i64 + 5, &[Event::Ended(exit)], &mut out);
    }
    let records: Vec<_> = out.iter().filter_map(|a| if let Action::Record(r) = a { Some(r) } else { None }).collect();
    assert_eq!(records.len(), cases.len());
    for (r, (opts, per_node, nodes)) in records.iter().zip(cases) {
        assert_eq!(r.allocations.len() as u32, nodes, "{opts:?}: {:?}", r.allocations);
        assert!(r.allocations.iter().all(|a| a.gpus == per_node), "{opts:?}: {:?}", r.allocations);
    }
}

/// A live job that gives neither `--mem` nor `--mem-per-cpu` asks its
/// partition's `def_mem_per_cpu` (Slurm's DefMemPerCPU) per processor; one
/// that gives either asks what it gives.
#[test]
fn a_job_without_memory_asks_its_partitions_default() {
    let c = Cluster::from_toml(&CLUSTER.replace("default_gpus_per_node = 1", "def_mem_per_cpu = \"3G\""), "mem.toml").unwrap();
    for (opts, want) in [(&[("-n", "2")][..], 3072), (&[("-n", "2"), ("--mem-per-cpu", "1G")][..], 1024), (&[("-n", "2"), ("--mem", "8G")][..], 4096)] {
        assert_eq!(validate(&request(opts), &c, 3600).unwrap().mem_per_proc_mb, want, "{opts:?}");
    }
    let c = Cluster::from_toml(CLUSTER, "gpu.toml").unwrap();
    assert_eq!(validate(&request(&[("-n", "2")]), &c, 3600).unwrap().mem_per_proc_mb, 0, "no default: none");
}

/// A partition's DefaultTime is the limit of a job that gives none (its
/// MaxTime if it has no DefaultTime, the controller's default if neither);
/// `--time` above MaxTime is refused, and UNLIMITED is MaxTime (Slurm's
/// PartitionTimeLimit).
#[test]
fn a_partitions_default_and_max_time_bound_a_jobs_limit() {
    let with = |extra: &str| Cluster::from_toml(&CLUSTER.replace("default_gpus_per_node = 1", extra), "t.toml").unwrap();
    let limit = |c: &Cluster, opts: &[(&str, &str)]| validate(&request(opts), c, 3600).map(|r| r.limit_s);
    let both = with("max_time = \"2-00:00:00\"\ndefault_time = \"30\"");
    assert_eq!(limit(&both, &[("-n", "1")]).unwrap(), 1800);
    assert_eq!(limit(&both, &[("-n", "1"), ("--time", "1-00:00:00")]).unwrap(), 86_400);
    assert_eq!(limit(&both, &[("-n", "1"), ("--time", "UNLIMITED")]).unwrap(), 2 * 86_400);
    let e = limit(&both, &[("-n", "1"), ("--time", "3-00:00:00")]).unwrap_err().to_string();
    assert!(e.contains("--time") && e.contains("at most the partition's MaxTime, 2-00:00:00 (PartitionTimeLimit)"), "{e}");
    assert_eq!(limit(&with("max_time = \"04:00:00\""), &[("-n", "1")]).unwrap(), 4 * 3600, "MaxTime without DefaultTime");
    assert_eq!(limit(&with(""), &[("-n", "1")]).unwrap(), 3600, "neither: the controller's default");
}

#[test]
fn named_nodes_are_the_partitions_and_found_by_name() {
    let c = Cluster::from_toml(CLUSTER, "gpu.toml").unwrap();
    let r = validate(&request(&[("-w", "g2"), ("-n", "2")]), &c, 3600).unwrap();
    assert_eq!(r.choice(&c).include, vec![1]);
    let r = validate(&request(&[("-x", "g1"), ("-n", "2")]), &c, 3600).unwrap();
    assert_eq!((r.choice(&c).include, r.choice(&c).exclude), (vec![], vec![0]));
    // a list longer than the partition is refused before it is built
    let e = validate(&request(&[("-w", "g[1-3]")]), &c, 3600).unwrap_err().to_string();
    assert!(e.contains("of partition gpu's nodes") && e.contains("range `1-3` is larger than 2"), "{e}");
    let e = validate(&request(&[("-w", "h1")]), &c, 3600).unwrap_err().to_string();
    assert!(e.contains("nodes of partition gpu (`h1` is not)"), "{e}");
}
