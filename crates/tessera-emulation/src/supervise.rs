//! How `tessera up` supervises its controller: a controller that exits
//! abnormally (a panic or a failed write: status 70; a signal) is started
//! again, with a pause that grows, and left stopped if it keeps failing.

use std::path::Path;
use std::time::{Duration, Instant};

/// When `tessera up` restarts a controller that exited abnormally: after a
/// pause that doubles with each exit in a row (from [`Restarts::FIRST_PAUSE`]:
/// 0.25, 0.5, 1, 2, 4 s), and not after more than [`Restarts::MAX_RAPID`]
/// exits in a row within [`Restarts::RAPID`] of their start (a controller that
/// cannot start, or that panics again on what it replays, is left stopped). A
/// controller that ran longer before it exited starts a new series.
pub struct Restarts {
    /// Restarts so far.
    pub total: u32,
    /// Exits in a row, each within `RAPID` of its start.
    rapid: u32,
    since: Instant,
}

impl Restarts {
    const FIRST_PAUSE: Duration = Duration::from_millis(250);
    const RAPID: Duration = Duration::from_secs(60);
    const MAX_RAPID: u32 = 5;

    pub fn new(started: Instant) -> Restarts {
        Restarts { total: 0, rapid: 0, since: started }
    }

    /// The controller exited at `now`: Ok to restart it (counted), or why not.
    pub fn exited(&mut self, now: Instant) -> Result<(), String> {
        if now.duration_since(self.since) >= Self::RAPID {
            self.rapid = 0;
        }
        self.rapid += 1;
        if self.rapid > Self::MAX_RAPID {
            return Err(format!("it exited {} times in a row within {} s of its start: not restarted again", self.rapid, Self::RAPID.as_secs()));
        }
        self.total += 1;
        Ok(())
    }

    /// The pause before the restart just counted.
    pub fn pause(&self) -> Duration {
        Self::FIRST_PAUSE * 2u32.pow(self.rapid.clamp(1, Self::MAX_RAPID) - 1)
    }

    pub fn started(&mut self, now: Instant) {
        self.since = now;
    }
}

/// Append `line` to the controller's log, among its own lines.
pub fn note(log: &Path, line: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) {
        let _ = std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes());
    }
}

/// Supervise a local cluster's controller until SIGINT or SIGTERM: a
/// controller that exits abnormally is started again as [`Restarts`] says,
/// each restart noted on standard error and in its log; one that exits
/// cleanly without being asked, or keeps failing, stops the agents and ends
/// with the reason. Then stops everything.
pub fn supervise(local: &mut crate::local::Local, dir: &Path) -> anyhow::Result<()> {
    use crate::local::{stop, tail};
    let clog = dir.join("controller.log");
    let mut signals = signal_hook_lite()?;
    let mut restarts = Restarts::new(Instant::now());
    'supervise: loop {
        if signals() {
            break;
        }
        if let Some(st) = local.controller.try_wait()? {
            // fail-stop: a controller that ends abnormally (a panic, a failed
            // write: status 70; a signal) is started again, and recovers
            let pid = local.controller.id();
            crate::interrupt::forget(&[pid]);
            let why = if st.success() {
                Some("it exited without being asked to".to_string())
            } else {
                restarts.exited(Instant::now()).err()
            };
            let pause = match why {
                Some(why) => {
                    stop(&local.file());
                    let _ = std::fs::remove_file(dir.join("up.json"));
                    anyhow::bail!("the controller exited ({st}); {why}: stopped the agents.\n{}", tail(&clog));
                }
                None => restarts.pause(),
            };
            let msg = format!("tessera up: the controller (pid {pid}) exited abnormally ({st}); restarting it in {} ms (restart {})", pause.as_millis(), restarts.total);
            eprintln!("{msg}");
            note(&clog, &msg);
            let until = Instant::now() + pause;
            while Instant::now() < until {
                if signals() {
                    break 'supervise;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            match local.restart_controller() {
                Ok(()) => {
                    let msg = format!("tessera up: the controller is back (pid {}, restart {})", local.controller.id(), restarts.total);
                    eprintln!("{msg}");
                    note(&clog, &msg);
                }
                // it exited starting (seen next round), or was killed after 30 s
                Err(e) => eprintln!("tessera up: the restarted controller did not come up: {e:#}"),
            }
            restarts.started(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    stop(&local.file());
    let _ = std::fs::remove_file(dir.join("up.json"));
    Ok(())
}

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_stop(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// A poll for SIGINT or SIGTERM, without an async runtime.
fn signal_hook_lite() -> anyhow::Result<impl FnMut() -> bool> {
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_stop as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_stop as *const () as libc::sighandler_t);
    }
    Ok(|| STOP.load(std::sync::atomic::Ordering::SeqCst))
}


#[cfg(test)]
mod tests {
    use super::Restarts;
    use std::time::{Duration, Instant};

    #[test]
    fn restarts_back_off_and_stop_after_five_rapid_exits_in_a_row() {
        let t0 = Instant::now();
        let s = |x: f64| t0 + Duration::from_secs_f64(x);
        let mut r = Restarts::new(t0);
        let mut pauses = Vec::new();
        let mut at = 0.0;
        for _ in 0..5 {
            at += 1.0;
            assert!(r.exited(s(at)).is_ok());
            pauses.push(r.pause().as_millis());
            r.started(s(at));
        }
        assert_eq!(pauses, [250, 500, 1000, 2000, 4000]);
        let why = r.exited(s(at + 1.0)).unwrap_err();
        assert!(why.contains("6 times in a row within 60 s"), "{why}");
        // one that ran a minute starts a new series, from the first pause
        let mut r = Restarts::new(t0);
        for k in 1..=10 {
            assert!(r.exited(s(k as f64 * 61.0)).is_ok(), "exit {k}");
            assert_eq!(r.pause(), Duration::from_millis(250));
            r.started(s(k as f64 * 61.0));
        }
        assert_eq!(r.total, 10);
    }
}
