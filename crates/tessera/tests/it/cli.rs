use std::path::Path;
use crate::common::{tessera, text};

/// The summary table without the wall-time line (the only part that varies).
fn stable(table: &str) -> String {
    table.lines().filter(|l| !l.starts_with("wall time")).collect::<Vec<_>>().join("\n")
}

const TRACE: &str = "\
; Version: 2.2
; MaxProcs: 8
1 0 -1 100 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1
2 5 -1 50 8 -1 -1 8 60 -1 1 2 1 -1 1 -1 -1 -1
3 6 -1 20 2 -1 -1 2 30 -1 1 3 1 -1 1 -1 -1 -1
4 7 -1 0 16 -1 -1 16 10 -1 1 3 1 -1 1 -1 -1 -1
";

#[test]
fn default_run_simulates_the_embedded_workload() {
    let out = tessera(&["sim", "run"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    insta::assert_snapshot!("default_run_table", stable(&text(&out.stdout)));
    let out = tessera(&["sim", "run", "--format", "json", "--policy", "conservative"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs_simulated"], 10000);
    assert_eq!(v["capacity"], 256);
    assert_eq!(v["policy"], "conservative");
    for key in [
        "mean_wait", "median_wait", "p95_wait", "mean_response", "mean_slowdown", "mean_bounded_slowdown",
        "area_weighted_slowdown", "utilization", "makespan", "wall_time_s", "jobs_skipped",
    ] {
        assert!(v.get(key).is_some(), "summary lacks {key}");
    }
}

#[test]
fn run_on_a_trace_writes_jobs_swf_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("t.swf"), TRACE).unwrap();
    let p = |f: &str| d.join(f).display().to_string();
    let out = tessera(&[
        "sim", "run", "--trace", &p("t.swf"), "--policy", "easy", "--jobs-out", &p("jobs.csv"), "--swf-out",
        &p("out.swf"), "--summary", &p("summary.json"), "--format", "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = std::fs::read_to_string(d.join("jobs.csv")).unwrap();
    assert_eq!(
        csv,
        "job_id,submit,start,end,procs,estimate,wait,killed,factor,raw_s,normalized_s,nodes\n\
         1,0,0,100,4,100,0,0,1,100,100,\n2,5,100,150,8,60,95,0,1,50,50,\n3,6,6,26,2,30,0,0,1,20,20,\n"
    );
    let swf = std::fs::read_to_string(d.join("out.swf")).unwrap();
    assert!(swf.starts_with("; Version: 2.2\n; MaxProcs: 8\n; Note: simulated by tessera"));
    assert!(swf.contains("\n2 5 95 50 8 "), "{swf}");
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["jobs_simulated"], 3);
    assert_eq!(s["jobs_skipped"]["larger_than_machine"], 1);
    assert_eq!(s["makespan"], 150);
    let stdout: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stdout["mean_wait"], s["mean_wait"]);
}

#[test]
fn malformed_trace_is_an_error_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.swf");
    std::fs::write(&path, TRACE.replace("3 6 -1 20", "3 6 -1 2O")).unwrap();
    let path = path.display().to_string();
    let out = tessera(&["sim", "run", "--trace", &path]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr).replace(&path, "bad.swf"),
        "error: bad.swf:5: field 4 (run time) is `2O`: expected an integer (-1 if unknown)\n"
    );
    let out = tessera(&["sim", "run", "--trace", &path, "--lenient", "--format", "json"]);
    assert!(out.status.success());
    assert!(text(&out.stderr).contains("1 malformed line(s) skipped"), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs_simulated"], 2);
}

#[test]
fn usage_errors_and_unknown_names() {
    // an unknown value is a usage error, exit 2, as the README promises
    let out = tessera(&["sim", "run", "--policy", "sjf"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("error: invalid value 'sjf' for '--policy <POLICY>': unknown policy `sjf`; known policies: fcfs, easy, conservative, parm\n"), "{}", text(&out.stderr));
    for (args, says) in [
        (&["report", "usage", "--by", "queue"][..], "cannot group by `queue`"),
        (&["acct", "-s", "RUNNING"], "unknown state `RUNNING`"),
        (&["acct", "-o", "JobID,Foo"], "unknown field `Foo`"),
        (&["sim", "compare", "--policy", "easy,sjf"], "unknown policy `sjf`"),
        (&["controller", "--policy", "sjf"], "unknown policy `sjf`"),
    ] {
        let out = tessera(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(says), "{args:?}: {}", text(&out.stderr));
    }
    let out = tessera(&["sim", "run", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    let out = tessera(&["sim", "run", "--trace", "/nonexistent/trace.swf"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("error: trace /nonexistent/trace.swf: no such file (tried /nonexistent/trace.swf)"), "{}", text(&out.stderr));
}

#[test]
fn a_trace_without_machine_size_needs_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noheader.swf");
    std::fs::write(&path, "1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 1 -1 -1 -1\n").unwrap();
    let path = path.display().to_string();
    let out = tessera(&["sim", "run", "--trace", &path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("neither MaxProcs nor MaxNodes"), "{}", text(&out.stderr));
    let out = tessera(&["sim", "run", "--trace", &path, "--capacity", "4", "--format", "json"]);
    assert!(out.status.success());
}

#[test]
fn workload_generate_is_seeded_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.swf");
    let b = dir.path().join("b.swf");
    for f in [&a, &b] {
        let out = tessera(&["workload", "generate", "--procs", "64", "--jobs", "500", "--seed", "9", "-o", f.to_str().unwrap()]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let out = tessera(&["workload", "info", "--trace", a.to_str().unwrap(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["records"], 500);
    assert_eq!(v["max_procs"], 64);
    let out = tessera(&["sim", "run", "--trace", a.to_str().unwrap(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs_simulated"], 500);
}

#[test]
fn cluster_files_are_validated_and_used() {
    let out = tessera(&["cluster", "show"]);
    assert!(out.status.success());
    insta::assert_snapshot!("default_cluster", text(&out.stdout));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/clusters/default.toml");
    let good = std::fs::read_to_string(example).unwrap();
    std::fs::write(&path, good.replace("cores_per_socket = 4", "cores_per_socket = 0")).unwrap();
    let p = path.display().to_string();
    let out = tessera(&["sim", "run", "--cluster", &p]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr).replace(&p, "c.toml"),
        "error: c.toml:9: `nodetype[0].cores_per_socket`: expected an integer >= 1, found 0\n"
    );
    std::fs::write(&path, good.replace("sockets = 2", "sockets = 1")).unwrap();
    let out = tessera(&["sim", "run", "--cluster", &p, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["capacity"], 128, "the embedded workload on a 32 x 4-core cluster");
}

#[test]
fn publish_prints_the_liverpool_figures_in_every_format() {
    let c = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/clusters/liverpool-2010.toml");
    let c = c.to_str().unwrap();
    let run = |f: &str| {
        let out = tessera(&["publish", "--cluster", c, "--format", f]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert!(run("text").contains("CPUScalingReferenceSI00   1330 (reference: typeC)"));
    let v: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    assert_eq!((v["physical_cpus"].as_u64(), v["logical_cpus"].as_u64(), v["cores"].as_f64()), (Some(40), Some(60), Some(1.5)));
    assert!(run("yaim").contains("CE_OTHERDESCR=\"Cores=1.5,Benchmark=6.85-HEP-SPEC06\"\n"));
    assert!(run("glue13").contains("GlueCECapability: CPUScalingReferenceSI00=1330\n"));
    assert!(run("glue2").contains("GLUE2ExecutionEnvironmentCPUTimeScalingFactor: 1.86\n"));
}

/// `--max-jobs 0` meant no job in `sim run` and every job in `sim bench`: now a
/// usage error everywhere (omit the flag for all).
#[test]
fn max_jobs_zero_is_refused_everywhere() {
    for args in [&["sim", "run", "--max-jobs", "0"][..], &["sim", "bench", "--max-jobs", "0"], &["experiment", "nodesets", "--max-jobs", "0"], &["twin", "--trace", "x.swf", "--max-jobs", "0"]] {
        let out = tessera(args);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains("expected a whole number >= 1 (omit the flag for all)"), "{args:?}: {e}");
    }
}

/// A power-aware run's capacity is nodes (it allocates whole nodes), and its
/// summary says so; other runs count processors.
#[test]
fn a_power_aware_summary_counts_nodes() {
    let theta = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/theta-overprovisioned.toml");
    let t = text(&tessera(&["sim", "run", "--cluster", theta, "--policy", "parm", "--max-jobs", "20"]).stdout);
    assert!(t.contains("capacity (nodes)              5880") && !t.contains("capacity (processors)"), "{t}");
    let t = text(&tessera(&["sim", "run", "--max-jobs", "20"]).stdout);
    assert!(t.contains("capacity (processors)"), "{t}");
}

/// The jobs CSV has exactly the columns docs/semantics.md lists, in order.
#[test]
fn the_jobs_csv_columns_are_the_documented_ones() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/semantics.md")).unwrap();
    let table = doc.split("`--jobs-out FILE.csv` writes").nth(1).unwrap();
    let documented: Vec<String> = table
        .lines()
        .skip_while(|l| !l.starts_with("| column"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .flat_map(|l| l.split('|').nth(1).unwrap().split('`').skip(1).step_by(2).map(str::to_string).collect::<Vec<_>>())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("j.csv");
    let theta = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/theta-overprovisioned.toml");
    assert!(tessera(&["sim", "run", "--cluster", theta, "--policy", "parm", "--max-jobs", "5", "--jobs-out", csv.to_str().unwrap()]).status.success());
    let header = std::fs::read_to_string(&csv).unwrap().lines().next().unwrap().to_string();
    assert_eq!(header.split(',').map(str::to_string).collect::<Vec<_>>(), documented);
}

/// `tessera` run from `cwd` with `TESSERA_TRACES` set to `traces` (or unset).
fn tessera_in(cwd: &Path, traces: Option<&Path>, args: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.args(args).current_dir(cwd);
    match traces {
        Some(t) => c.env("TESSERA_TRACES", t),
        None => c.env_remove("TESSERA_TRACES"),
    };
    c.output().unwrap()
}

/// `--trace NAME`, a bare file name that is not in the current directory, is
/// the file NAME of `$TESSERA_TRACES`: the README's commands work from any
/// directory once the traces are downloaded (they named `../shared/traces/`,
/// which only this workspace has).
#[test]
fn a_bare_trace_name_is_looked_up_in_tessera_traces() {
    let dir = tempfile::tempdir().unwrap();
    let (cwd, traces) = (dir.path().join("elsewhere"), dir.path().join("traces"));
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&traces).unwrap();
    std::fs::write(traces.join("t.swf"), TRACE).unwrap();
    let found = traces.join("t.swf").display().to_string();
    let out = tessera_in(&cwd, Some(&traces), &["sim", "run", "--trace", "t.swf", "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["trace"].as_str(), v["jobs_simulated"].as_u64()), (Some(found.as_str()), Some(3)), "{v}");
    let out = tessera_in(&cwd, Some(&traces), &["workload", "info", "--trace", "t.swf"]);
    assert!(out.status.success() && text(&out.stdout).contains(&found), "{}{}", text(&out.stdout), text(&out.stderr));
    // a sweep file's bare name too
    std::fs::write(cwd.join("s.toml"), "traces = [\"t.swf\"]\npolicies = [\"easy\"]\n").unwrap();
    let out = tessera_in(&cwd, Some(&traces), &["sim", "sweep", "s.toml", "--out", "s.csv"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // a file of that name in the current directory comes first
    std::fs::write(cwd.join("t.swf"), TRACE.lines().take(3).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let out = tessera_in(&cwd, Some(&traces), &["sim", "run", "--trace", "t.swf", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["trace"].as_str(), v["jobs_simulated"].as_u64()), (Some("t.swf"), Some(1)), "{v}");
}

/// Every command that takes a trace finds it the same way, and a trace found
/// nowhere is an error (exit 1, nothing started) naming the paths tried and
/// TESSERA_TRACES.
#[test]
fn a_missing_trace_names_the_paths_tried_and_tessera_traces_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let (cwd, traces) = (dir.path().join("elsewhere"), dir.path().join("traces"));
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&traces).unwrap();
    std::fs::write(cwd.join("s.toml"), "traces = [\"none.swf.gz\"]\npolicies = [\"easy\"]\n").unwrap();
    let t = "none.swf.gz";
    let commands: &[&[&str]] = &[
        &["sim", "run", "--trace", t],
        &["sim", "compare", "--trace", t, "--report", "c.html"],
        &["sim", "sweep", "s.toml", "--out", "s.csv"],
        &["sim", "bench", "--trace", t],
        &["sim", "bench-pass", "--trace", t],
        &["sim", "bench-stream", "--trace", t],
        &["workload", "info", "--trace", t],
        &["replay", "--trace", t, "--shrink", "10", "--controller", "http://127.0.0.1:9"],
        &["twin", "--trace", t, "--shrink", "10"],
        &["chaos", "--trace", t, "--shrink", "10"],
        &["experiment", "nodesets", "--trace", t],
        &["experiment", "parm", "--trace", t],
        &["experiment", "parm-attribution", "--trace", t],
        &["power", "bench", "--trace", t],
    ];
    let tried = format!("(tried {t} and {}/{t}); TESSERA_TRACES is {}", traces.display(), traces.display());
    // without HiGHS in the build, power bench says so before it looks for a trace
    let n = commands.len() - usize::from(!cfg!(feature = "highs"));
    for args in &commands[..n] {
        let out = tessera_in(&cwd, Some(&traces), args);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {e}");
        assert!(e.contains(&format!("trace {t}: no such file ")) && e.contains(&tried), "{args:?}: {e}");
    }
    assert!(!cwd.join("c.html").exists() && !cwd.join("s.csv").exists());
    // not set, or not a directory
    let out = tessera_in(&cwd, Some(&dir.path().join("nowhere")), &["sim", "run", "--trace", t]);
    assert!(text(&out.stderr).contains(&format!("TESSERA_TRACES is {}/nowhere, which is not a directory", dir.path().display())), "{}", text(&out.stderr));
    let out = tessera_in(&cwd, None, &["sim", "run", "--trace", t]);
    assert!(text(&out.stderr).contains("TESSERA_TRACES is not set"), "{}", text(&out.stderr));
    // a path is a path
    let out = tessera_in(&cwd, Some(&traces), &["sim", "run", "--trace", "sub/t.swf"]);
    assert!(text(&out.stderr).contains("error: trace sub/t.swf: no such file (tried sub/t.swf); only a bare file name"), "{}", text(&out.stderr));
}
