//! `tessera twin --slurm`, the short form of docs/emulation.md's comparison:
//! Debian's Slurm 22.05 runs a generated workload (Lublin and Feitelson's
//! model, 30 jobs, arrivals 10 times denser, at 10%) on 4 emulated nodes of
//! 8 CPUs (`scripts/slurm-emulate --accounting`: slurmctld, 4 slurmd, slurmdbd on a
//! private MariaDB, munged); Tessera imports its slurm.conf and sacct and
//! simulates the jobs Slurm ran; the report compares them job by job. Needs
//! root and Debian's slurm-wlm, slurmdbd, munge and mariadb-server; elsewhere
//! it says so and passes, except under `.ci/run` (TESSERA_REQUIRE_SLURM=1).

use crate::common::{tessera, text};
use std::process::Command;

fn usable() -> bool {
    let root = nix::unistd::geteuid().is_root();
    let has = |c: &str| Command::new("sh").args(["-c", &format!("command -v {c}")]).output().is_ok_and(|o| o.status.success());
    if !(root && ["slurmctld", "slurmd", "slurmdbd", "sacct", "munged", "mariadbd"].into_iter().all(has)) {
        assert!(std::env::var("TESSERA_REQUIRE_SLURM").is_err(), "the Slurm twin needs root and Debian's slurm-wlm, slurmdbd, munge and mariadb-server here");
        eprintln!("SKIPPED: the Slurm twin needs root and Debian's slurm-wlm, slurmdbd, munge and mariadb-server");
        return false;
    }
    true
}

#[test]
fn a_real_slurm_is_imported_and_predicted_job_by_job() {
    if !usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let o = tessera(&["workload", "generate", "--procs", "128", "--jobs", "30", "--seed", "8", "--arrival-factor", "0.1", "-o", &p("w.swf")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let emulator = format!("{}/../../scripts/slurm-emulate", env!("CARGO_MANIFEST_DIR"));
    let o = tessera(&["twin", "--slurm", "--trace", &p("w.swf"), "--max-jobs", "30", "--shrink", "10", "--slurm-nodes", "4", "--slurm-cpus", "8", "--emulator", &emulator, "--dir", &p("twin"), "--format", "json"]);
    assert!(o.status.success(), "{}\n{}", text(&o.stderr), std::fs::read_to_string(p("twin/slurm-emulate.log")).unwrap_or_default());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let jobs = v["jobs"].as_u64().unwrap();
    let left_out: u64 = v["left_out"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(jobs + left_out, 30, "{v}");
    // every job once, its batch step (at least) folded into it
    assert!(jobs >= 25 && v["sacct_steps"].as_u64().unwrap() >= jobs && v["sacct_rows"].as_u64().unwrap() == jobs + v["sacct_steps"].as_u64().unwrap(), "{v}");
    // Slurm's default bf_interval, imported from the slurm.conf it ran
    assert_eq!(v["backfill_interval_s"], 30, "{v}");
    let cluster = std::fs::read_to_string(p("twin/cluster.toml")).unwrap();
    assert!(cluster.contains("backfill_interval = 30") && cluster.contains("node[0001-0004]"), "{cluster}");
    // job by job: one line each, Slurm's and the simulator's starts
    let csv = std::fs::read_to_string(p("twin/twin.csv")).unwrap();
    assert_eq!(csv.lines().count() as u64, jobs + 1, "{csv}");
    for l in csv.lines().skip(1) {
        let f: Vec<f64> = l.split(',').skip(3).map(|x| x.parse().unwrap()).collect();
        let (submit, sim_start, slurm_start) = (f[0], f[1], f[3]);
        assert!(sim_start >= submit && slurm_start >= submit, "{l}");
    }
    // every metric compared; the starts agree to within Slurm's own cadence
    // (its backfill every 30 s, its main scheduler a few seconds after a
    // submission): half the jobs within 5 s
    for k in ["mean wait (s)", "mean bounded slowdown (10 s)", "utilization", "makespan (s)"] {
        assert!(v["relative_difference"][k].is_number(), "{k}: {v}");
    }
    assert!(v["start_abs_median"].as_f64().unwrap() <= 5.0, "{v}");
    // the accounting store holds the history: sacct-like listing and usage
    let db = p("twin/accounting.db");
    let o = tessera(&["report", "usage", "--db", &db]);
    assert!(o.status.success() && text(&o.stdout).contains("root"), "{}", text(&o.stderr));
}
