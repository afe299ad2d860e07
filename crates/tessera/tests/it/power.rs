//! Power-aware runs end to end: PARM's variants and solvers, the baselines, the
//! summary keys, power over time vs the budget, errors, the powercap CLI.

use crate::common::{tessera, text};

const THETA_CLUSTER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/theta-overprovisioned.toml");

fn theta() -> Option<String> {
    tessera_workload::traces::shared_trace("ALCF-Theta-2022-cqsimplus.swf.gz").map(|p| p.display().to_string())
}

/// Run a power-aware simulation; returns the summary JSON, the power CSV rows
/// (time, W, budget) and the jobs CSV.
fn run(trace: &str, extra: &[&str]) -> (serde_json::Value, Vec<(i64, f64, f64)>, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = |f: &str| dir.path().join(f).display().to_string();
    let mut args = vec!["sim", "run", "--trace", trace, "--cluster", THETA_CLUSTER, "--format", "json"];
    let (pw, jobs) = (p("power.csv"), p("jobs.csv"));
    args.extend(["--power-out", &pw, "--jobs-out", &jobs]);
    args.extend(extra);
    let out = tessera(&args);
    assert!(out.status.success(), "{:?}: {}", extra, text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let csv = std::fs::read_to_string(&pw).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("time,power_w,budget_w,busy_nodes"));
    let rows = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    (v, rows, std::fs::read_to_string(&jobs).unwrap())
}

fn check_power(v: &serde_json::Value, rows: &[(i64, f64, f64)], what: &str) -> f64 {
    let budget = v["power_budget_w"].as_f64().unwrap_or_else(|| panic!("{what}: no power_budget_w"));
    let max = v["max_power_w"].as_f64().unwrap();
    let energy = v["energy_j"].as_f64().unwrap();
    assert_eq!(budget, 4360.0 * 116.0, "{what}: the budget is 4,360 × 116 W");
    assert!(max <= budget * (1.0 + 1e-9) && max > 0.0, "{what}: max power {max} W vs budget {budget} W");
    assert!(!rows.is_empty());
    for &(t, w, b) in rows {
        assert_eq!(b, budget);
        assert!(w <= budget * (1.0 + 1e-9), "{what}: {w} W at t={t}");
    }
    let peak = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    assert!((peak - max).abs() <= 1e-3 * max, "{what}: the timeline's peak {peak} is max_power_w {max}");
    // energy = ∫ power dt over the timeline (power constant between rows)
    let integral: f64 = rows.windows(2).map(|w| w[0].1 * (w[1].0 - w[0].0) as f64).sum();
    assert!((integral - energy).abs() <= 1e-6 * energy, "{what}: ∫P dt = {integral} J vs energy_j {energy} J");
    energy
}

fn job_energy_sum(jobs_csv: &str) -> f64 {
    let mut lines = jobs_csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = head.iter().position(|h| *h == "energy_j").expect("jobs CSV has energy_j");
    lines.map(|l| l.split(',').nth(col).unwrap().parse::<f64>().unwrap()).sum()
}

#[test]
fn parm_runs_every_variant_with_both_solvers_within_the_budget() {
    let Some(trace) = theta() else { return };
    for variant in ["noMM", "noSE", "wSE"] {
        for (solver, jobs) in [("structured", "300"), ("milp", "120")] {
            let what = format!("{variant}/{solver}");
            let (v, rows, jobs_csv) = run(
                &trace,
                &["--policy", "parm", "--parm-variant", variant, "--solver", solver, "--milp-node-limit", "300", "--max-jobs", jobs],
            );
            assert_eq!(v["jobs_simulated"].as_u64().unwrap().to_string(), jobs, "{what}");
            let energy = check_power(&v, &rows, &what);
            // idle nodes draw nothing here: the jobs' energy is all of it
            let jobs_e = job_energy_sum(&jobs_csv);
            assert!((jobs_e - energy).abs() <= 1e-6 * energy, "{what}: jobs {jobs_e} J vs total {energy} J");
            assert_eq!(v["power"]["mode"], "parm");
            assert_eq!(v["power"]["variant"], variant);
            // Tessera's scheduler decides starts-first unless told otherwise
            assert_eq!(v["power"]["rule"], "starts-first", "{what}");
            assert!(v["power"]["decisions"]["decisions"].as_u64().unwrap() > 0);
            if variant != "wSE" {
                assert_eq!(v["power"]["decisions"]["resizes"], 0, "{what} never resizes");
            }
        }
    }
    let (v, rows, _) = run(&trace, &["--policy", "parm", "--parm-rule", "paper", "--max-jobs", "100"]);
    check_power(&v, &rows, "paper rule");
    assert_eq!(v["power"]["rule"], "paper");
}

#[test]
fn baselines_power_as_many_nodes_as_the_budget_feeds() {
    let Some(trace) = theta() else { return };
    // full power: 505,760 W / 116 W = 4,360 nodes; at a 30 W cap 86 W per node
    // feeds 5,880.9, so all 5,880 nodes
    for (cap, nodes) in [(None, 4360), (Some("44"), 5057), (Some("30"), 5880)] {
        let mut extra = vec!["--policy", "easy", "--max-jobs", "400"];
        if let Some(c) = cap {
            extra.extend(["--cap", c]);
        }
        let (v, rows, jobs_csv) = run(&trace, &extra);
        let energy = check_power(&v, &rows, &format!("cap {cap:?}"));
        assert_eq!(v["power"]["scheduled_nodes"], nodes, "cap {cap:?}");
        assert_eq!(v["power"]["mode"], "fixed_cap");
        assert!((job_energy_sum(&jobs_csv) - energy).abs() <= 1e-6 * energy);
    }
}

#[test]
fn power_flags_are_checked() {
    let err = |args: &[String]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = tessera(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?} should fail: {}", text(&out.stdout));
        text(&out.stderr)
    };
    let e = err(&["sim", "run", "--policy", "parm", "--max-jobs", "10"].map(String::from));
    assert!(e.contains("policy parm needs a cluster file with power_budget_w"), "{e}");
    let Some(trace) = theta() else { return };
    let base = ["sim", "run", "--trace", trace.as_str(), "--cluster", THETA_CLUSTER, "--max-jobs", "10"];
    let with = |extra: &[&'static str]| -> Vec<String> { base.iter().chain(extra).map(|s| s.to_string()).collect() };
    let e = err(&with(&["--policy", "parm", "--cap", "40"]));
    assert!(e.contains("PARM chooses caps itself"), "{e}");
    let e = err(&with(&["--policy", "easy", "--alpha", "2"]));
    assert!(e.contains("apply to --policy parm only"), "{e}");
    let e = err(&with(&["--policy", "easy", "--cap", "70"]));
    assert!(e.contains("--cap 70: expected watts in (0, 60]"), "{e}");
    let e = err(&with(&["--policy", "parm", "--solver", "cplex"]));
    assert!(e.contains("--solver cplex: expected structured or milp"), "{e}");
    let e = err(&with(&["--policy", "parm", "--parm-variant", "xyz"]));
    assert!(e.contains("known: noMM, noSE, wSE"), "{e}");
    let e = err(&with(&["--policy", "parm", "--milp-time-limit", "1"]));
    assert!(e.contains("--milp-time-limit applies to --solver milp only"), "{e}");
    let e = err(&with(&["--policy", "parm", "--parm-rule", "greedy"]));
    assert!(e.contains("known: paper, starts-first"), "{e}");
    let e = err(&with(&["--policy", "easy", "--charge-solve-time"]));
    assert!(e.contains("apply to --policy parm only"), "{e}");
}

#[test]
fn the_testbed_experiment_reports_every_variant_over_the_seeds() {
    let out = tessera(&["experiment", "parm-testbed", "--seeds", "3", "--format", "json", "--no-solve-time"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v.as_array().unwrap();
    // 2 sets × 3 seeds × (baseline + noMM, noSE, wSE)
    assert_eq!(rows.len(), 24);
    for r in rows {
        let run = &r["run"];
        assert_eq!(run["jobs"], 10, "{r}");
        assert!(run["max_power_w"].as_f64().unwrap() <= 3300.0 + 1e-6, "{r}");
        let nodes = run["nodes"].as_u64().unwrap();
        if run["scheme"] == "EASY sized" {
            assert_eq!(nodes, 28, "the baseline powers 28 nodes at full power");
        } else {
            assert_eq!(nodes, 38);
        }
    }
    // deterministic without the measured solve time
    let again = tessera(&["experiment", "parm-testbed", "--seeds", "3", "--format", "json", "--no-solve-time"]);
    let strip = |b: &[u8]| -> Vec<serde_json::Value> {
        let mut v: Vec<serde_json::Value> = serde_json::from_slice(b).unwrap();
        for r in &mut v {
            for k in ["sim_wall_s", "max_decision_s"] {
                r["run"][k] = serde_json::Value::Null;
            }
        }
        v
    };
    assert_eq!(strip(&out.stdout), strip(&again.stdout));
    let table = tessera(&["experiment", "parm-testbed", "--seeds", "3"]);
    let t = text(&table.stdout);
    assert!(t.contains("| SetL |") && t.contains("| SetH |") && t.contains("on 28 nodes") && t.contains("at their minimum sizes"), "{t}");
    // the baseline at the jobs' largest sizes: the same PARM runs, another baseline
    let max = tessera(&["experiment", "parm-testbed", "--seeds", "3", "--format", "json", "--no-solve-time", "--baseline-size", "max"]);
    assert!(max.status.success(), "{}", text(&max.stderr));
    let (a, b) = (strip(&out.stdout), strip(&max.stdout));
    let runs = |v: &[serde_json::Value], base: bool| -> Vec<serde_json::Value> { v.iter().filter(|r| (r["run"]["scheme"] == "EASY sized") == base).cloned().collect() };
    assert_eq!(runs(&a, false), runs(&b, false));
    assert_ne!(runs(&a, true), runs(&b, true));
    let t = text(&tessera(&["experiment", "parm-testbed", "--seeds", "2", "--baseline-size", "max", "--n-max-factor", "1.5"]).stdout);
    assert!(t.contains("at their maximum sizes") && t.contains("n_max = min(28, round(1.5 n_min))"), "{t}");
    // bad values are refused
    let e = tessera(&["experiment", "parm-testbed", "--n-max-factor", "0.5"]);
    assert!(!e.status.success() && text(&e.stderr).contains("--n-max-factor 0.5: expected a number >= 1"), "{}", text(&e.stderr));
    let e = tessera(&["experiment", "parm-testbed", "--baseline-size", "huge"]);
    assert_eq!(e.status.code(), Some(2), "{}", text(&e.stderr));
}

#[test]
fn the_attribution_runs_every_scheme_on_the_same_jobs() {
    let Some(trace) = theta() else { return };
    let out = tessera(&["experiment", "parm-attribution", "--trace", &trace, "--jobs", "60", "--seeds", "2", "--gamma", "0.5", "--set-start", "1", "--sweep-seeds", "2", "--sweep-parallelism", "0.5,2", "--sweep-sigma", "0,1", "--no-solve-time"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    for want in ["EASY exact", "EASY sized", "naive 30 W", "optimizer noSE", "PARM wSE", "starts-first noSE", "What power awareness itself adds", "| [0.5, 2] | [0, 1] |", "Every run stayed within its budget"] {
        assert!(t.contains(want), "missing {want}: {t}");
    }
    let e = tessera(&["experiment", "parm-attribution", "--trace", &trace, "--seeds", "1"]);
    assert!(text(&e.stderr).contains("--seeds 1: an interval needs at least 2 seeds"), "{}", text(&e.stderr));
}

/// Without the cargo feature `highs`, the command says how to build HiGHS in
/// (and does nothing else).
#[cfg(not(feature = "highs"))]
#[test]
fn power_bench_without_highs_says_to_rebuild_with_the_feature() {
    let out = tessera(&["power", "bench", "--jobs", "30", "--instances", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let e = text(&out.stderr);
    assert!(e.contains("tessera power bench needs HiGHS") && e.contains("--features highs"), "{e}");
    assert!(out.stdout.is_empty());
}

#[cfg(feature = "highs")]
#[test]
fn power_bench_compares_the_solvers_and_writes_mps() {
    let Some(_) = theta() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mps_dir = dir.path().join("mps");
    let m = mps_dir.display().to_string();
    let out = tessera(&["power", "bench", "--jobs", "30", "--instances", "1", "--repeat", "1", "--milp-time-limit", "2", "--mps-dir", &m, "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v[0];
    assert_eq!(r["jobs"], 30);
    assert!(r["structured_ms_min"].as_f64().unwrap() > 0.0);
    // the structured answer is within 0.1% of its own upper bound, hence of the optimum
    assert!(r["gap_to_bound"].as_f64().unwrap() <= 1e-3, "{r}");
    assert!(r["gap_to_milp"].as_f64().unwrap() <= 1e-3, "{r}");
    // HiGHS proves the optimum, and the structured answer is it
    assert_eq!(r["highs_optimal"], true, "{r}");
    assert!(r["highs_s"].as_f64().unwrap() > 0.0);
    assert!(r["gap_to_highs"].as_f64().unwrap().abs() <= 1e-9, "{r}");
    // the decision was written where --mps-dir says, the directory created
    let file = mps_dir.join("jobs-30-instance-1.mps");
    assert_eq!(r["mps"], file.display().to_string());
    let text_mps = std::fs::read_to_string(&file).unwrap();
    assert!(text_mps.starts_with("NAME tessera-parm-wSE-jobs-30-first-1\nOBJSENSE\n    MAX\nROWS\n") && text_mps.ends_with("ENDATA\n"), "{}", &text_mps[..200]);
    assert_eq!(text_mps.lines().filter(|l| l.starts_with(" BV ")).count() as u64, r["items"].as_u64().unwrap());
    // an input in the way is refused before anything is written over it
    let cluster = mps_dir.join("jobs-30-instance-1.mps");
    std::fs::copy(THETA_CLUSTER, &cluster).unwrap();
    let c = cluster.display().to_string();
    let out = tessera(&["power", "bench", "--jobs", "30", "--instances", "1", "--cluster", &c, "--mps-dir", &m]);
    assert!(!out.status.success());
    let e = text(&out.stderr);
    assert!(e.contains("--mps-dir") && e.contains("that is this run's cluster file") && e.contains("which it would overwrite"), "{e}");
    assert_eq!(std::fs::read_to_string(&cluster).unwrap(), std::fs::read_to_string(THETA_CLUSTER).unwrap());
}

/// A fake /sys/class/powercap with one package whose long_term limit is constraint 1.
#[test]
fn node_powercap_sets_the_named_constraint() {
    let dir = tempfile::tempdir().unwrap();
    let z = dir.path().join("intel-rapl:0");
    std::fs::create_dir_all(&z).unwrap();
    for (f, v) in [
        ("name", "package-0"),
        ("enabled", "1"),
        ("energy_uj", "123456"),
        ("constraint_0_name", "short_term"),
        ("constraint_0_power_limit_uw", "150000000"),
        ("constraint_0_time_window_us", "2440"),
        ("constraint_1_name", "long_term"),
        ("constraint_1_power_limit_uw", "125000000"),
        ("constraint_1_time_window_us", "999424"),
        ("constraint_1_max_power_uw", "125000000"),
    ] {
        std::fs::write(z.join(f), format!("{v}\n")).unwrap();
    }
    let root = dir.path().display().to_string();
    let out = tessera(&["node", "powercap", "show", "--root", &root]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let show = text(&out.stdout);
    assert!(show.contains("package-0") && show.contains("long_term") && show.contains("125.000"), "{show}");
    let out = tessera(&["node", "powercap", "set", "--root", &root, "--node-watts", "60", "--dry-run"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("(dry run: nothing written)"));
    assert_eq!(std::fs::read_to_string(z.join("constraint_1_power_limit_uw")).unwrap(), "125000000\n");
    let out = tessera(&["node", "powercap", "set", "--root", &root, "--node-watts", "60"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(z.join("constraint_1_power_limit_uw")).unwrap().trim(), "60000000");
    assert_eq!(std::fs::read_to_string(z.join("constraint_0_power_limit_uw")).unwrap().trim(), "150000000", "short_term untouched");
    let out = tessera(&["node", "powercap", "set", "--root", &root, "--node-watts", "200"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("125"), "{}", text(&out.stderr));
}
