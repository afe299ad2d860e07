//! The one place commands write to standard output. A failed write (a full disk,
//! `tessera … > /dev/full`) becomes an error naming standard output and the
//! cause, never a panic; `main` flushes at the end, so nothing written is lost
//! without a word. A closed pipe (`tessera acct | head`) ends the command as
//! SIGPIPE ends a Unix tool: quietly, killed by the signal. (SIGPIPE itself
//! stays ignored, so that a socket whose peer is gone is an error, not death.)

use anyhow::{Context, Result};
use std::io::Write;

/// Write `args` to standard output.
pub fn write(args: std::fmt::Arguments<'_>) -> Result<()> {
    checked(std::io::stdout().lock().write_fmt(args))
}

/// Flush standard output (what a line buffer still holds).
pub fn flush() -> Result<()> {
    checked(std::io::stdout().lock().flush())
}

/// A write to standard output's result, as the command should take it.
pub fn checked(r: std::io::Result<()>) -> Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => closed_pipe(),
        r => r.context("writing standard output"),
    }
}

/// End the process as SIGPIPE would have.
fn closed_pipe() -> ! {
    // SAFETY: resetting a signal's disposition and raising it; nothing runs after.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(141)
}

/// `print!` that returns the write's error: `out!("…", x)?`.
macro_rules! out {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*)) };
}

/// `println!` that returns the write's error: `outln!("…", x)?`.
macro_rules! outln {
    () => { $crate::out::write(format_args!("\n")) };
    ($($t:tt)*) => { $crate::out::write(format_args!("{}\n", format_args!($($t)*))) };
}

pub(crate) use {out, outln};
