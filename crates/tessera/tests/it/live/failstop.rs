//! Fail-stop under `tessera up`: a panic on the controller's actor thread ends
//! the controller (status 70), `tessera up` starts it again and says so, and
//! the restarted controller recovers every job: each submission, sent again
//! with its idempotency key while the controller was away, files one job,
//! every job runs to completion and is accounted exactly once. SIGTERM to
//! `up` then stops everything, with no restart.
//!
//! The panic is injected by `TESSERA_TEST_PANIC_AT_ENTRY` (tessera-controller's
//! `failstop`), which only builds with debug assertions honour (the `ci` test
//! profile); elsewhere the test is skipped.

use super::BIN;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tessera_proto::api::{OptionArg, SubmitReply, SubmitRequest};
use tessera_proto::client::{Client, ClientError, Target};

/// `tessera up`, stopped (SIGTERM, then `tessera down`) however the test ends.
struct Up {
    child: Option<Child>,
    dir: tempfile::TempDir,
}

impl Up {
    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }

    fn logs(&self) -> String {
        format!(
            "--- up.out\n{}\n--- up.err\n{}\n--- controller.log (last lines)\n{}",
            self.read("up.out"),
            self.read("up.err"),
            tail(&std::fs::read_to_string(self.state().join("controller.log")).unwrap_or_default(), 40)
        )
    }

    fn wait_for(&self, what: &str, secs: u64, mut f: impl FnMut(&Up) -> bool) {
        let t0 = Instant::now();
        while !f(self) {
            assert!(t0.elapsed() < Duration::from_secs(secs), "timed out waiting for {what}\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM to `up`; its exit status.
    fn terminate(&mut self) -> Option<std::process::ExitStatus> {
        let mut c = self.child.take()?;
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(c.id() as i32), nix::sys::signal::Signal::SIGTERM);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(st)) = c.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        c.wait().ok()
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        self.terminate();
        if self.state().join("up.json").exists() {
            let _ = Command::new(BIN).args(["down", "--state-dir", self.state().to_str().unwrap()]).output();
        }
    }
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Submit with `key`, sending it again while the controller cannot answer
/// (it is down, restarting, or stopping), for up to 60 s.
fn submit(rt: &tokio::runtime::Runtime, sock: &Path, key: &str, procs: u32, workdir: &Path) -> Vec<u64> {
    let req = SubmitRequest {
        script: "#!/bin/sh\nsleep 1\n".into(),
        options: vec![OptionArg { option: "-n".into(), value: procs.to_string() }],
        workdir: workdir.display().to_string(),
        idempotency_key: Some(key.into()),
        ..Default::default()
    };
    let t0 = Instant::now();
    loop {
        let mut c = Client::new(Target::Unix(sock.to_path_buf()), None);
        match rt.block_on(c.call::<_, SubmitReply>(hyper::Method::POST, "/v1/jobs", Some(&req))) {
            Ok(r) => return r.jobs,
            Err(e @ (ClientError::Connect { .. } | ClientError::Protocol { .. })) | Err(e @ ClientError::Api { status: 503, .. }) => {
                assert!(t0.elapsed() < Duration::from_secs(60), "submission {key}: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("submission {key}: {e}"),
        }
    }
}

/// The accounting store's rows: (job id, state).
fn acct(state: &Path) -> Vec<(u64, String)> {
    let o = Command::new(BIN).args(["acct", "-P", "-o", "JobIDRaw,State"]).env("TESSERA_STATE_DIR", state).output().unwrap();
    super::acct_rows(&o.stdout)
}

/// Every job the controller lists (queued, running, or ended lately).
fn listed(state: &Path) -> Vec<u64> {
    let o = Command::new(BIN).args(["queue", "--all", "--format", "json"]).env("TESSERA_STATE_DIR", state).output().unwrap();
    let jobs: Vec<tessera_proto::api::JobInfo> = serde_json::from_slice(&o.stdout).unwrap_or_default();
    jobs.into_iter().map(|j| j.id).collect()
}

#[test]
fn a_controller_that_panics_is_restarted_by_up_and_recovers_every_job() {
    if !cfg!(debug_assertions) {
        eprintln!("skipped: the panic is injected only in builds with debug assertions (the ci profile)");
        return;
    }
    // entries 1 and 2 are the agents' registrations; the submissions and
    // the first ends follow
    const PANIC_AT: u32 = 9;
    let dir = tempfile::tempdir().unwrap();
    let file = |n: &str| std::fs::File::create(dir.path().join(n)).unwrap();
    let child = Command::new(BIN)
        .args(["up", "--state-dir", dir.path().join("state").to_str().unwrap(), "--agents", "2"])
        .current_dir(dir.path())
        .env("TESSERA_TEST_PANIC_AT_ENTRY", PANIC_AT.to_string())
        .env("TESSERA_LOG", "info")
        .env_remove("TESSERA_STATE_DIR")
        .stdin(Stdio::null())
        .stdout(file("up.out"))
        .stderr(file("up.err"))
        .spawn()
        .unwrap();
    let mut up = Up { child: Some(child), dir };
    up.wait_for("tessera up", 60, |u| u.read("up.out").contains("Tessera is up"));
    let state = up.state();
    let endpoint = |s: &Path| -> u32 { serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(s.join("controller.json")).unwrap_or_default()).ok().and_then(|v| v["pid"].as_u64()).unwrap_or(0) as u32 };
    let first_pid = endpoint(&state);
    assert_ne!(first_pid, 0);

    // submissions before, across and after the panic (two at a time)
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let sock = state.join("tessera.sock");
    let mut by_key: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for k in 0..16u32 {
        let key = format!("failstop-{k}");
        by_key.insert(key.clone(), submit(&rt, &sock, &key, 1 + k % 8, up.dir.path()));
        if k % 2 == 1 {
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    // the controller panicked, exited 70, and `up` started it again
    up.wait_for("up to restart the controller", 60, |u| u.read("up.err").contains("the controller is back"));
    let err = up.read("up.err");
    assert!(err.contains(&format!("tessera up: the controller (pid {first_pid}) exited abnormally (exit status: 70); restarting it in 250 ms (restart 1)")), "{}", up.logs());
    let clog = std::fs::read_to_string(state.join("controller.log")).unwrap();
    assert!(clog.contains(&format!("TESSERA_TEST_PANIC_AT_ENTRY={PANIC_AT}: a panic injected after journaling entry {PANIC_AT}")) && clog.contains("the controller stops"), "{}", up.logs());
    assert!(clog.contains("tessera up: the controller is back"), "up's lines are in the controller's log too");
    assert_ne!(endpoint(&state), first_pid, "another controller process serves");
    // once: the restarted one numbers its entries on
    assert_eq!(clog.matches("a panic injected").count(), 1, "{}", up.logs());

    // every submission filed one job, and every job completed and was accounted once
    let ids: Vec<u64> = by_key.values().flatten().copied().collect();
    let mut distinct = ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 16, "one job per submission: {by_key:?}");
    up.wait_for("every job accounted", 90, |_| {
        let rows = acct(&state);
        distinct.iter().all(|id| rows.iter().any(|r| r.0 == *id))
    });
    let rows = acct(&state);
    let mut count: BTreeMap<u64, Vec<&str>> = BTreeMap::new();
    for (id, st) in &rows {
        count.entry(*id).or_default().push(st);
    }
    assert_eq!(count.keys().copied().collect::<Vec<_>>(), distinct, "no record of a job never submitted: {rows:?}");
    assert!(count.values().all(|v| v == &["COMPLETED"]), "each job once, completed: {count:?}\n{}", up.logs());
    let known = listed(&state);
    assert!(known.iter().all(|id| distinct.contains(id)), "no job filed twice: {known:?} vs {distinct:?}");

    // a clean stop is not restarted
    let st = up.terminate().expect("up ran");
    assert!(st.success(), "up stops cleanly on SIGTERM: {st}\n{}", up.logs());
    assert_eq!(up.read("up.err").matches("restarting it").count(), 1, "{}", up.logs());
    assert_eq!(tessera_proto::statedir::holder(&state, "controller").unwrap(), None, "the controller stopped with up");
    assert!(!state.join("up.json").exists());
}
