//! `sim bench-pass` and `sim bench-stream` at toy sizes: the reports' shape, the
//! setup's realism check, and flat memory.

use crate::common::{tessera, text};

fn ricc(test: &str) -> Option<String> {
    let trace = tessera_workload::traces::shared_trace("RICC-2010-2.swf.gz");
    if trace.is_none() {
        tessera_workload::traces::shared_dir_or_skip(test);
    }
    trace.map(|p| p.display().to_string())
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = tessera(args);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn bench_pass_keeps_a_deep_blocked_queue() {
    let Some(trace) = ricc("bench_pass_keeps_a_deep_blocked_queue") else {
        return;
    };
    let small = [
        "sim",
        "bench-pass",
        "--trace",
        &trace,
        "--nodes",
        "64",
        "--queued",
        "300",
        "--passes",
        "5",
    ];
    let v = json(&[&small[..], &["--format", "json"]].concat());
    let setup = &v["setup"];
    assert_eq!(setup["cores"], 64 * 16);
    assert_eq!(setup["queued"], 300);
    let busy = setup["busy"].as_f64().unwrap();
    assert!(
        (0.5..0.6).contains(&busy),
        "the setup fills about half the machine: {busy}"
    );
    let rows = v["policies"].as_array().unwrap();
    let names: Vec<_> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(names, ["fcfs", "easy", "conservative"]);
    for r in rows {
        let q = r["queued_after_first"].as_u64().unwrap();
        assert!(
            q > 0 && q + r["first_pass_starts"].as_u64().unwrap() == 300,
            "{r}"
        );
        assert_eq!(r["passes"], 5);
        assert_eq!(
            r["min_queued"], 300,
            "the queue is topped up before every pass: {r}"
        );
        let (m, p, x) = (
            r["median_ms"].as_f64().unwrap(),
            r["p99_ms"].as_f64().unwrap(),
            r["max_ms"].as_f64().unwrap(),
        );
        assert!(0.0 < m && m <= p && p <= x, "{r}");
    }
    assert!(v["conservative_over_easy"]["median"].as_f64().unwrap() > 0.0);
    // drained nodes, and memory tracked (the node-by-node path): the same setup
    let v = json(
        &[
            &small[..],
            &[
                "--drained",
                "2",
                "--wide-head",
                "0.75",
                "--mem-per-core",
                "2048",
                "--format",
                "json",
            ],
        ]
        .concat(),
    );
    assert_eq!(
        (
            v["setup"]["queued"].as_u64(),
            v["setup"]["drained"].as_u64(),
            v["setup"]["mem_per_core"].as_u64()
        ),
        (Some(300), Some(2), Some(2048))
    );
    assert!(v["policies"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["min_queued"] == 300 && r["queued_after_first"].as_u64() > Some(0)));
    let out = tessera(&small);
    let table = text(&out.stdout);
    assert!(
        table.contains("setup: ")
            && table.contains("\nconservative ")
            && table.contains("conservative / EASY: median "),
        "{table}"
    );
}

#[test]
fn bench_pass_refuses_a_queue_that_would_all_start() {
    let Some(trace) = ricc("bench_pass_refuses_a_queue_that_would_all_start") else {
        return;
    };
    let out = tessera(&[
        "sim",
        "bench-pass",
        "--trace",
        &trace,
        "--nodes",
        "64",
        "--busy",
        "0",
        "--queued",
        "1",
        "--policy",
        "easy",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .contains("easy: the first pass started all 1 queued jobs, so the head is not blocked"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bench_stream_memory_follows_the_live_jobs() {
    let Some(trace) = ricc("bench_stream_memory_follows_the_live_jobs") else {
        return;
    };
    let v = json(&[
        "sim",
        "bench-stream",
        "--trace",
        &trace,
        "--jobs",
        "20000",
        "--format",
        "json",
    ]);
    assert_eq!(v["jobs"], 20000);
    assert_eq!(v["policy"], "easy");
    assert_eq!(v["capacity"], 1024);
    let slots = v["slots"].as_u64().unwrap();
    assert!(
        slots > 100 && slots * 20 < 20000,
        "live jobs at most {slots}"
    );
    let marks: Vec<u64> = v["rss"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["jobs"].as_u64().unwrap())
        .collect();
    assert_eq!(marks, [2000, 10000, 20000]);
    assert!(v["jobs_per_s"].as_f64().unwrap() > 0.0 && v["passes"].as_u64().unwrap() > 0);
    if cfg!(target_os = "linux") {
        assert!(v["peak_rss_kib"].as_u64().unwrap() > 0);
    }
}

#[test]
fn bench_pass_reference_starts_the_same_jobs() {
    let Some(trace) = ricc("bench_pass_reference_starts_the_same_jobs") else {
        return;
    };
    let v = json(&[
        "sim", "bench-pass", "--trace", &trace, "--nodes", "32", "--queued", "200", "--passes", "10",
        "--mem-per-core", "2048", "--policy", "easy", "--policy", "conservative", "--reference",
        "--format", "json",
    ]);
    let rows = v["policies"].as_array().unwrap();
    let shape: Vec<_> = rows
        .iter()
        .map(|r| (r["policy"].as_str().unwrap(), r["reference"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        shape,
        [("easy", false), ("easy", true), ("conservative", false), ("conservative", true)]
    );
    // with memory tracked conservative uses its per-node timeline: the reference
    // (every node worked out in full) must start exactly as many jobs
    for pair in rows.chunks(2) {
        for k in ["first_pass_starts", "starts_per_pass", "min_queued", "busy_end"] {
            assert_eq!(pair[0][k], pair[1][k], "{} {k}", pair[0]["policy"]);
        }
    }
}
