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
