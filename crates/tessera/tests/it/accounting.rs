//! Accounting end to end: simulate into a real store, then report.
//! The canonical-unit and billing examples of Andrijauskas, Sfiligoi & Würthwein
//! (../shared/seeds/001_*.txt), each recreated by a tiny cluster file and trace.

use std::path::{Path, PathBuf};
use crate::common::{tessera, text};
use std::process::Command;

fn ok(args: &[&str]) -> String {
    let out = tessera(args);
    assert!(out.status.success(), "tessera {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

const GB_KB: i64 = 1024 * 1024;

/// One shared node of `cores` cores and `mem_gb` GB, and jobs (procs, KB per proc)
/// that all run over [0, 3600).
fn scenario(dir: &Path, cores: u32, mem_gb: u32, jobs: &[(i64, i64)]) -> PathBuf {
    let cluster = dir.join("c.toml");
    std::fs::write(&cluster, format!("[[nodetype]]\nname = \"n\"\nnodes = \"n1\"\ncores = {cores}\nmemory = \"{mem_gb}G\"\n")).unwrap();
    let mut swf = String::from("; MaxProcs: 10\n");
    for (i, (procs, kb)) in jobs.iter().enumerate() {
        swf += &format!("{} 0 -1 3600 {procs} -1 -1 {procs} 3600 {kb} 1 1 1 -1 1 -1 -1 -1\n", i + 1);
    }
    let trace = dir.join("t.swf");
    std::fs::write(&trace, swf).unwrap();
    let db = dir.join("acct.db");
    ok(&["sim", "run", "--trace", trace.to_str().unwrap(), "--cluster", cluster.to_str().unwrap(), "--db", db.to_str().unwrap(), "--format", "json"]);
    db
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&ok(args)).unwrap()
}

/// Leftovers (3 cores, 1 GB) -> 0 units; (3, 4 GB) -> 2; (3, 7 GB) -> 3.
#[test]
fn true_overhead_examples_through_the_store() {
    for (jobs, want) in [
        // 7 cores and 15 GB allocated on 10 cores / 16 GB: 3 cores + 1 GB left
        (vec![(5, 2 * GB_KB), (2, 5 * GB_KB / 2)], 0u64),
        // 7 cores, 12 GB: 3 cores + 4 GB left
        (vec![(6, 2 * GB_KB), (1, -1)], 2),
        // 7 cores, 9 GB: 3 cores + 7 GB left
        (vec![(6, GB_KB), (1, 3 * GB_KB)], 3),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = scenario(dir.path(), 10, 16, &jobs);
        let r = json(&["report", "overhead", "--db", db.to_str().unwrap(), "--format", "json"]);
        assert_eq!(r["canonical_units"]["all"], "1 core + 2 GB");
        assert_eq!(r["histogram"]["n1"].as_object().unwrap().keys().collect::<Vec<_>>(), vec![&want.to_string()], "{jobs:?}");
        assert!((r["canonical_unit_hours"]["total"].as_f64().unwrap() - want as f64).abs() < 1e-9, "one hour at {want} units");
    }
}

/// The billing examples: CPU 100% / memory 143%; CPU 200% / memory 100%; and with
/// 3 units of overhead removed, CPU 100% / memory 111%.
#[test]
fn fair_billing_examples_through_the_store() {
    for (cores, mem, jobs, cpu, memory) in [
        // all 10 cores, 14 of 20 GB: no true overhead, memory billed at 20/14
        (10, 20, vec![(8, 5 * GB_KB / 4), (2, 2 * GB_KB)], 1.0, 20.0 / 14.0),
        // 5 of 10 cores, all 20 GB: CPU billed at 10/5
        (10, 20, vec![(5, 4 * GB_KB)], 2.0, 1.0),
        // 7 cores, 9 of 16 GB: 3 units (3 cores + 6 GB) are the provider's loss,
        // the remaining 1 GB is billed: memory at 10/9
        (10, 16, vec![(6, GB_KB), (1, 3 * GB_KB)], 1.0, 10.0 / 9.0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let db = scenario(dir.path(), cores, mem, &jobs);
        let r = json(&["report", "bill", "--db", db.to_str().unwrap(), "--format", "json", "--price-core-hour", "0.05"]);
        for j in r["jobs"].as_array().unwrap() {
            assert!((j["rates"]["cpu"].as_f64().unwrap() - cpu).abs() < 1e-9, "{j}");
            assert!((j["rates"]["memory"].as_f64().unwrap() - memory).abs() < 1e-9, "{j}");
        }
        let a = &r["accounts"]["group1"];
        assert!((a["rates"]["cpu"].as_f64().unwrap() - cpu).abs() < 1e-9);
        assert!((a["rates"]["memory"].as_f64().unwrap() - memory).abs() < 1e-9);
        let billed_cores = a["billed"]["core_hours"].as_f64().unwrap();
        assert!((a["cost"].as_f64().unwrap() - 0.05 * billed_cores).abs() < 1e-9);
    }
}

/// A shared trace on a heterogeneous cluster, reported by user, account and node
/// type in raw and HS06 units, exported to APEL in every message type.
#[test]
fn heterogeneous_run_reports_and_apel() {
    let Some(trace) = tessera_workload::traces::shared_trace("SDSC-BLUE-2000-4.2-cln.swf.gz") else {
        tessera_workload::traces::shared_dir_or_skip("heterogeneous_run_reports_and_apel");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("acct.db");
    let db = db.to_str().unwrap();
    let cluster = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/clusters/sdsc-blue-3gen.toml");
    ok(&["sim", "run", "--trace", trace.to_str().unwrap(), "--cluster", cluster.to_str().unwrap(), "--max-jobs", "3000", "--db", db, "--site", "UKI-TEST"]);
    for by in ["user", "account", "nodetype", "month", "group", "partition"] {
        let r = json(&["report", "usage", "--db", db, "--by", by, "--format", "json"]);
        let rows = r["rows"].as_array().unwrap();
        assert!(!rows.is_empty(), "{by}");
        for row in rows {
            assert!(row["core_hours"].as_f64().unwrap() >= 0.0 && row["hs06_hours"].as_f64().unwrap() >= 0.0, "{by}: {row}");
        }
        if by == "nodetype" {
            let gen1 = rows.iter().find(|r| r["key"] == "gen1").unwrap();
            let gen3 = rows.iter().find(|r| r["key"] == "gen3").unwrap();
            // HS06-hours are core-hours times the node type's HS06 per core
            assert!((gen1["hs06_hours"].as_f64().unwrap() - 10.0 * gen1["core_hours"].as_f64().unwrap()).abs() < 1e-6);
            assert!((gen3["hs06_hours"].as_f64().unwrap() - 20.0 * gen3["core_hours"].as_f64().unwrap()).abs() < 1e-6);
            assert!(gen3["norm_core_hours"].as_f64().unwrap() > gen3["core_hours"].as_f64().unwrap());
        }
    }
    let list = ok(&["acct", "--db", db, "-P", "-o", "JobID,User,Account,NodeList,Elapsed,NormElapsed,HS06Hours,State"]);
    assert!(list.starts_with("JobID|User|Account|NodeList|Elapsed|NormElapsed|HS06Hours|State\n"));
    assert!(list.lines().count() > 1000);
    for (kind, version) in [("individual", "0.3"), ("individual", "0.4"), ("summary", "0.2"), ("summary", "0.4"), ("normalised", "0.3"), ("normalised", "0.4"), ("sync", "0.1")] {
        let msg = ok(&["acct", "apel", "--db", db, "--type", kind, "--version", version]);
        let n = tessera_accounting::apel::validate(&msg).unwrap_or_else(|e| panic!("{kind} v{version}: {e}"));
        assert!(n > 0, "{kind} v{version}: no records");
        assert!(msg.contains("Site: UKI-TEST\n"));
    }
    let ind = ok(&["acct", "apel", "--db", db, "--type", "individual", "--version", "0.3"]);
    assert!(ind.starts_with("APEL-individual-job-message: v0.3\n"));
    assert!(ind.contains("ServiceLevelType: HEPSPEC\n"));
    // the benchmark of the nodes each job ran on, not a site average
    for level in ["ServiceLevel: 10\n", "ServiceLevel: 15\n", "ServiceLevel: 20\n"] {
        assert!(ind.contains(level), "no job at {level}");
    }
    let ind4 = ok(&["acct", "apel", "--db", db, "--type", "individual", "--version", "0.4"]);
    assert!(ind4.contains("ServiceLevel: {hepspec: 20}\n"));
}

/// `kill -9` while a run is being written: the store stays consistent (whole
/// jobs with their allocations, in whole batches), the cut run is not complete,
/// and the store is usable afterwards.
#[test]
fn killing_the_process_mid_write_leaves_a_consistent_store() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("big.swf");
    ok(&["workload", "generate", "--procs", "256", "--jobs", "400000", "--seed", "5", "-o", trace.to_str().unwrap()]);
    let db = dir.path().join("acct.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["sim", "run", "--trace", trace.to_str().unwrap(), "--db", db.to_str().unwrap(), "--format", "json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // wait until jobs are being written, then kill
    let started = std::time::Instant::now();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(5));
        let rows = rusqlite::Connection::open(&db)
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM jobs", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0);
        if rows > 0 || started.elapsed().as_secs() > 120 {
            break;
        }
    }
    unsafe { libc_kill(child.id() as i32) };
    let status = child.wait().unwrap();
    assert!(!status.success(), "the run finished before it could be killed; make the workload larger");
    let c = rusqlite::Connection::open(&db).unwrap();
    let integrity: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(integrity, "ok");
    let (jobs, complete): (i64, i64) = c.query_row("SELECT (SELECT COUNT(*) FROM jobs), (SELECT complete FROM runs)", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_eq!(complete, 0, "a run cut short is not marked complete");
    assert_eq!(jobs % 5000, 0, "only whole batches are written: {jobs}");
    let orphans: i64 = c.query_row("SELECT COUNT(*) FROM jobs j WHERE NOT EXISTS (SELECT 1 FROM allocations a WHERE a.job = j.id)", [], |r| r.get(0)).unwrap();
    assert_eq!(orphans, 0, "every job has its allocations");
    drop(c);
    // the store still opens; reports skip the incomplete run
    let out = tessera(&["acct", "--db", db.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds no complete run"));
    // and a new run can be recorded next to it
    let small = dir.path().join("small.swf");
    ok(&["workload", "generate", "--procs", "64", "--jobs", "50", "-o", small.to_str().unwrap()]);
    ok(&["sim", "run", "--trace", small.to_str().unwrap(), "--db", db.to_str().unwrap(), "--format", "json"]);
    assert_eq!(ok(&["acct", "--db", db.to_str().unwrap(), "-P"]).lines().count(), 51);
}

/// SIGKILL a process.
unsafe fn libc_kill(pid: i32) {
    extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    kill(pid, 9);
}

/// Users, groups and accounts sort in natural order (user2 before user10), not
/// as text (user1, user10, user100, user2).
#[test]
fn names_sort_in_natural_order() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("u.swf");
    let mut t = String::from("; MaxProcs: 8\n");
    for (i, user) in [100, 2, 10, 1].iter().enumerate() {
        t.push_str(&format!("{} {} 0 10 1 -1 -1 1 20 -1 1 {user} {user} -1 1 -1 -1 -1\n", i + 1, i * 5));
    }
    std::fs::write(&trace, t).unwrap();
    let db = dir.path().join("a.db");
    let (tr, d) = (trace.to_str().unwrap(), db.to_str().unwrap());
    assert!(tessera(&["sim", "run", "--trace", tr, "--db", d]).status.success());
    let out = tessera(&["report", "usage", "--db", d, "--by", "user", "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<String> = v["rows"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap().to_string()).collect();
    let num = |k: &str| k.trim_start_matches(|c: char| !c.is_ascii_digit()).parse::<u32>().unwrap();
    assert_eq!(keys.iter().map(|k| num(k)).collect::<Vec<_>>(), vec![1, 2, 10, 100], "{keys:?}");
    // every text report says which run of which store it covers; CSV stays data
    for r in ["usage", "utilization", "overhead", "bill"] {
        let t = text(&tessera(&["report", r, "--db", d]).stdout);
        assert!(t.starts_with(&format!("run 1 of {d}: {tr} (site ")), "{r}: {t}");
        let csv = text(&tessera(&["report", r, "--db", d, "--format", "csv"]).stdout);
        assert!(!csv.starts_with("run "), "{r}: {csv}");
    }
}

/// `acct prune` removes an abandoned run (a recording cut short, older than
/// --min-age) with every row under it, keeps a young unfinished one (it may be
/// being written) and every complete one, shrinks the file, and removes a named
/// simulation run on request; `--dry-run` removes nothing.
#[test]
fn prune_removes_abandoned_runs_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db");
    let d = db.display().to_string();
    for policy in ["easy", "fcfs", "conservative"] {
        assert!(tessera(&["sim", "run", "--max-jobs", "2000", "--policy", policy, "--db", &d]).status.success());
    }
    {
        let c = rusqlite::Connection::open(&db).unwrap();
        // run 1 was cut short two hours ago; run 3 is being written now
        c.execute_batch("UPDATE runs SET complete = 0, recorded_at = recorded_at - 7200 WHERE id = 1; UPDATE runs SET complete = 0 WHERE id = 3;").unwrap();
    }
    let count = |sql: &str| -> i64 { rusqlite::Connection::open(&db).unwrap().query_row(sql, [], |r| r.get(0)).unwrap() };
    let dry = text(&tessera(&["acct", "prune", "--db", &d, "--dry-run"]).stdout);
    assert!(dry.contains("would remove run 1 (unfinished simulation of 2000 jobs") && dry.contains("would remove 1 of 3 runs"), "{dry}");
    assert_eq!(count("SELECT COUNT(*) FROM runs"), 3);
    let size = std::fs::metadata(&db).unwrap().len();
    let out = tessera(&["acct", "prune", "--db", &d]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("removed 1 of 3 runs"), "{}", text(&out.stdout));
    assert_eq!(count("SELECT COUNT(*) FROM runs"), 2);
    for table in ["jobs", "allocations", "nodes", "node_capacity"] {
        assert_eq!(count(&format!("SELECT COUNT(*) FROM {table} WHERE run_id = 1")), 0, "{table}");
    }
    assert!(std::fs::metadata(&db).unwrap().len() < size, "the file shrinks");
    let gone = tessera(&["acct", "--db", &d, "--run", "1"]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(tessera(&["report", "usage", "--db", &d, "--run", "2"]).status.success());
    // a named run goes, finished or not; an unknown one is an error
    assert!(tessera(&["acct", "prune", "--db", &d, "--run", "2"]).status.success());
    assert_eq!(count("SELECT COUNT(*) FROM runs"), 1);
    let unknown = tessera(&["acct", "prune", "--db", &d, "--run", "9"]);
    assert!(text(&unknown.stderr).contains("has no run 9"), "{}", text(&unknown.stderr));
    let listed = text(&tessera(&["acct", "runs", "--db", &d]).stdout);
    assert!(listed.contains("unfinished") && listed.contains("conservative") && !listed.contains("fcfs"), "{listed}");
}

/// GPU jobs end to end in the canonical unit "1 GPU": a whole-node job on an
/// exclusive GPU node holds (and is billed for) all its GPUs, leaving no true
/// overhead; on a shared GPU partition a trace job holds the partition's
/// `default_gpus_per_node`, and the GPUs it leaves idle are the overhead.
/// (Before GPUs reached the records, the first case showed 4 units of overhead
/// and billed 0 GPU-hours.)
#[test]
fn gpu_jobs_are_held_billed_and_counted_in_gpu_units() {
    for (allocation, default_gpus, want_units, want_gpu_hours) in [("exclusive", "", 0u64, 4.0), ("shared", "default_gpus_per_node = 1\n", 3, 1.0)] {
        let dir = tempfile::tempdir().unwrap();
        let cluster = dir.path().join("c.toml");
        std::fs::write(
            &cluster,
            format!("[[nodetype]]\nname = \"g\"\nnodes = \"g1\"\ncores = 8\nmemory = \"64G\"\ngpus = 4\n\n[[partition]]\nname = \"gpu\"\nnodetypes = [\"g\"]\nallocation = \"{allocation}\"\n{default_gpus}"),
        )
        .unwrap();
        let trace = dir.path().join("t.swf");
        std::fs::write(&trace, "; MaxProcs: 8\n1 0 -1 3600 8 -1 -1 8 3600 -1 1 1 1 -1 1 -1 -1 -1\n").unwrap();
        let db = dir.path().join("acct.db");
        ok(&["sim", "run", "--trace", trace.to_str().unwrap(), "--cluster", cluster.to_str().unwrap(), "--db", db.to_str().unwrap()]);
        let db = db.to_str().unwrap();
        let o = json(&["report", "overhead", "--db", db, "--format", "json"]);
        assert_eq!(o["canonical_units"]["gpu"], "1 GPU", "{o}");
        assert_eq!(o["histogram"]["g1"].as_object().unwrap().keys().collect::<Vec<_>>(), vec![&want_units.to_string()], "{allocation}: {o}");
        let b = json(&["report", "bill", "--db", db, "--format", "json", "--price-gpu-hour", "2"]);
        let a = &b["accounts"]["group1"];
        assert!((a["billed"]["gpu_hours"].as_f64().unwrap() - want_gpu_hours).abs() < 1e-9, "{allocation}: {a}");
        assert!((a["cost"].as_f64().unwrap() - 2.0 * want_gpu_hours).abs() < 1e-9, "{allocation}: {a}");
    }
}

/// A trace job that requests no memory (SWF field 10 is -1) asks its
/// partition's `def_mem_per_cpu` per processor: on a node of 8 cores and 17 GB
/// with a default of 4 GB, four one-processor jobs run at once and the fifth
/// waits for one to end; without the default all five run at once. A job
/// whose trace gives its memory asks that instead (1 GB: EASY backfills it
/// into the gigabyte left).
#[test]
fn a_trace_job_without_memory_asks_its_partitions_default() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.swf");
    let mut swf = String::from("; MaxProcs: 8\n");
    for i in 1..=5 {
        swf.push_str(&format!("{i} 0 -1 100 1 -1 -1 1 100 -1 1 1 1 -1 1 -1 -1 -1\n"));
    }
    // job 6 asks 1 GB per processor (field 10, KB)
    swf.push_str("6 0 -1 100 1 -1 -1 1 100 1048576 1 1 1 -1 1 -1 -1 -1\n");
    std::fs::write(&trace, swf).unwrap();
    for (default, want) in [("def_mem_per_cpu = \"4G\"\n", [0, 0, 0, 0, 100, 0]), ("", [0; 6])] {
        let cluster = dir.path().join("c.toml");
        std::fs::write(&cluster, format!("[[nodetype]]\nname = \"n\"\nnodes = \"n1\"\ncores = 8\nmemory = \"17G\"\n\n[[partition]]\nname = \"batch\"\nnodetypes = [\"n\"]\n{default}")).unwrap();
        let out = dir.path().join("out.swf");
        ok(&["sim", "run", "--trace", trace.to_str().unwrap(), "--cluster", cluster.to_str().unwrap(), "--policy", "easy", "--swf-out", out.to_str().unwrap()]);
        let waits: Vec<i64> = std::fs::read_to_string(&out).unwrap().lines().filter(|l| !l.starts_with(';')).map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap()).collect();
        assert_eq!(waits, want, "{default}");
    }
}

/// `tessera acct` alone reads `./tessera-state`'s store, as `tessera queue`
/// and `tessera nodes` use that directory; `--starttime` after `--endtime` is
/// refused, not an empty listing.
#[test]
fn acct_finds_the_default_state_directory_and_refuses_an_empty_window() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tessera-state")).unwrap();
    let small = dir.path().join("small.swf");
    ok(&["workload", "generate", "--procs", "64", "--jobs", "20", "-o", small.to_str().unwrap()]);
    ok(&["sim", "run", "--trace", small.to_str().unwrap(), "--db", dir.path().join("tessera-state/accounting.db").to_str().unwrap(), "--format", "json"]);
    let acct = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .arg("acct")
            .args(args)
            .current_dir(dir.path())
            .env_remove("TESSERA_DB")
            .env_remove("TESSERA_STATE_DIR")
            .output()
            .unwrap()
    };
    let o = acct(&["-P"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).lines().count(), 21);
    let o = acct(&["-S", "2024-02-01", "-E", "2024-01-01"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("--starttime 2024-02-01 is later than --endtime 2024-01-01"), "{}", text(&o.stderr));
}

/// A simulated run on priority tiers records, for every job a higher tier
/// suspended, the intervals it held no cores (`released`), adding up to its
/// suspended time; the bills then charge its cores only outside them.
#[test]
fn a_simulated_preemption_records_when_jobs_held_no_cores() {
    let Some(trace) = tessera_workload::traces::shared_trace("SDSC-SP2-1998-4.2-cln.swf.gz") else {
        let _ = tessera_workload::traces::shared_dir_or_skip("a_simulated_preemption_records_when_jobs_held_no_cores");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("acct.db");
    let cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/sdsc-sp2-tiers.toml");
    ok(&["sim", "run", "--trace", trace.to_str().unwrap(), "--cluster", cluster, "--max-jobs", "3000", "--db", db.to_str().unwrap()]);
    let c = rusqlite::Connection::open(&db).unwrap();
    let (jobs, mismatched): (i64, i64) = c
        .query_row(
            "SELECT COUNT(*), SUM(j.suspended_s != (SELECT COALESCE(SUM(r.end_time - r.start_time), 0) FROM released r WHERE r.job = j.id)) FROM jobs j WHERE j.suspended_s > 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(jobs > 0, "the run preempts");
    assert_eq!(mismatched, 0, "every suspended job's released intervals add up to its suspended time");
}
