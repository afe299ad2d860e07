//! Properties of every policy over random traces (proptest), checked against the
//! naive reference simulator and against the invariants each policy promises.

use crate::common::{rec, run};
use proptest::prelude::*;
use std::collections::BTreeMap;
use tessera_core::{PendingReason, PolicyKind};
use tessera_sim::reference::simulate_reference;
use tessera_sim::simulate_observed;
use tessera_workload::swf::SwfRecord;

/// Random traces: bursts of arrivals (shared instants), zero runtimes, missing and
/// wrong estimates (some jobs are killed at their limit), jobs too large to run.
fn arb_trace(exact: bool) -> impl Strategy<Value = (u32, Vec<SwfRecord>)> {
    (1u32..=16).prop_flat_map(move |cap| {
        let job = (0i64..60, 0i64..40, 1i64..=(cap as i64 + 1), prop::option::of(0i64..50));
        (Just(cap), prop::collection::vec(job, 1..45)).prop_map(move |(cap, jobs)| {
            let recs = jobs
                .into_iter()
                .enumerate()
                .map(|(i, (submit, run, procs, est))| {
                    let (run, req) = if exact { (run.max(1), run.max(1)) } else { (run, est.unwrap_or(-1)) };
                    rec(i as i64 + 1, submit, run, procs, req)
                })
                .collect();
            (cap, recs)
        })
    })
}

const POLICIES: [PolicyKind; 3] = [PolicyKind::Fcfs, PolicyKind::Easy, PolicyKind::Conservative];

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    /// The engine's schedule is exactly the naive reference's, for every policy.
    #[test]
    fn engine_matches_the_naive_reference((cap, recs) in arb_trace(false)) {
        for p in POLICIES {
            let (w, o) = run(&recs, cap, p);
            let r = simulate_reference(&w, p);
            prop_assert_eq!(&o.start, &r.start, "{} starts", p);
            prop_assert_eq!(&o.end, &r.end, "{} ends", p);
        }
    }

    /// The node engine on a single node of `cap` cores schedules exactly like the
    /// pool engine: the node-level rules reduce to the pool's.
    #[test]
    fn one_node_cluster_schedules_like_the_pool((cap, recs) in arb_trace(false)) {
        let cluster = std::sync::Arc::new(tessera_core::Cluster::pool(cap));
        for p in POLICIES {
            let (_, pool) = run(&recs, cap, p);
            let w = tessera_sim::prepare_on(&recs, tessera_sim::Machine::Cluster { cluster: cluster.clone(), partition: None, nodeset: None });
            let nodes = tessera_sim::simulate(&w, p);
            prop_assert_eq!(&pool.start, &nodes.start, "{} starts", p);
            prop_assert_eq!(&pool.end, &nodes.end, "{} ends", p);
        }
    }

    /// No job starts before it is submitted, every job runs min(runtime, estimate),
    /// and the processors in use never exceed the machine.
    #[test]
    fn no_overcommit_and_no_start_before_submit((cap, recs) in arb_trace(false)) {
        for p in POLICIES {
            let (w, o) = run(&recs, cap, p);
            let mut delta: BTreeMap<i64, i64> = BTreeMap::new();
            for (i, j) in w.jobs.iter().enumerate() {
                prop_assert!(o.start[i] >= j.submit, "{} job {} starts before submit", p, j.id);
                prop_assert_eq!(o.end[i] - o.start[i], j.runtime.min(j.estimate));
                *delta.entry(o.start[i]).or_default() += j.procs as i64;
                *delta.entry(o.end[i]).or_default() -= j.procs as i64;
            }
            let mut used = 0;
            for (t, d) in delta {
                used += d;
                prop_assert!(used <= cap as i64, "{} uses {} of {} at {}", p, used, cap, t);
            }
        }
    }

    /// FCFS starts jobs in queue order.
    #[test]
    fn fcfs_starts_in_queue_order((cap, recs) in arb_trace(false)) {
        let (_, o) = run(&recs, cap, PolicyKind::Fcfs);
        prop_assert!(o.start.windows(2).all(|s| s[0] <= s[1]));
    }

    /// EASY never delays the head of the queue beyond its reservation: once a job is
    /// the blocked head with shadow time S, it starts by S.
    #[test]
    fn easy_never_delays_the_head_beyond_its_reservation((cap, recs) in arb_trace(false)) {
        let w = tessera_sim::prepare(&recs, cap);
        let mut promised: BTreeMap<u64, i64> = BTreeMap::new();
        let o = simulate_observed(&w, PolicyKind::Easy, |e, now| {
            if let Some((head, shadow)) = e.head_reservation(now) {
                let p = promised.entry(head.0).or_insert(shadow);
                *p = (*p).min(shadow);
            }
        });
        for (job, shadow) in promised {
            prop_assert!(o.start[job as usize] <= shadow, "job {} starts at {} after its reservation {}", w.jobs[job as usize].id, o.start[job as usize], shadow);
        }
    }

    /// Conservative backfilling never delays a reservation when estimates are exact:
    /// every job starts at the reservation it got at the first pass that saw it.
    #[test]
    fn conservative_keeps_every_reservation_with_exact_estimates((cap, recs) in arb_trace(true)) {
        let w = tessera_sim::prepare(&recs, cap);
        let mut first: BTreeMap<u64, i64> = BTreeMap::new();
        let o = simulate_observed(&w, PolicyKind::Conservative, |e, now| {
            for job in e.queue().collect::<Vec<_>>() {
                let at = match e.pending_reason(now, job) {
                    Some(PendingReason::ReservedFor { start }) => start,
                    other => panic!("a queued job under conservative must hold a reservation, not {other:?}"),
                };
                first.entry(job.0).or_insert(at);
            }
        });
        for (i, s) in o.start.iter().enumerate() {
            if let Some(&r) = first.get(&(i as u64)) {
                prop_assert_eq!(*s, r, "job {} started at {} instead of its reservation {}", w.jobs[i].id, s, r);
            }
        }
    }

    /// With any estimates, the reservation of the job at the head of the queue never
    /// moves later (jobs behind it may: see the hand-worked case in schedules.rs).
    #[test]
    fn conservative_never_delays_the_head_reservation((cap, recs) in arb_trace(false)) {
        let w = tessera_sim::prepare(&recs, cap);
        let mut held: BTreeMap<u64, i64> = BTreeMap::new();
        simulate_observed(&w, PolicyKind::Conservative, |e, now| {
            let head = e.queue().next();
            if let Some(head) = head {
                if let Some(PendingReason::ReservedFor { start }) = e.pending_reason(now, head) {
                    let prev = *held.entry(head.0).or_insert(start);
                    assert!(start <= prev, "head reservation moved from {prev} to {start}");
                    held.insert(head.0, start);
                }
            }
        });
    }
}
