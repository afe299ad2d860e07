//! `tessera import slurm-conf`: the example site (three node generations,
//! GPUs, partitions with tiers) becomes a cluster file that `tessera
//! publish` and the simulator accept; bad lines are named.

use crate::common::{tessera, text};

fn example(name: &str) -> String {
    format!("{}/../../examples/slurm/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_heterogeneous_sites_slurm_conf_round_trips_into_publish_and_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site.toml");
    let o = tessera(&["import", "slurm-conf", &example("slurm.conf"), "--factors", &example("factors.toml"), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report = text(&o.stderr);
    assert!(report.contains("176 nodes (6656 cores) in 3 node types, 3 partitions"), "{report}");
    // what it cannot represent is listed with file and line, Include files too
    assert!(report.contains("gpu-nodes.conf:1: ThreadsPerCore=2"), "{report}");
    assert!(report.contains("slurm.conf:35: AllowAccounts=gpu-users"), "{report}");
    assert!(report.contains("slurm.conf:13: SchedulerParameters="), "{report}");
    let p = tessera(&["publish", "--cluster", out.to_str().unwrap(), "--format", "json"]);
    assert!(p.status.success(), "{}", text(&p.stderr));
    let cap: serde_json::Value = serde_json::from_slice(&p.stdout).unwrap();
    assert_eq!(cap["logical_cpus"], 6656, "{cap}");
    // the site's three generations, scaled to the reference's 10 HS06 per core
    let factors: Vec<f64> = cap["node_types"].as_array().unwrap().iter().map(|t| t["scaling_factor"].as_f64().unwrap()).collect();
    assert_eq!(factors, vec![1.4, 1.0, 2.1], "{cap}");
    // the simulator runs a trace on it; jobs above the urgent partition's
    // MaxTime (4 hours) are refused as Slurm refuses them
    let swf = dir.path().join("t.swf");
    std::fs::write(&swf, "1 0 -1 100 4 -1 -1 4 3600 -1 1 1 1 -1 1 -1 -1 -1\n2 10 -1 100 4 -1 -1 4 18000 -1 1 1 1 -1 1 -1 -1 -1\n").unwrap();
    for (part, simulated) in [("batch", "2"), ("urgent", "1")] {
        let s = tessera(&["sim", "run", "--cluster", out.to_str().unwrap(), "--trace", swf.to_str().unwrap(), "--partition", part, "--format", "json"]);
        assert!(s.status.success(), "{}", text(&s.stderr));
        let v: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
        assert_eq!(v["jobs_simulated"].to_string(), simulated, "{part}: {v}");
        if part == "urgent" {
            assert_eq!(v["jobs_skipped"]["over_partition_time_limit"], 1, "{v}");
        }
    }
}

#[test]
fn a_bad_slurm_conf_line_is_named_with_its_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("slurm.conf");
    std::fs::write(&conf, "ClusterName=x\nNodeName=n[1-4] CPUs=8\nPartitionName=p Nodes=n[1-5]\n").unwrap();
    let o = tessera(&["import", "slurm-conf", conf.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = text(&o.stderr);
    assert!(e.contains(&format!("{}:3: `Nodes`: node `n5` is defined by no NodeName line", conf.display())), "{e}");
    let f = dir.path().join("f.toml");
    std::fs::write(&f, "[benchmarks]\nfast = 0\n").unwrap();
    let o = tessera(&["import", "slurm-conf", conf.to_str().unwrap(), "--factors", f.to_str().unwrap()]);
    assert!(text(&o.stderr).contains(&format!("{}:2: `benchmarks.fast`: expected HEP-SPEC06 per core", f.display())), "{}", text(&o.stderr));
}

/// `tessera import sacct`: the example site's history, on its imported
/// cluster, becomes an imported run of the accounting store (every job once,
/// its steps listed under it by `tessera acct`) and a workload the simulator
/// replays; a bad line is named and nothing is written.
#[test]
fn a_sacct_history_imports_into_the_store_and_a_workload_without_loss() {
    let dir = tempfile::tempdir().unwrap();
    let (site, db, swf) = (dir.path().join("site.toml"), dir.path().join("acct.db"), dir.path().join("hist.swf"));
    let p = |x: &std::path::Path| x.to_str().unwrap().to_string();
    assert!(tessera(&["import", "slurm-conf", &example("slurm.conf"), "--factors", &example("factors.toml"), "-o", &p(&site)]).status.success());
    let o = tessera(&["import", "sacct", &example("sacct.txt"), "--cluster", &p(&site), "--db", &p(&db), "-o", &p(&swf)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("16 rows: 7 jobs (2 array tasks, 2 heterogeneous components), 6 steps folded into their jobs, 1 earlier runs of requeued jobs folded, 2 rows of jobs not finished left out"), "{}", text(&o.stderr));
    let runs = text(&tessera(&["acct", "runs", "--db", &p(&db)]).stdout);
    assert!(runs.lines().any(|l| l.contains("imported") && l.contains(" 7 ")), "{runs}");
    let acct = text(&tessera(&["acct", "--db", &p(&db), "-P"]).stdout);
    let ids: Vec<&str> = acct.lines().skip(1).map(|l| l.split('|').next().unwrap()).collect();
    for want in ["1001", "1001.batch", "1001.extern", "1001.0", "1002_1", "1002_2", "1010", "1011", "1020", "1030"] {
        assert_eq!(ids.iter().filter(|&&i| i == want).count(), 1, "{want} once: {acct}");
    }
    // APEL records of the imported run name the cluster as the site
    let apel = text(&tessera(&["acct", "apel", "--db", &p(&db), "--type", "summary"]).stdout);
    assert!(apel.contains("Site: hetero") && apel.contains("VO: physics"), "{apel}");
    // the workload replays on the imported cluster, the never-started job skipped
    let s = tessera(&["sim", "run", "--cluster", &p(&site), "--trace", &p(&swf), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap_or_else(|_| panic!("{}", text(&s.stderr)));
    assert_eq!((v["jobs_simulated"].as_u64(), v["jobs_skipped"]["negative_runtime"].as_u64()), (Some(6), Some(1)), "{v}");
    // a malformed line: its line and field, and no store or workload written
    let bad = dir.path().join("bad.txt");
    std::fs::write(&bad, std::fs::read_to_string(example("sacct.txt")).unwrap().replacen("|COMPLETED|", "|DONE|", 1)).unwrap();
    let (db2, swf2) = (dir.path().join("b.db"), dir.path().join("b.swf"));
    let o = tessera(&["import", "sacct", &p(&bad), "--cluster", &p(&site), "--db", &p(&db2), "-o", &p(&swf2)]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains(&format!("{}:2: `State`: expected a Slurm job state", p(&bad))), "{}", text(&o.stderr));
    assert!(!db2.exists() && !swf2.exists());
}

/// Fair share from a site's history: the example history imported, a
/// trace whose header names its users and accounts is simulated with the
/// site's associations, from today's shares (`--usage-from`). Physics
/// (alice, carol) used about 80 core-hours, chem (bob) under 4: bob's job
/// goes first, where with no past alice's, submitted first, does.
#[test]
fn an_imported_history_seeds_fair_share_in_the_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let o = tessera(&["import", "slurm-conf", &example("slurm.conf"), "--factors", &example("factors.toml"), "-o", &p("site.toml")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = tessera(&["import", "sacct", &example("sacct.txt"), "--cluster", &p("site.toml"), "--db", &p("history.db"), "-o", &p("history.swf")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let swf = std::fs::read_to_string(p("history.swf")).unwrap();
    assert!(swf.contains("; Note: user 1 = alice") && swf.contains("; Note: account 2 = chem"), "the workload names its numbers: {swf}");
    std::fs::write(
        p("next.swf"),
        "; Note: user 1 = alice\n; Note: user 2 = bob\n; Note: account 1 = physics\n; Note: account 2 = chem\n\
         1 0 -1 100 10 -1 -1 10 200 -1 1 1 1 -1 1 -1 -1 -1\n2 0 -1 100 10 -1 -1 10 200 -1 1 2 2 -1 1 -1 -1 -1\n",
    )
    .unwrap();
    let (next, accounts, jobs) = (p("next.swf"), example("accounts.toml"), p("jobs.csv"));
    let starts = |extra: &[&str]| {
        let mut args = vec!["sim", "run", "--capacity", "10", "--trace", &next, "--accounts", &accounts, "--jobs-out", &jobs, "--format", "json"];
        args.extend_from_slice(extra);
        let o = tessera(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let csv = std::fs::read_to_string(p("jobs.csv")).unwrap();
        let start: Vec<i64> = csv.lines().skip(1).map(|l| l.split(',').nth(2).unwrap().parse().unwrap()).collect();
        (start, v)
    };
    let (fresh, _) = starts(&[]);
    assert_eq!(fresh, vec![0, 100], "no past: submission order among equal shares");
    let db = p("history.db");
    let (seeded, v) = starts(&["--usage-from", &db]);
    assert_eq!(seeded, vec![100, 0], "bob's account used less: his job first");
    assert!(v["priority"].as_str().unwrap().contains("usage from") && v["priority"].as_str().unwrap().contains("6 jobs of run 1, 0 of users without an association left out"), "the summary says where the usage came from: {v}");
    // a history needs accounts to charge
    let o = tessera(&["sim", "run", "--capacity", "10", "--trace", &p("next.swf"), "--usage-from", &db]);
    assert!(!o.status.success() && text(&o.stderr).contains("--usage-from"), "{}", text(&o.stderr));
}
