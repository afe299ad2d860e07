//! Values beyond what the engine takes (times beyond ±2^42 s, counts beyond `u32`,
//! sums that would overflow) are errors at the boundary that reads them, naming the
//! file, line and field, or the flag, and what was expected: never a panic, a
//! silent wrap or a negative makespan.

use std::path::{Path, PathBuf};
use crate::common::{tessera, text};

/// Run `args`; expect exit code 1 and return stderr with `dir` shown as `DIR`.
fn fails(args: &[&str], dir: &Path) -> String {
    let out = tessera(args);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {}{}", text(&out.stdout), text(&out.stderr));
    text(&out.stderr).replace(&dir.display().to_string(), "DIR")
}

const TRACE: &str = "\
; Version: 2.2
; MaxProcs: 8
1 0 -1 100 4 -1 -1 4 100 -1 1 1 1 -1 1 -1 -1 -1
2 5 -1 50 8 -1 -1 8 60 -1 1 2 1 -1 1 -1 -1 -1
3 6 -1 20 2 -1 -1 2 30 -1 1 3 1 -1 1 -1 -1 -1
";

/// A temp dir holding `t.swf` with `TRACE`'s `from` replaced by `to`.
fn trace_with(from: &str, to: &str) -> (tempfile::TempDir, PathBuf) {
    assert!(TRACE.contains(from), "{from}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.swf");
    std::fs::write(&path, TRACE.replace(from, to)).unwrap();
    (dir, path)
}

#[test]
fn arrival_scale_beyond_two_to_the_42_names_the_flag_and_the_job() {
    let (dir, path) = trace_with("", "");
    let t = path.to_str().unwrap();
    let e = fails(&["sim", "run", "--trace", t, "--arrival-scale", "1e15"], dir.path());
    assert_eq!(e, "error: --arrival-scale 1000000000000000.0 on DIR/t.swf: job 2 (submitted at 5 s) would be submitted at 5e15 s: expected at most 2^42 = 4398046511104 s\n");
    let e = fails(&["sim", "run", "--trace", t, "--arrival-scale=-1"], dir.path());
    assert_eq!(e, "error: --arrival-scale -1.0 on DIR/t.swf: expected a factor > 0, found -1\n");
    // the node-set experiment scales the same way (its default cluster is embedded)
    let e = fails(&["experiment", "nodesets", "--trace", t, "--arrival-scale", "1", "--arrival-scale", "1e300"], dir.path());
    assert!(e.starts_with("error: --arrival-scale 1e300 on DIR/t.swf: job 2 (submitted at 5 s) would be submitted at 5e300 s"), "{e}");
    // ... and the PARM experiment, with any set size
    let theta = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/theta-overprovisioned.toml");
    let e = fails(&["experiment", "parm", "--trace", t, "--cluster", theta, "--jobs", "18446744073709551615", "--gamma", "1e15"], dir.path());
    assert!(e.starts_with("error: --gamma 1000000000000000.0 on set 1 of DIR/t.swf: job 2 (submitted at 5 s)"), "{e}");
}

#[test]
fn trace_values_beyond_the_engines_range_name_file_line_and_field() {
    let big = "9223372036854775000";
    let cases = [
        ("2 5 -1 50", format!("2 {big} -1 50"), "t.swf:4: field 2 (submit time) is `9223372036854775000`: expected seconds from -2^42 to 2^42 = 4398046511104 (-1 if unknown)"),
        ("2 5 -1 50", format!("2 5 {big} 50"), "t.swf:4: field 3 (wait time) is `9223372036854775000`: expected seconds from -2^42 to 2^42"),
        ("2 5 -1 50", format!("2 5 -1 {big}"), "t.swf:4: field 4 (run time) is `9223372036854775000`: expected seconds from -2^42 to 2^42"),
        ("8 60 -1 1 2", format!("8 {big} -1 1 2"), "t.swf:4: field 9 (requested time) is `9223372036854775000`: expected seconds from -2^42 to 2^42"),
        ("50 8 -1 -1 8", "50 4294967296 -1 -1 8".to_string(), "t.swf:4: field 5 (allocated processors) is `4294967296`: expected at most 4294967295 processors (-1 if unknown)"),
        ("50 8 -1 -1 8", "50 8 -1 -1 4294967296".to_string(), "t.swf:4: field 8 (requested processors) is `4294967296`"),
        ("8 60 -1 1 2", "8 60 2199023255553 1 2".to_string(), "t.swf:4: field 10 (requested memory) is `2199023255553`: expected at most 2^41 = 2199023255552 KB per processor"),
        ("; MaxProcs: 8", "; MaxProcs: 8\n; UnixStartTime: 9223372036854775807".to_string(), "t.swf:3: header UnixStartTime is `9223372036854775807`: expected Unix seconds from -2^42 to 2^42"),
    ];
    for (from, to, want) in cases {
        let (dir, path) = trace_with(from, &to);
        let t = path.to_str().unwrap();
        let e = fails(&["sim", "run", "--trace", t], dir.path());
        assert!(e.starts_with(&format!("error: DIR/{want}")), "{to}:\n got  {e}\n want {want}");
        // lenient mode skips the line and says why, like any malformed line
        let out = tessera(&["sim", "run", "--trace", t, "--lenient", "--format", "json"]);
        assert!(out.status.success(), "{to}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("1 malformed line(s) skipped"), "{}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let kept = if from.starts_with(';') { 3 } else { 2 };
        assert_eq!(v["jobs_simulated"], kept, "{to}");
    }
}

#[test]
fn the_largest_processor_count_on_the_largest_machine_runs() {
    let (dir, path) = trace_with("1 0 -1 100 4 -1 -1 4 100 -1", "1 0 -1 100 4294967295 -1 -1 4294967295 100 2199023255552");
    let db = dir.path().join("acct.db").display().to_string();
    let out = tessera(&["sim", "run", "--trace", path.to_str().unwrap(), "--capacity", "4294967295", "--db", &db, "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["jobs_simulated"].as_u64(), v["makespan"].as_i64()), (Some(3), Some(150)));
    let out = tessera(&["acct", "--db", &db, "-P", "-o", "JobID,AllocCPUS,ReqMem"]);
    assert!(text(&out.stdout).contains("\n1|4294967295|"), "{}", text(&out.stdout));
}

#[test]
fn a_replay_that_could_pass_two_to_the_42_is_an_error() {
    // each value is in range, but the job's limit expires after 2^42 s
    let (dir, path) = trace_with("3 6 -1 20 2 -1 -1 2 30", "3 4398046511000 -1 20 2 -1 -1 2 200");
    let e = fails(&["sim", "run", "--trace", path.to_str().unwrap()], dir.path());
    assert_eq!(
        e,
        "error: DIR/t.swf: the replay could run past 2^42 = 4398046511104 s, the end of the engine's clock: the last job is \
         submitted at 4398046511000 s, and the jobs could take up to 370 s more (run one after another on the slowest nodes, \
         with the longest limit); expected submit times and run times that add up to at most 2^42 s\n"
    );
}

#[test]
fn cluster_values_that_would_overflow_name_file_line_key_and_range() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/clusters/default.toml");
    let good = std::fs::read_to_string(example).unwrap();
    let cases = [
        ("cores_per_socket = 4", "cores_per_socket = 2147483647", "c.toml:7: `nodetype[0].nodes`: 32 nodes of 4294967294 cores take the cluster beyond 4294967295 cores: expected at most that in total\n"),
        ("memory = \"32G\"", "memory = 9223372036854775807", "c.toml:10: `nodetype[0].memory`: 32 nodes of 9223372036854775807 MiB take the cluster beyond 9223372036854775807 MiB: expected at most that in total\n"),
        ("memory = \"32G\"", "memory = \"1e30T\"", "c.toml:10: `nodetype[0].memory`: expected a size such as \"512M\", \"32G\" or \"1T\", or MiB from 0 to 9223372036854775807, found \"1e30T\"\n"),
        ("name = \"tessera-default\"", "name = \"tessera-default\"\nnodeset_delay = -1", "c.toml:4: `nodeset_delay`: expected seconds from 0 to 2^42 = 4398046511104, found -1\n"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.toml");
    let p = path.display().to_string();
    for (from, to, want) in cases {
        assert!(good.contains(from), "{from}");
        std::fs::write(&path, good.replace(from, to)).unwrap();
        for cmd in [&["cluster", "show", "--cluster", &p][..], &["sim", "run", "--cluster", &p, "--max-jobs", "10"]] {
            assert_eq!(fails(cmd, dir.path()), format!("error: DIR/{want}"), "{to}");
        }
    }
}

#[test]
fn numeric_flags_that_would_overflow_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let theta = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/theta-overprovisioned.toml");
    let cases: [(&[&str], &str); 5] = [
        (&["workload", "generate", "--jobs", "18446744073709551615"], "error: --jobs 18446744073709551615 --arrival-factor 1.0: 18446744073709551615 jobs: expected at most 4294967295\n"),
        (&["workload", "generate", "--jobs", "10", "--arrival-factor", "1e300"], "error: --jobs 10 --arrival-factor 1e300: job 1 would be submitted at"),
        (&["sim", "run", "--cluster", theta, "--policy", "parm", "--solver", "milp", "--milp-time-limit", "inf"], "error: --milp-time-limit inf: expected seconds > 0 and at most 2^42 = 4398046511104\n"),
        (&["sim", "run", "--cluster", theta, "--policy", "parm", "--solver", "milp", "--milp-time-limit", "1e300"], "error: --milp-time-limit 1e300: expected seconds > 0"),
        (&["acct", "--db", "none.db", "--starttime", "9223372036854775807-01-01"], "error: --starttime 9223372036854775807-01-01: expected YYYY-MM-DD[THH:MM[:SS]] (UTC) or Unix seconds\n"),
    ];
    for (args, want) in cases {
        let e = fails(args, dir.path());
        assert!(e.starts_with(want), "{args:?}:\n got  {e}\n want {want}");
    }
}

#[test]
fn sim_bench_reports_a_malformed_trace() {
    let (dir, path) = trace_with("3 6 -1 20", "3 6 -1 2O");
    let e = fails(&["sim", "bench", "--trace", path.to_str().unwrap(), "--repeat", "1"], dir.path());
    assert_eq!(e, "error: DIR/t.swf:5: field 4 (run time) is `2O`: expected an integer (-1 if unknown)\n");
}
