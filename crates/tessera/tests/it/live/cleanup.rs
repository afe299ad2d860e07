//! A command that starts daemons of its own (`tessera twin`, `chaos`, `soak`,
//! `loadtest`) leaves none behind when it is stopped: SIGTERM or Ctrl-C stop
//! them; after a kill -9, which nothing can catch, `up.json` in the state
//! directory names them for `tessera down --state-dir DIR`. The daemons run in
//! process groups of their own, so before this a SIGTERM to the command left
//! its controller and agents running, found by nothing.

use super::BIN;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Processes whose command line names `dir` (the daemons get their state
/// directory as an argument; an agent's launcher has its agent's command
/// line), with their parents and command lines.
fn processes_of(dir: &Path) -> Vec<(i32, i32, String)> {
    let needle = dir.display().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        // a zombie's command line is empty: it is gone but for its exit status
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else { continue };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmd.contains(&needle) && pid != std::process::id() as i32 {
            // the parent: the 4th field of /proc/PID/stat, after the command in parentheses
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let ppid = stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)).and_then(|p| p.parse().ok()).unwrap_or(0);
            out.push((pid, ppid, cmd));
        }
    }
    out
}

/// Kills whatever is left under the directory, so that a failing test does not
/// leave daemons for the next one.
struct Sweep<'a>(&'a Path);

impl Drop for Sweep<'_> {
    fn drop(&mut self) {
        for (pid, _, _) in processes_of(self.0) {
            // SAFETY: a signal to a process of this test's own making.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Waits (a minute at most) until `f` holds.
fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(60), "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `tessera soak` with a long run (the cheapest of the tools to start: no
/// trace), its state in `dir/s/state`, once its daemons are up and it is
/// submitting (its samples file exists).
fn soak_running(dir: &Path) -> Child {
    let mut child = Command::new(BIN)
        .args(["soak", "--rate", "60", "--duration", "10m", "--flat-from", "1m", "--sample-every", "1m", "--agents", "2", "--dir", "s"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the soak submits", || {
        assert!(child.try_wait().unwrap().is_none(), "tessera soak ended early");
        dir.join("s/samples.csv").exists()
    });
    child
}

/// The controller and the agents `tool` started on `state`: 3 daemons, as
/// `up.json` says.
fn daemons_up(tool: &Child, state: &Path) -> Vec<(i32, i32, String)> {
    let running = processes_of(state);
    let daemons: Vec<_> = running.iter().filter(|(_, parent, _)| *parent == tool.id() as i32).cloned().collect();
    assert_eq!(daemons.len(), 3, "a controller and 2 agents: {running:?}");
    let up: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(state.join("up.json")).expect("up.json in the state directory while the daemons run")).unwrap();
    let mut listed: Vec<i32> = up["agents"].as_array().unwrap().iter().map(|p| p.as_i64().unwrap() as i32).collect();
    listed.push(up["controller"].as_i64().unwrap() as i32);
    listed.sort_unstable();
    let mut pids: Vec<i32> = daemons.iter().map(|(p, _, _)| *p).collect();
    pids.sort_unstable();
    assert_eq!(listed, pids, "up.json names the running daemons");
    daemons
}

#[test]
fn sigterm_to_a_tool_stops_the_daemons_it_started() {
    let tmp = tempfile::tempdir().unwrap();
    let _sweep = Sweep(tmp.path());
    let state = tmp.path().join("s").join("state");
    let child = soak_running(tmp.path());
    daemons_up(&child, &state);
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), Some(libc::SIGTERM), "ends as SIGTERM ends it: {:?}\n{stderr}", out.status);
    assert!(stderr.contains(&format!("were this command killed, `tessera down --state-dir {}` stops them", state.display())), "{stderr}");
    assert!(stderr.contains("SIGTERM: stopping the 3 daemon(s) it started"), "{stderr}");
    // gone when the command is: it waits for them
    assert_eq!(processes_of(&state), [], "left behind\n{stderr}");
    assert!(!state.join("up.json").exists());
}

#[test]
fn after_a_kill_9_tessera_down_finds_the_daemons_by_up_json() {
    let tmp = tempfile::tempdir().unwrap();
    let _sweep = Sweep(tmp.path());
    let state = tmp.path().join("s").join("state");
    let mut child = soak_running(tmp.path());
    let daemons = daemons_up(&child, &state);
    child.kill().unwrap();
    child.wait().unwrap();
    // nothing can catch SIGKILL: the daemons outlive the command...
    let left: Vec<i32> = processes_of(&state).iter().map(|(p, _, _)| *p).collect();
    assert!(daemons.iter().all(|(p, _, _)| left.contains(p)), "{daemons:?} {left:?}");
    // ...and `tessera down` stops them by up.json
    let out = Command::new(BIN).args(["down", "--state-dir"]).arg(&state).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wait_until("the daemons are gone", || processes_of(&state).is_empty());
}
