//! What a command that starts daemons on this machine (`tessera twin`,
//! `chaos`, `soak`, `loadtest`, and `tessera up` until everything is up) does
//! when it is interrupted.
//!
//! The daemons run in process groups of their own (`process_group(0)` in
//! `local::spawn_daemon`), so that a Ctrl-C at the terminal reaches the
//! command and not them, and so that `tessera up --detach` can leave them
//! running. The price is that nothing stops them when the command dies: a
//! SIGINT or SIGTERM ended the command at once (no destructor runs) and left a
//! controller and its agents behind, with no `up.json` to find them by.
//!
//! Now SIGINT and SIGTERM are caught here once daemons start: a thread stops
//! every daemon this process started (SIGTERM, then SIGKILL, as `tessera
//! down`), kills the jobs of the state directories whose jobs must not outlive
//! the command (the tools' fillers and sleep jobs), removes their `up.json`,
//! and then ends the process by the same signal. No daemon is started after
//! that: a spawn under way finishes and is stopped with the others, a later
//! one is refused. A kill -9 cannot be caught; for that, `Local` writes the
//! daemons' pids to `up.json` in the state directory as soon as they start, so
//! that `tessera down --state-dir DIR` stops them.

use anyhow::{bail, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

/// The daemons this process started and has not stopped, and the state
/// directories they use (true: kill the jobs under it too).
struct Started {
    interrupted: bool,
    pids: BTreeSet<u32>,
    dirs: BTreeMap<PathBuf, bool>,
}

static STARTED: Mutex<Started> = Mutex::new(Started { interrupted: false, pids: BTreeSet::new(), dirs: BTreeMap::new() });

/// The write end of the pipe the signal handler wakes the watcher through.
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// The signal caught.
static CAUGHT: AtomicI32 = AtomicI32::new(0);

fn started() -> MutexGuard<'static, Started> {
    // a panic while holding it leaves plain data, still consistent
    STARTED.lock().unwrap_or_else(|e| e.into_inner())
}

extern "C" fn on_signal(sig: libc::c_int) {
    CAUGHT.store(sig, Ordering::SeqCst);
    let fd = WAKE.load(Ordering::SeqCst);
    // SAFETY: write(2) is async-signal-safe; one byte from a static.
    unsafe {
        libc::write(fd, b"!".as_ptr().cast(), 1);
    }
}

/// Catch SIGINT and SIGTERM from now on (once per process). A command that
/// installs its own handlers afterwards (`tessera up` once it is up) takes
/// over from here.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 fills the two-int array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            tracing::warn!("cannot watch for SIGINT and SIGTERM: {}", std::io::Error::last_os_error());
            return;
        }
        WAKE.store(fds[1], Ordering::SeqCst);
        let read = fds[0];
        std::thread::Builder::new()
            .name("interrupt".into())
            .spawn(move || {
                let mut b = [0u8; 1];
                // SAFETY: reads one byte into a local buffer; EINTR is retried.
                while unsafe { libc::read(read, b.as_mut_ptr().cast(), 1) } != 1 {}
                stop_all(CAUGHT.load(Ordering::SeqCst));
            })
            .expect("starting the interrupt watcher");
        // SAFETY: the handler only stores to an atomic and writes to a pipe.
        unsafe {
            libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
            libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        }
    });
}

/// Start a daemon with `spawn` and note its pid, unless the command was
/// interrupted (then nothing is started).
pub fn spawn(spawn: impl FnOnce() -> Result<Child>) -> Result<Child> {
    let mut s = started();
    if s.interrupted {
        bail!("interrupted: no daemon is started any more");
    }
    let child = spawn()?;
    s.pids.insert(child.id());
    Ok(child)
}

/// These daemons were stopped (or killed and reaped) by their owner.
pub fn forget(pids: &[u32]) {
    let mut s = started();
    for p in pids {
        s.pids.remove(p);
    }
}

/// The state directory `dir` is in use: remove its `up.json` on an interrupt
/// and, if `kill_jobs`, kill the jobs under it.
pub fn watch_dir(dir: &Path, kill_jobs: bool) {
    *started().dirs.entry(dir.to_path_buf()).or_default() |= kill_jobs;
}

/// The daemons of `dir` were stopped by their owner.
pub fn forget_dir(dir: &Path) {
    started().dirs.remove(dir);
}

/// On SIGINT or SIGTERM: stop what was started, then end by the signal. The
/// lock is held throughout, so the command's own clean-up (which forgets what
/// it stops) waits for this one, which ends the process.
fn stop_all(sig: libc::c_int) {
    let mut s = started();
    s.interrupted = true;
    let pids: Vec<u32> = s.pids.iter().copied().collect();
    let name = if sig == libc::SIGINT { "SIGINT" } else { "SIGTERM" };
    if !pids.is_empty() {
        let dirs: Vec<String> = s.dirs.keys().map(|d| d.display().to_string()).collect();
        eprintln!("tessera: {name}: stopping the {} daemon(s) it started (state in {})", pids.len(), if dirs.is_empty() { "?".into() } else { dirs.join(", ") });
    }
    crate::stop::stop_pids(&pids);
    for (dir, kill_jobs) in &s.dirs {
        if *kill_jobs {
            crate::stop::kill_jobs(dir);
        }
        let _ = std::fs::remove_file(dir.join("up.json"));
    }
    s.pids.clear();
    // SAFETY: the default action again, and the signal at this process: it
    // ends as it would have without the handler (exit status 128 + sig).
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::kill(libc::getpid(), sig);
    }
    // the signal is on its way; never return the lock to the command
    loop {
        std::thread::park();
    }
}
