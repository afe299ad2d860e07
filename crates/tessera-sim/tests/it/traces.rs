//! The shared real traces: every policy replays each one to plausible metrics, and
//! the simulated SWF output reads back with the waits filled in.

use tessera_core::PolicyKind;
use tessera_sim::output::write_swf;
use tessera_sim::workload::default_capacity;
use tessera_sim::{prepare, simulate, Summary};
use tessera_workload::swf::{from_reader, read_all, SwfReader};
use tessera_workload::traces::{shared_dir_or_skip, shared_trace};

/// Small and medium traces with every policy (the large ones are timed in
/// benchmarks): utilization in (0, 1], waits >= 0, slowdowns >= 1.
#[test]
fn every_policy_gives_plausible_metrics_on_real_traces() {
    let Some(_) = shared_dir_or_skip("every_policy_gives_plausible_metrics_on_real_traces") else { return };
    for file in ["KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz", "LLNL-Atlas-2006-2.1-cln.swf.gz", "ALCF-Theta-2022-cqsimplus.swf.gz"] {
        let path = shared_trace(file).unwrap();
        let (h, r, _) = SwfReader::read_file(&path, false).unwrap();
        let w = prepare(&r, default_capacity(&h, file).unwrap());
        let mut waits = Vec::new();
        for p in [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative] {
            let s = Summary::compute(file, &w, &simulate(&w, p));
            assert!(s.utilization > 0.0 && s.utilization <= 1.0, "{file} {p}: utilization {}", s.utilization);
            assert!(s.mean_wait >= 0.0 && s.p95_wait >= s.median_wait, "{file} {p}");
            assert!(s.mean_bounded_slowdown >= 1.0 && s.mean_slowdown >= 1.0, "{file} {p}");
            waits.push(s.mean_wait);
        }
        // backfilling never makes the average wait worse than FCFS on these logs
        assert!(waits[1] <= waits[0] && waits[2] <= waits[0], "{file}: mean waits fcfs/easy/conservative {waits:?}");
    }
}

#[test]
fn simulated_swf_reads_back_with_waits() {
    let Some(_) = shared_dir_or_skip("simulated_swf_reads_back_with_waits") else { return };
    let path = shared_trace("KTH-SP2-1996-2.1-cln.swf.gz").unwrap();
    let (h, r, _) = SwfReader::read_file(&path, false).unwrap();
    let w = prepare(&r, 100);
    let o = simulate(&w, PolicyKind::Easy);
    let mut out = Vec::new();
    write_swf(&mut out, &h, "simulated", &r, &w, &o).unwrap();
    let (h2, back, _) = read_all(from_reader(&out[..], "out.swf")).unwrap();
    assert_eq!(h2.max_procs, Some(100));
    assert_eq!(back.len(), w.jobs.len());
    for (i, b) in back.iter().enumerate() {
        assert_eq!(b.wait_time, o.start[i] - w.jobs[i].submit);
        assert_eq!(b.run_time, o.end[i] - o.start[i]);
    }
}

/// Passes are idempotent on a real trace over a heterogeneous cluster with node
/// sets (ONEOF:FEATURE, DELAY): a second pass at the same instant does nothing.
#[test]
fn passes_are_idempotent_on_a_real_trace_with_node_sets() {
    use std::sync::Arc;
    use tessera_core::{Cluster, Effect, Input, JobState, NodeSetSpec, SetPlus};
    let Some(_) = shared_dir_or_skip("passes_are_idempotent_on_a_real_trace_with_node_sets") else { return };
    let path = shared_trace("SDSC-BLUE-2000-4.2-cln.swf.gz").unwrap();
    let (_, mut r, _) = SwfReader::read_file(&path, false).unwrap();
    r.truncate(4_000);
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/sdsc-blue-3gen.toml")).unwrap();
    let cluster = Arc::new(Cluster::from_toml(&text, "sdsc-blue-3gen.toml").unwrap());
    for plus in [SetPlus::Delay, SetPlus::None] {
        let mut ns = NodeSetSpec::parse_job("ONEOF:FEATURE").unwrap();
        ns.plus = plus;
        let w = tessera_sim::prepare_on(&r, tessera_sim::Machine::Cluster { cluster: cluster.clone(), partition: None, nodeset: Some(ns) });
        // conservative's passes are checked on random clusters (properties_nodes)
        for p in [PolicyKind::Easy] {
            tessera_sim::simulate_observed(&w, p, |e, now| {
                // on a copy: the observer reads the engine the simulator drives
                let (e, mut fx) = (&mut e.clone(), Vec::new());
                e.handle(now, Input::Pass, &mut fx);
                fx.retain(|x| match x {
                    Effect::WakeAt(_) => false,
                    Effect::Kill { job, .. } => !matches!(e.job(*job), Some((spec, JobState::Ending { start, .. })) if start == now && spec.estimate == 0),
                    _ => true,
                });
                assert!(fx.is_empty(), "{p} {plus:?}: a second pass at {now} did {fx:?}");
            });
        }
    }
}
