//! The one place commands write to standard output. A failed write (a full disk,
//! `tessera … > /dev/full`, a closed pipe when SIGPIPE is ignored) becomes an
//! error naming standard output and the cause, never a panic; `main` flushes at
//! the end, so nothing written is lost without a word.

use anyhow::{Context, Result};
use std::io::Write;

/// Write `args` to standard output.
pub fn write(args: std::fmt::Arguments<'_>) -> Result<()> {
    std::io::stdout().lock().write_fmt(args).context("writing standard output")
}

/// Flush standard output (what a line buffer still holds).
pub fn flush() -> Result<()> {
    std::io::stdout().lock().flush().context("writing standard output")
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
