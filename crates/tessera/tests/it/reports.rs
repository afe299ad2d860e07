//! HTML reports, comparisons and sweeps from the binary.

use crate::common::{tessera, text};
use std::path::Path;

fn ok(args: &[&str]) -> String {
    let out = tessera(args);
    assert!(out.status.success(), "tessera {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// The charts of a page: (title, SVG).
pub fn charts(html: &str) -> Vec<(String, String)> {
    html.split("<figure class=\"chart\" data-title=\"")
        .skip(1)
        .map(|s| {
            let (title, rest) = s.split_once('"').unwrap();
            let svg = &rest[rest.find("<svg").unwrap()..rest.find("</svg>").unwrap() + 6];
            (title.to_string(), svg.to_string())
        })
        .collect()
}

/// Every chart the issue asks of a power-aware run's report.
pub const RUN_CHARTS: &[&str] = &[
    "Utilization over time",
    "Queue length over time",
    "Wait time distribution (CDF)",
    "Bounded slowdown distribution (CDF, 10 s bound)",
    "Mean wait by job size",
    "Mean bounded slowdown by job size",
    "Power drawn against the budget",
    "CPU power caps of busy nodes over time",
    "True overhead over time",
    "True overhead histogram",
    "Usage by account",
    "Usage by node type",
    "Bills by account (true overhead not billed)",
];

#[test]
fn a_power_aware_run_reports_every_chart_and_its_store_gives_the_same_report() {
    let Some(trace) = tessera_workload::traces::shared_trace("ALCF-Theta-2022-cqsimplus.swf.gz") else {
        tessera_workload::traces::shared_dir_or_skip("a_power_aware_run_reports_every_chart");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (db, sim_html, db_html) = (dir.path().join("a.db"), dir.path().join("sim.html"), dir.path().join("db.html"));
    let cluster = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/clusters/theta-overprovisioned.toml");
    ok(&["sim", "run", "--trace", trace.to_str().unwrap(), "--cluster", cluster.to_str().unwrap(), "--policy", "parm", "--max-jobs", "200", "--db", db.to_str().unwrap(), "--report", sim_html.to_str().unwrap()]);
    let html = std::fs::read_to_string(&sim_html).unwrap();
    let got = charts(&html);
    let titles: Vec<&str> = got.iter().map(|c| c.0.as_str()).collect();
    for want in RUN_CHARTS {
        assert!(titles.contains(want), "{want} is missing from {titles:?}");
    }
    for (title, svg) in &got {
        assert!(svg.contains(title.as_str()) && !svg.contains("no data") && !svg.contains("cannot draw"), "{title} drew nothing");
        assert!(svg.matches("<polyline").count() + svg.matches("<rect").count() > 5, "{title} has no marks");
    }
    assert!(html.contains("mean bounded slowdown (10 s)") && !html.contains("unfinished"));
    ok(&["report", "html", "--db", db.to_str().unwrap(), "-o", db_html.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&db_html).unwrap(), html, "the store's report is the simulation's");
}

#[test]
fn a_report_says_when_its_run_is_unfinished() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db");
    ok(&["sim", "run", "--db", db.to_str().unwrap()]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE runs SET complete = 0", []).unwrap();
    drop(conn);
    let out_path = dir.path().join("r.html");
    let out = tessera(&["report", "html", "--db", db.to_str().unwrap(), "--run", "1", "-o", out_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("unfinished"));
    assert!(std::fs::read_to_string(&out_path).unwrap().contains("WARNING: this run is unfinished"));
    // every report and listing of the run says so, once
    let d = db.to_str().unwrap();
    for args in [&["acct"][..], &["acct", "apel"], &["report", "usage"], &["report", "utilization"], &["report", "overhead"], &["report", "bill"]] {
        let mut a = args.to_vec();
        a.extend(["--db", d, "--run", "1"]);
        let out = tessera(&a);
        let e = text(&out.stderr);
        assert!(out.status.success(), "{args:?}: {e}");
        assert_eq!(e.matches("warning: run 1 of").count(), 1, "{args:?}: {e}");
        assert!(e.contains("is unfinished (its recording was cut short)"), "{args:?}: {e}");
    }
}

#[test]
fn compare_overlays_the_policies_with_their_differences() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("c.html");
    let out = ok(&["sim", "compare", "--policy", "fcfs,easy", "--report", html.to_str().unwrap(), "--threads", "2", "--", "--max-jobs", "800"]);
    assert!(out.contains("easy vs fcfs") && out.contains("mean bounded slowdown"), "{out}");
    let page = std::fs::read_to_string(&html).unwrap();
    let got = charts(&page);
    assert!(got.len() >= 6);
    for (title, svg) in &got {
        // both variants are in every chart's legend
        assert!(svg.contains(">\nfcfs\n<") && svg.contains(">\neasy\n<"), "{title} does not overlay both");
    }
}

#[test]
fn a_sweep_split_in_shards_and_merged_equals_the_unsplit_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sweep = d.join("s.toml");
    std::fs::write(&sweep, "traces = [\"default\"]\npolicies = [\"fcfs\", \"easy\"]\n[fixed]\nmax-jobs = 400\n[parameters]\ngamma = [1.0, 0.8, 0.6]\n").unwrap();
    let s = sweep.to_str().unwrap();
    let whole = d.join("whole.csv");
    ok(&["sim", "sweep", s, "--out", whole.to_str().unwrap(), "--threads", "2", "--report", d.join("w.html").to_str().unwrap()]);
    let mut parts = Vec::new();
    for i in 0..4 {
        let p = d.join(format!("part-{i}.csv"));
        ok(&["sim", "sweep", s, "--shard", &format!("{i}/4"), "--out", p.to_str().unwrap(), "--threads", "1"]);
        parts.push(p.to_str().unwrap().to_string());
    }
    let merged = d.join("merged.csv");
    let mut args = vec!["sim", "sweep", "merge", "--sweep", s, "--out", merged.to_str().unwrap()];
    // slices in any order
    args.extend(parts.iter().rev().map(String::as_str));
    ok(&args);
    let w = std::fs::read_to_string(&whole).unwrap();
    assert_eq!(w.lines().count(), 1 + 2 * 3, "{w}");
    assert_eq!(std::fs::read_to_string(&merged).unwrap(), w);
    // a missing slice is an error, as is a case twice
    let out = tessera(&["sim", "sweep", "merge", "--sweep", s, "--out", d.join("m2.csv").to_str().unwrap(), &parts[0], &parts[1]]);
    assert!(!out.status.success() && text(&out.stderr).contains("cases are missing"), "{}", text(&out.stderr));
    let out = tessera(&["sim", "sweep", "merge", "--out", d.join("m3.csv").to_str().unwrap(), &parts[0], &parts[0]]);
    assert!(!out.status.success() && text(&out.stderr).contains("more than one slice"));
    // the report plots the metrics against γ
    assert!(charts(&std::fs::read_to_string(d.join("w.html")).unwrap()).iter().any(|c| c.0.contains("against gamma")));
    // a bad parameter names the case and the flag
    std::fs::write(&sweep, "traces = [\"default\"]\npolicies = [\"easy\"]\n[parameters]\nno_such_flag = [1]\n").unwrap();
    let out = tessera(&["sim", "sweep", s, "--out", d.join("x.csv").to_str().unwrap()]);
    assert!(!out.status.success() && text(&out.stderr).contains("case 0") && text(&out.stderr).contains("--no-such-flag"), "{}", text(&out.stderr));
}
