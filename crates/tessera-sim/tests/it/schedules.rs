//! Hand-worked schedules through the whole simulator, one per rule of the job
//! semantics and of each policy (runtime = estimate unless a case says otherwise).

use crate::common::{rec, schedule};
use tessera_core::PolicyKind::{self, Conservative, Easy, Fcfs};
use tessera_workload::SkipReason;

const ALL: [PolicyKind; 3] = [Fcfs, Easy, Conservative];

#[test]
fn skipped_jobs_are_counted_by_reason() {
    let r = [
        rec(1, 0, 10, 2, 10),
        rec(2, 0, 10, -1, 10), // no processor count
        rec(3, 0, -1, 2, 10),  // unknown runtime
        rec(4, 0, 10, 9, 10),  // larger than the 8-processor machine
    ];
    let w = tessera_sim::prepare(&r, 8);
    assert_eq!(w.jobs.len(), 1);
    assert_eq!(w.skipped[&SkipReason::NoProcessorCount], 1);
    assert_eq!(w.skipped[&SkipReason::NegativeRuntime], 1);
    assert_eq!(w.skipped[&SkipReason::LargerThanMachine], 1);
}

#[test]
fn a_job_is_killed_at_its_limit() {
    for p in ALL {
        // runs 100 s in the trace but asked for 60: it ends at 60
        assert_eq!(schedule(&[rec(1, 5, 100, 4, 60)], 4, p), vec![(1, 5, 65)], "{p}");
    }
}

#[test]
fn completions_come_before_arrivals_at_the_same_instant() {
    for p in ALL {
        let s = schedule(&[rec(1, 0, 10, 4, 10), rec(2, 10, 5, 4, 5)], 4, p);
        assert_eq!(s, vec![(1, 0, 10), (2, 10, 15)], "{p}");
    }
}

#[test]
fn arrivals_at_one_instant_are_queued_by_job_id() {
    for p in ALL {
        // listed out of order in the file; job 3 arrives first in queue order
        let s = schedule(&[rec(5, 0, 10, 4, 10), rec(3, 0, 10, 4, 10)], 4, p);
        assert_eq!(s, vec![(3, 0, 10), (5, 10, 20)], "{p}");
    }
}

/// A zero-length job ends at the instant it starts; its completion is handled in
/// a further round at that instant, so the job behind it starts at once.
#[test]
fn zero_length_jobs_end_in_a_further_round_of_the_same_instant() {
    for p in ALL {
        let s = schedule(&[rec(1, 0, 0, 4, -1), rec(2, 0, 10, 4, -1), rec(3, 0, 0, 4, -1)], 4, p);
        assert_eq!(s, vec![(1, 0, 0), (2, 0, 10), (3, 10, 10)], "{p}");
    }
}

#[test]
fn fcfs_never_overtakes() {
    let r = [rec(1, 0, 100, 6, 100), rec(2, 1, 10, 6, 10), rec(3, 2, 10, 1, 10)];
    assert_eq!(schedule(&r, 10, Fcfs), vec![(1, 0, 100), (2, 100, 110), (3, 100, 110)]);
}

/// EASY: at 10 the head (job 3) needs 6 with 2 free; job 1 frees 4 at 40, so the
/// shadow is 40 and extra = 2 + 4 - 6 = 0. Jobs 5 and 7 end by 40 and backfill;
/// job 4 would end after 40 and job 6 needs more than is free. The head starts at
/// its shadow time and takes every free processor, so 4 and 6 wait until 70.
#[test]
fn easy_shadow_and_extra() {
    let r = [
        rec(1, 0, 40, 4, 40),
        rec(2, 0, 100, 4, 100),
        rec(3, 10, 30, 6, 30), // head at 10: needs 6, 2 free
        rec(4, 10, 50, 1, 50),
        rec(5, 10, 30, 1, 30),
        rec(6, 10, 5, 2, 5),
        rec(7, 10, 10, 1, 10),
    ];
    assert_eq!(
        schedule(&r, 10, Easy),
        vec![(1, 0, 40), (2, 0, 100), (3, 40, 70), (4, 70, 120), (5, 10, 40), (6, 70, 75), (7, 10, 20)]
    );
}

/// EASY lets X (ends by the head's shadow) delay Y; conservative protects Y.
#[test]
fn easy_and_conservative_differ() {
    let r = [
        rec(1, 0, 100, 5, 100),
        rec(2, 0, 50, 3, 50),
        rec(10, 1, 100, 10, 100), // H
        rec(20, 1, 40, 4, 40),    // Y
        rec(30, 1, 80, 2, 80),    // X
    ];
    assert_eq!(
        schedule(&r, 10, Easy),
        vec![(1, 0, 100), (2, 0, 50), (10, 100, 200), (20, 200, 240), (30, 1, 81)]
    );
    assert_eq!(
        schedule(&r, 10, Conservative),
        vec![(1, 0, 100), (2, 0, 50), (10, 100, 200), (20, 50, 90), (30, 200, 280)]
    );
}

/// Reservations are recomputed in queue order at every pass, so an early end can
/// move a later job's reservation *later*: J2 held [60, 100) behind J1's [100, 200);
/// when X ends at 30 instead of 100, J1 moves to [60, 160) and J2, whose 40 s no
/// longer fit in [30, 60), goes to 160. (The "can only move earlier" holds
/// for the first queued job, and for every job when estimates are exact.)
#[test]
fn conservative_recomputation_can_push_a_later_reservation_back() {
    let r = [
        rec(1, 0, 30, 5, 100), // X: ends early, at 30
        rec(2, 0, 60, 5, 60),  // Y
        rec(3, 1, 100, 10, 100),
        rec(4, 1, 40, 5, 40),
    ];
    assert_eq!(
        schedule(&r, 10, Conservative),
        vec![(1, 0, 30), (2, 0, 60), (3, 60, 160), (4, 160, 200)]
    );
}

/// On a cluster: a job is placed on a slow and a fast node, runs at the slow
/// node's pace, and is killed at its limit scaled by that pace; a one-node job on
/// the fast node runs twice as fast. Jobs CSV carries raw and normalized seconds.
#[test]
fn mixed_speeds_in_the_simulator() {
    let toml = "[[nodetype]]\nname = \"slow\"\nnodes = \"s1\"\ncores = 1\nhs06_per_core = 10\n\n\
                [[nodetype]]\nname = \"fast\"\nnodes = \"f1\"\ncores = 1\nhs06_per_core = 20\n";
    let cluster = std::sync::Arc::new(tessera_core::Cluster::from_toml(toml, "t").unwrap());
    let recs = [
        rec(1, 0, 100, 2, 200), // both nodes: pace 1, 100 s
        rec(2, 100, 300, 1, 100), // s1 first: killed at 100 s
        rec(3, 100, 300, 1, 100), // f1: pace 2, limit 50 s
        rec(4, 150, 60, 1, 100),  // f1 frees at 150, s1 is busy: 30 s
    ];
    let w = tessera_sim::prepare_on(&recs, tessera_sim::Machine::Cluster { cluster, partition: None, nodeset: None });
    let o = tessera_sim::simulate(&w, Fcfs);
    let got: Vec<(i64, i64, f64)> = (0..4).map(|i| (o.start[i], o.end[i], o.factor_of(i))).collect();
    assert_eq!(got, vec![(0, 100, 1.0), (100, 200, 1.0), (100, 150, 2.0), (150, 180, 2.0)]);
    let mut csv = Vec::new();
    tessera_sim::output::write_jobs_csv(&mut csv, &w, &o).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert!(csv.contains("\n3,100,100,150,1,100,0,1,2,50,100,\"f1\"\n"), "{csv}");
    assert!(csv.contains("\n1,0,0,100,2,200,0,0,1,100,100,\"s1,f1\"\n"), "{csv}");
}

#[test]
fn a_preceding_job_and_think_time_hold_a_job_until_then() {
    use tessera_workload::swf::SwfRecord;
    let after = |r: SwfRecord, p: i64, think: i64| SwfRecord { preceding_job: p, think_time: think, ..r };
    for p in ALL {
        let r = [
            rec(1, 0, 100, 2, 100),
            // after job 1 ends (100) and 20 s of thinking; it keeps its place
            after(rec(2, 0, 10, 2, 10), 1, 20),
            // its preceding job ended (at 100) before it came (at 150): it waits
            // until 190
            after(rec(3, 150, 10, 2, 10), 1, 90),
            // a preceding job later in the trace, or not in it: no dependency
            after(rec(4, 0, 10, 2, 10), 5, 0),
            after(rec(5, 1, 10, 2, 10), 99, 0),
            // a preceding job that came after the first job to name one
            after(rec(6, 195, 10, 2, 10), 3, 5),
        ];
        assert_eq!(schedule(&r, 8, p), vec![(1, 0, 100), (2, 120, 130), (4, 0, 10), (5, 1, 11), (3, 190, 200), (6, 205, 215)], "{p}");
    }
}
