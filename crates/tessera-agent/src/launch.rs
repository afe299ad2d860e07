//! Starting a job as real processes, in a way that survives the agent.
//!
//! Each job gets a *shepherd*, as Slurm's slurmstepd: the agent forks it, the
//! shepherd starts a session of its own, forks the job (its own process group,
//! so signals reach every process of the job and nothing else), waits for it
//! with `wait4` and writes the exit status and CPU time to `exit` in the job's
//! directory (written to `exit.tmp`, then renamed, so it is read whole or not
//! at all). The shepherd writes `pids` before telling the agent the job's pid,
//! so a restarted agent finds every job it started and learns how each ended,
//! even while it was away. Between `fork` and `exec` only async-signal-safe
//! calls are made: everything is prepared (paths, argv, environment, open
//! files) before the fork.

use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use tessera_proto::api::Launch;

/// The processes of a started job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spawned {
    pub shepherd: i32,
    /// The job's process group (its first process's pid).
    pub pgid: i32,
}

/// How a job's processes ended, from its `exit` file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExitRecord {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub cpu_s: f64,
    pub end: i64,
}

fn cstr(s: &str, what: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("{what} contains a NUL byte")))
}

fn open_out(path: &str) -> io::Result<fs::File> {
    fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o644).custom_flags(libc::O_CLOEXEC).open(path)
}

/// Start `l` with its files in `dir` (created here). Returns once the job's
/// process exists.
pub fn spawn(dir: &Path, l: &Launch) -> io::Result<Spawned> {
    fs::create_dir_all(dir)?;
    let script = dir.join("script");
    {
        let mut f = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o700).open(&script)?;
        f.write_all(l.script.as_bytes())?;
    }
    let root = nix::unistd::geteuid().is_root();
    let switch = root && l.uid != 0;
    if switch {
        std::os::unix::fs::chown(&script, Some(l.uid), Some(l.gid))?;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o700))?;
    }
    let script_s = script.to_str().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "state directory is not UTF-8"))?;
    let (prog, argv): (CString, Vec<CString>) = if l.script.starts_with("#!") {
        (cstr(script_s, "script path")?, vec![cstr(script_s, "script path")?])
    } else {
        (cstr("/bin/sh", "")?, vec![cstr("/bin/sh", "")?, cstr(script_s, "script path")?])
    };
    let envp: Vec<CString> = l.env.iter().filter(|(k, _)| !k.contains('=')).map(|(k, v)| cstr(&format!("{k}={v}"), "environment")).collect::<io::Result<_>>()?;
    let workdir = cstr(&l.workdir, "workdir")?;
    let out = open_out(&l.stdout).map_err(|e| io::Error::new(e.kind(), format!("output file {}: {e}", l.stdout)))?;
    let err = if l.stderr == l.stdout { None } else { Some(open_out(&l.stderr).map_err(|e| io::Error::new(e.kind(), format!("error file {}: {e}", l.stderr)))?) };
    if switch {
        std::os::unix::fs::chown(&l.stdout, Some(l.uid), Some(l.gid))?;
        if err.is_some() {
            std::os::unix::fs::chown(&l.stderr, Some(l.uid), Some(l.gid))?;
        }
    }
    let devnull = fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_CLOEXEC).open("/dev/null")?;
    let pids = cstr(dir.join("pids").to_str().unwrap_or(""), "path")?;
    let pids_tmp = cstr(dir.join("pids.tmp").to_str().unwrap_or(""), "path")?;
    let exit = cstr(dir.join("exit").to_str().unwrap_or(""), "path")?;
    let exit_tmp = cstr(dir.join("exit.tmp").to_str().unwrap_or(""), "path")?;
    let argv_p: Vec<*const libc::c_char> = argv.iter().map(|c| c.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let envp_p: Vec<*const libc::c_char> = envp.iter().map(|c| c.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let mut fds = [0 as libc::c_int; 2];
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let (rfd, wfd) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let child = Child {
        prog: prog.as_ptr(),
        argv: argv_p.as_ptr(),
        envp: envp_p.as_ptr(),
        workdir: workdir.as_ptr(),
        devnull: devnull.as_raw_fd(),
        out: out.as_raw_fd(),
        err: err.as_ref().map_or(out.as_raw_fd(), |f| f.as_raw_fd()),
        pipe: wfd.as_raw_fd(),
        pids: pids.as_ptr(),
        pids_tmp: pids_tmp.as_ptr(),
        exit: exit.as_ptr(),
        exit_tmp: exit_tmp.as_ptr(),
        ids: if switch { Some((l.uid, l.gid)) } else { None },
    };
    // SAFETY: the child runs only async-signal-safe calls on memory prepared above.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        unsafe { child.shepherd() }
    }
    drop(wfd);
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = unsafe { libc::read(rfd.as_raw_fd(), buf[got..].as_mut_ptr().cast(), 4 - got) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return Err(io::Error::other("the job's shepherd died before starting it"));
        }
        got += n as usize;
    }
    let pgid = i32::from_le_bytes(buf);
    if pgid <= 0 {
        return Err(io::Error::other("the job's shepherd could not fork"));
    }
    Ok(Spawned { shepherd: pid, pgid })
}

/// Everything the forked shepherd and job need, prepared before the fork.
struct Child {
    prog: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    workdir: *const libc::c_char,
    devnull: libc::c_int,
    out: libc::c_int,
    err: libc::c_int,
    pipe: libc::c_int,
    pids: *const libc::c_char,
    pids_tmp: *const libc::c_char,
    exit: *const libc::c_char,
    exit_tmp: *const libc::c_char,
    ids: Option<(u32, u32)>,
}

/// Write `v` in decimal at the end of `buf[..len]`; returns the new length.
fn put_int(buf: &mut [u8; 128], mut len: usize, v: i64) -> usize {
    let mut tmp = [0u8; 24];
    let mut n = 0;
    let neg = v < 0;
    let mut u = v.unsigned_abs();
    loop {
        tmp[n] = b'0' + (u % 10) as u8;
        n += 1;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if neg {
        buf[len] = b'-';
        len += 1;
    }
    while n > 0 {
        n -= 1;
        buf[len] = tmp[n];
        len += 1;
    }
    buf[len] = b' ';
    len + 1
}

unsafe fn write_file(tmp: *const libc::c_char, path: *const libc::c_char, buf: &[u8]) {
    let fd = libc::open(tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC, 0o644);
    if fd >= 0 {
        let _ = libc::write(fd, buf.as_ptr().cast(), buf.len());
        libc::close(fd);
        libc::rename(tmp, path);
    }
}

impl Child {
    unsafe fn shepherd(&self) -> ! {
        libc::setsid();
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        for s in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU, libc::SIGPIPE] {
            libc::signal(s, libc::SIG_IGN);
        }
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        let job = libc::fork();
        if job == 0 {
            self.job();
        }
        let mut buf = [0u8; 128];
        if job < 0 {
            let _ = libc::write(self.pipe, (-1i32).to_le_bytes().as_ptr().cast(), 4);
            libc::_exit(1);
        }
        libc::setpgid(job, job);
        let mut len = put_int(&mut buf, 0, libc::getpid() as i64);
        len = put_int(&mut buf, len, job as i64);
        buf[len - 1] = b'\n';
        write_file(self.pids_tmp, self.pids, &buf[..len]);
        let _ = libc::write(self.pipe, job.to_le_bytes().as_ptr().cast(), 4);
        libc::close(self.pipe);
        // hold nothing of the agent's: its sockets, its terminal
        libc::dup2(self.devnull, 0);
        libc::dup2(self.devnull, 1);
        libc::dup2(self.devnull, 2);
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        let mut status = 0;
        let mut ru: libc::rusage = std::mem::zeroed();
        loop {
            let r = libc::wait4(job, &mut status, 0, &mut ru);
            if r == job {
                break;
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
        let (code, sig) = if libc::WIFEXITED(status) { (libc::WEXITSTATUS(status) as i64, -1) } else if libc::WIFSIGNALED(status) { (-1, libc::WTERMSIG(status) as i64) } else { (-1, -1) };
        let cpu_us = (ru.ru_utime.tv_sec as i64 + ru.ru_stime.tv_sec as i64) * 1_000_000 + ru.ru_utime.tv_usec as i64 + ru.ru_stime.tv_usec as i64;
        let mut len = put_int(&mut buf, 0, code);
        len = put_int(&mut buf, len, sig);
        len = put_int(&mut buf, len, cpu_us);
        len = put_int(&mut buf, len, ts.tv_sec as i64);
        buf[len - 1] = b'\n';
        write_file(self.exit_tmp, self.exit, &buf[..len]);
        libc::_exit(0);
    }

    unsafe fn job(&self) -> ! {
        libc::setpgid(0, 0);
        for s in 1..32 {
            if s != libc::SIGKILL && s != libc::SIGSTOP {
                libc::signal(s, libc::SIG_DFL);
            }
        }
        libc::dup2(self.devnull, 0);
        libc::dup2(self.out, 1);
        libc::dup2(self.err, 2);
        if let Some((uid, gid)) = self.ids {
            if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(gid) != 0 || libc::setuid(uid) != 0 {
                let m = b"tessera: cannot switch to the job's user\n";
                let _ = libc::write(2, m.as_ptr().cast(), m.len());
                libc::_exit(126);
            }
        }
        if libc::chdir(self.workdir) != 0 {
            let m = b"tessera: cannot enter the job's working directory\n";
            let _ = libc::write(2, m.as_ptr().cast(), m.len());
            libc::_exit(1);
        }
        libc::execve(self.prog, self.argv, self.envp);
        let m = b"tessera: cannot execute the job's script\n";
        let _ = libc::write(2, m.as_ptr().cast(), m.len());
        libc::_exit(127);
    }
}

/// Read a job's `exit` file, if the shepherd has written it.
pub fn read_exit(dir: &Path) -> Option<ExitRecord> {
    let text = fs::read_to_string(dir.join("exit")).ok()?;
    let v: Vec<i64> = text.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let [code, sig, cpu_us, end] = v.as_slice() else { return None };
    Some(ExitRecord {
        code: (*code >= 0).then_some(*code as i32),
        signal: (*sig >= 0).then_some(*sig as i32),
        cpu_s: *cpu_us as f64 / 1e6,
        end: *end,
    })
}

/// Read a job's `pids` file: (shepherd, process group).
pub fn read_pids(dir: &Path) -> Option<Spawned> {
    let text = fs::read_to_string(dir.join("pids")).ok()?;
    let v: Vec<i32> = text.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    let [shepherd, pgid] = v.as_slice() else { return None };
    Some(Spawned { shepherd: *shepherd, pgid: *pgid })
}

/// The directory of a job's run under an agent's state directory.
pub fn job_dir(state: &Path, job: u64, attempt: u32) -> PathBuf {
    state.join("jobs").join(format!("{job}.{attempt}"))
}
