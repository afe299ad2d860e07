//! The report of a power-budgeted run: its machine is one pool of whole nodes
//! (PARM sizes jobs in nodes, resizes them while they run and names no node).

use tessera_accounting::store::{AllocationRecord, JobRecord, NodeRecord, PowerRow, RunInfo, RunKind, Store};
use tessera_core::CanonicalUnit;
use tessera_report::run::RunData;

fn job(id: i64, submit: i64, start: i64, end: i64, cores: u32) -> JobRecord {
    let alloc = vec![AllocationRecord { node: 0, cores, memory_mb: 0, gpus: 0 }];
    JobRecord { user: "user1".into(), group: "group1".into(), account: "group1".into(), ..JobRecord::completed(id, submit, start, end, alloc) }
}

fn sample(time: i64, busy_nodes: u32) -> PowerRow {
    PowerRow { time, power_w: 100.0 * busy_nodes as f64, budget_w: 1000.0, busy_nodes, cap_mean_w: None, cap_min_w: None, cap_max_w: None }
}

/// 10 nodes of 4 cores as one pool (unit: one node). Job 1 starts on 6 nodes at
/// 0 and is shrunk to 2 at 500 (PARM), job 2 runs on 8 nodes over [500, 1000):
/// their records hold their starting sizes (14 nodes at once from 500 on),
/// the samples what the machine gave (6, then 10 nodes busy).
fn pooled_run() -> (Store, i64) {
    let mut store = Store::in_memory().unwrap();
    let pool = NodeRecord {
        name: "pn[01-10]".into(),
        node_type: "pn".into(),
        partition: "batch".into(),
        cores: 40,
        memory_mb: 0,
        gpus: 0,
        hs06_per_core: None,
        factor: 1.0,
        unit: CanonicalUnit { cores: 4, memory_mb: 0, gpus: 0 },
        valid_from: 0,
    };
    let run = RunInfo { kind: RunKind::Simulation, label: "t".into(), site: "s".into(), cluster: "tiny-power".into(), policy: "parm".into(), epoch_offset: 0, recorded_at: 0 };
    let id = store.record_run_with_power(&run, &[pool], &[sample(0, 6), sample(500, 10), sample(1000, 0)], vec![job(1, 0, 0, 1000, 24), job(2, 0, 500, 1000, 32)]).unwrap();
    (store, id)
}

#[test]
fn a_pooled_run_counts_its_nodes_and_its_utilization_from_the_samples() {
    let (store, id) = pooled_run();
    let d = RunData::load(&store, id, Default::default()).unwrap();
    assert!(d.pooled);
    assert_eq!((d.nodes, d.cores), (10, 40), "the pool is 10 nodes of 4 cores, not one node");
    // (6 × 500 + 10 × 500) node-seconds of 10 × 1000; the records' sizes would give 1.0
    assert_eq!(d.metrics.utilization, Some(0.8));
    let page = d.page().render();
    assert!(page.contains("cluster tiny-power at site s: 10 nodes, 40 cores (one pool of whole nodes"), "{page}");
    assert!(page.contains("<td>utilization</td><td>80.0%</td>") && page.contains("<td>nodes</td><td>10</td>"));
    assert!(page.contains("Usage and bills count each job at the size it started at"));
}

#[test]
fn a_pooled_runs_flagged_intervals_name_no_node() {
    let (store, id) = pooled_run();
    let page = RunData::load(&store, id, Default::default()).unwrap().page().render();
    let rest = &page[page.find("Longest flagged intervals").unwrap()..];
    let header = &rest[rest.find("<thead>").unwrap()..rest.find("</thead>").unwrap()];
    assert_eq!(header, "<thead><tr><th>from (s)</th><th>to (s)</th><th>hours</th><th>nodes idle</th><th>waiting job</th><th>its nodes</th></tr>");
    assert!(rest.contains("no node is named"));
    assert!(!page.contains("<td>pn[01-10]</td>"), "no row names the pool as a node");
}
