//! A daemon's state directory: one daemon owns it, and only the operator reads
//! what is in it.
//!
//! **One owner.** A daemon takes an exclusive `flock` on a lock file in its
//! state directory (`controller.lock`, `agent.lock`) before it touches
//! anything there, and holds it for its life. The kernel releases it when the
//! holder dies, however it dies, so a `kill -9` leaves no stale lock; a second
//! daemon on the same directory is refused with the holder's pid, which the
//! holder writes into the file.
//!
//! **Operator only.** The journal holds every job's script and environment
//! (tokens and passwords that users export), so a daemon creates its files
//! with umask 077 and, at every start, sets its directory to 0711 (others may
//! pass through it to what is meant for them, such as the controller's socket
//! or a job's own script, but not list it) and every file in it to 0600, but
//! for the few that are public by design (named by the daemon).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of a state directory: the owner's; others may pass through only.
pub const DIR_MODE: u32 = 0o711;

/// An exclusive hold on a state directory, released when dropped or when the
/// process dies.
#[derive(Debug)]
pub struct Lock {
    _file: File,
    pub path: PathBuf,
}

/// The lock file of a daemon kind (`controller`, `agent`) in `dir`.
pub fn lock_path(dir: &Path, kind: &str) -> PathBuf {
    dir.join(format!("{kind}.lock"))
}

fn try_flock(f: &File) -> io::Result<bool> {
    // SAFETY: a plain system call on an open fd.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

fn pid_in(f: &mut File) -> Option<u32> {
    let mut s = String::new();
    f.seek(io::SeekFrom::Start(0)).ok()?;
    f.take(64).read_to_string(&mut s).ok()?;
    s.trim().parse().ok()
}

/// Take `dir` for a daemon of `kind`: create it (see [`create_dir`]), lock it
/// and write this process's pid into the lock. Refused, naming the holder's
/// pid, while another process holds it.
pub fn lock(dir: &Path, kind: &str) -> io::Result<Lock> {
    create_dir(dir)?;
    let path = lock_path(dir, kind);
    let mut f = OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).custom_flags(libc::O_CLOEXEC).open(&path)?;
    if !try_flock(&f)? {
        let who = pid_in(&mut f).map_or("another process".to_string(), |p| format!("pid {p}"));
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("state directory {} is in use: a {kind} ({who}) holds {}; stop it first, or give another --state-dir", dir.display(), path.display()),
        ));
    }
    f.set_len(0)?;
    f.write_all(format!("{}\n", std::process::id()).as_bytes())?;
    Ok(Lock { _file: f, path })
}

/// The pid of the live process holding `dir`'s lock of `kind`, if one does
/// (a probe: the lock is taken and released at once when free).
pub fn holder(dir: &Path, kind: &str) -> io::Result<Option<u32>> {
    let mut f = match OpenOptions::new().read(true).custom_flags(libc::O_CLOEXEC).open(lock_path(dir, kind)) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if try_flock(&f)? {
        return Ok(None); // released with `f`
    }
    Ok(Some(pid_in(&mut f).unwrap_or(0)))
}

/// Create `dir` and any missing parent, each [`DIR_MODE`] whatever the umask.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d {
        if p.as_os_str().is_empty() || p.exists() {
            break;
        }
        missing.push(p);
        d = p.parent();
    }
    for p in missing.into_iter().rev() {
        match fs::create_dir(p) {
            Ok(()) => fs::set_permissions(p, fs::Permissions::from_mode(DIR_MODE))?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Umask 077 for this process from now on: every file it creates is its
/// owner's only.
pub fn private_umask() {
    // SAFETY: a plain system call.
    unsafe { libc::umask(0o077) };
}

/// Make `dir` the operator's: umask 077 for this process from now on, `dir`
/// [`DIR_MODE`], and every regular file directly in it 0600 but those named
/// in `public` (0644). Subdirectories are their own daemons' to secure.
pub fn secure(dir: &Path, public: &[&str]) -> io::Result<()> {
    private_umask();
    create_dir(dir)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))?;
    for e in fs::read_dir(dir)? {
        let e = e?;
        if !e.file_type()?.is_file() {
            continue;
        }
        let public = e.file_name().to_str().is_some_and(|n| public.contains(&n));
        let mode = if public { 0o644 } else { 0o600 };
        if e.metadata()?.permissions().mode() & 0o777 != mode {
            fs::set_permissions(e.path(), fs::Permissions::from_mode(mode))?;
        }
    }
    Ok(())
}
