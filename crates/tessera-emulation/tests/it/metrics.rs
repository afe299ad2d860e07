//! A live run's metrics from the sleep jobs' log.

use tessera_emulation::metrics::{compute, Options};
use tessera_sim::sleeplog::SleepRecord;

#[test]
fn metrics_of_a_sleep_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sleep.log");
    let rec = |id, submit: f64, start: f64, end: f64| serde_json::to_string(&SleepRecord { id, submit, start, end, runtime: end - start, cores: 2, suspensions: vec![], configs: vec![] }).unwrap();
    std::fs::write(&log, format!("{}\n{}\n", rec(1, 0.0, 0.0, 10.0), rec(2, 0.0, 10.0, 20.0))).unwrap();
    let r = compute(&Options { log: Some(log.clone()), capacity: Some(4), ..Options::default() }).unwrap();
    assert_eq!(r.metrics.jobs, 2);
    assert_eq!(r.metrics.mean_wait, 5.0);
    assert_eq!(r.metrics.utilization, Some(0.5), "2 cores of 4 busy throughout");
    let text = r.to_string();
    assert!(text.starts_with(&format!("{} (4 processors)\n", log.display())), "{text}");
    let e = compute(&Options { log: Some(log), run: Some(1), ..Options::default() }).unwrap_err();
    assert!(e.to_string().starts_with("--run applies to an accounting store"));
    assert!(compute(&Options::default()).unwrap_err().to_string().starts_with("give the jobs"));
}
