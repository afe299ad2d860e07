//! The launcher: a small single-threaded process, forked when the agent starts
//! (before any thread exists), that starts the jobs' shepherds for it.
//!
//! Shepherds share the launcher's memory (see [`launch`]), which is safe in a
//! quiet single-threaded process that prepares each launch and then waits for
//! the shepherd's word, but not in the busy multi-threaded agent. The agent sends it each
//! launch (one length-prefixed JSON frame) and reads back the shepherd's pids;
//! the launcher reaps the shepherds (they are its children) and writes each
//! one's pid to a second socket as it ends, which the agent's reaper thread
//! reads. The launcher dies with the agent (`PR_SET_PDEATHSIG`); the shepherds
//! do not, and a restarted agent re-adopts them from its spool. Its memory is
//! not dumpable, so that a crash of the launcher does not stop the shepherds
//! sharing it (the out-of-memory killer would: it kills every process sharing
//! its victim's memory, though a launcher of a few megabytes is an unlikely
//! victim).

use crate::launch::{self, Slot, SpawnError, Spawned};
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use tessera_proto::api::{Launch, LaunchFailure, LaunchStage};

#[derive(Serialize, Deserialize)]
struct Request {
    slot: Slot,
    run: String,
    launch: Launch,
    enter: Vec<std::path::PathBuf>,
}

#[derive(Serialize, Deserialize)]
enum Reply {
    Started { shepherd: i32, pgid: i32 },
    Failed(LaunchFailure, String),
}

/// The agent's end of the launcher.
pub struct Launcher {
    requests: UnixStream,
    ended: Option<UnixStream>,
    pub pid: i32,
}

fn write_frame(s: &mut UnixStream, body: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(body.len() + 4);
    b.extend_from_slice(&(body.len() as u32).to_le_bytes());
    b.extend_from_slice(body);
    s.write_all(&b)
}

fn read_frame(s: &mut UnixStream) -> io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len)?;
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    s.read_exact(&mut body)?;
    Ok(body)
}

impl Launcher {
    /// Fork the launcher. Call it while the process has a single thread.
    pub fn start() -> io::Result<Launcher> {
        if std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count()) > 1 {
            return Err(io::Error::other("the launcher must be forked while the process has one thread"));
        }
        let (requests, theirs) = UnixStream::pair()?;
        let (ended, their_ended) = UnixStream::pair()?;
        // SAFETY: the caller guarantees no other thread exists, so the child may
        // run ordinary code.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            drop(requests);
            drop(ended);
            let code = match serve(theirs, their_ended) {
                Ok(()) => 0,
                Err(_) => 1,
            };
            // SAFETY: leaving the launcher without running the agent's exit paths.
            unsafe { libc::_exit(code) }
        }
        Ok(Launcher { requests, ended: Some(ended), pid })
    }

    /// The socket on which the launcher writes the pid of each shepherd that
    /// ends (4 bytes, little-endian); taken once, by the reaper.
    pub fn take_ended(&mut self) -> Option<UnixStream> {
        self.ended.take()
    }

    /// Start `l` in `slot` (see [`launch::spawn`]).
    /// A launch the launcher itself could not make (it is gone) is a spool
    /// failure.
    pub fn spawn(&mut self, slot: &Slot, run: &str, l: &Launch, enter: &[std::path::PathBuf]) -> Result<Spawned, SpawnError> {
        let req = Request { slot: slot.clone(), run: run.to_string(), launch: l.clone(), enter: enter.to_vec() };
        let lost = |e: io::Error| SpawnError { failure: LaunchFailure { stage: LaunchStage::Spool, errno: e.raw_os_error().unwrap_or(libc::EPIPE) }, message: format!("the launcher is gone: {e}") };
        write_frame(&mut self.requests, &serde_json::to_vec(&req).expect("requests serialize")).map_err(lost)?;
        let body = read_frame(&mut self.requests).map_err(lost)?;
        match serde_json::from_slice(&body).map_err(|e| SpawnError { failure: LaunchFailure { stage: LaunchStage::Spool, errno: libc::EPROTO }, message: format!("the launcher's reply: {e}") })? {
            Reply::Started { shepherd, pgid } => Ok(Spawned { shepherd, pgid }),
            Reply::Failed(failure, message) => Err(SpawnError { failure, message }),
        }
    }
}

/// The launcher's loop: launches on `requests`, shepherds' ends on `ended`,
/// until the agent is gone.
fn serve(mut requests: UnixStream, mut ended: UnixStream) -> io::Result<()> {
    // SAFETY: plain system calls on this single-threaded process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // never dump core: the kernel stops every process sharing the memory
        // of one that dumps, and the shepherds share the launcher's, so a
        // crash of the launcher would take them along (a memory that cannot
        // be dumped is not waited on; the jobs' own memories, after their
        // exec, are dumpable as usual)
        libc::prctl(libc::PR_SET_DUMPABLE, 0);
        if libc::getppid() == 1 {
            return Ok(()); // the agent died before the line above
        }
    }
    // fds 0-2 open, so that nothing the launcher opens takes their numbers
    // (a shepherd puts /dev/null there)
    for fd in 0..3 {
        // SAFETY: plain system calls; an open at a closed fd takes its number.
        unsafe {
            if libc::fcntl(fd, libc::F_GETFD) < 0 {
                libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            }
        }
    }
    let mut stacks = launch::Stacks::default();
    let mut mask: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; SIGCHLD is blocked and read through a signalfd.
    let sfd = unsafe {
        libc::sigemptyset(&mut mask);
        libc::sigaddset(&mut mask, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &mask, std::ptr::null_mut());
        let fd = libc::signalfd(-1, &mask, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        OwnedFd::from_raw_fd(fd)
    };
    loop {
        let mut fds = [
            libc::pollfd { fd: requests.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: sfd.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: two valid pollfds.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if fds[1].revents != 0 {
            let mut info = [0u8; std::mem::size_of::<libc::signalfd_siginfo>()];
            // SAFETY: reading into a buffer of the right size.
            while unsafe { libc::read(sfd.as_raw_fd(), info.as_mut_ptr().cast(), info.len()) } > 0 {}
            loop {
                let mut status = 0;
                // SAFETY: reaping our own children.
                let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
                if pid <= 0 {
                    break;
                }
                stacks.ended(pid);
                ended.write_all(&pid.to_le_bytes())?;
            }
        }
        if fds[0].revents != 0 {
            let body = match read_frame(&mut requests) {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                Err(e) => return Err(e),
            };
            let reply = match serde_json::from_slice::<Request>(&body) {
                Ok(r) => match launch::spawn(&r.slot, &r.run, &r.launch, &r.enter, &mut stacks) {
                    Ok(s) => Reply::Started { shepherd: s.shepherd, pgid: s.pgid },
                    Err(e) => Reply::Failed(e.failure, e.message),
                },
                Err(e) => Reply::Failed(LaunchFailure { stage: LaunchStage::Spool, errno: libc::EPROTO }, format!("a launch the launcher cannot read: {e}")),
            };
            write_frame(&mut requests, &serde_json::to_vec(&reply).expect("replies serialize"))?;
        }
    }
}
