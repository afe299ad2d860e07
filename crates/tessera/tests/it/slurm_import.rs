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
