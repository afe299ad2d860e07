//! The chaos test's and the soak's short forms: the same commands as
//! docs/chaos.md's long runs, at a size CI runs in about a minute each.

use super::BIN;
use std::process::Command;

fn json(args: &[&str], dir: &std::path::Path) -> serde_json::Value {
    let out = Command::new(BIN).args(args).current_dir(dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tessera {args:?} failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// A replay of 60 generated jobs (Lublin & Feitelson's model) over about a
/// minute, with the controller and the agents SIGKILLed every 2 to 6 s and
/// down up to 2 s: every job ran once (one line in the sleep jobs' log) and
/// has one accounting record. Before submissions were keyed and SIGPIPE
/// ignored, the replay died with the first controller kill.
#[test]
fn a_replay_under_kill_9_runs_every_job_once_and_accounts_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("w.swf");
    assert!(Command::new(BIN).args(["workload", "generate", "--jobs", "60", "--seed", "5", "--output", trace.to_str().unwrap()]).status().unwrap().success());
    let r = json(
        &["chaos", "--trace", trace.to_str().unwrap(), "--shrink", "0.15", "--every", "2:6", "--down", "0:2", "--seed", "3", "--out", "c", "--format", "json"],
        dir.path(),
    );
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!(r["jobs"], 60);
    assert!(r["controller_kills"].as_u64().unwrap() >= 3 && r["agent_kills"].as_u64().unwrap() >= 3, "killed often: {r}");
    for k in ["unrecorded", "recorded_twice", "unknown_records", "ran_not_once", "timed_out_early"] {
        assert_eq!(r[k].as_array().map(Vec::len), Some(0), "{k}: {r}");
    }
    assert_eq!(r["states"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum::<u64>(), 60, "{r}");
    let kills = std::fs::read_to_string(dir.path().join("c/kills.csv")).unwrap();
    assert_eq!(kills.lines().count() as u64 - 1, r["controller_kills"].as_u64().unwrap() + r["agent_kills"].as_u64().unwrap());
    let left = Command::new("pgrep").args(["-f", &dir.path().display().to_string()]).output().unwrap();
    assert!(left.stdout.is_empty(), "processes left behind: {}", String::from_utf8_lossy(&left.stdout));
}

/// 40 s at 1,200 short jobs a minute: every job completed and accounted once,
/// and no daemon's memory grew past the tolerance after the first 20 s.
#[test]
fn a_short_soak_completes_every_job_with_flat_memory() {
    let dir = tempfile::tempdir().unwrap();
    let r = json(&["soak", "--rate", "1200", "--duration", "40s", "--flat-from", "20s", "--sample-every", "5s", "--dir", "s", "--format", "json"], dir.path());
    assert_eq!(r["passed"], true, "{r}");
    assert_eq!((r["submitted"].as_u64(), r["completed"].as_u64()), (Some(800), Some(800)), "{r}");
    assert_eq!(r["memory"].as_array().unwrap().len(), 5, "the controller and 4 agents: {r}");
    let samples = std::fs::read_to_string(dir.path().join("s/samples.csv")).unwrap();
    assert!(samples.lines().count() >= 9, "a sample every 5 s: {samples}");
}
