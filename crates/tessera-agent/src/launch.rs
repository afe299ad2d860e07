//! Starting a job as real processes, in a way that survives the agent.
//!
//! Each job gets a *shepherd*, as Slurm's slurmstepd: the launcher starts it,
//! the shepherd starts a session of its own, starts the job as posix_spawn does
//! (`clone` sharing its memory until the exec; the job in its own process group,
//! so signals reach every process of the job and nothing else), waits for it
//! with `wait4` and records the exit status and CPU time.
//!
//! The shepherd itself shares the launcher's memory (`clone` with `CLONE_VM`,
//! on a stack of its own from [`Stacks`]): starting it copies no page tables,
//! nothing takes a copy-on-write fault afterwards, and its end tears no
//! address space down. The launcher goes on running meanwhile, so a shepherd
//! and a job before its exec make raw system calls only ([`sys`]) and touch
//! no memory but their own stacks and what the launcher prepared for them
//! (paths, argv, environment, open files), which stays alive until the
//! shepherd reports the job's pid. A shepherd outlives the launcher and the
//! agent: the memory it shares stays mapped while any of them runs.
//!
//! The agent's spool (`jobs/` in its state directory) is a set of slots, each
//! a record file (`N`) and a script file (`N.sh`) reused from job to job and
//! never deleted or emptied, so a start allocates no inode and frees no block.
//! A record is a few lines, each written whole by one `write`, so a reader
//! takes every line that ends in a newline and ignores a torn last one: `run
//! JOB ATTEMPT {json}` (the launcher's, written over the slot's previous
//! record), `pids JOB ATTEMPT SHEPHERD PGID` (the shepherd's, before it tells
//! the launcher the job's pid), `exit JOB ATTEMPT CODE SIGNAL CPU_US END` (the
//! shepherd's when the job ends; the first such line of the run counts) and
//! `free JOB ATTEMPT` (the agent's, once the end is reported). Lines of another
//! run (the rest of a previous record, or a shepherd that outlived its slot)
//! do not count. A restarted agent finds every job it started and learns how
//! each ended, even while it was away.

use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use crate::sys;
use tessera_proto::api::{Launch, LaunchFailure, LaunchStage};

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

/// A slot of an agent's spool: a record file (`jobs/N`), a script file
/// (`jobs/N.sh`) and a suspension record (`jobs/N.susp`), reused from job to
/// job and never deleted, so that starting a job allocates no inode (a node
/// that starts hundreds of jobs a second would otherwise spend its time
/// creating and deleting files).
/// The variable naming a job's configuration record ([`Slot::config`]).
pub const CONFIG_ENV: &str = "TESSERA_CONFIG";

/// The variable naming a job's acknowledgements ([`Slot::config_ack`]).
pub const CONFIG_ACK_ENV: &str = "TESSERA_CONFIG_ACK";

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
    /// The step of the launch that failed, if one did (a `fail` line).
    pub failure: Option<LaunchFailure>,
}

impl Slot {
    pub fn new(state: &Path, n: u32) -> Slot {
        let dir = state.join("jobs");
        Slot { n, record: dir.join(n.to_string()), script: dir.join(format!("{n}.sh")) }
    }

    /// The slot a file of the spool belongs to (`N`, `N.sh`, `N.susp` or `N.conf`).
    pub fn parse_name(name: &str) -> Option<u32> {
        [".sh", ".susp", ".conf", ".ack"].iter().find_map(|s| name.strip_suffix(s)).unwrap_or(name).parse().ok()
    }

    /// The run's acknowledgements: a line the job appends once it runs in the
    /// configuration its record last gave (its own file, `$TESSERA_CONFIG_ACK`).
    pub fn config_ack(&self) -> PathBuf {
        self.record.with_extension("ack")
    }

    /// The run's configuration record: each configuration the power-aware
    /// scheduler gave the running job after its start, one line each, `AT
    /// NODES CAP_W NODELIST END` (the controller's instant and the end the
    /// scheduler's model now expects, Unix seconds), found by
    /// the job in `$TESSERA_CONFIG` ([`CONFIG_ENV`]).
    pub fn config(&self) -> PathBuf {
        self.record.with_extension("conf")
    }

    /// The run's suspension record ([`crate::suspensions`]).
    pub fn suspensions(&self) -> PathBuf {
        self.record.with_extension("susp")
    }

    /// Read the record: every complete line of its run, the first `exit` line
    /// counting. An empty record, or one whose run is marked free, is a free
    /// slot.
    pub fn read(&self) -> Record {
        let mut r = Record::default();
        let Ok(bytes) = fs::read(&self.record) else { return r };
        let text = String::from_utf8_lossy(&bytes);
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
                ("free", &[]) => return Record::default(),
                ("pids", &[shepherd, pgid]) => r.pids = Some(Spawned { shepherd: shepherd as i32, pgid: pgid as i32 }),
                ("exit", &[code, sig, cpu_us, end]) if r.exit.is_none() => {
                    r.exit = Some(ExitRecord { code: (code >= 0).then_some(code as i32), signal: (sig >= 0).then_some(sig as i32), cpu_s: cpu_us as f64 / 1e6, end })
                }
                ("fail", &[stage, errno]) if r.failure.is_none() => {
                    r.failure = LaunchStage::from_code(stage).map(|stage| LaunchFailure { stage, errno: errno as i32 });
                }
                _ => {}
            }
        }
        r
    }

    /// Append an `exit` line for a run (a job the agent could not start, or
    /// whose shepherd vanished), after a `fail` line for a launch that
    /// failed; a line already there keeps counting.
    pub fn append_exit(&self, job: u64, attempt: u32, code: i32, signal: i32, end: i64, failure: Option<LaunchFailure>) -> io::Result<()> {
        let mut f = fs::OpenOptions::new().append(true).create(true).mode(0o600).open(&self.record)?;
        let fail = failure.map_or(String::new(), |x| format!("fail {job} {attempt} {} {}\n", x.stage.code(), x.errno));
        f.write_all(format!("{fail}exit {job} {attempt} {code} {signal} 0 {end}\n").as_bytes())
    }

    /// Begin a run's record (`run JOB ATTEMPT {json}`) without starting it:
    /// a launch that fails before its shepherd exists is recorded so.
    pub fn begin(&self, job: u64, attempt: u32, run: &str) -> io::Result<()> {
        rewrite(&self.record, format!("run {job} {attempt} {run}\n").as_bytes(), 0o600).map(drop)
    }

    /// Mark the slot free once its run (`job`, `attempt`) has been reported: a
    /// `free` line, so the record needs no truncation (see [`rewrite`]).
    pub fn free(&self, job: u64, attempt: u32) {
        if let Ok(mut f) = fs::OpenOptions::new().append(true).open(&self.record) {
            let _ = f.write_all(format!("free {job} {attempt}\n").as_bytes());
        }
    }
}

/// A launch that failed before the job's process existed.
#[derive(Debug)]
pub struct SpawnError {
    pub failure: LaunchFailure,
    pub message: String,
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl SpawnError {
    fn spool(e: io::Error) -> SpawnError {
        SpawnError { failure: LaunchFailure { stage: LaunchStage::Spool, errno: e.raw_os_error().unwrap_or(libc::EIO) }, message: e.to_string() }
    }
}

fn cstr(s: &str, what: &str) -> Result<CString, SpawnError> {
    CString::new(s).map_err(|_| SpawnError { failure: LaunchFailure { stage: LaunchStage::Request, errno: libc::EINVAL }, message: format!("{what} contains a NUL byte") })
}

/// The submitter's supplementary groups on this node: those of the user the
/// node knows by `uid` (its own passwd and group databases), with `gid`; only
/// `gid` when the node has no such user.
fn groups_of(uid: u32, gid: u32) -> Vec<libc::gid_t> {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok().flatten();
    let mut groups: Vec<libc::gid_t> = match user.and_then(|u| CString::new(u.name).ok()) {
        Some(name) => nix::unistd::getgrouplist(&name, nix::unistd::Gid::from_raw(gid)).map(|g| g.into_iter().map(|g| g.as_raw()).collect()).unwrap_or_default(),
        None => Vec::new(),
    };
    if !groups.contains(&gid) {
        groups.insert(0, gid);
    }
    groups
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

/// Replace a spool file's content in place: written over from its start, then
/// cut to the new length. A slot's files are never emptied first: ext4 writes a
/// file out to disk when it is closed after being truncated to nothing and
/// rewritten (its `auto_da_alloc` safeguard), a disk write per launch.
fn rewrite(path: &Path, body: &[u8], mode: u32) -> io::Result<fs::File> {
    let f = fs::OpenOptions::new().write(true).create(true).mode(mode).open(path)?;
    f.write_all_at(body, 0)?;
    if f.metadata()?.len() > body.len() as u64 {
        f.set_len(body.len() as u64)?;
    }
    Ok(f)
}

/// Start `l` in `slot`: write the record's `run` line (the agent's JSON `run`)
/// and the script, then start the shepherd on a stack from `stacks`. Returns
/// once the job's process exists; call [`Stacks::ended`] when the shepherd has
/// been reaped.
///
/// `enter`: the `cgroup.procs` files of the cgroup the job runs in (one per
/// hierarchy; none when it is not confined). The job enters it before it
/// takes its submitter's identity, so everything it starts is counted there.
pub fn spawn(slot: &Slot, run: &str, l: &Launch, enter: &[PathBuf], stacks: &mut Stacks) -> Result<Spawned, SpawnError> {
    spawn_io(slot, run, l, enter, stacks).map_err(|e| match e {
        Failed::Spawn(e) => e,
        Failed::Io(e) => SpawnError::spool(e),
    })
}

enum Failed {
    Spawn(SpawnError),
    Io(io::Error),
}

impl From<io::Error> for Failed {
    fn from(e: io::Error) -> Failed {
        Failed::Io(e)
    }
}

impl From<SpawnError> for Failed {
    fn from(e: SpawnError) -> Failed {
        Failed::Spawn(e)
    }
}

fn spawn_io(slot: &Slot, run: &str, l: &Launch, enter: &[PathBuf], stacks: &mut Stacks) -> Result<Spawned, Failed> {
    if enter.len() > MAX_CGROUPS {
        return Err(io::Error::other("more cgroup hierarchies than a job enters").into());
    }
    // opened here (the job writes `0` to each, as root, before its exec)
    let mut cgroups = Vec::with_capacity(enter.len());
    for p in enter {
        let f = fs::OpenOptions::new().write(true).custom_flags(libc::O_CLOEXEC).open(p).map_err(|e| SpawnError {
            failure: LaunchFailure { stage: LaunchStage::Cgroup, errno: e.raw_os_error().unwrap_or(libc::EIO) },
            message: format!("opening {}: {e}", p.display()),
        })?;
        cgroups.push(f);
    }
    let mut cg_fds = [-1 as libc::c_int; MAX_CGROUPS];
    for (i, f) in cgroups.iter().enumerate() {
        cg_fds[i] = f.as_raw_fd();
    }
    let record = rewrite(&slot.record, format!("run {} {} {run}\n", l.job, l.attempt).as_bytes(), 0o600)?;
    // the shepherd appends to it (Linux's pwrite would append too, were the
    // file opened so)
    // SAFETY: a plain system call on an open fd.
    if unsafe { libc::fcntl(record.as_raw_fd(), libc::F_SETFL, libc::O_APPEND) } != 0 {
        return Err(io::Error::last_os_error().into());
    }
    let script = &slot.script;
    rewrite(script, l.script.as_bytes(), 0o700)?;
    let ids = switch_to(l);
    let switch = ids.is_some();
    if switch {
        std::os::unix::fs::chown(script, Some(l.uid), Some(l.gid))?;
        fs::set_permissions(script, fs::Permissions::from_mode(0o700))?;
    }
    let script_s = script.to_str().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "state directory is not UTF-8"))?;
    // the job's strings, each checked for a NUL byte before anything starts
    let groups = ids.map(|(uid, gid)| groups_of(uid, gid)).unwrap_or_default();
    let (prog, argv): (CString, Vec<CString>) = if l.script.starts_with("#!") {
        (cstr(script_s, "script path")?, vec![cstr(script_s, "script path")?])
    } else {
        (cstr("/bin/sh", "")?, vec![cstr("/bin/sh", "")?, cstr(script_s, "script path")?])
    };
    let mut records = Vec::new();
    for (var, path) in [(crate::suspensions::ENV, slot.suspensions()), (CONFIG_ENV, slot.config()), (CONFIG_ACK_ENV, slot.config_ack())] {
        let ack = var == CONFIG_ACK_ENV;
        rewrite(&path, b"", if ack { 0o600 } else { 0o644 })?;
        if ack && switch {
            // the job writes it, as its submitter
            std::os::unix::fs::chown(&path, Some(l.uid), Some(l.gid))?;
        }
        records.push(format!("{var}={}", path.to_str().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "state directory is not UTF-8"))?));
    }
    let envp: Vec<CString> = l
        .env
        .iter()
        .filter(|(k, _)| !k.contains('=') && ![crate::suspensions::ENV, CONFIG_ENV, CONFIG_ACK_ENV].contains(&k.as_str()))
        .map(|(k, v)| cstr(&format!("{k}={v}"), "environment"))
        .chain(records.iter().map(|r| cstr(r, "environment")))
        .collect::<Result<_, SpawnError>>()?;
    let workdir = cstr(&l.workdir, "workdir")?;
    // a step's task: its output and error to its client, each on a
    // connection of its own that starts with the key and the task
    let mut io_socks = Vec::new();
    if let Some(io) = &l.io {
        let failed = |e: io::Error| SpawnError { failure: LaunchFailure { stage: LaunchStage::Io, errno: e.raw_os_error().unwrap_or(libc::ECONNREFUSED) }, message: format!("connecting to {}: {e}", io.addr) };
        let addr: std::net::SocketAddr = io.addr.parse().map_err(|_| failed(io::Error::from_raw_os_error(libc::EINVAL)))?;
        for stream in [1, 2] {
            let mut s = std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5)).map_err(failed)?;
            s.write_all(format!("{} {} {stream}\n", io.key, io.task).as_bytes()).map_err(failed)?;
            io_socks.push(s);
        }
    }
    let mut mask = [0u64; 16];
    for &c in l.affinity.iter().filter(|&&c| c < 1024) {
        mask[c as usize / 64] |= 1 << (c % 64);
    }
    // opened by the job itself, once it is the submitter (see `Child::job`)
    let stdout = cstr(&l.stdout, "output path")?;
    let stderr = if l.stderr == l.stdout { None } else { Some(cstr(&l.stderr, "error path")?) };
    let devnull = fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_CLOEXEC).open("/dev/null")?;
    let argv_p: Vec<*const libc::c_char> = argv.iter().map(|c| c.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let envp_p: Vec<*const libc::c_char> = envp.iter().map(|c| c.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: a plain system call on a buffer of two fds.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error().into());
    }
    // SAFETY: both fds were just created and are owned here.
    let (rfd, wfd) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let stack = stacks.take()?;
    let child = Child {
        prog: prog.as_ptr(),
        argv: argv_p.as_ptr(),
        envp: envp_p.as_ptr(),
        workdir: workdir.as_ptr(),
        devnull: devnull.as_raw_fd(),
        stdout: stdout.as_ptr(),
        stderr: stderr.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
        groups: groups.as_ptr(),
        ngroups: groups.len(),
        pipe: wfd.as_raw_fd(),
        record: record.as_raw_fd(),
        ids,
        run: (l.job as i64, l.attempt as i64),
        job_stack: stack.wrapping_add(STACK),
        cgroups: cg_fds,
        io: if io_socks.len() == 2 { [io_socks[0].as_raw_fd(), io_socks[1].as_raw_fd()] } else { [-1, -1] },
        affinity: (!l.affinity.is_empty()).then_some(mask),
    };
    // SAFETY: the shepherd runs on its own stack, copies `child` before it
    // tells us the job's pid (until then everything `child` points to stays
    // alive here) and makes raw system calls only (see `sys`).
    let pid = unsafe { sys::clone_on((libc::CLONE_VM | libc::SIGCHLD) as usize, stack.wrapping_add(2 * STACK), shepherd_entry, &child as *const Child as usize) };
    if pid < 0 {
        stacks.free.push(stack);
        return Err(io::Error::from_raw_os_error(-pid as i32).into());
    }
    let pid = pid as i32;
    stacks.busy.insert(pid, stack);
    drop(wfd);
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        // SAFETY: reading into the rest of a 4-byte buffer.
        let n = unsafe { libc::read(rfd.as_raw_fd(), buf[got..].as_mut_ptr().cast(), 4 - got) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return Err(io::Error::other("the job's shepherd died before starting it").into());
        }
        got += n as usize;
    }
    let pgid = i32::from_le_bytes(buf);
    if pgid <= 0 {
        return Err(io::Error::other("the job's shepherd could not start the job").into());
    }
    Ok(Spawned { shepherd: pid, pgid })
}

/// The size of each stack: a shepherd's, and its job's until the exec. Their
/// few calls need far less (no recursion, buffers of a few hundred bytes):
/// measured with mincore, a shepherd touches one page of its stack in an
/// optimized build and two unoptimized, a job one.
const STACK: usize = 16 * 1024;

/// How many shepherds' stacks one mapping holds.
const PER_MAPPING: usize = 64;

/// Stacks for shepherds, reused: a shepherd shares the launcher's memory
/// (`CLONE_VM`), so it is started without copying the launcher's page tables
/// and ends without tearing any down, but it needs stacks of its own until it
/// is reaped. Mapped `PER_MAPPING` at a time, so that thousands of running
/// jobs cost few memory areas; never unmapped.
#[derive(Default)]
pub struct Stacks {
    free: Vec<*mut u8>,
    busy: std::collections::HashMap<i32, *mut u8>,
}

impl Stacks {
    /// A free pair of stacks: the job's below, the shepherd's above.
    fn take(&mut self) -> io::Result<*mut u8> {
        if self.free.is_empty() {
            let len = PER_MAPPING * 2 * STACK;
            // SAFETY: a fresh anonymous private mapping.
            let m = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK, -1, 0) };
            if m == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            self.free.extend((0..PER_MAPPING).rev().map(|i| m.cast::<u8>().wrapping_add(i * 2 * STACK)));
        }
        Ok(self.free.pop().expect("just filled"))
    }

    /// The shepherd `pid` has been reaped: its stacks serve the next one.
    pub fn ended(&mut self, pid: i32) {
        if let Some(s) = self.busy.remove(&pid) {
            self.free.push(s);
        }
    }
}

/// Everything a shepherd and its job need, prepared before the clone.
#[derive(Clone, Copy)]
struct Child {
    prog: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    workdir: *const libc::c_char,
    devnull: libc::c_int,
    /// The output path, and the error path when it differs (else null).
    stdout: *const libc::c_char,
    stderr: *const libc::c_char,
    /// The submitter's supplementary groups (with its gid).
    groups: *const libc::gid_t,
    ngroups: usize,
    pipe: libc::c_int,
    /// The slot's record, open: the shepherd appends its lines to it.
    record: libc::c_int,
    ids: Option<(u32, u32)>,
    /// The run's job and attempt, at the head of the shepherd's lines.
    run: (i64, i64),
    /// The top of the stack the job runs on until it execs.
    job_stack: *mut u8,
    /// The cgroup.procs files of its cgroup, open (-1 past the last).
    cgroups: [libc::c_int; MAX_CGROUPS],
    /// A step task's output and error connections (-1: its files).
    io: [libc::c_int; 2],
    /// The cpus it is bound to, a mask of 1,024 (None: not bound).
    affinity: Option<[u64; 16]>,
}

/// At most this many hierarchies (v1's freezer, cpuacct, memory, pids, cpuset
/// and devices).
const MAX_CGROUPS: usize = 8;

/// Where a shepherd starts, on its own stack, sharing the launcher's memory.
unsafe extern "C" fn shepherd_entry(arg: usize) -> ! {
    // a copy on the shepherd's own stack: the launcher's stays valid only
    // until the shepherd reports the job's pid
    let c: Child = std::ptr::read_volatile(arg as *const Child);
    c.shepherd()
}

/// Where the job starts, on its own stack, sharing the shepherd's memory until
/// it execs.
unsafe extern "C" fn job_entry(arg: usize) -> ! {
    // `arg` is the shepherd's `Child`, alive while the shepherd waits for this
    // exec (CLONE_VFORK)
    (*(arg as *const Child)).job()
}

/// A line of the record, built without allocating.
struct Line {
    buf: [u8; 192],
    len: usize,
}

impl Line {
    fn new(kind: &[u8; 4], run: (i64, i64)) -> Line {
        let mut l = Line { buf: [0; 192], len: 0 };
        l.buf[..4].copy_from_slice(kind);
        l.len = 4;
        l.int(run.0).int(run.1)
    }

    /// Append ` v` in decimal (at most 21 bytes: 8 fields fit).
    fn int(mut self, v: i64) -> Line {
        let mut tmp = [0u8; 20];
        let mut n = 0;
        let mut u = v.unsigned_abs();
        loop {
            tmp[n] = b'0' + (u % 10) as u8;
            n += 1;
            u /= 10;
            if u == 0 {
                break;
            }
        }
        self.buf[self.len] = b' ';
        self.len += 1;
        if v < 0 {
            self.buf[self.len] = b'-';
            self.len += 1;
        }
        while n > 0 {
            n -= 1;
            self.buf[self.len] = tmp[n];
            self.len += 1;
        }
        self
    }

    fn bytes(&mut self) -> &[u8] {
        self.buf[self.len] = b'\n';
        &self.buf[..self.len + 1]
    }
}

impl Child {
    unsafe fn shepherd(&self) -> ! {
        sys::unblock_all();
        sys::call(libc::SYS_setsid, [0; 6]);
        for s in [libc::SIGHUP, libc::SIGINT, libc::SIGTERM, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU, libc::SIGPIPE] {
            sys::disposition(s, libc::SIG_IGN);
        }
        sys::disposition(libc::SIGCHLD, libc::SIG_DFL);
        // the job shares this memory until it execs, as posix_spawn does
        let job = sys::clone_on((libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD) as usize, self.job_stack, job_entry, self as *const Child as usize);
        if job < 0 {
            sys::write(self.pipe, &(-1i32).to_le_bytes());
            sys::exit(1);
        }
        let job = job as i32;
        sys::call(libc::SYS_setpgid, [job as usize, job as usize, 0, 0, 0, 0]);
        sys::write(self.record, Line::new(b"pids", self.run).int(sys::call(libc::SYS_getpid, [0; 6]) as i64).int(job as i64).bytes());
        sys::write(self.pipe, &job.to_le_bytes());
        // hold nothing of the launcher's but the record, as fd 3
        sys::dup2(self.devnull, 0);
        sys::dup2(self.devnull, 1);
        sys::dup2(self.devnull, 2);
        sys::dup2(self.record, 3);
        sys::call(libc::SYS_close_range, [4, u32::MAX as usize, 0, 0, 0, 0]);
        let mut status: libc::c_int = 0;
        let mut ru: libc::rusage = std::mem::zeroed();
        loop {
            let r = sys::call(libc::SYS_wait4, [job as usize, &mut status as *mut libc::c_int as usize, 0, &mut ru as *mut libc::rusage as usize, 0, 0]);
            if r == job as isize || r != -(libc::EINTR as isize) {
                break;
            }
        }
        let mut ts: libc::timespec = std::mem::zeroed();
        sys::call(libc::SYS_clock_gettime, [libc::CLOCK_REALTIME as usize, &mut ts as *mut libc::timespec as usize, 0, 0, 0, 0]);
        let (code, sig) = if libc::WIFEXITED(status) { (libc::WEXITSTATUS(status) as i64, -1) } else if libc::WIFSIGNALED(status) { (-1, libc::WTERMSIG(status) as i64) } else { (-1, -1) };
        let cpu_us = (ru.ru_utime.tv_sec as i64 + ru.ru_stime.tv_sec as i64) * 1_000_000 + ru.ru_utime.tv_usec as i64 + ru.ru_stime.tv_usec as i64;
        sys::write(3, Line::new(b"exit", self.run).int(code).int(sig).int(cpu_us).int(ts.tv_sec as i64).bytes());
        sys::exit(0)
    }

    unsafe fn job(&self) -> ! {
        sys::call(libc::SYS_setpgid, [0; 6]);
        if let Some(mask) = &self.affinity {
            let r = sys::call(libc::SYS_sched_setaffinity, [0, std::mem::size_of_val(mask), mask.as_ptr() as usize, 0, 0, 0]);
            if r < 0 {
                self.failed(LaunchStage::Cgroup, r, 1);
            }
        }
        // into its cgroup first: whatever it starts from now on is counted,
        // confined and found there
        for &fd in self.cgroups.iter().take_while(|&&fd| fd >= 0) {
            let r = sys::call(libc::SYS_write, [fd as usize, b"0".as_ptr() as usize, 1, 0, 0, 0]);
            if r < 0 {
                self.failed(LaunchStage::Cgroup, r, 1);
            }
        }
        for s in 1..32 {
            if s != libc::SIGKILL && s != libc::SIGSTOP {
                sys::disposition(s, libc::SIG_DFL);
            }
        }
        sys::dup2(self.devnull, 0);
        sys::dup2(self.devnull, 1);
        sys::dup2(self.devnull, 2);
        // the submitter's identity first: the working directory and the
        // output files are then reached as the submitter would reach them
        // (symlinks, permissions and all), never as root
        if let Some((uid, gid)) = self.ids {
            for r in [
                sys::call(libc::SYS_setgroups, [self.ngroups, self.groups as usize, 0, 0, 0, 0]),
                sys::call(libc::SYS_setgid, [gid as usize, 0, 0, 0, 0, 0]),
                sys::call(libc::SYS_setuid, [uid as usize, 0, 0, 0, 0, 0]),
            ] {
                if r != 0 {
                    self.failed(LaunchStage::Identity, r, 126);
                }
            }
        }
        sys::call(libc::SYS_umask, [0o022, 0, 0, 0, 0, 0]);
        let r = sys::call(libc::SYS_chdir, [self.workdir as usize, 0, 0, 0, 0, 0]);
        if r != 0 {
            self.failed(LaunchStage::Workdir, r, 1);
        }
        if self.io[0] >= 0 {
            // a step's task: its client's connections
            sys::dup2(self.io[0], 1);
            sys::dup2(self.io[1], 2);
            self.exec()
        }
        let flags = (libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_NOCTTY | libc::O_CLOEXEC) as usize;
        let out = sys::call(libc::SYS_openat, [libc::AT_FDCWD as usize, self.stdout as usize, flags, 0o644, 0, 0]);
        if out < 0 {
            self.failed(LaunchStage::Stdout, out, 1);
        }
        let err = if self.stderr.is_null() { out } else { sys::call(libc::SYS_openat, [libc::AT_FDCWD as usize, self.stderr as usize, flags, 0o644, 0, 0]) };
        if err < 0 {
            self.failed(LaunchStage::Stderr, err, 1);
        }
        // the copies at 1 and 2 stay open across the exec, the originals not
        sys::dup2(out as i32, 1);
        sys::dup2(err as i32, 2);
        self.exec()
    }

    /// Execute the script (fds 0 to 2 in place).
    unsafe fn exec(&self) -> ! {
        // A script written a moment ago may still be open for writing in a
        // process another thread cloned meanwhile and has not yet exec'd (the
        // fork/exec ETXTBSY race; in a multi-threaded process, such as a test
        // binary): wait that moment out, up to a second, as Go's os/exec does.
        let mut r = 0;
        for _ in 0..1000 {
            r = sys::call(libc::SYS_execve, [self.prog as usize, self.argv as usize, self.envp as usize, 0, 0, 0]);
            if r != -(libc::ETXTBSY as isize) {
                break;
            }
            let ms = libc::timespec { tv_sec: 0, tv_nsec: 1_000_000 };
            sys::call(libc::SYS_nanosleep, [&ms as *const libc::timespec as usize, 0, 0, 0, 0, 0]);
        }
        sys::write(2, b"tessera: cannot execute the job's script\n");
        self.failed(LaunchStage::Exec, r, 127)
    }

    /// The launch failed at `stage` with the system call's result `r` (a
    /// negated errno): a `fail` line in the record, for the agent to report,
    /// then the job ends with `code` (the shepherd records the exit).
    unsafe fn failed(&self, stage: LaunchStage, r: isize, code: i32) -> ! {
        sys::write(self.record, Line::new(b"fail", self.run).int(stage.code()).int(-r as i64).bytes());
        sys::exit(code)
    }
}
