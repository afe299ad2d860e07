//! Starting a job as real processes, in a way that survives the agent.
//!
//! Each job gets a *shepherd*, as Slurm's slurmstepd: the agent forks it, the
//! shepherd starts a session of its own, starts the job as posix_spawn does
//! (`clone` sharing its memory until the exec; the job in its own process group,
//! so signals reach every process of the job and nothing else), waits for it
//! with `wait4` and records the exit status and CPU time.
//!
//! The agent's spool (`jobs/` in its state directory) is a set of slots, each
//! a record file (`N`) and a script file (`N.sh`) reused from job to job: slots
//! are emptied, never deleted, so a start allocates no inode. A record is a few
//! lines, each written whole by one `write` in append mode, so a reader takes
//! every line that ends in a newline and ignores a torn last one: `run JOB
//! ATTEMPT {json}` (the agent's, before the fork), `pids JOB ATTEMPT SHEPHERD
//! PGID` (the shepherd's, before it tells the agent the job's pid) and `exit JOB
//! ATTEMPT CODE SIGNAL CPU_US END` (the shepherd's when the job ends; the first
//! such line of the run counts). A restarted agent finds every job it started
//! and learns how each ended, even while it was away. Between `fork` and `exec`
//! only async-signal-safe calls are made:
//! everything is prepared (paths, argv, environment, open files) before the fork.

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

/// A slot of an agent's spool: a record file (`jobs/N`) and a script file
/// (`jobs/N.sh`), reused from job to job and never deleted, so that starting a
/// job allocates no inode (a node that starts hundreds of jobs a second would
/// otherwise spend its time creating and deleting files).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Slot {
    pub n: u32,
    pub record: PathBuf,
    pub script: PathBuf,
}

/// What a slot's record says about the run it holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// The run: job, attempt and the agent's JSON.
    pub run: Option<(u64, u32, String)>,
    pub pids: Option<Spawned>,
    pub exit: Option<ExitRecord>,
}

impl Slot {
    pub fn new(state: &Path, n: u32) -> Slot {
        let dir = state.join("jobs");
        Slot { n, record: dir.join(n.to_string()), script: dir.join(format!("{n}.sh")) }
    }

    /// The slot a file of the spool belongs to (`N` or `N.sh`).
    pub fn parse_name(name: &str) -> Option<u32> {
        name.strip_suffix(".sh").unwrap_or(name).parse().ok()
    }

    /// Read the record: every complete line of its run, the first `exit` line
    /// counting. An empty record is a free slot.
    pub fn read(&self) -> Record {
        let mut r = Record::default();
        let Ok(text) = fs::read_to_string(&self.record) else { return r };
        let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        let mut lines = complete.lines();
        let Some(first) = lines.next() else { return r };
        let mut f = first.splitn(4, ' ');
        let (Some("run"), Some(job), Some(attempt), Some(json)) = (f.next(), f.next(), f.next(), f.next()) else { return r };
        let (Ok(job), Ok(attempt)) = (job.parse::<u64>(), attempt.parse::<u32>()) else { return r };
        r.run = Some((job, attempt, json.to_string()));
        for line in lines {
            let mut w = line.split(' ');
            let kind = w.next().unwrap_or("");
            let v: Vec<i64> = w.filter_map(|x| x.parse().ok()).collect();
            // lines of another run (a shepherd that outlived its slot) do not count
            if v.len() < 2 || v[0] != job as i64 || v[1] != attempt as i64 {
                continue;
            }
            match (kind, &v[2..]) {
                ("pids", &[shepherd, pgid]) => r.pids = Some(Spawned { shepherd: shepherd as i32, pgid: pgid as i32 }),
                ("exit", &[code, sig, cpu_us, end]) if r.exit.is_none() => {
                    r.exit = Some(ExitRecord { code: (code >= 0).then_some(code as i32), signal: (sig >= 0).then_some(sig as i32), cpu_s: cpu_us as f64 / 1e6, end })
                }
                _ => {}
            }
        }
        r
    }

    /// Append an `exit` line for a run (a job the agent could not start, or
    /// whose shepherd vanished); a line already there keeps counting.
    pub fn append_exit(&self, job: u64, attempt: u32, code: i32, signal: i32, end: i64) -> io::Result<()> {
        let mut f = fs::OpenOptions::new().append(true).create(true).open(&self.record)?;
        f.write_all(format!("exit {job} {attempt} {code} {signal} 0 {end}\n").as_bytes())
    }

    /// Empty the slot for the next job.
    pub fn free(&self) {
        for p in [&self.record, &self.script] {
            if let Ok(f) = fs::OpenOptions::new().write(true).open(p) {
                let _ = f.set_len(0);
            }
        }
    }
}

fn cstr(s: &str, what: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, format!("{what} contains a NUL byte")))
}

fn open_out(path: &str) -> io::Result<fs::File> {
    fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o644).custom_flags(libc::O_CLOEXEC).open(path)
}

/// The uid `l` runs as: its submitter's when the agent is root (and the
/// submitter is not), else the agent's own.
pub fn runs_as(l: &Launch) -> u32 {
    switch_to(l).map_or(nix::unistd::geteuid().as_raw(), |(uid, _)| uid)
}

/// The uid and gid to switch the job to, when the agent is root and the job's
/// submitter is not.
fn switch_to(l: &Launch) -> Option<(u32, u32)> {
    (nix::unistd::geteuid().is_root() && l.uid != 0).then_some((l.uid, l.gid))
}

/// Start `l` in `slot`: write the record's `run` line (the agent's JSON `run`)
/// and the script, then fork the shepherd. Returns once the job's process exists.
pub fn spawn(slot: &Slot, run: &str, l: &Launch) -> io::Result<Spawned> {
    {
        let mut f = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o644).open(&slot.record)?;
        f.write_all(format!("run {} {} {run}\n", l.job, l.attempt).as_bytes())?;
    }
    let script = &slot.script;
    {
        let mut f = fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o700).open(script)?;
        f.write_all(l.script.as_bytes())?;
    }
    let ids = switch_to(l);
    let switch = ids.is_some();
    if switch {
        std::os::unix::fs::chown(script, Some(l.uid), Some(l.gid))?;
        fs::set_permissions(script, fs::Permissions::from_mode(0o700))?;
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
    let record = cstr(slot.record.to_str().unwrap_or(""), "path")?;
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
        record: record.as_ptr(),
        ids,
        run: (l.job as i64, l.attempt as i64),
        // 16-byte aligned: the stack grows down from here
        stack: JOB_STACK.0.get().cast::<u8>().wrapping_add(STACK - 64).map_addr(|a| a & !15),
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

/// The job's stack until it execs: its few calls need far less.
const STACK: usize = 64 * 1024;

/// Memory for that stack, used only in a shepherd (each has its own copy after
/// the fork), so one static buffer serves every launch.
struct JobStack(std::cell::UnsafeCell<[u8; STACK]>);
// SAFETY: only ever touched in a forked shepherd, never shared between threads.
unsafe impl Sync for JobStack {}
static JOB_STACK: JobStack = JobStack(std::cell::UnsafeCell::new([0; STACK]));

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
    record: *const libc::c_char,
    ids: Option<(u32, u32)>,
    /// The run's job and attempt, at the head of the shepherd's lines.
    run: (i64, i64),
    /// The top of the stack the job runs on until it execs.
    stack: *mut u8,
}

/// Where the job starts, on its own stack, sharing the shepherd's memory until
/// it execs.
extern "C" fn job_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the shepherd's `Child`, alive while the shepherd waits
    // for this exec (CLONE_VFORK).
    unsafe { (*(arg as *const Child)).job() }
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

/// Append `buf` to the record in one write.
unsafe fn append(path: *const libc::c_char, buf: &[u8]) {
    let fd = libc::open(path, libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC);
    if fd >= 0 {
        let _ = libc::write(fd, buf.as_ptr().cast(), buf.len());
        libc::close(fd);
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
        // the job shares the shepherd's memory until it execs (as posix_spawn
        // does): no copy of the address space the shepherd inherited from the
        // agent, and none to tear down at the exec
        let job = libc::clone(job_entry, self.stack.cast(), libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD, (self as *const Child).cast_mut().cast());
        let mut buf = [0u8; 128];
        if job < 0 {
            let _ = libc::write(self.pipe, (-1i32).to_le_bytes().as_ptr().cast(), 4);
            libc::_exit(1);
        }
        libc::setpgid(job, job);
        buf[..5].copy_from_slice(b"pids ");
        let mut len = put_int(&mut buf, 5, self.run.0);
        len = put_int(&mut buf, len, self.run.1);
        len = put_int(&mut buf, len, libc::getpid() as i64);
        len = put_int(&mut buf, len, job as i64);
        buf[len - 1] = b'\n';
        append(self.record, &buf[..len]);
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
        buf[..5].copy_from_slice(b"exit ");
        let mut len = put_int(&mut buf, 5, self.run.0);
        len = put_int(&mut buf, len, self.run.1);
        len = put_int(&mut buf, len, code);
        len = put_int(&mut buf, len, sig);
        len = put_int(&mut buf, len, cpu_us);
        len = put_int(&mut buf, len, ts.tv_sec as i64);
        buf[len - 1] = b'\n';
        append(self.record, &buf[..len]);
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
            // raw system calls: credentials of this process alone, without the
            // C library's bookkeeping in memory shared with the shepherd
            let no_groups: *const libc::gid_t = std::ptr::null();
            if libc::syscall(libc::SYS_setgroups, 0, no_groups) != 0 || libc::syscall(libc::SYS_setgid, gid) != 0 || libc::syscall(libc::SYS_setuid, uid) != 0 {
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
