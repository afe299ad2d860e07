//! The load test's short form: the same command as BENCHMARKS.md's, at a size
//! CI runs in seconds. It checks what the load test checks (every job ran once
//! and is accounted once), not how fast: figures are for the benchmark.

use super::BIN;
use std::process::Command;

#[test]
fn the_load_test_runs_every_job_once_and_loses_none() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["loadtest", "--jobs", "600", "--clients", "8", "--passes", "5", "--compare-jobs", "200", "--timeout", "300", "--format", "json"])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tessera loadtest failed: {stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let c = &r["check"];
    assert_eq!(c["submitted"], 600);
    assert_eq!(c["completed"], 600, "{c}");
    assert_eq!(c["output_files"], 600, "{c}");
    assert_eq!(c["fillers_cancelled"], r["cores"], "{c}");
    assert_eq!((c["lost"].as_u64(), c["duplicates"].as_u64(), c["still_queued"].as_u64()), (Some(0), Some(0), Some(0)), "{c}");
    assert_eq!(r["submit"]["jobs"], 600);
    assert!(r["submit"]["per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(r["queued"]["jobs"], 600);
    assert_eq!(r["queued"]["passes"], 10);
    assert!(r["queued"]["rss_after_kib"].as_u64().unwrap() > 0);
    assert!(r["run"]["starts_per_s"].as_f64().unwrap() > 0.0);
    let x = &r["compare"];
    assert_eq!(x["jobs"], 200);
    assert!(x["ratio"].as_f64().unwrap() > 0.0);
    // the daemons are gone, and so are the fillers
    let left = Command::new("pgrep").args(["-f", &dir.path().display().to_string()]).output().unwrap();
    assert!(left.stdout.is_empty(), "processes left behind: {}", String::from_utf8_lossy(&left.stdout));
}
