//! Fail-stop: once `failstop::install` ran (the controller's first step), a
//! panic in any thread or task ends the process with status 70, the panic's
//! message in its log. The test runs this test binary again as the process
//! that panics (`child_that_panics`, which does nothing when run as a test).
//! The live test of the whole (a panic on the actor thread, `tessera up`
//! restarting the controller, every job recovered) is in the `tessera` crate:
//! tests/it/live/failstop.rs.

use std::process::Command;
use std::time::Duration;
use tessera_controller::failstop::{install, EXIT_FAILSTOP};

const CHILD: &str = "TESSERA_FAILSTOP_CHILD";

#[test]
fn child_that_panics() {
    let Ok(kind) = std::env::var(CHILD) else { return };
    install();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    match kind.as_str() {
        // as a panicking HTTP handler: a task on the runtime (tokio would catch it)
        "task" => drop(rt.spawn(async { panic!("injected in a task") })),
        "blocking" => drop(rt.spawn_blocking(|| panic!("injected in a blocking task"))),
        // as the actor: a thread of its own
        "thread" => drop(std::thread::Builder::new().name("tessera-actor".into()).spawn(|| panic!("injected in a thread")).unwrap()),
        other => panic!("unknown {CHILD}={other}"),
    }
    // the process must end before this does
    std::thread::sleep(Duration::from_secs(20));
    std::process::exit(0);
}

#[test]
fn a_panic_in_any_thread_or_task_ends_the_process_with_status_70() {
    let exe = std::env::current_exe().unwrap();
    for kind in ["task", "blocking", "thread"] {
        let t0 = std::time::Instant::now();
        let out = Command::new(&exe).args(["failstop::child_that_panics", "--exact", "--nocapture", "--test-threads=1"]).env(CHILD, kind).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(EXIT_FAILSTOP), "{kind}: {err}");
        assert!(t0.elapsed() < Duration::from_secs(15), "{kind}: ended at once");
        assert!(err.contains(&format!("injected in a {}", kind.replace("blocking", "blocking task"))), "{kind}: the panic is logged: {err}");
    }
}
