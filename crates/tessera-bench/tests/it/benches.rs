//! The benchmarks at toy sizes, from their typed settings.

use tessera_bench::{pass, sim, stream};
use tessera_core::PolicyKind;

fn ricc(what: &str) -> Option<std::path::PathBuf> {
    let t = tessera_workload::traces::shared_trace("RICC-2010-2.swf.gz");
    if t.is_none() {
        tessera_workload::traces::shared_dir_or_skip(what);
    }
    t
}

/// A pass against a blocked queue, for every policy; the reference (no
/// shortcuts) makes the same starts.
#[test]
fn a_pass_is_timed_with_the_queue_kept_deep() {
    let Some(trace) = ricc("a_pass_is_timed_with_the_queue_kept_deep") else { return };
    let o = pass::Options { trace: Some(trace), skip: 100_000, nodes: 64, cores: 16, busy: 0.5, queued: 200, wide_head: None, drained: 2, mem_per_core: 0, passes: 5, policies: vec![], seed: 1, reference: true, fairshare: false };
    let v: serde_json::Value = serde_json::from_str(&pass::run(&o, true).unwrap()).unwrap();
    assert_eq!(v["setup"]["queued"], 200);
    let rows = v["policies"].as_array().unwrap();
    assert_eq!(rows.len(), 6, "three policies, each with its reference");
    for pair in rows.chunks(2) {
        assert_eq!((pair[0]["reference"].as_bool(), pair[1]["reference"].as_bool()), (Some(false), Some(true)));
        assert_eq!(pair[0]["first_pass_starts"], pair[1]["first_pass_starts"]);
        assert_eq!(pair[0]["min_queued"], 200);
    }
    assert!(pass::run(&pass::Options { busy: 1.0, ..o }, false).unwrap_err().to_string().contains("--busy"));
}

/// Every job streamed through finishes, and the engine holds only the live ones.
#[test]
fn a_stream_finishes_every_job_in_few_slots() {
    let Some(trace) = ricc("a_stream_finishes_every_job_in_few_slots") else { return };
    let o = stream::Options { trace: Some(trace), jobs: 20_000, capacity: 256, queued: 50, policy: PolicyKind::Easy, seed: 1 };
    let v: serde_json::Value = serde_json::from_str(&stream::run(&o, true).unwrap()).unwrap();
    assert_eq!(v["jobs"], 20_000);
    assert!(v["slots"].as_u64().unwrap() < 1_000, "{v}");
}

/// A whole replay timed, the engine checked against the naive reference; rows
/// as they are measured, the ratios at the end.
#[test]
fn a_replay_is_timed_against_the_reference() {
    let Some(trace) = ricc("a_replay_is_timed_against_the_reference") else { return };
    let o = sim::Options { traces: vec![trace], policies: vec!["easy".into(), "conservative".into()], repeat: 1, naive_max_jobs: 5_000, naive_conservative_max_jobs: 5_000, max_jobs: Some(3_000), cluster: None, fairshare: true };
    let mut lines = Vec::new();
    let end = sim::run(&o, false, &mut |l| Ok(lines.push(l.to_string()))).unwrap();
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert!(lines[0].starts_with("RICC-2010-2: first 3000 records") && lines[1].contains("naive") && lines[3].contains("conservative"), "{lines:?}");
    assert!(lines[2].contains("easy") && lines[2].contains("fair share") && lines[2].contains("x submission order"), "{lines:?}");
    assert!(end.starts_with("RICC-2010-2: conservative / EASY "), "{end}");
}

/// Without HiGHS in the build, the decision benchmark says how to build it in
/// and does nothing else.
#[cfg(not(feature = "highs"))]
#[test]
fn power_bench_without_highs_says_to_rebuild_with_the_feature() {
    use tessera_bench::power;
    let o = power::Options { trace: None, cluster: None, jobs: vec![30], instances: 1, repeat: 1, variant: "wSE".into(), milp_node_limit: 1, milp_time_limit: 1.0, highs_time_limit: 1.0, mps_dir: None };
    let e = power::run(&o, false).unwrap_err().to_string();
    assert!(e.starts_with("tessera power bench needs HiGHS, which is not in this build: rebuild with `--features highs`"), "{e}");
}
