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

/// The text of every `<text>` of an SVG, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text").skip(1).map(|t| t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()].trim().to_string()).collect()
}

/// The rows of the first table after `marker` in a page, cells unescaped: the
/// header first.
fn table_after(html: &str, marker: &str) -> Vec<Vec<String>> {
    let rest = &html[html.find(marker).unwrap_or_else(|| panic!("{marker} is not in the page"))..];
    let table = &rest[rest.find("<table>").unwrap()..rest.find("</table>").unwrap()];
    let unescape = |s: &str| s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&");
    table
        .split("<tr>")
        .skip(1)
        .map(|row| {
            // a cell is what follows <th> or <td> up to its closing tag
            row.split("<t").skip(1).filter_map(|c| c.strip_prefix("h>").or_else(|| c.strip_prefix("d>"))).map(|c| unescape(&c[..c.find("</").unwrap()])).collect()
        })
        .collect()
}

/// The value of a row of the report's summary table.
fn summary_value(html: &str, metric: &str) -> String {
    let rows = table_after(html, "<h2>Summary</h2>");
    rows.iter().find(|r| r[0] == metric).unwrap_or_else(|| panic!("no {metric} in {rows:?}"))[1].clone()
}

/// A small overprovisioned machine: 8 whole nodes of 4 cores, and a budget
/// that runs 4 at full power (5 at the lowest cap).
const TINY_POWER: &str = "name = \"tiny-power\"\npower_budget_w = 500\n\n[[nodetype]]\nname = \"pn\"\nnodes = \"pn[01-08]\"\nsockets = 1\ncores_per_socket = 4\nmemory = \"8G\"\n\
base_power_w = 38\nmemory_power_w = 18\ncpu_max_power_w = 60\ncpu_cap_levels_w = [30, 45, 60]\nidle_power_w = 0\n\n\
[[partition]]\nname = \"batch\"\nnodetypes = [\"pn\"]\ndefault = true\nallocation = \"exclusive\"\ncores_per_node = 1\n";

/// Twelve jobs of 2 to 4 nodes arriving 10 s apart: more than the budget runs at once.
fn tiny_trace() -> String {
    (1..=12).map(|i| format!("{i} {} -1 {} {p} -1 -1 {p} 900 -1 1 1 1 -1 -1 -1 -1 -1\n", i * 10, 600 + 60 * (i % 4), p = 2 + i % 3)).collect()
}

/// A power-budgeted run used to be recorded as one node named after the cluster,
/// of type "power-machine", holding its nodes as "cores": the report said
/// "1 nodes, 8 cores". It is one pool of the cluster file's nodes: the report
/// gives their count, their cores and their node type, and no node column for
/// intervals that are the whole machine's.
#[test]
fn a_power_runs_report_gives_the_machines_nodes_cores_and_node_type() {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, trace, db, html) = (dir.path().join("tiny.toml"), dir.path().join("tiny.swf"), dir.path().join("t.db"), dir.path().join("t.html"));
    std::fs::write(&cluster, TINY_POWER).unwrap();
    std::fs::write(&trace, tiny_trace()).unwrap();
    let (c, t) = (cluster.to_str().unwrap(), trace.to_str().unwrap());
    ok(&["sim", "run", "--trace", t, "--cluster", c, "--policy", "parm", "--db", db.to_str().unwrap(), "--report", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("cluster tiny-power at site tiny-power: 8 nodes, 32 cores (one pool of whole nodes"), "{}", &page[..page.find("<h2>").unwrap()]);
    assert_eq!(summary_value(&page, "nodes"), "8");
    assert_eq!(summary_value(&page, "cores"), "32");
    // the store's one record is the pool of the cluster file's nodes
    let conn = rusqlite::Connection::open(&db).unwrap();
    let node: (String, String, String, i64, i64) = conn.query_row("SELECT name, node_type, partition, cores, unit_cores FROM nodes", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))).unwrap();
    assert_eq!(node, ("pn[01-08]".into(), "pn".into(), "batch".into(), 32, 4));
    // usage by node type names the cluster file's type
    let (_, by_type) = charts(&page).into_iter().find(|c| c.0 == "Usage by node type").unwrap();
    let texts = svg_texts(&by_type);
    assert!(texts.iter().any(|t| t == "pn") && !texts.iter().any(|t| t.contains("power-machine")), "{texts:?}");
    // intervals are the machine's idle nodes: no node column, and it says why
    let flagged = table_after(&page, "Longest flagged intervals");
    assert_eq!(flagged[0], ["from (s)", "to (s)", "hours", "nodes idle", "waiting job", "its nodes"]);
    assert!(flagged.len() > 1, "the budget holds jobs back while nodes are idle: {flagged:?}");
    assert!(page.contains("no node is named"));
    // at a fixed cap, the pool is the nodes the budget powers
    ok(&["sim", "run", "--trace", t, "--cluster", c, "--policy", "easy", "--report", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(": 4 nodes, 16 cores (one pool"), "{}", &page[..page.find("<h2>").unwrap()]);
}

/// The report's utilization of a PARM run is `sim run`'s and `tessera
/// metrics`' (nodes busy as sampled); it used to count each job at its
/// starting size (36.3% against 0.3679 on 200 Theta jobs).
#[test]
fn a_parm_runs_utilization_is_the_same_in_the_summary_the_report_and_metrics() {
    let Some(trace) = tessera_workload::traces::shared_trace("ALCF-Theta-2022-cqsimplus.swf.gz") else {
        tessera_workload::traces::shared_dir_or_skip("a_parm_runs_utilization_is_the_same_in_the_summary_the_report_and_metrics");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (db, html) = (dir.path().join("a.db"), dir.path().join("r.html"));
    let cluster = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/clusters/theta-overprovisioned.toml");
    let out = ok(&["sim", "run", "--trace", trace.to_str().unwrap(), "--cluster", cluster.to_str().unwrap(), "--policy", "parm", "--max-jobs", "200", "--db", db.to_str().unwrap(), "--report", html.to_str().unwrap(), "--format", "json"]);
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    let u = summary["utilization"].as_f64().unwrap();
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(summary_value(&page, "utilization"), format!("{:.1}%", 100.0 * u));
    assert!(page.contains("5880 nodes, 376320 cores"));
    let m: serde_json::Value = serde_json::from_str(&ok(&["metrics", "--db", db.to_str().unwrap(), "--format", "json"])).unwrap();
    assert!((m["utilization"].as_f64().unwrap() - u).abs() < 1e-12, "{} against {u}", m["utilization"]);
    // the flagged intervals name no node (they used to name the cluster on every row)
    let flagged = table_after(&page, "Longest flagged intervals");
    assert_eq!(flagged[0], ["from (s)", "to (s)", "hours", "nodes idle", "waiting job", "its nodes"]);
    assert!(flagged.iter().all(|r| r.len() == 6 && !r.iter().any(|c| c == "theta-overprovisioned")), "{flagged:?}");
    // and a plain EASY run's report agrees with its summary as before
    let out = ok(&["sim", "run", "--max-jobs", "2000", "--report", html.to_str().unwrap(), "--format", "json"]);
    let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(summary_value(&page, "utilization"), format!("{:.1}%", 100.0 * summary["utilization"].as_f64().unwrap()));
    assert!(table_after(&page, "Longest flagged intervals")[0][0] == "node");
}
