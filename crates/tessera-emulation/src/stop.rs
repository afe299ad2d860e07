//! How what a local cluster started is stopped: its daemons ([`stop_pids`]:
//! SIGTERM, then SIGKILL) and, for the tools, the jobs still running under its
//! state directory ([`kill_jobs`]). The local cluster ([`crate::local`]) and the
//! interrupt handler ([`crate::interrupt`]) both stop through here.

use std::path::Path;
use std::time::{Duration, Instant};

/// SIGTERM to each of `pids`, then SIGKILL to those still there after 10 s;
/// reaps them if they are this process's children.
pub fn stop_pids(pids: &[u32]) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    for &p in pids {
        let _ = kill(Pid::from_raw(p as i32), Signal::SIGTERM);
    }
    let t0 = Instant::now();
    while pids.iter().any(|&p| kill(Pid::from_raw(p as i32), None).is_ok() && !reap(p)) {
        if t0.elapsed() > Duration::from_secs(10) {
            for &p in pids {
                let _ = kill(Pid::from_raw(p as i32), Signal::SIGKILL);
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reap `pid` if it is our exited child; true if it is gone.
fn reap(pid: u32) -> bool {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    matches!(waitpid(nix::unistd::Pid::from_raw(pid as i32), Some(WaitPidFlag::WNOHANG)), Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)))
}

/// SIGKILL to the process group of every job in the spools of the agents
/// under `state`.
pub fn kill_jobs(state: &Path) {
    let Ok(agents) = std::fs::read_dir(state.join("agents")) else { return };
    for a in agents.flatten() {
        let Ok(files) = std::fs::read_dir(a.path().join("jobs")) else { continue };
        for f in files.flatten() {
            let Some(n) = f.file_name().to_str().filter(|n| !n.ends_with(".sh")).and_then(tessera_agent::launch::Slot::parse_name) else { continue };
            let slot = tessera_agent::launch::Slot::new(&a.path(), n);
            let rec = slot.read();
            if let (Some(p), None) = (rec.pids, rec.exit) {
                let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(p.pgid), nix::sys::signal::Signal::SIGKILL);
            }
        }
    }
}
