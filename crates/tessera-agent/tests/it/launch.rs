//! Starting jobs as real processes through a spool slot, and reading back how
//! they ended from the slot's record.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tessera_agent::launch::{self, ExitRecord, Slot, Spawned, Stacks};
use tessera_proto::api::{Launch, LaunchFailure, LaunchStage};

fn launch(job: u64, script: &str, dir: &std::path::Path) -> Launch {
    let mut env = BTreeMap::new();
    env.insert("TESSERA_JOB_ID".to_string(), job.to_string());
    env.insert("PATH".to_string(), "/usr/bin:/bin".to_string());
    Launch {
        job,
        attempt: 1,
        name: "t".into(),
        user: "u".into(),
        uid: nix::unistd::geteuid().as_raw(),
        gid: nix::unistd::getegid().as_raw(),
        script: script.into(),
        workdir: dir.display().to_string(),
        stdout: dir.join(format!("out-{job}")).display().to_string(),
        stderr: dir.join(format!("out-{job}")).display().to_string(),
        env,
        limit_s: None,
        kill_grace_s: 1,
        shares: Vec::new(),
        suspend_tstp: false,
        io: None,
        affinity: Vec::new(),
    }
}

/// Wait for the run's exit line, reaping its shepherd (a child of this test).
fn wait_exit(slot: &Slot, shepherd: i32) -> ExitRecord {
    let t0 = Instant::now();
    loop {
        if let Some(x) = slot.read().exit {
            let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(shepherd), None);
            return x;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no exit line in {}", slot.record.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Start `l` (the test process is the shepherds' parent; their stacks are
/// never reused here).
fn spawn(slot: &Slot, run: &str, l: &Launch) -> Result<Spawned, launch::SpawnError> {
    launch::spawn(slot, run, l, &[], &mut Stacks::default())
}

fn spool() -> (tempfile::TempDir, Slot) {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("jobs")).unwrap();
    let slot = Slot::new(d.path(), 0);
    (d, slot)
}

#[test]
fn a_job_runs_in_its_directory_with_its_environment_and_its_exit_status_is_recorded() {
    let (d, slot) = spool();
    let l = launch(42, "#!/bin/sh\necho \"job $TESSERA_JOB_ID in $(pwd)\"\nexit 3\n", d.path());
    let s = spawn(&slot, "{}", &l).unwrap();
    let x = wait_exit(&slot, s.shepherd);
    assert_eq!((x.code, x.signal), (Some(3), None));
    let out = std::fs::read_to_string(d.path().join("out-42")).unwrap();
    assert_eq!(out.trim(), format!("job 42 in {}", d.path().canonicalize().unwrap().display()));
    let rec = slot.read();
    assert_eq!(rec.run, Some((42, 1, "{}".to_string())));
    assert_eq!(rec.pids, Some(s));
    // a script without #! runs under /bin/sh
    let (d2, slot2) = spool();
    let s = spawn(&slot2, "{}", &launch(43, "exit 0\n", d2.path())).unwrap();
    assert_eq!(wait_exit(&slot2, s.shepherd).code, Some(0));
}

#[test]
fn a_job_killed_by_a_signal_records_the_signal_and_its_whole_group_is_signalled() {
    let (d, slot) = spool();
    // a child in the background: the group signal must reach it too
    let s = spawn(&slot, "{}", &launch(7, "#!/bin/sh\nsleep 60 &\necho $! > bg.pid\nwait\n", d.path())).unwrap();
    let pidfile = d.path().join("bg.pid");
    let t0 = Instant::now();
    while std::fs::read_to_string(&pidfile).map_or(true, |t| !t.ends_with('\n')) {
        assert!(t0.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(10));
    }
    let bg: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(s.pgid), nix::sys::signal::Signal::SIGTERM).unwrap();
    let x = wait_exit(&slot, s.shepherd);
    assert_eq!((x.code, x.signal), (None, Some(libc::SIGTERM)));
    let t0 = Instant::now();
    while nix::sys::signal::kill(nix::unistd::Pid::from_raw(bg), None).is_ok() {
        // gone, or a zombie waiting for init
        let stat = std::fs::read_to_string(format!("/proc/{bg}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.split(' ').nth(2) == Some("Z") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "the background process {bg} survived its job's SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_slot_is_reused_and_only_the_lines_of_its_current_run_count() {
    let (d, slot) = spool();
    let s = spawn(&slot, "{}", &launch(1, "exit 1\n", d.path())).unwrap();
    assert_eq!(wait_exit(&slot, s.shepherd).code, Some(1));
    slot.free(2, 1);
    assert_eq!(slot.read().run, Some((1, 1, "{}".to_string())), "only its own run's free line frees a slot");
    slot.free(1, 1);
    assert_eq!(slot.read(), Default::default(), "a freed slot holds no run");
    let ino = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&slot.record).unwrap());
    let s2 = spawn(&slot, "{\"a\":1}", &launch(2, "exit 0\n", d.path())).unwrap();
    assert_eq!(wait_exit(&slot, s2.shepherd).code, Some(0));
    assert_eq!(std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&slot.record).unwrap()), ino, "the record file is reused, not re-created");
    // a late line of the slot's previous run (job 1) changes nothing
    let mut f = std::fs::OpenOptions::new().append(true).open(&slot.record).unwrap();
    std::io::Write::write_all(&mut f, b"exit 1 1 9 -1 0 5\npids 1 1 10 11\n").unwrap();
    let r = slot.read();
    assert_eq!(r.run, Some((2, 1, "{\"a\":1}".to_string())));
    assert_eq!(r.pids, Some(s2));
    assert_eq!(r.exit.unwrap().code, Some(0));
}

#[test]
fn a_record_is_read_line_by_line_the_first_exit_counting_and_a_torn_line_ignored() {
    let (_d, slot) = spool();
    let write = |t: &str| std::fs::write(&slot.record, t).unwrap();
    write("run 5 2 {}\npids 5 2 100 101\nexit 5 2 -1 9 0 7\nexit 5 2 0 -1 1500000 8\n");
    let r = slot.read();
    assert_eq!(r.exit, Some(ExitRecord { code: None, signal: Some(9), cpu_s: 0.0, end: 7 }));
    write("run 5 2 {}\npids 5 2 100 101\nexit 5 2 0 -1 15");
    let r = slot.read();
    assert_eq!(r.exit, None, "a line without its newline is still being written");
    assert_eq!(r.pids.map(|p| (p.shepherd, p.pgid)), Some((100, 101)));
    write("run 5 2 {}\nexit 5 2 0 -1 1500000 8\n");
    assert_eq!(slot.read().exit.unwrap().cpu_s, 1.5);
    write("run 5 2 {\"start\":1");
    assert_eq!(slot.read().run, None, "a torn run line is no run");
    // a run line written over a longer record, the rest not yet cut away (an
    // agent that died in between): the old lines are another run's
    write("run 6 1 {}\n-1 12}\npids 5 2 100 101\nexit 5 2 0 -1 0 8\nfree 5 2\n");
    assert_eq!(slot.read(), tessera_agent::launch::Record { run: Some((6, 1, "{}".to_string())), pids: None, exit: None, failure: None });
    write("garbage\nexit 5 2 0 -1 0 8\n");
    assert_eq!(slot.read(), Default::default());
    // the agent's own exit line (a job it could not start)
    write("run 9 1 {}\n");
    slot.append_exit(9, 1, 1, -1, 12, Some(LaunchFailure { stage: LaunchStage::Request, errno: libc::EINVAL })).unwrap();
    assert_eq!(slot.read().exit, Some(ExitRecord { code: Some(1), signal: None, cpu_s: 0.0, end: 12 }));
    assert_eq!(slot.read().failure, Some(LaunchFailure { stage: LaunchStage::Request, errno: libc::EINVAL }));
    assert_eq!(Slot::parse_name("12"), Some(12));
    assert_eq!(Slot::parse_name("12.sh"), Some(12));
    assert_eq!(Slot::parse_name("12.1"), None);
}


// ------------------------------------------------ the submitter's identity

/// A second, unprivileged user (and a group it belongs to as a supplementary
/// group only), created once for these tests: `(uid, gid, supplementary gid)`.
/// None when the tests do not run as root (they cannot switch identity then).
fn probe_user() -> Option<(u32, u32, u32)> {
    static USER: std::sync::OnceLock<Option<(u32, u32, u32)>> = std::sync::OnceLock::new();
    *USER.get_or_init(|| {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIPPED: the identity tests need root (to create a user and switch to it)");
            return None;
        }
        let run = |args: &[&str]| {
            let o = std::process::Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("{}: {e}", args[0]));
            assert!(o.status.success() || String::from_utf8_lossy(&o.stderr).contains("already exists"), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        };
        run(&["groupadd", "tessera-probe-extra"]);
        run(&["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", "tessera-probe"]);
        run(&["usermod", "-a", "-G", "tessera-probe-extra", "tessera-probe"]);
        let u = nix::unistd::User::from_name("tessera-probe").unwrap().expect("the probe user exists");
        let g = nix::unistd::Group::from_name("tessera-probe-extra").unwrap().expect("the probe group exists");
        Some((u.uid.as_raw(), u.gid.as_raw(), g.gid.as_raw()))
    })
}

fn chmod(p: &std::path::Path, mode: u32) {
    std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
}

fn owner(p: &std::path::Path) -> u32 {
    std::os::unix::fs::MetadataExt::uid(&std::fs::symlink_metadata(p).unwrap())
}

/// A spool the probe user's jobs can exec their scripts from (an agent's
/// spool directories are traversable, their files private), and a job of
/// that user writing `out` in `dir`.
fn as_probe(job: u64, dir: &std::path::Path, out: &std::path::Path) -> Option<(tempfile::TempDir, Slot, Launch)> {
    let (uid, gid, _) = probe_user()?;
    let (d, slot) = spool();
    chmod(d.path(), 0o711);
    chmod(&d.path().join("jobs"), 0o711);
    let mut l = launch(job, "#!/bin/sh\necho owned\nid -G > groups\n", dir);
    (l.uid, l.gid) = (uid, gid);
    l.stdout = out.display().to_string();
    l.stderr = l.stdout.clone();
    Some((d, slot, l))
}

fn failure_of(slot: &Slot, l: &Launch) -> Option<LaunchFailure> {
    let s = spawn(slot, "{}", l).unwrap();
    wait_exit(slot, s.shepherd);
    slot.read().failure
}

#[test]
fn a_job_cannot_write_create_or_take_a_file_its_submitter_could_not() {
    let Some((uid, _, _)) = probe_user() else { return };
    let root = tempfile::tempdir().unwrap();
    chmod(root.path(), 0o755);
    // a root-only file, a directory only root may write, and one of the user's own
    let secret = root.path().join("secret");
    std::fs::write(&secret, "root only\n").unwrap();
    chmod(&secret, 0o600);
    let closed = root.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    chmod(&closed, 0o755);
    let mine = root.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::os::unix::fs::chown(&mine, Some(uid), None).unwrap();
    let link = mine.join("link");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(uid), None).unwrap();
    let eacces = |stage| Some(LaunchFailure { stage, errno: libc::EACCES });
    // the root-only file, named directly and through the user's symlink
    for (job, path) in [(1, secret.clone()), (2, link.clone())] {
        let (_s, slot, l) = as_probe(job, &mine, &path).unwrap();
        assert_eq!(failure_of(&slot, &l), eacces(LaunchStage::Stdout), "{}", path.display());
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root only\n", "the job wrote root's file through {}", path.display());
        assert_eq!(owner(&secret), 0, "the job took root's file through {}", path.display());
    }
    // a new file where only root may create one
    let (_s, slot, l) = as_probe(3, &mine, &closed.join("new")).unwrap();
    assert_eq!(failure_of(&slot, &l), eacces(LaunchStage::Stdout));
    assert!(!closed.join("new").exists(), "the job created a file in a directory only root may write");
    // the error file alone
    let (_s, slot, mut l) = as_probe(4, &mine, &mine.join("out-4")).unwrap();
    l.stderr = closed.join("err").display().to_string();
    assert_eq!(failure_of(&slot, &l), eacces(LaunchStage::Stderr));
    assert!(!closed.join("err").exists());
    // a working directory the user may not enter
    let private = root.path().join("private");
    std::fs::create_dir(&private).unwrap();
    chmod(&private, 0o700);
    let (_s, slot, l) = as_probe(5, &private, &mine.join("out-5")).unwrap();
    assert_eq!(failure_of(&slot, &l), eacces(LaunchStage::Workdir));
    // and what the user may do, the job does, as the user
    let (_s, slot, l) = as_probe(6, &mine, &mine.join("out-6")).unwrap();
    assert_eq!(failure_of(&slot, &l), None);
    assert_eq!(std::fs::read_to_string(mine.join("out-6")).unwrap(), "owned\n");
    assert_eq!(owner(&mine.join("out-6")), uid, "the output is the user's: created by the user");
}

#[test]
fn a_job_has_its_submitters_supplementary_groups() {
    let Some((uid, gid, extra)) = probe_user() else { return };
    let root = tempfile::tempdir().unwrap();
    chmod(root.path(), 0o755);
    // a directory the user may write only as a member of the extra group
    let shared = root.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::os::unix::fs::chown(&shared, Some(0), Some(extra)).unwrap();
    chmod(&shared, 0o770);
    let (_s, slot, l) = as_probe(7, &shared, &shared.join("out-7")).unwrap();
    assert_eq!(failure_of(&slot, &l), None);
    assert_eq!(owner(&shared.join("out-7")), uid);
    let groups: std::collections::BTreeSet<u32> = std::fs::read_to_string(shared.join("groups")).unwrap().split_whitespace().map(|g| g.parse().unwrap()).collect();
    assert_eq!(groups, [gid, extra].into_iter().collect(), "the job's groups are the user's, root's none");
}

#[test]
fn a_launch_that_fails_says_where_and_why() {
    let (d, slot) = spool();
    let mut l = launch(8, "exit 0\n", d.path());
    l.workdir = d.path().join("missing").display().to_string();
    assert_eq!(failure_of(&slot, &l), Some(LaunchFailure { stage: LaunchStage::Workdir, errno: libc::ENOENT }));
    let text = LaunchFailure { stage: LaunchStage::Workdir, errno: libc::ENOENT }.describe(&l.workdir, &l.stdout, &l.stderr);
    assert!(text.contains(&l.workdir) && text.contains("No such file or directory"), "{text}");
    // a NUL in the environment: refused before anything starts
    let (d, slot) = spool();
    let mut l = launch(9, "exit 0\n", d.path());
    l.env.insert("A".into(), "x\0y".into());
    let e = spawn(&slot, "{}", &l).unwrap_err();
    assert_eq!(e.failure, LaunchFailure { stage: LaunchStage::Request, errno: libc::EINVAL });
    // a script that cannot be executed (an interpreter that does not exist)
    let (d, slot) = spool();
    let l = launch(10, "#!/nonexistent/interpreter\n", d.path());
    assert_eq!(failure_of(&slot, &l), Some(LaunchFailure { stage: LaunchStage::Exec, errno: libc::ENOENT }));
}
