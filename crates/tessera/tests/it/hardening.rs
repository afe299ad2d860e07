//! What the environment or a hostile input can do to the binary: it answers with
//! an error, never a panic.

use crate::common::{tessera, text};
use std::process::{Command, Stdio};

/// Every kind of command, its standard output on a full device (`> /dev/full`):
/// exit 1 and an error naming standard output, no panic. Before the one output
/// path (`out.rs`) every `println!` panicked here.
#[test]
fn a_full_standard_output_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("w.swf");
    let t = trace.display().to_string();
    let db = dir.path().join("acct.db");
    let d = db.display().to_string();
    let r = dir.path().join("compare.html").display().to_string();
    assert!(tessera(&["workload", "generate", "--jobs", "40", "--procs", "64", "--output", &t]).status.success());
    assert!(tessera(&["sim", "run", "--trace", &t, "--capacity", "64", "--db", &d]).status.success());
    let cases: &[&[&str]] = &[
        &["cluster", "show"],
        &["workload", "info", "--trace", &t],
        &["sim", "run", "--trace", &t, "--capacity", "64"],
        &["sim", "run", "--trace", &t, "--capacity", "64", "--format", "json"],
        &["sim", "compare", "--trace", &t, "--policy", "fcfs,easy", "--report", &r, "--", "--capacity", "64"],
        &["acct", "--db", &d],
        &["report", "usage", "--db", &d],
        &["experiment", "parm-testbed", "--seeds", "2", "--no-solve-time"],
    ];
    for args in cases {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
        let out = Command::new(env!("CARGO_BIN_EXE_tessera")).args(*args).stdout(Stdio::from(full)).stderr(Stdio::piped()).output().unwrap();
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {e}");
        assert!(e.contains("error: writing standard output: No space left on device"), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
    }
}

/// A header number is read whole or refused: `MaxProcs: 1e3` used to give a
/// machine of 1 processor, `16,000` one of 16 and `abc` one of 0.
#[test]
fn header_numbers_are_read_whole_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let line = "1 0 0 10 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n";
    for bad in ["1e3", "16,000", "abc", "12.5", "-8"] {
        let trace = dir.path().join("h.swf");
        std::fs::write(&trace, format!("; MaxProcs: {bad}\n{line}")).unwrap();
        let out = tessera(&["sim", "run", "--trace", trace.to_str().unwrap()]);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad}: {e}");
        assert!(e.contains(&format!("h.swf:1: header MaxProcs is `{bad}`: expected an integer")), "{bad}: {e}");
    }
    // comments after the number, as archive logs write them, and N/A
    let trace = dir.path().join("ok.swf");
    std::fs::write(&trace, format!("; MaxNodes: 70  (dual)\n; MaxProcs: 140 (2 per node)\n;MaxRuntime: N/A\n{line}")).unwrap();
    let out = tessera(&["sim", "run", "--trace", trace.to_str().unwrap(), "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["capacity"], 140, "{v}");
}

/// A huge line of garbage or a binary file gets a one-line error that quotes a
/// bounded, escaped prefix; the reader never holds more than 1 MiB of a line.
#[test]
fn bad_values_are_quoted_bounded_and_escaped() {
    let dir = tempfile::tempdir().unwrap();
    // a field of 512 KiB: quoted as its first 64 characters and its length
    let trace = dir.path().join("wide.swf");
    std::fs::write(&trace, format!("1 0 0 {} 4 -1 -1 4 20 -1 1 1 1 -1 1 -1 -1 -1\n", "9".repeat(512 * 1024))).unwrap();
    let out = tessera(&["sim", "run", "--trace", trace.to_str().unwrap(), "--capacity", "8"]);
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(e.len() < 400 && e.contains(&format!("field 4 (run time) is `{}…` (524288 bytes)", "9".repeat(64))), "{}", &e[..e.len().min(400)]);
    // a line of 3 MiB: refused as too long
    let trace = dir.path().join("long.swf");
    std::fs::write(&trace, "x".repeat(3 << 20)).unwrap();
    let out = tessera(&["sim", "run", "--trace", trace.to_str().unwrap(), "--capacity", "8"]);
    let e = text(&out.stderr);
    assert!(e.len() < 400 && e.contains("long.swf:1: line longer than 1048576 bytes"), "{}", &e[..e.len().min(400)]);
    // a binary file: control bytes escaped, never written raw to the terminal
    let trace = dir.path().join("bin.swf");
    let mut bytes = b"\x7fELF\x02\x01\x01\x00\x1b[2J".to_vec();
    bytes.extend((0u8..=255).cycle().take(4096));
    std::fs::write(&trace, bytes).unwrap();
    let out = tessera(&["sim", "run", "--trace", trace.to_str().unwrap(), "--capacity", "8"]);
    assert_eq!(out.status.code(), Some(1));
    let raw = &out.stderr;
    assert!(!raw.iter().any(|&b| b == 0x1b || b == 0 || b == 0x7f), "{}", text(raw));
    assert!(raw.len() < 600, "{}", text(raw));
}

/// An output never overwrites an input: `--jobs-out` naming the trace used to
/// replace it with the jobs CSV. Refused before anything runs; the input intact.
#[test]
fn outputs_never_overwrite_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("w.swf");
    let t = trace.display().to_string();
    assert!(tessera(&["workload", "generate", "--jobs", "30", "--procs", "32", "--output", &t]).status.success());
    let before = std::fs::read(&trace).unwrap();
    // the same file under another name
    let alias = dir.path().join(".").join("w.swf").display().to_string();
    for flag in ["--jobs-out", "--swf-out", "--summary", "--report", "--db"] {
        let out = tessera(&["sim", "run", "--trace", &t, "--capacity", "32", flag, &alias]);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag}: {e}");
        assert!(e.contains(&format!("{flag} {alias}: that is this run's trace {t}, which it would overwrite")), "{flag}: {e}");
        assert_eq!(std::fs::read(&trace).unwrap(), before, "{flag} changed the trace");
    }
    let csv = dir.path().join("jobs.csv").display().to_string();
    let e = text(&tessera(&["sim", "run", "--trace", &t, "--capacity", "32", "--jobs-out", &csv, "--summary", &csv]).stderr);
    assert!(e.contains("--summary") && e.contains("--jobs-out writes the same file"), "{e}");
    // the accounting store is an input of the reports
    let db = dir.path().join("a.db").display().to_string();
    assert!(tessera(&["sim", "run", "--trace", &t, "--capacity", "32", "--db", &db]).status.success());
    let store = std::fs::read(&db).unwrap();
    for args in [vec!["report", "html", "--db", &db, "--output", &db], vec!["acct", "apel", "--db", &db, "--output", &db]] {
        let out = tessera(&args);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {e}");
        assert!(e.contains("that is this run's accounting store"), "{args:?}: {e}");
        assert_eq!(std::fs::read(&db).unwrap(), store);
    }
}

/// A flag that cannot apply is an error, not silently ignored: `--cap` on a run
/// with no power-budgeted cluster, and a node set naming a feature no node has
/// (`--nodeset garbage` was accepted as a feature set and every job ran outside it).
#[test]
fn flags_that_do_not_apply_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("w.swf");
    let t = trace.display().to_string();
    assert!(tessera(&["workload", "generate", "--jobs", "20", "--procs", "32", "--output", &t]).status.success());
    for flag in [&["--cap", "40"][..], &["--power-seed", "3"], &["--alpha", "0"]] {
        let mut args = vec!["sim", "run", "--trace", &t, "--capacity", "32"];
        args.extend(flag);
        let out = tessera(&args);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag:?}: {e}");
        assert!(e.contains("apply to a cluster with a power budget"), "{flag:?}: {e}");
    }
    let cluster = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/sdsc-blue-3gen.toml");
    let out = tessera(&["sim", "run", "--cluster", cluster, "--max-jobs", "20", "--nodeset", "garbage"]);
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("no node of cluster `sdsc-blue-3gen` has feature `garbage`: expected one of its features (switch1, switch2"), "{e}");
    let out = tessera(&["sim", "run", "--cluster", cluster, "--max-jobs", "20", "--nodeset", "ONEOF:FEATURE:switch1:switch9"]);
    assert!(text(&out.stderr).contains("has feature `switch9`"), "{}", text(&out.stderr));
    // a feature the cluster has is a node set
    assert!(tessera(&["sim", "run", "--cluster", cluster, "--max-jobs", "20", "--nodeset", "[switch1|switch2]"]).status.success());
}

/// A trace that names one job twice is refused (the accounting would hold two
/// records under one JobID); `--lenient` keeps the first and says so.
#[test]
fn duplicate_job_numbers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("dup.swf");
    let line = |id: u32, submit: u32, status: u32| format!("{id} {submit} 0 10 4 -1 -1 4 20 -1 {status} 1 1 -1 1 -1 -1 -1\n");
    std::fs::write(&trace, format!("; MaxProcs: 8\n{}{}{}", line(1, 0, 1), line(2, 3, 1), line(1, 5, 1))).unwrap();
    let t = trace.display().to_string();
    let out = tessera(&["sim", "run", "--trace", &t]);
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("dup.swf:4: field 1 (job number) is 1, the number of the job at line 2"), "{e}");
    let out = tessera(&["sim", "run", "--trace", &t, "--lenient", "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs_simulated"], 2);
    assert!(text(&out.stderr).contains("1 x field 1 (job number) repeats an earlier job's"), "{}", text(&out.stderr));
    // partial executions (status 2-4) of one job share its number
    std::fs::write(&trace, format!("; MaxProcs: 8\n{}{}{}", line(1, 0, 1), line(1, 0, 2), line(1, 0, 3))).unwrap();
    assert!(tessera(&["sim", "run", "--trace", &t]).status.success());
}

/// Prices are finite and >= 0: NaN and negative prices used to be accepted and
/// billed.
#[test]
fn prices_must_be_finite_and_not_negative() {
    for v in ["nan", "NaN", "-1", "-0.5", "inf", "1e400", "abc"] {
        let flag = format!("--price-core-hour={v}");
        let out = tessera(&["report", "bill", "--db", "/nonexistent.db", &flag]);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{v}: {e}");
        assert!(e.contains("expected a finite price >= 0"), "{v}: {e}");
    }
}

/// A power budget that cannot power one busy node is an error: it used to run
/// with every job skipped as larger than the machine, and no word.
#[test]
fn a_budget_that_powers_no_node_is_an_error() {
    let theta = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/theta-overprovisioned.toml");
    for (policy, budget, floor) in [("parm", "50", "86 W (30 W CPU cap"), ("easy", "100", "116 W (60 W CPU cap")] {
        let out = tessera(&["sim", "run", "--cluster", theta, "--policy", policy, "--budget-w", budget, "--max-jobs", "10"]);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{policy}: {e}");
        assert!(e.contains(&format!("power budget {budget} W (cluster `theta-overprovisioned`, --budget-w) cannot power one busy node: a node draws at least {floor}")), "{policy}: {e}");
    }
    // one node's worth runs
    assert!(tessera(&["sim", "run", "--cluster", theta, "--policy", "easy", "--budget-w", "116", "--max-jobs", "10"]).status.success());
}

/// Nodes that draw power idle: a budget below what they draw together used to
/// be accepted, and the run then panicked ("power drawn … exceeds the budget").
/// In the file it is refused when the file is read; as --budget-w before the run.
#[test]
fn a_budget_below_the_idle_nodes_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let theta = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/clusters/theta-overprovisioned.toml")).unwrap();
    let idle = theta.replace("idle_power_w = 0", "idle_power_w = 10");
    let (ok, low) = (dir.path().join("idle.toml"), dir.path().join("low.toml"));
    std::fs::write(&ok, &idle).unwrap();
    std::fs::write(&low, idle.replace("power_budget_w = 505760", "power_budget_w = 50000")).unwrap();
    let (ok, low) = (ok.display().to_string(), low.display().to_string());
    let why = "the idle power of all nodes, 58800 W (5880 nodes at 10 W), exceeds the budget, 50000 W: expected at least 58876 W (the idle power, and 76 W more to run one node: node type `knl` at its lowest CPU cap, 30 W)";
    let out = tessera(&["cluster", "show", "--cluster", &low]);
    assert_eq!((out.status.code(), text(&out.stderr)), (Some(1), format!("error: {low}:16: `power_budget_w`: {why}\n")));
    for policy in ["fcfs", "easy", "conservative", "parm"] {
        let out = tessera(&["sim", "run", "--cluster", &low, "--policy", policy, "--max-jobs", "10"]);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{policy}: {e}");
        assert!(e.contains(&format!("{low}:16: `power_budget_w`: {why}")), "{policy}: {e}");
        let out = tessera(&["sim", "run", "--cluster", &ok, "--policy", policy, "--budget-w", "50000", "--max-jobs", "10"]);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{policy}: {e}");
        assert!(e.contains(&format!("power budget 50000 W (cluster `theta-overprovisioned`, --budget-w): {why}")), "{policy}: {e}");
        assert!(tessera(&["sim", "run", "--cluster", &ok, "--policy", policy, "--max-jobs", "10"]).status.success(), "{policy}");
    }
}

/// A node type name with a comma used to be accepted here, and `tessera up`
/// then waited 30 s for an agent that had exited ("--nodes: no node a in
/// cluster"): its nodes, handed on as a hostlist, were other names.
#[test]
fn a_name_a_hostlist_cannot_hold_is_refused_when_the_file_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("comma.toml");
    std::fs::write(&f, "name = \"bad\"\n\n[[nodetype]]\nname = \"a,b\"\ncount = 2\ncores = 2\n").unwrap();
    let f = f.display().to_string();
    for args in [&["cluster", "show", "--cluster", &f][..], &["sim", "run", "--cluster", &f, "--max-jobs", "10"], &["publish", "--cluster", &f]] {
        let out = tessera(args);
        let e = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {e}");
        assert!(e.contains(&format!("{f}:4: `nodetype[0].name`: expected a host name without `,`, `[`, `]`, whitespace or control characters (a hostlist could not hold it), found `a,b`")), "{args:?}: {e}");
    }
}

/// A store whose rows contradict each other (edited by hand, or written by
/// something else) gets one clear error from every report, naming the store,
/// the run and the row; before the check, an allocation naming a missing node
/// panicked with an index out of bounds, and a missing node 0 shifted every
/// allocation onto the wrong node.
#[test]
fn an_inconsistent_store_is_refused_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("acct.db");
    let d = db.display().to_string();
    assert!(tessera(&["sim", "run", "--max-jobs", "100", "--db", &d]).status.success());
    let edits: &[(&str, &str)] = &[
        ("UPDATE allocations SET node_id = 99999 WHERE rowid = 1", "names node 99999, which the run does not have"),
        ("DELETE FROM nodes WHERE node_id = 0", "nodes are numbered 1 to 31, expected 0 to 30"),
        ("UPDATE allocations SET cores = -5 WHERE rowid = 1", "holds -5 cores"),
        ("UPDATE allocations SET job = 999999 WHERE rowid = 1", "names job record 999999, which the run does not have"),
        ("UPDATE nodes SET factor = 0 WHERE node_id = 3", "node 3 is node004"),
        ("UPDATE jobs SET end_time = 9223372036854775807 WHERE rowid = 1", "expected times within ±2^43 s"),
        ("UPDATE runs SET epoch_offset = 9000000000000000000", "its epoch is 9000000000000000000 s"),
    ];
    let html = dir.path().join("r.html").display().to_string();
    for (sql, says) in edits {
        let copy = dir.path().join("copy.db");
        std::fs::copy(&db, &copy).unwrap();
        rusqlite::Connection::open(&copy).unwrap().execute_batch(&format!("PRAGMA foreign_keys = OFF; {sql}")).unwrap();
        let c = copy.display().to_string();
        let reports: &[&[&str]] = &[
            &["report", "utilization", "--db", &c],
            &["report", "usage", "--db", &c],
            &["report", "overhead", "--db", &c],
            &["report", "bill", "--db", &c],
            &["report", "html", "--db", &c, "-o", &html],
            &["acct", "--db", &c],
            &["acct", "apel", "--db", &c],
        ];
        for args in reports {
            let out = tessera(args);
            let e = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{sql} / {args:?}: {e}");
            assert!(e.contains(&format!("accounting store {c}, run 1: ")) && e.contains(says), "{sql} / {args:?}: {e}");
            assert!(!e.contains("panicked"), "{sql} / {args:?}: {e}");
        }
    }
}

/// Dates beyond year 9999 (a trace may start 139,000 years on) print as dates,
/// in ISO 8601's expanded form, in `acct` and in usage by month; they were
/// garbage (`141338-07-51106756`) in one and a wrapped month in the other.
#[test]
fn far_future_dates_print_as_dates() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("far.swf");
    std::fs::write(
        &trace,
        "; UnixStartTime: 4398046500000\n; MaxProcs: 8\n1 0 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n2 4300000000 0 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n",
    )
    .unwrap();
    let d = dir.path().join("acct.db").display().to_string();
    assert!(tessera(&["sim", "run", "--trace", &trace.display().to_string(), "--db", &d]).status.success());
    let acct = text(&tessera(&["acct", "--db", &d, "--parsable2", "-o", "JobID,Submit,End"]).stdout);
    assert!(acct.contains("1|+141338-07-18T23:20:00|+141338-07-18T23:21:40"), "{acct}");
    assert!(acct.contains("2|+141474-10-22T11:"), "{acct}");
    let usage = text(&tessera(&["report", "usage", "--by", "month", "--db", &d, "--format", "csv"]).stdout);
    assert!(usage.contains("+141338-07,1,") && usage.contains("+141474-10,1,"), "{usage}");
}

/// A closed standard output (`tessera … | head -1`) ends a command quietly,
/// killed by SIGPIPE as a Unix tool is, while SIGPIPE itself stays ignored:
/// before, the binary restored SIGPIPE's default, so a daemon or a client
/// writing to a socket whose peer was gone (a controller killed during a
/// replay: the chaos test) died on the spot.
#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["workload", "generate", "--jobs", "200000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    // the reader is dropped here: the pipe is closed
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with("; Version"), "{first}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
    assert_eq!(text(&out.stderr), "", "no message, no panic");
    // while it runs, the binary ignores SIGPIPE (bit 13 of SigIgn in /proc)
    let dir = tempfile::tempdir().unwrap();
    let mut sleeper = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["sleep-job", "--id", "1", "--runtime", "30", "--log", dir.path().join("log").to_str().unwrap()])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let status = std::fs::read_to_string(format!("/proc/{}/status", sleeper.id())).unwrap();
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    let ign = status.lines().find_map(|l| l.strip_prefix("SigIgn:")).map(|v| u64::from_str_radix(v.trim(), 16).unwrap()).unwrap();
    assert_ne!(ign & (1 << (libc::SIGPIPE - 1)), 0, "SIGPIPE ignored: SigIgn {ign:x}");
}

/// Runs `args` with `input` streamed to its standard input (until it hangs
/// up), and returns its exit code and standard error; a command still running
/// after five minutes is killed and the test fails (it was not going to stop).
fn ends(args: &[&str], input: Option<&'static [u8]>) -> (Option<i32>, String) {
    use std::io::{Read, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let (Some(chunk), Some(mut stdin)) = (input, child.stdin.take()) {
        // an endless pipe (`cat /dev/zero |`): ends with EPIPE once the command exits
        std::thread::spawn(move || while stdin.write_all(chunk).is_ok() {});
    }
    let mut stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > std::time::Duration::from_secs(300) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("tessera {args:?} did not stop on an endless input");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    (status.code(), text(&err.join().unwrap()))
}

/// `--trace /dev/zero` and an endless pipe never stopped: a line was refused at
/// 1 MiB only after the reader had read the rest of it, to a newline that never
/// comes. Now the error names the file, the line and what an SWF line is.
#[test]
fn an_endless_trace_is_refused_at_the_line_limit() {
    let zeros: &'static [u8] = Box::leak(vec![0u8; 1 << 16].into_boxed_slice());
    let limit = "line longer than 1048576 bytes: expected an SWF line (18 numbers) or a `;` comment";
    for args in [&["sim", "run", "--trace", "/dev/zero", "--capacity", "8"][..], &["workload", "info", "--trace", "/dev/zero"]] {
        let (code, e) = ends(args, None);
        assert_eq!(code, Some(1), "{args:?}: {e}");
        assert!(e.contains(&format!("/dev/zero:1: {limit}")), "{args:?}: {e}");
    }
    let (code, e) = ends(&["sim", "run", "--trace", "/dev/stdin", "--capacity", "8"], Some(zeros));
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains(&format!("/dev/stdin:1: {limit}")), "{e}");
    // lenient mode skips long lines, but not an endless one
    let (code, e) = ends(&["sim", "run", "--trace", "/dev/zero", "--capacity", "8", "--lenient"], None);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("/dev/zero:1: line longer than 67108864 bytes"), "{e}");
}
