//! Starting jobs as real processes through a spool slot, and reading back how
//! they ended from the slot's record.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tessera_agent::launch::{self, ExitRecord, Slot, Spawned, Stacks};
use tessera_proto::api::Launch;

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
fn spawn(slot: &Slot, run: &str, l: &Launch) -> std::io::Result<Spawned> {
    launch::spawn(slot, run, l, &mut Stacks::default())
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
    assert_eq!(slot.read(), tessera_agent::launch::Record { run: Some((6, 1, "{}".to_string())), pids: None, exit: None });
    write("garbage\nexit 5 2 0 -1 0 8\n");
    assert_eq!(slot.read(), Default::default());
    // the agent's own exit line (a job it could not start)
    write("run 9 1 {}\n");
    slot.append_exit(9, 1, 1, -1, 12).unwrap();
    assert_eq!(slot.read().exit, Some(ExitRecord { code: Some(1), signal: None, cpu_s: 0.0, end: 12 }));
    assert_eq!(Slot::parse_name("12"), Some(12));
    assert_eq!(Slot::parse_name("12.sh"), Some(12));
    assert_eq!(Slot::parse_name("12.1"), None);
}

