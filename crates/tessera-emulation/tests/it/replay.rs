//! A replay's plan: the simulator's jobs, when each is submitted.

use std::sync::Arc;
use tessera_emulation::replay::{parse_shrink, plan, Pace};
use tessera_workload::swf::SwfRecord;

fn job(id: i64, submit: i64, procs: i64, run: i64) -> SwfRecord {
    SwfRecord { submit_time: submit, run_time: run, allocated_procs: procs, requested_procs: procs, requested_time: run * 2, status: 1, ..SwfRecord::unknown(id) }
}

#[test]
fn shrink_is_one_percentage_or_a_sweep() {
    assert_eq!(parse_shrink("100").unwrap(), [100.0]);
    assert_eq!(parse_shrink("100:50:10").unwrap(), [100.0, 90.0, 80.0, 70.0, 60.0, 50.0]);
    assert_eq!(parse_shrink("10:30:10").unwrap(), [10.0, 20.0, 30.0]);
    for bad in ["0", "x", "1:2", "100:50:0.001"] {
        assert!(parse_shrink(bad).unwrap_err().to_string().starts_with(&format!("--shrink {bad:?}")), "{bad}");
    }
}

/// The plan holds exactly the jobs the simulator replays (a job larger than
/// the cluster is skipped as the simulator skips it), each at its offset from
/// the first submission, or in groups after a warm-up.
#[test]
fn the_plan_is_the_simulators_jobs_at_their_offsets() {
    let cluster = Arc::new(tessera_studies::run::default_cluster());
    let jobs = [job(1, 100, 8, 60), job(2, 130, 100_000, 60), job(3, 160, 16, 30), job(4, 190, 1, 10)];
    let (w, p) = plan(&jobs, cluster.clone(), Pace::Trace { warmup: 0 }).unwrap();
    assert_eq!(w.skipped.values().sum::<u64>(), 1);
    assert_eq!(p.iter().map(|j| (j.trace_id, j.offset, j.procs)).collect::<Vec<_>>(), [(1, 0.0, 8), (3, 60.0, 16), (4, 90.0, 1)]);
    assert_eq!(p[1].record.submit_time, 60, "the record as submitted carries its offset");
    let (_, g) = plan(&jobs, cluster.clone(), Pace::Groups { warmup: 1, group: 2, period: 10.0, warmup_period: 5.0, drift: 0.5 }).unwrap();
    assert_eq!(g.iter().map(|j| j.offset).collect::<Vec<_>>(), [0.0, 5.0, 5.0]);
    // a job number twice would name two lines of the log alike
    let e = plan(&[job(1, 0, 1, 5), job(1, 5, 1, 5)], cluster, Pace::Trace { warmup: 0 }).unwrap_err();
    assert!(e.to_string().contains("trace job 1 appears twice"), "{e}");
}
