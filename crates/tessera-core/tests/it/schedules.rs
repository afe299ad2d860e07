//! Hand-worked passes of each policy, step by step.

use crate::env::TestEnv;
use tessera_core::{PendingReason, PolicyKind};

#[test]
fn fcfs_starts_in_order_and_stops_at_the_first_blocked_job() {
    let mut env = TestEnv::new(PolicyKind::Fcfs, 10);
    env.submit(0, 1, 6, 100).submit(0, 2, 6, 10).submit(0, 3, 1, 10);
    assert_eq!(env.pass(0), vec![1]);
    // job 3 would fit, but FCFS never overtakes the blocked head (job 2)
    assert_eq!(env.reason(0, 2), Some(PendingReason::Resources { needed: 6, free: 4 }));
    assert_eq!(env.reason(0, 3), Some(PendingReason::Priority));
    env.complete(50, 1);
    assert_eq!(env.pass(50), vec![2, 3]);
}

/// Shadow time and the "ends by the shadow" rule: capacity 10, A (4 procs) expected
/// to end at 40, B (4) at 100, 2 free. Head H needs 6: 4 more, released by A at 40,
/// so shadow = 40 and extra = 2 + 4 - 6 = 0. Only jobs that end by 40 backfill.
#[test]
fn easy_backfills_jobs_that_end_by_the_shadow_time() {
    let mut env = TestEnv::new(PolicyKind::Easy, 10);
    env.submit(0, 1, 4, 40).submit(0, 2, 4, 100);
    assert_eq!(env.pass(0), vec![1, 2]);
    env.submit(10, 3, 6, 30) // H: blocked
        .submit(10, 4, 1, 50) // ends at 60 > 40 and extra is 0: waits
        .submit(10, 5, 1, 30) // ends at 40 <= 40: starts
        .submit(10, 6, 2, 5) // 2 > 1 free after job 5: waits
        .submit(10, 7, 1, 10); // ends at 20: starts
    assert_eq!(env.pass(10), vec![5, 7]);
    assert_eq!(env.reason(10, 3), Some(PendingReason::Resources { needed: 6, free: 0 }));
    assert_eq!(env.reason(10, 4), Some(PendingReason::Priority));
}

/// The extra processors: capacity 10, A (4) ends at 40, B (2) at 100, 4 free. Head
/// needs 6: shadow 40, extra = 4 + 4 - 6 = 2. A long 2-processor job takes the
/// extra; after that a long 1-processor job must wait but a short one still runs.
#[test]
fn easy_long_jobs_consume_the_extra_processors() {
    let mut env = TestEnv::new(PolicyKind::Easy, 10);
    env.submit(0, 1, 4, 40).submit(0, 2, 2, 100);
    assert_eq!(env.pass(0), vec![1, 2]);
    env.submit(10, 3, 6, 30) // head, blocked
        .submit(10, 4, 2, 100) // long, 2 <= extra 2: starts, extra -> 0
        .submit(10, 5, 1, 100) // long, extra 0: waits
        .submit(10, 6, 1, 20); // ends at 30 <= 40: starts
    assert_eq!(env.pass(10), vec![4, 6]);
    // the head still starts at its shadow time
    env.complete(30, 6);
    assert_eq!(env.pass(30), Vec::<u64>::new());
    env.complete(40, 1);
    assert_eq!(env.pass(40), vec![3]);
}

/// Every job expected to end by the shadow time counts towards the extra
/// processors, including several ending at the shadow instant itself.
#[test]
fn easy_extra_counts_every_job_ending_at_the_shadow() {
    let mut env = TestEnv::new(PolicyKind::Easy, 10);
    env.submit(0, 1, 3, 50).submit(0, 2, 3, 50).submit(0, 3, 3, 80);
    assert_eq!(env.pass(0), vec![1, 2, 3]);
    // 1 free; head needs 4: job 1 alone (3) makes 4 at 50; job 2 also ends at 50,
    // so extra = 1 + 6 - 4 = 3
    env.submit(5, 4, 4, 100).submit(5, 5, 1, 1000);
    assert_eq!(env.pass(5), vec![5]);
}

/// Conservative backfilling protects every queued job, not only the head: X would
/// delay Y under EASY, so conservative holds it back.
#[test]
fn conservative_protects_later_jobs_where_easy_does_not() {
    for (policy, first_pass) in [(PolicyKind::Easy, vec![30]), (PolicyKind::Conservative, vec![])] {
        let mut env = TestEnv::new(policy, 10);
        env.submit(0, 1, 5, 100).submit(0, 2, 3, 50);
        assert_eq!(env.pass(0), vec![1, 2]);
        env.submit(1, 10, 10, 100) // H: all ten processors, shadow 100
            .submit(1, 20, 4, 40) // Y: 4 free from 50
            .submit(1, 30, 2, 80); // X: fits now and ends by 100
        assert_eq!(env.pass(1), first_pass, "{policy}");
        if policy == PolicyKind::Conservative {
            assert_eq!(env.reason(1, 20), Some(PendingReason::ReservedFor { start: 50 }));
            assert_eq!(env.reason(1, 30), Some(PendingReason::ReservedFor { start: 200 }));
            env.complete(50, 2);
            assert_eq!(env.pass(50), vec![20]);
        } else {
            env.complete(50, 2);
            assert_eq!(env.pass(50), Vec::<u64>::new(), "Y is delayed behind X");
        }
    }
}

/// Reservations are recomputed at every pass: when a job ends before its estimate,
/// a reserved job moves earlier.
#[test]
fn conservative_reservations_move_earlier_on_early_completion() {
    let mut env = TestEnv::new(PolicyKind::Conservative, 10);
    env.submit(0, 1, 10, 100);
    assert_eq!(env.pass(0), vec![1]);
    env.submit(5, 2, 4, 10);
    assert_eq!(env.pass(5), Vec::<u64>::new());
    assert_eq!(env.reason(5, 2), Some(PendingReason::ReservedFor { start: 100 }));
    env.complete(30, 1);
    assert_eq!(env.pass(30), vec![2]);
}

/// Slurm's cadence (the cluster file's `backfill_interval`, Slurm's
/// bf_interval): jobs backfill only in a pass at least that long after the
/// last backfill, and the engine asks to be woken then while jobs wait;
/// between two backfills the head of the queue alone starts, as soon as it
/// fits (Slurm's main scheduler at each completion).
#[test]
fn with_a_backfill_interval_jobs_backfill_only_at_its_instants() {
    use tessera_core::{Effect, Input, JobId, JobSpec};
    for policy in [PolicyKind::Easy, PolicyKind::Conservative] {
        for interval in [None, Some(30)] {
            let bf = interval.map_or(String::new(), |i| format!("backfill_interval = {i}\n"));
            let mut env = TestEnv::cluster(policy, &format!("{bf}[[nodetype]]\nname = \"n\"\ncount = 1\ncores = 10\n"));
            env.submit(0, 1, 6, 100);
            assert_eq!(env.pass(0), vec![1], "{policy} {interval:?}");
            // job 2, the head: 4 free; job 3 fits now, ends by the head's start at 100
            let submit = |id, procs, est| Input::submit(JobSpec::new(JobId(id), procs, est));
            let mut fx = env.take(5, submit(2, 6, 100));
            fx.extend(env.take(5, submit(3, 2, 50)));
            let wakes: Vec<_> = fx.iter().filter(|e| matches!(e, Effect::WakeAt(_))).collect();
            assert_eq!(wakes.len(), fx.len(), "{fx:?}");
            if interval.is_none() {
                assert_eq!(env.pass(5), vec![3], "{policy}: without an interval, every pass backfills");
                continue;
            }
            assert!(wakes.iter().any(|e| matches!(e, Effect::WakeAt(30))), "{policy}: a pass asked for at the next backfill: {fx:?}");
            assert_eq!(env.pass(5), Vec::<u64>::new(), "{policy}: no backfill before 0 + 30");
            assert_eq!(env.pass(29), Vec::<u64>::new(), "{policy}");
            assert_eq!(env.pass(30), vec![3], "{policy}: backfilled at 30");
            assert_eq!(env.pass(30), Vec::<u64>::new(), "{policy}: a second pass at 30 starts nothing");
            // the head starts when its cores come back, between two backfills
            env.complete(40, 1);
            assert_eq!(env.pass(40), vec![2], "{policy}");
            // a job that cannot start first waits for the backfill at 60 or later
            env.submit(45, 4, 1, 100);
            assert_eq!(env.pass(45), vec![4], "{policy}: the head of the queue starts between backfills");
            env.submit(46, 5, 8, 10).submit(46, 6, 1, 5);
            assert_eq!(env.pass(46), Vec::<u64>::new(), "{policy}: job 6 would backfill, but the last backfill was at 30");
            assert_eq!(env.pass(60), vec![6], "{policy}");
        }
    }
}
