//! A replay fed as its trace is read (`simulate_fed`) against the same jobs
//! held whole (`simulate`): the same schedule, and a halt where the jobs come
//! out of queue order, could pass the clock's end, or the reader fails.

use crate::common::rec;
use proptest::prelude::*;
use std::sync::mpsc;
use std::sync::Arc;
use tessera_core::{Cluster, PolicyKind, MAX_TIME};
use tessera_sim::{prepare_on, simulate, simulate_fed, Fed, Fedout, Halt, Machine, Workload};
use tessera_workload::swf::SwfRecord;

/// Hand `w`'s jobs to a fed replay in chunks of `chunk`, from a reader thread
/// that keeps at most one chunk ahead.
fn fed(w: &Workload, policy: PolicyKind, chunk: usize) -> Fedout {
    let (tx, rx) = mpsc::sync_channel(1);
    let jobs: Vec<_> = w.jobs.iter().cloned().zip(w.record_index.iter().copied()).collect();
    let reader = std::thread::spawn(move || {
        for c in jobs.chunks(chunk) {
            tx.send(Fed::Jobs(c.to_vec())).unwrap();
        }
    });
    let out = simulate_fed(&w.machine, policy, &rx);
    reader.join().unwrap();
    out
}

/// Hand `jobs` (job, record index) over all at once, then `last`.
fn fed_at_once(machine: &Machine, jobs: Vec<(tessera_workload::jobs::TraceJob, u32)>, last: Option<Fed>) -> Fedout {
    let (tx, rx) = mpsc::channel();
    tx.send(Fed::Jobs(jobs)).unwrap();
    if let Some(l) = last {
        tx.send(l).unwrap();
    }
    drop(tx);
    simulate_fed(machine, PolicyKind::Easy, &rx)
}

fn cluster(toml: &str) -> Machine {
    Machine::Cluster { cluster: Arc::new(Cluster::from_toml(toml, "fed.toml").unwrap()), partition: None, nodeset: None }
}

const NODES: &str = "[[nodetype]]\nname = \"a\"\nnodes = \"a[1-3]\"\ncores = 4\nhs06_per_core = 10\nmemory = \"8G\"\n\n[[nodetype]]\nname = \"b\"\nnodes = \"b[1-2]\"\ncores = 2\nhs06_per_core = 20\nmemory = \"2G\"\n";

/// Random jobs (some asking memory, some following an earlier job as SWF's
/// fields 17 and 18 say) in submission order.
fn arb_records(max_procs: i64) -> impl Strategy<Value = Vec<SwfRecord>> {
    let job = (0i64..40, 0i64..60, 1i64..=max_procs, prop::option::of(1i64..80), prop::option::of(256i64..=3072), prop::option::of((1i64..12, 0i64..20)));
    prop::collection::vec(job, 1..60).prop_map(|jobs| {
        let mut submit = 0;
        jobs.into_iter()
            .enumerate()
            .map(|(i, (gap, run, procs, est, mem, after))| {
                submit += gap;
                let (preceding_job, think_time) = after.map_or((-1, -1), |(back, think)| ((i as i64 + 1 - back).max(1), think));
                SwfRecord { requested_memory: mem.map_or(-1, |m| m * 1024), preceding_job, think_time, ..rec(i as i64 + 1, submit, run, procs, est.unwrap_or(-1)) }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    /// Jobs in queue order fed in handfuls of any size schedule as the
    /// workload whole does, on a pool and on the nodes of a cluster with
    /// memory, under every queue policy.
    #[test]
    fn a_fed_replay_schedules_as_the_workload_whole(recs in arb_records(12), chunk in 1usize..9, nodes in any::<bool>(), p in 0usize..3) {
        let policy = [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative][p];
        let machine = if nodes { cluster(NODES) } else { Machine::Pool(12) };
        let w = prepare_on(&recs, machine);
        let whole = simulate(&w, policy);
        let out = fed(&w, policy, chunk);
        prop_assert_eq!(out.outcome, Ok(whole));
        prop_assert_eq!(&out.jobs, &w.jobs);
        prop_assert_eq!(&out.record_index, &w.record_index);
    }
}

/// A job submitted before the one fed before it halts the replay, which
/// still takes every job fed after it.
#[test]
fn a_job_out_of_queue_order_halts_the_replay() {
    let w = prepare_on(&[rec(1, 0, 10, 1, 20), rec(2, 5, 10, 1, 20), rec(3, 9, 10, 1, 20)], Machine::Pool(4));
    let mut jobs: Vec<_> = w.jobs.iter().cloned().zip(0u32..).collect();
    jobs.swap(1, 2);
    let out = fed_at_once(&w.machine, jobs, None);
    assert_eq!(out.outcome, Err(Halt::Unsorted));
    assert_eq!(out.record_index, [0, 2, 1]);
    // the same submit time in file order is queue order; the same in reverse is not
    let same = prepare_on(&[rec(1, 3, 10, 1, 20), rec(2, 3, 10, 1, 20)], Machine::Pool(4));
    let keyed: Vec<_> = same.jobs.iter().cloned().zip(0u32..).collect();
    assert!(fed_at_once(&same.machine, keyed.clone(), None).outcome.is_ok());
    let reversed = keyed.into_iter().rev().collect();
    assert_eq!(fed_at_once(&same.machine, reversed, None).outcome, Err(Halt::Unsorted));
}

/// Jobs that could take the clock past 2^42 s halt the replay before it
/// gets there, and a reader that fails halts it too.
#[test]
fn a_replay_past_the_clock_or_of_a_failed_reader_halts() {
    let far = prepare_on(&[rec(1, 0, 10, 1, 20), rec(2, MAX_TIME - 100, 50, 1, 200)], Machine::Pool(4));
    assert!(far.check_time_range("far.swf").is_err());
    let out = fed_at_once(&far.machine, far.jobs.iter().cloned().zip(0u32..).collect(), None);
    assert_eq!((out.outcome, out.jobs.len()), (Err(Halt::BeyondTimeRange), 2));
    let w = prepare_on(&[rec(1, 0, 10, 1, 20)], Machine::Pool(4));
    let out = fed_at_once(&w.machine, w.jobs.iter().cloned().zip(0u32..).collect(), Some(Fed::Failed));
    assert_eq!(out.outcome, Err(Halt::Failed));
}
