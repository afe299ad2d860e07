//! Fail-stop (house habit 14): a controller that panics ends, and its
//! supervisor (`tessera up`, or systemd with `Restart=on-failure`) starts it
//! again, so that recovery runs: the last snapshot is restored and the journal
//! replayed. Before this, a panic on the actor thread left the HTTP listeners
//! answering 503 until someone stopped the process, and a panic in a handler
//! or a task went unnoticed.
//!
//! [`install`] sets a panic hook for the whole process: whatever thread or
//! task panics (the actor, an HTTP handler, a blocking task), the hook prints
//! the panic as Rust does, logs that the controller stops, and exits with
//! [`EXIT_FAILSTOP`]. Exiting loses nothing acknowledged: an event is written
//! to the journal (committed, synced) before the engine sees it and before
//! anyone is answered, so a batch that was being journaled when the process
//! ended was not acknowledged, and SQLite rolls its partial transaction back
//! at the next open. The same status ends a controller whose journal or
//! accounting store cannot be written.

use std::sync::atomic::{AtomicBool, Ordering};

/// The exit status of a controller that stopped itself: a panic, or a write
/// to its journal or accounting store that failed (`EX_SOFTWARE`).
pub const EXIT_FAILSTOP: i32 = 70;

/// Test builds only (debug assertions, as the `ci` profile): the controller
/// panics right after it journals entry N of its state directory (before the
/// engine applies it and before anyone is answered), once: entries are
/// numbered for the state directory's life, so the restarted controller,
/// which numbers on, does not panic again. Release builds ignore it.
pub const PANIC_AT_ENTRY: &str = "TESSERA_TEST_PANIC_AT_ENTRY";

/// Make any panic end the process with [`EXIT_FAILSTOP`] (see the module).
pub fn install() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        static STOPPING: AtomicBool = AtomicBool::new(false);
        // the message, where, and the backtrace if RUST_BACKTRACE asks
        default(info);
        if STOPPING.swap(true, Ordering::SeqCst) {
            // another thread is ending the process already
            loop {
                std::thread::park();
            }
        }
        let thread = std::thread::current().name().unwrap_or("unnamed").to_string();
        tracing::error!(thread, status = EXIT_FAILSTOP, "the controller stops: a panic (above); its supervisor starts it again, and recovery replays the journal");
        let _ = std::io::Write::flush(&mut std::io::stderr());
        std::process::exit(EXIT_FAILSTOP);
    }));
    match (std::env::var(PANIC_AT_ENTRY), cfg!(debug_assertions)) {
        (Ok(v), true) => tracing::warn!("{PANIC_AT_ENTRY}={v}: this test build panics right after journaling entry {v} of its state directory (once: entries are numbered on across restarts)"),
        (Ok(_), false) => tracing::warn!("{PANIC_AT_ENTRY} is honoured by test builds only (debug assertions): ignored"),
        (Err(_), _) => {}
    }
}

/// The test hook of [`PANIC_AT_ENTRY`]: panic if journal entry `seq` is the
/// one it names.
#[cfg(debug_assertions)]
pub fn injected_panic(seq: i64) {
    static AT: std::sync::OnceLock<Option<i64>> = std::sync::OnceLock::new();
    if *AT.get_or_init(|| std::env::var(PANIC_AT_ENTRY).ok().and_then(|v| v.parse().ok())) == Some(seq) {
        panic!("{PANIC_AT_ENTRY}={seq}: a panic injected after journaling entry {seq}");
    }
}

/// Release builds: nothing (the variable is not read).
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn injected_panic(_seq: i64) {}
